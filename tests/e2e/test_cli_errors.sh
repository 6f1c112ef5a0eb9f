#!/usr/bin/env bash
# kann-c's diagnostics: every unsupported node named in one run, a non-zero exit, and no
# output file written or clobbered; usage errors exit 2; unreadable input exits 3.
set -uo pipefail
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"${PYTHON:-python3}" - "$work" <<'PY'
import sys, numpy as np, onnx
from onnx import helper, TensorProto, numpy_helper
w = sys.argv[1]
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
nodes = [helper.make_node("Conv", ["x", "W"], ["a"], name="conv0"),
         helper.make_node("NoSuchOp", ["a"], ["b"], name="unknown_node"),
         helper.make_node("Relu", ["b"], ["c"], name="relu0"),
         helper.make_node("HardMax", ["c"], ["d"], name="hardmax_node"),
         helper.make_node("Conv", ["d", "W2"], ["y"], name="conv_bad_attr", foo=3)]
g = helper.make_graph(nodes, "bad", [x], [y],
                      [numpy_helper.from_array(np.ones((3, 3, 1, 1), np.float32), "W"),
                       numpy_helper.from_array(np.ones((3, 3, 1, 1), np.float32), "W2")])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{w}/bad.onnx")
PY

# A model the emitter refuses (an input of an element type model.bin does not describe) is
# a rejected model (exit 1), not an I/O failure.
"${PYTHON:-python3}" - "$work" <<'PY'
import sys, onnx
from onnx import helper, TensorProto
w = sys.argv[1]
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
unused = helper.make_tensor_value_info("flag", TensorProto.INT16, [1])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "g", [x, unused], [y])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{w}/int16_input.onnx")
PY
"$KANN_C" "$work/int16_input.onnx" -o "$work/int16.bin" >/dev/null 2>&1; code=$?
[ $code -eq 1 ] || fail "an emitter refusal exits $code, expected 1"
[ ! -e "$work/int16.bin" ] || fail "a refused model left an output file"

# Unsupported model: all three problems reported, exit 1, nothing written.
out=$("$KANN_C" "$work/bad.onnx" -o "$work/bad.bin" 2>&1); code=$?
echo "$out"
[ $code -eq 1 ] || fail "exit code $code, expected 1"
for n in unknown_node hardmax_node conv_bad_attr; do
    echo "$out" | grep -q "$n" || fail "diagnostics do not name $n"
done
echo "$out" | grep -q "opset 13" || fail "diagnostics do not give the opset"
[ ! -e "$work/bad.bin" ] || fail "a failed compile left an output file"
ls "$work" | grep -q '\.tmp' && fail "a failed compile left a temporary file"

# A failed compile never clobbers an existing output.
echo "precious" > "$work/keep.bin"
"$KANN_C" "$work/bad.onnx" -o "$work/keep.bin" >/dev/null 2>&1 && fail "bad model compiled"
[ "$(cat "$work/keep.bin")" = "precious" ] || fail "existing output was overwritten"

# Usage errors exit 2, unreadable or corrupt inputs 3.
"$KANN_C" >/dev/null 2>&1; [ $? -eq 2 ] || fail "no arguments: expected exit 2"
"$KANN_C" "$work/bad.onnx" --cores 0 -o x >/dev/null 2>&1; [ $? -eq 2 ] || fail "--cores 0: expected 2"
"$KANN_C" "$work/missing.onnx" -o "$work/m.bin" >/dev/null 2>&1; [ $? -eq 3 ] || fail "missing file: expected 3"
head -c 1000 /dev/urandom > "$work/garbage.onnx"
"$KANN_C" "$work/garbage.onnx" -o "$work/g.bin" >/dev/null 2>&1; [ $? -eq 3 ] || fail "garbage: expected 3"
[ ! -e "$work/g.bin" ] || fail "garbage input left an output"

# kann-run: a corrupt model.bin is refused with exit 3, never a crash.
head -c 5000 /dev/urandom > "$work/garbage.bin"
"$KANN_RUN" "$work/garbage.bin" >/dev/null 2>&1; code=$?
[ $code -eq 3 ] || fail "kann-run on garbage: exit $code, expected 3"
echo "1 passed, 0 failed"
