#!/usr/bin/env bash
# docs/ops.md is generated from the op table: fail when it is stale.
#   regenerate: build/compiler/kann-c --list-ops=markdown > docs/ops.md
set -euo pipefail
if ! "$KANN_C" --list-ops=markdown | diff -u "$KANN_SOURCE_DIR/docs/ops.md" -; then
    echo "docs/ops.md is stale: run 'kann-c --list-ops=markdown > docs/ops.md'"
    exit 1
fi
echo "1 passed, 0 failed"
