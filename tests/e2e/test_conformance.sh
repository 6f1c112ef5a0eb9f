#!/usr/bin/env bash
# The ONNX backend test data (Debian libonnx-testdata): every case that compiles must pass.
# The report (per-op counts, reasons) goes to the build directory; docs/conformance.md is
# regenerated with: tests/conformance/run_conformance.py --report docs/conformance.md
set -euo pipefail
[ -d /usr/share/libonnx-testdata/data ] || { echo "libonnx-testdata not installed: skipped"; exit 77; }
exec "${PYTHON:-python3}" "$KANN_SOURCE_DIR/tests/conformance/run_conformance.py" \
    --report "$KANN_BUILD_DIR/conformance.md"
