#!/usr/bin/env bash
# Every CPU kernel level this machine runs (generic, avx2, avx512, amx), forced through KANN_ISA:
# the generated cases, and mobilenet_v2 (packed, depthwise and fully-connected kernels) when
# the shared models are present, against ONNX Runtime / the reference outputs within 1e-4.
set -euo pipefail
flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
has() { for f in "$@"; do [[ " $flags " == *" $f "* ]] || return 1; done; }
levels=(generic)
has avx2 fma && levels+=(avx2)
has avx512f avx512vl avx512bw avx512dq && levels+=(avx512)
has avx512f avx512vl avx512bw avx512dq avx512_bf16 amx_bf16 amx_tile && levels+=(amx)
dir=${KANN_MODELS_DIR:-$KANN_SOURCE_DIR/../shared/models}
check="$KANN_SOURCE_DIR/tests/e2e/kann_check.py"
status=0
for isa in "${levels[@]}"; do
    echo "== KANN_ISA=$isa"
    KANN_ISA=$isa "${PYTHON:-python3}" "$check" cases --cores 2 --threads 1,2 || status=1
    if [ -f "$dir/mobilenet_v2.onnx" ]; then
        KANN_ISA=$isa "${PYTHON:-python3}" "$check" model "$dir/mobilenet_v2.onnx" \
            "$dir/mobilenet_v2.input.npy" "$dir/mobilenet_v2.output.npy" --cores 2 \
            --threads 2 || status=1
    fi
done
# An unknown level is a usage error, not a silent fallback.
model=$(mktemp -d)
trap 'rm -rf "$model"' EXIT
if [ -f "$dir/squeezenet1_1.onnx" ]; then
    "$KANN_C" "$dir/squeezenet1_1.onnx" -o "$model/m.bin" -q
    rc=0
    "$KANN_RUN" "$model/m.bin" --isa sse9 --info >/dev/null 2>&1 || rc=$?
    [ "$rc" = 2 ] || { echo "kann-run --isa sse9 exited $rc, expected 2"; status=1; }
fi
exit $status
