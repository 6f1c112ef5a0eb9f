#!/usr/bin/env bash
# Resource limits and hostile files at the command line: kann-c --max-memory refuses a model
# whose arena or weights exceed the limit (exit 1, the figures in the message, no output, an
# existing output untouched) and rejects malformed limits (exit 2); kann-run refuses every
# truncation and corruption of a model.bin with exit 3 and a message, never a crash.
set -uo pipefail
fail() { echo "FAIL: $*"; exit 1; }
corpus="$KANN_SOURCE_DIR/fuzz/corpus/onnx_import"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

arena_of() { "$KANN_RUN" "$1" --info | sed -n 's/^  arena: \([0-9]*\) bytes$/\1/p'; }

conv="$corpus/conv_basic.onnx"
"$KANN_C" -q "$conv" -o "$work/conv.bin" || fail "conv_basic does not compile"
arena=$(arena_of "$work/conv.bin")
[ -n "$arena" ] && [ "$arena" -gt 1024 ] || fail "cannot read conv_basic's arena size"
"$KANN_C" -q "$conv" -o "$work/conv.bin" --max-memory "$arena" || fail "a limit equal to the arena"
"$KANN_C" -q "$conv" -o "$work/limited.bin" --max-memory $((arena - 1)) 2>"$work/err"
code=$?
[ $code -eq 1 ] || fail "--max-memory $((arena - 1)): exit $code, expected 1"
grep -q "arena of $arena bytes" "$work/err" || fail "no arena figure: $(cat "$work/err")"
grep -q "max-memory $((arena - 1))" "$work/err" || fail "no limit figure: $(cat "$work/err")"
[ ! -e "$work/limited.bin" ] || fail "a refused model left an output file"
ls -A "$work" | grep -qv '^\(conv.bin\|err\)$' && fail "temporary files left: $(ls -A "$work")"

# A refused compile leaves an existing output as it was.
cp "$work/conv.bin" "$work/keep.bin"
"$KANN_C" -q "$conv" -o "$work/keep.bin" --max-memory 1K 2>/dev/null
[ $? -eq 1 ] || fail "--max-memory 1K: expected exit 1"
cmp -s "$work/conv.bin" "$work/keep.bin" || fail "a refused compile changed the existing output"

# A 1x1 convolution of 128 -> 128 channels on one pixel: 64 KiB of weights, a small arena.
"${PYTHON:-python3}" - "$work/wide.onnx" <<'PY' || fail "cannot make the weights model"
import sys
import numpy as np
from onnx import TensorProto, helper, numpy_helper
w = numpy_helper.from_array(np.ones((128, 128, 1, 1), np.float32), "W")
g = helper.make_graph([helper.make_node("Conv", ["x", "W"], ["y"])], "wide",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 128, 1, 1])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 7
open(sys.argv[1], "wb").write(m.SerializeToString())
PY
"$KANN_C" -q "$work/wide.onnx" -o "$work/w.bin" --max-memory 32K 2>"$work/err"
code=$?
[ $code -eq 1 ] || fail "weights over the limit: exit $code, expected 1"
weights=$(sed -n 's/.*needs weights of \([0-9]*\) bytes.*/\1/p' "$work/err")
[ -n "$weights" ] && [ "$weights" -ge 65536 ] || fail "no weights figure: $(cat "$work/err")"
"$KANN_C" -q "$work/wide.onnx" -o "$work/w.bin" --max-memory 1M ||
    fail "--max-memory 1M refused a small model"
"$KANN_C" -q "$conv" -o "$work/g.bin" --max-memory=1G || fail "--max-memory=1G"

for bad in 0 -5 1X 12KB K "" 99999999999999999999 20000000000G; do
    "$KANN_C" -q "$conv" -o "$work/bad.bin" --max-memory "$bad" 2>/dev/null
    code=$?
    [ $code -eq 2 ] || fail "--max-memory '$bad': exit $code, expected 2"
done
[ ! -e "$work/bad.bin" ] || fail "a usage error left an output file"

# kann-run on damaged copies of a good model: exit 3 with a message, never a signal.
size=$(stat -c %s "$work/conv.bin")
for len in 0 1 8 63 64 100 $((size / 2)) $((size - 64)) $((size - 1)); do
    head -c "$len" "$work/conv.bin" >"$work/cut.bin"
    "$KANN_RUN" "$work/cut.bin" --info >/dev/null 2>"$work/err"
    code=$?
    [ $code -eq 3 ] || fail "kann-run on a $len-byte prefix: exit $code, expected 3"
    [ -s "$work/err" ] || fail "kann-run on a $len-byte prefix: no message"
done
for at in 0 9 20 40 70 200 $((size / 2)) $((size - 1)); do
    cp "$work/conv.bin" "$work/flip.bin"
    printf '\xff' | dd of="$work/flip.bin" bs=1 seek="$at" conv=notrunc status=none
    cmp -s "$work/conv.bin" "$work/flip.bin" && continue
    "$KANN_RUN" "$work/flip.bin" --info >/dev/null 2>"$work/err"
    code=$?
    [ $code -eq 3 ] || fail "kann-run with byte $at set to 0xff: exit $code, expected 3"
    grep -q "KANN_E_" "$work/err" || fail "kann-run with byte $at changed: no status named"
done
echo "ok"
