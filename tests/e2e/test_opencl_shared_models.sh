#!/usr/bin/env bash
# The real exported models on the OpenCL backend (PoCL in CI) against their reference outputs,
# compiled with --cores 1 and 2: one queue, and two sub-device queues where the device splits.
# Skipped (77) without the models or without an OpenCL device.
set -euo pipefail
dir=${KANN_MODELS_DIR:-$KANN_SOURCE_DIR/../shared/models}
[ -f "$dir/resnet18.onnx" ] || { echo "no shared models in '$dir': skipped"; exit 77; }
"$KANN_RUN" --list-devices || { echo "no OpenCL device: skipped"; exit 77; }
export KANN_OPENCL_CACHE=${KANN_OPENCL_CACHE:-$KANN_BUILD_DIR/opencl-cache}
status=0
for m in squeezenet1_1 mobilenet_v2 resnet18; do
    "${PYTHON:-python3}" "$KANN_SOURCE_DIR/tests/e2e/kann_check.py" model \
        "$dir/$m.onnx" "$dir/$m.input.npy" "$dir/$m.output.npy" --backend opencl --cores 1,2 \
        --threads 1 || status=1
done
exit $status
