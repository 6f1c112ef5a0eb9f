#!/usr/bin/env bash
# The real exported models (squeezenet1_1, mobilenet_v2, resnet18) against their reference
# outputs, with --cores 1 and 2 and 1 and 2 threads. Skipped (77) when the models are absent:
# point KANN_MODELS_DIR at them.
set -euo pipefail
dir=${KANN_MODELS_DIR:-$KANN_SOURCE_DIR/../shared/models}
[ -f "$dir/resnet18.onnx" ] || { echo "no shared models in '$dir': skipped"; exit 77; }
status=0
for m in squeezenet1_1 mobilenet_v2 resnet18; do
    "${PYTHON:-python3}" "$KANN_SOURCE_DIR/tests/e2e/kann_check.py" model \
        "$dir/$m.onnx" "$dir/$m.input.npy" "$dir/$m.output.npy" --cores 1,2 --threads 1,2 || status=1
done
exit $status
