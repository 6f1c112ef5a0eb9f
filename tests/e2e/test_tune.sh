#!/usr/bin/env bash
# kann-c --tune: on squeezenet1_1 (1 and 2 streams) it times every choice the cost model had (a
# conv's way, a fusion it leads), one line each with one pick kept, counts the choices it
# changed, keeps the changes only where the whole model then measures faster, and the tuned
# model still matches the reference output within 1e-4; on the sample CNN too (against ONNX
# Runtime when it is installed); a model without convs is compiled as without --tune; --tune
# refuses --target opencl (usage error) and an ISA this CPU does not run (rejected), and a model
# that does not compile fails as it would untuned, its errors said once, writing nothing.
# Skipped (77) when the shared models are absent.
set -euo pipefail
dir=${KANN_MODELS_DIR:-$KANN_SOURCE_DIR/../shared/models}
[ -f "$dir/squeezenet1_1.onnx" ] || { echo "no shared models in '$dir': skipped"; exit 77; }
py=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# check_tune LOG MODEL: the tuning table of LOG against the Conv nodes of MODEL
check_tune() {
    "$py" - "$1" "$2" <<'PY'
import re, sys
import onnx
log = open(sys.argv[1]).read().splitlines()
convs = {n.name for n in onnx.load(sys.argv[2]).graph.node if n.op_type == "Conv"}
assert log[0].startswith("kann-c: --tune: timing the model lowered "), log[0]
assert "medians of" in log[1], log[1]
rows, changed = [], None
for i, line in enumerate(log[2:], 2):
    m = re.fullmatch(r"  (\d+) choices? changed", line)
    if m:
        changed = int(m.group(1))
        break
    rows.append(line)
assert changed is not None, "no count of changed choices"
if changed:  # the tuned model against the cost model's, whole: the faster stands
    m = re.fullmatch(r"  the whole model, \d+ runs: ([\d.]+) ms as the cost model chose, "
                     r"([\d.]+) tuned: (tuned|the cost model's kept)", log[i + 1])
    assert m, log[i + 1]
    assert (m.group(3) == "tuned") == (float(m.group(2)) < float(m.group(1))) or \
        m.group(1) == m.group(2), log[i + 1]
ways = {"packed", "winograd-f2", "winograd-f4", "lanes"}
fusions = {"fused", "apart"}
moved = 0
for r in rows:
    name, *rest = r.split()
    assert name in convs, name
    cells = list(zip(rest[0::2], rest[1::2]))
    kind = ways if cells and cells[0][0] in ways else fusions  # a conv's way, or a fusion it leads
    assert len(cells) >= 2 and all(w in kind for w, _ in cells), r
    times = [float(t.rstrip("'*")) for _, t in cells]
    assert all(t > 0 for t in times), r
    own = [i for i, (_, t) in enumerate(cells) if "'" in t]
    kept = [i for i, (_, t) in enumerate(cells) if t.endswith("*")]
    assert len(own) == 1 and len(kept) == 1, r
    if kept != own:  # a way replaces the cost model's only where 5 % faster
        moved += 1
        assert times[kept[0]] < 0.95 * times[own[0]] + 1e-4, r
    else:
        assert all(t >= 0.95 * times[own[0]] - 1e-4 for t in times), r  # printed to 0.1 us
assert moved == changed, (moved, changed)
assert rows, "no conv timed"
print(f"{len(rows)} choices timed ({sum(r.split()[1] in fusions for r in rows)} fusions), "
      f"{changed} changed")
PY
}

status=0
for P in 1 2; do
    "$KANN_C" "$dir/squeezenet1_1.onnx" -o "$work/sq.bin" --cores "$P" --tune > "$work/log.txt"
    check_tune "$work/log.txt" "$dir/squeezenet1_1.onnx" || status=1
    "$KANN_RUN" "$work/sq.bin" -i "$dir/squeezenet1_1.input.npy" -o "$work/out.npy" --threads "$P" \
        > /dev/null
    "$py" - "$work/out.npy" "$dir/squeezenet1_1.output.npy" <<'PY' || status=1
import sys
import numpy as np
y, ref = np.load(sys.argv[1]), np.load(sys.argv[2])
err = float(np.abs(y - ref).max() / np.abs(ref).max())
assert y.shape == ref.shape and err <= 1e-4, (y.shape, ref.shape, err)
print(f"tuned squeezenet1_1: max|out - ref| / max|ref| = {err:.2e}")
PY
done

# the sample CNN: a Winograd conv and 1x1 convs
"$py" "$KANN_SOURCE_DIR/samples/sample_cnn.py" "$work" --size 96
"$KANN_C" "$work/sample_cnn.onnx" -o "$work/cnn.bin" --cores 2 --tune > "$work/log.txt"
check_tune "$work/log.txt" "$work/sample_cnn.onnx" || status=1
"$KANN_RUN" "$work/cnn.bin" -i "$work/sample_cnn.input.npy" -o "$work/cnn.npy" > /dev/null
"$py" - "$work/sample_cnn.onnx" "$work/sample_cnn.input.npy" "$work/cnn.npy" <<'PY' || status=1
import sys
import numpy as np
try:
    import onnxruntime as ort
except ImportError:
    print("no onnxruntime: the sample CNN's output not compared")
    sys.exit(0)
s = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
ref = s.run(None, {s.get_inputs()[0].name: np.load(sys.argv[2])})[0]
y = np.load(sys.argv[3])
err = float(np.abs(y - ref).max() / np.abs(ref).max())
assert err <= 1e-4, err
print(f"tuned sample CNN: {err:.2e}")
PY

# no conv: nothing to time, the same outputs as untuned, bit for bit
mlp=$KANN_SOURCE_DIR/samples/sample_mlp.onnxtxt
"$KANN_C" "$mlp" -o "$work/mlp_tuned.bin" --tune > "$work/log.txt"
grep -q "no conv here has more than one way to lower" "$work/log.txt" || { cat "$work/log.txt"; status=1; }
"$KANN_C" -q "$mlp" -o "$work/mlp.bin"
"$py" -c "import numpy as np; np.save('$work/f.npy', np.linspace(-1, 1, 8, dtype=np.float32).reshape(1, 8))"
"$KANN_RUN" "$work/mlp.bin" -i "$work/f.npy" -o "$work/a.npy" > /dev/null
"$KANN_RUN" "$work/mlp_tuned.bin" -i "$work/f.npy" -o "$work/b.npy" > /dev/null
cmp "$work/a.npy" "$work/b.npy" || status=1

# refused: --target opencl; a model that does not compile writes nothing
set +e
"$KANN_C" "$dir/squeezenet1_1.onnx" -o "$work/x.bin" --tune --target opencl 2> "$work/err.txt"
rc=$?
set -e
[ "$rc" = 2 ] && grep -q "does not tune for --target opencl" "$work/err.txt" || { echo "opencl: rc $rc"; status=1; }
set +e
KANN_ISA=vax "$KANN_C" "$work/sample_cnn.onnx" -o "$work/x.bin" --tune > /dev/null 2> "$work/err.txt"
rc=$?
set -e
[ "$rc" = 1 ] && [ ! -e "$work/x.bin" ] && grep -q "KANN_ISA=vax is not an ISA this CPU runs" "$work/err.txt" ||
    { echo "KANN_ISA=vax: rc $rc"; status=1; }
printf 'bad' > "$work/bad.onnx"
set +e
"$KANN_C" "$work/bad.onnx" -o "$work/bad.bin" --tune 2> "$work/err.txt"
rc=$?
set -e
# its error once: the compiles --tune makes print nothing
[ "$rc" != 0 ] && [ ! -e "$work/bad.bin" ] && grep -q "no output written" "$work/err.txt" &&
    [ "$(grep -c ': error: ' "$work/err.txt")" = 1 ] ||
    { echo "bad model: rc $rc"; cat "$work/err.txt"; status=1; }
exit $status
