#!/usr/bin/env bash
# Every generated case (cases*.py), compiled with --cores 1 and 2, on the OpenCL backend (PoCL in
# CI) matches ONNX Runtime within 1e-4: the backend has every kernel, so a case it refuses
# fails. Skipped (77) without an OpenCL device.
set -euo pipefail
"$KANN_RUN" --list-devices || { echo "no OpenCL device: skipped"; exit 77; }
export KANN_OPENCL_CACHE=${KANN_OPENCL_CACHE:-$KANN_BUILD_DIR/opencl-cache}
exec "${PYTHON:-python3}" "$KANN_SOURCE_DIR/tests/e2e/kann_check.py" cases --backend opencl \
    --cores 1,2 --threads 1
