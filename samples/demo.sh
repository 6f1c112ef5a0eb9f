#!/usr/bin/env bash
# The demo: set up, build, make the sample CNN, compile it with kann-c, run it with kann-run,
# show its top outputs and its batch-1 latency.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. scripts/setup.sh
kann_setup

build=${BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DKANN_PYTHON="$KANN_PYTHON" >/dev/null
cmake --build "$build" -j"$(nproc)" >/dev/null
out=samples/out
mkdir -p "$out"

echo "== make the sample CNN (samples/sample_cnn.py)"
"$KANN_PYTHON" samples/sample_cnn.py "$out"
echo
echo "== compile: kann-c $out/sample_cnn.onnx -o $out/sample_cnn.bin"
"$build/compiler/kann-c" "$out/sample_cnn.onnx" -o "$out/sample_cnn.bin"
echo
echo "== run: kann-run $out/sample_cnn.bin -i $out/sample_cnn.input.npy"
"$build/runtime/kann-run" "$out/sample_cnn.bin" -i "$out/sample_cnn.input.npy"
echo
echo "== a model written in the ONNX text syntax: kann-c samples/sample_mlp.onnxtxt"
"$build/compiler/kann-c" samples/sample_mlp.onnxtxt -o "$out/sample_mlp.bin" -q
"$build/runtime/kann-run" "$out/sample_mlp.bin" --info
echo
echo "== batch-1 latency: kann-run --bench 50"
"$build/runtime/kann-run" "$out/sample_cnn.bin" -i "$out/sample_cnn.input.npy" --bench 50
