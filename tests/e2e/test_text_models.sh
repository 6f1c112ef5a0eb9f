#!/usr/bin/env bash
# Text models compiled by kann-c straight from the ONNX text syntax (functions inlined) match
# ONNX Runtime on the same text converted by onnx.parser, with --cores 1 and 2.
set -euo pipefail
"${PYTHON:-python3}" -c 'import onnx, sys; sys.exit(tuple(map(int, onnx.__version__.split(".")[:2])) < (1, 18))' ||
    { echo "onnx >= 1.18 is needed for onnx.parser to read these models"; exit 77; }
exec "${PYTHON:-python3}" "$KANN_SOURCE_DIR/tests/e2e/text_e2e.py" \
    "$KANN_SOURCE_DIR/samples/sample_mlp.onnxtxt" "$KANN_SOURCE_DIR"/tests/text/models/*.onnxtxt
