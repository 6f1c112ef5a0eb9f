"""The ONNX backend test suite (Debian libonnx-testdata) through kann-c and kann-run.

For each case (model.onnx + test_data_set_*/input_*.pb, output_*.pb): compile, run every data
set, compare every output. A case is
  pass         it compiled and every output of every data set matched,
  fail         it compiled but some output differs (or the run failed): a wrong answer,
  unsupported  kann-c refused it (the first diagnostic is the reason).
Tolerance: |out - ref| <= atol + rtol * |ref| elementwise with rtol = 1e-3, atol = 1e-5 for
floating point (the ONNX backend tests' own rtol); integers and booleans exactly.

  run_conformance.py [--data DIR] [--report docs/conformance.md] [--only SUBSTR] [--jobs N]
                     [--backend cpu|opencl] [--every N]

--backend opencl runs every compiled case through kann-run --backend opencl: a case the backend
refuses at load is a fail (it compiled). --every N keeps every N-th case of the sorted list (a
deterministic subset).

Exit status 1 when any case fails (a case that compiles must pass), else 0.
"""
import argparse
import collections
import concurrent.futures
import glob
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

DATA = "/usr/share/libonnx-testdata/data"
SUITES = ["node", "pytorch-converted", "pytorch-operator", "simple"]
RTOL, ATOL = 1e-3, 1e-5
KANN_C = os.environ.get("KANN_C", "kann-c")
KANN_RUN = os.environ.get("KANN_RUN", "kann-run")
BACKEND_ARGS = []  # --backend opencl: extra kann-run arguments


def load_pb(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t


def model_ops(path):
    try:
        m = onnx.load(path, load_external_data=False)
        return sorted({n.op_type for n in m.graph.node}) or ["(none)"]
    except Exception:
        return ["(unreadable)"]


def close(out, ref):
    if out.shape != ref.shape:
        return False, f"shape {list(out.shape)} != {list(ref.shape)}"
    if ref.dtype.kind == "f":
        out64, ref64 = out.astype(np.float64), ref.astype(np.float64)
        nan_ok = np.isnan(out64) == np.isnan(ref64)
        diff = np.abs(out64 - ref64)
        bad = ~(diff <= ATOL + RTOL * np.abs(ref64)) & ~(np.isnan(out64) & np.isnan(ref64))
        bad |= ~nan_ok
        if bad.any():
            return False, f"max abs diff {np.nanmax(diff):.3g}"
        return True, ""
    if out.dtype != ref.dtype and not (out.dtype.kind == ref.dtype.kind):
        return False, f"dtype {out.dtype} != {ref.dtype}"
    if not np.array_equal(out, ref):
        return False, "values differ"
    return True, ""


def first_error(log):
    for line in log.splitlines():
        m = re.search(r"error: (.*)", line)
        if m:
            return m.group(1)
    return log.strip().splitlines()[-1] if log.strip() else "unknown"


def run_case(case_dir, work):
    name = os.path.relpath(case_dir, DATA)
    model = os.path.join(case_dir, "model.onnx")
    out_bin = os.path.join(work, name.replace("/", "__") + ".bin")
    p = subprocess.run([KANN_C, model, "-o", out_bin, "--cores", "2", "-q"],
                       capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        return name, "unsupported", first_error(p.stderr + p.stdout)
    graph_outputs = [o.name for o in onnx.load(model, load_external_data=False).graph.output]
    try:
        sets = sorted(glob.glob(os.path.join(case_dir, "test_data_set_*")))
        if not sets:
            return name, "unsupported", "no test data"
        for ds in sets:
            inputs = sorted(glob.glob(os.path.join(ds, "input_*.pb")),
                            key=lambda s: int(re.findall(r"\d+", os.path.basename(s))[0]))
            outputs = sorted(glob.glob(os.path.join(ds, "output_*.pb")),
                             key=lambda s: int(re.findall(r"\d+", os.path.basename(s))[0]))
            out_dir = os.path.join(work, name.replace("/", "__") + "." + os.path.basename(ds))
            os.makedirs(out_dir, exist_ok=True)
            cmd = [KANN_RUN, out_bin, "--threads", "2", "--output-dir", out_dir, *BACKEND_ARGS]
            for i in inputs:
                cmd += ["-i", i]
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
            if r.returncode != 0:
                return name, "fail", f"kann-run failed ({r.returncode}): {first_error(r.stderr)}"
            for k, o in enumerate(outputs):
                t = load_pb(o)
                ref = numpy_helper.to_array(t)
                # Some suites leave the tensor unnamed: output_k is the model's k-th output.
                oname = t.name or (graph_outputs[k] if k < len(graph_outputs) else "")
                safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in oname)
                path = os.path.join(out_dir, safe + ".npy")
                if not os.path.exists(path):
                    return name, "fail", f"output '{oname}' not written"
                ok, why = close(np.load(path), ref)
                if not ok:
                    return name, "fail", f"{os.path.basename(ds)} output '{oname}': {why}"
        return name, "pass", ""
    finally:
        if os.path.exists(out_bin):
            os.unlink(out_bin)


def write_report(path, results, ops_of):
    counts = collections.Counter(r[1] for r in results)
    per_op = collections.defaultdict(collections.Counter)
    reasons = collections.Counter()
    for name, status, why in results:
        for op in ops_of[name]:
            per_op[op][status] += 1
        if status == "unsupported":
            reasons[re.sub(r"'[^']*'", "'…'", why)[:110]] += 1
    lines = ["# ONNX backend test suite: conformance", "",
             "Generated by `tests/conformance/run_conformance.py` over Debian's libonnx-testdata "
             "(ONNX 1.12 backend test data: node, pytorch-converted, pytorch-operator, simple). "
             f"Tolerance: |out − ref| ≤ {ATOL:g} + {RTOL:g}·|ref| for floats, exact otherwise.", "",
             f"**{counts['pass']} pass, {counts['fail']} fail, {counts['unsupported']} unsupported "
             f"of {len(results)} cases.**", "",
             "## Per operator (cases that use it)", "",
             "| op | pass | fail | unsupported |", "|---|---|---|---|"]
    for op in sorted(per_op):
        c = per_op[op]
        lines.append(f"| {op} | {c['pass']} | {c['fail']} | {c['unsupported']} |")
    lines += ["", "## Why cases are unsupported (most frequent first)", "",
              "| cases | first diagnostic |", "|---|---|"]
    for why, n in reasons.most_common():
        lines.append(f"| {n} | {why.replace('|', '/')} |")
    lines += ["", "## Every case", "", "| case | result | detail |", "|---|---|---|"]
    for name, status, why in sorted(results):
        lines.append(f"| {name} | {status} | {why.replace('|', '/')[:160]} |")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    global DATA
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--report", default=None)
    ap.add_argument("--only", default=None)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--backend", default="cpu", help="kann-run --backend (cpu or opencl)")
    ap.add_argument("--every", type=int, default=1, help="keep every N-th case (a subset)")
    args = ap.parse_args()
    DATA = args.data
    BACKEND_ARGS[:] = ["--backend", args.backend] if args.backend != "cpu" else []
    if not os.path.isdir(DATA):
        print(f"no ONNX test data at {DATA}: skipped")
        return 77
    cases = []
    for suite in SUITES:
        for d in sorted(glob.glob(os.path.join(DATA, suite, "*"))):
            if os.path.exists(os.path.join(d, "model.onnx")) and (not args.only or args.only in d):
                cases.append(d)
    cases = cases[::max(args.every, 1)]
    ops_of = {os.path.relpath(d, DATA): model_ops(os.path.join(d, "model.onnx")) for d in cases}
    results = []
    with tempfile.TemporaryDirectory() as work:
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as ex:
            futures = {ex.submit(run_case, d, work): d for d in cases}
            for f in concurrent.futures.as_completed(futures):
                try:
                    results.append(f.result())
                except Exception as e:  # a timeout or a crash of the harness itself
                    results.append((os.path.relpath(futures[f], DATA), "fail", f"harness: {e}"))
    counts = collections.Counter(r[1] for r in results)
    for name, status, why in sorted(results):
        if status == "fail":
            print(f"FAIL {name}: {why}")
    if args.report:
        write_report(args.report, results, ops_of)
    print(f"conformance: {counts['pass']} pass, {counts['fail']} fail, "
          f"{counts['unsupported']} unsupported of {len(results)} cases")
    print(f"{counts['pass']} passed, {counts['fail']} failed")
    return 1 if counts["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
