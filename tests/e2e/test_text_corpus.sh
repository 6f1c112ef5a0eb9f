#!/usr/bin/env bash
# The ONNX text syntax corpus (tests/text): every valid text gives the same ModelProto as
# onnx.parser and prints to a fixed point; every error text fails with its file:line:col,
# message, source line and caret. Then binary models print to text that both parsers read
# back as the same model: a slice of the ONNX backend node tests and squeezenet, when present.
set -euo pipefail
py=${PYTHON:-python3}
# Quoted names, labels and attribute defaults need onnx >= 1.18 (Debian's 1.12 lacks them).
"$py" -c 'import onnx, sys; sys.exit(tuple(map(int, onnx.__version__.split(".")[:2])) < (1, 18))' ||
    { echo "onnx >= 1.18 is needed to cross-check"; exit 77; }
here="$KANN_SOURCE_DIR/tests/e2e"
"$py" "$here/text_crosscheck.py" corpus "$KANN_SOURCE_DIR/tests/text"

models=()
nodes=/usr/share/libonnx-testdata/data/node
if [ -d "$nodes" ]; then
    # Every 8th case (about 120), in a stable order: all attribute kinds appear among them.
    mapfile -t picked < <(ls "$nodes"/*/model.onnx | sort | awk 'NR % 8 == 1')
    models+=("${picked[@]}")
fi
[ -n "${KANN_MODELS_DIR:-}" ] && [ -f "$KANN_MODELS_DIR/squeezenet1_1.onnx" ] &&
    models+=("$KANN_MODELS_DIR/squeezenet1_1.onnx")
if [ ${#models[@]} -gt 0 ]; then
    "$py" "$here/text_crosscheck.py" binary "${models[@]}"
fi
