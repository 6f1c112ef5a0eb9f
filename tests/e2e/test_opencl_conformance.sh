#!/usr/bin/env bash
# The ONNX backend test data (Debian libonnx-testdata) through kann-run --backend opencl (PoCL in
# CI): every case that compiles must pass, a case the backend refuses at load included. All
# cases (about 2.5 minutes with cold caches); KANN_OPENCL_CONFORMANCE_EVERY=N runs every N-th.
# Skipped (77) without the test data or without an OpenCL device.
set -euo pipefail
[ -d /usr/share/libonnx-testdata/data ] || { echo "libonnx-testdata not installed: skipped"; exit 77; }
"$KANN_RUN" --list-devices || { echo "no OpenCL device: skipped"; exit 77; }
export KANN_OPENCL_CACHE=${KANN_OPENCL_CACHE:-$KANN_BUILD_DIR/opencl-cache}
exec "${PYTHON:-python3}" "$KANN_SOURCE_DIR/tests/conformance/run_conformance.py" \
    --backend opencl --every "${KANN_OPENCL_CONFORMANCE_EVERY:-1}" \
    --report "$KANN_BUILD_DIR/conformance-opencl.md"
