"""Compiles text models (ONNX text syntax) with kann-c, runs them with kann-run, and compares
every output with ONNX Runtime on the same text converted by onnx.parser.parse_model (after
checking that kann-c builds the same ModelProto). Unknown dimensions are bound to 1, as kann-c
does by default.

  text_e2e.py MODEL.onnxtxt...
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnx.parser

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kann_check  # noqa: E402


def random_feeds(model, rng):
    inits = {i.name for i in model.graph.initializer}
    feeds = {}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        dims = [d.dim_value if d.HasField("dim_value") else 1
                for d in vi.type.tensor_type.shape.dim]
        feeds[vi.name] = rng.standard_normal(dims).astype(np.float32)
    return feeds


def main():
    rng = np.random.default_rng(7)
    failures = []
    with tempfile.TemporaryDirectory() as work:
        for path in sys.argv[1:]:
            name = os.path.splitext(os.path.basename(path))[0]
            ref_model = onnx.parser.parse_model(open(path, encoding="utf-8").read())
            onnx.checker.check_model(ref_model)
            saved = os.path.join(work, name + ".onnx")
            p = subprocess.run([kann_check.KANN_C, path, "--save-onnx", saved],
                               capture_output=True, text=True)
            if p.returncode != 0 or onnx.load(saved) != ref_model:
                failures.append(f"{name}: kann-c's ModelProto differs from onnx.parser's "
                                f"{p.stderr}")
                continue
            feeds = random_feeds(ref_model, rng)
            refs = kann_check.ort_outputs(saved, feeds)
            failures += kann_check.check(name, path, feeds, refs, work, [1, 2], [1, 2], 1e-4)
    for f in failures:
        print("FAIL", f)
    print(f"{len(sys.argv) - 1 - len({f.split(':')[0] for f in failures})} passed, "
          f"{len({f.split(':')[0] for f in failures})} failed")
    return 1 if failures or len(sys.argv) < 2 else 0


if __name__ == "__main__":
    sys.exit(main())
