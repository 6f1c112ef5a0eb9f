#!/usr/bin/env bash
# kann-c and text models: the format is told by content (a text model named .onnx compiles),
# --print shows a binary model as text, --save-onnx writes the binary, a syntax error exits 3
# with file:line:col and writes nothing.
set -uo pipefail
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
src="$KANN_SOURCE_DIR/samples/sample_mlp.onnxtxt"

cp "$src" "$work/looks_binary.onnx"
"$KANN_C" "$work/looks_binary.onnx" -o "$work/a.bin" -q || fail "a text model named .onnx"
"$KANN_C" "$src" -o "$work/b.bin" -q || fail "compiling the sample text model"
"$KANN_C" "$src" --save-onnx "$work/m.onnx" || fail "--save-onnx"
"$KANN_C" "$work/m.onnx" -o "$work/c.bin" -q || fail "compiling the saved binary"
"$KANN_C" "$src" --print > "$work/p1.txt" || fail "--print of text"
"$KANN_C" "$work/m.onnx" --print > "$work/p2.txt" || fail "--print of the binary"
cmp -s "$work/p1.txt" "$work/p2.txt" || fail "text and binary print differently"
grep -q '^sample_mlp (float\[1,8\] features) => (float\[1,3\] probabilities)' "$work/p1.txt" ||
    fail "unexpected printed text: $(head -12 "$work/p1.txt")"
# Both compiles read the same model: the model.bin files differ only in the source hash and
# path in their metadata, so compare the compile summaries instead.
s1=$("$KANN_C" "$src" -o "$work/d.bin" | tail -n +2)
s2=$("$KANN_C" "$work/m.onnx" -o "$work/e.bin" | tail -n +2)
[ "$s1" = "$s2" ] || fail "text and binary compile differently: $s1 / $s2"

printf '<ir_version: 8, opset_import: ["" : 13]>\ng (float[2] x) => (float[2] y)\n{\n    y = Relu(x\n}\n' \
    > "$work/bad.onnxtxt"
out=$("$KANN_C" "$work/bad.onnxtxt" -o "$work/bad.bin" 2>&1); code=$?
echo "$out"
[ $code -eq 3 ] || fail "syntax error: exit $code, expected 3"
echo "$out" | grep -q "bad.onnxtxt:5:1: error: expected ')' after the node's inputs, found '}'" ||
    fail "no file:line:col diagnostic"
echo "$out" | grep -q '^      | \^$' || fail "no caret line"
[ ! -e "$work/bad.bin" ] || fail "a failed compile left an output"
"$KANN_C" "$work/bad.onnxtxt" --print >/dev/null 2>&1; [ $? -eq 3 ] || fail "--print of bad text"
"$KANN_C" "$work/missing.onnxtxt" --print >/dev/null 2>&1; [ $? -eq 3 ] || fail "missing file"
echo "1 passed, 0 failed"
