#!/usr/bin/env bash
# kann-run --profile on mobilenet_v2 compiled for 2 streams: one row per layer (the tiles of
# both streams summed; an inverted residual block run as one f32_dwblock record is one row,
# named after its expansion, and there are some), in run order, each row's median time positive, the MACs those of the
# network (300.77 M), the shares summing to 100 %; a projection summed across the streams adds
# a row of its own (f32_binary, the same node); with --bench 1 the median of one run.
# Skipped (77) when the shared models are absent.
set -euo pipefail
dir=${KANN_MODELS_DIR:-$KANN_SOURCE_DIR/../shared/models}
[ -f "$dir/mobilenet_v2.onnx" ] || { echo "no shared models in '$dir': skipped"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$KANN_C" -q --cores 2 "$dir/mobilenet_v2.onnx" -o "$work/m.bin"
status=0
for runs in 1 6; do
    "$KANN_RUN" "$work/m.bin" -i "$dir/mobilenet_v2.input.npy" --profile --bench "$runs" \
        > "$work/out.txt"
    "${PYTHON:-python3}" - "$dir/mobilenet_v2.onnx" "$work/out.txt" "$runs" <<'PY' || status=1
import sys
import onnx

model, out, runs = sys.argv[1], open(sys.argv[2]).read().splitlines(), int(sys.argv[3])
head = [l for l in out if l.startswith("profile (")]
assert head and f"median of {runs} single-threaded runs" in head[0], head
rows = [l.split() for l in out if " f32_" in l]
layers = [r for r in rows if r[1] != "f32_binary"]
for i, r in enumerate(rows):
    if r[1] == "f32_binary":  # the sum of a projection's partials: its conv's node
        assert i > 0 and rows[i - 1][0] == r[0], r
        assert rows[i - 1][1] in ("f32_conv2d_packed", "f32_pointwise_lanes"), r
total = [l.split() for l in out if l.startswith("total ")]
assert total, "no total row"
# the layers kann-c keeps: every Conv (activations fused), the pooling and the classifier; a
# block's three convs (features.N/conv/...) in one f32_dwblock row, the last conv and the
# pooling after it in one f32_pointwise_gap row
names = [n.name for n in onnx.load(model).graph.node
         if n.op_type in ("Conv", "GlobalAveragePool", "Gemm")]
assert len(rows) > len(layers), "no projection summed across the streams"
j = 0
for r in layers:
    assert j < len(names) and names[j].startswith(r[0]), (r[0], names[j:j + 1])
    mmac, ms, share = float(r[2]), float(r[3]), float(r[5])
    assert ms > 0 and share >= 0, r
    block = names[j].rsplit("/conv/", 1)[0] + "/conv/"
    j += 3 if r[1] == "f32_dwblock" else 2 if r[1] == "f32_pointwise_gap" else 1
    assert r[1] != "f32_dwblock" or all(n.startswith(block) for n in names[j - 3:j]), r
    assert r[1] != "f32_pointwise_gap" or "GlobalAveragePool" in names[j - 1], r
assert j == len(names), (j, len(names))
assert any(r[1] == "f32_dwblock" for r in layers), "no block as one record"
assert any(r[1] == "f32_pointwise_gap" for r in layers), "no head as one record"
macs = sum(float(r[2]) for r in rows)
# the rows are rounded to 0.01 MMAC, the total is not
assert abs(float(total[0][1]) - 300.77) < 0.01, total
assert abs(macs - 300.77) < 0.005 * len(rows) + 0.01, (macs, total)
assert abs(sum(float(r[5]) for r in rows) - 100) < 0.5
assert abs(sum(float(r[3]) for r in rows) - float(total[0][2])) < 1e-3 * len(rows)
print(f"profile with {runs} run(s): {len(layers)} layers ({len(rows)} rows), {macs:.2f} MMAC")
PY
done
exit $status
