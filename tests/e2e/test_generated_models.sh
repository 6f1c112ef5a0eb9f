#!/usr/bin/env bash
# Every generated case (cases.py) compiled with --cores 1 and 2, run with 1 and 2 threads,
# matches ONNX Runtime within 1e-4.
set -euo pipefail
exec "${PYTHON:-python3}" "$KANN_SOURCE_DIR/tests/e2e/kann_check.py" cases --cores 1,2 --threads 1,2
