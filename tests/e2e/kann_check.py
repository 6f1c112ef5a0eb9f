"""Compiles models with kann-c, runs them with kann-run and compares every output with ONNX
Runtime's: max|out - ref| / max|ref| <= tolerance. Used by the e2e tests and the benchmark.

  kann_check.py cases [--cores 1,2] [--threads 1,2]          the generated cases (cases.py)
  kann_check.py model MODEL.onnx INPUT.npy [REF.npy] [...]   one model (ref from ONNX Runtime
                                                             when REF is not given)
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

KANN_C = os.environ.get("KANN_C", "kann-c")
KANN_RUN = os.environ.get("KANN_RUN", "kann-run")
BACKEND_ARGS = []  # --backend opencl: extra kann-run arguments
# --allow-unsupported: a backend refusing a model for a kernel it lacks is reported, not failed
UNSUPPORTED = {"allowed": False, "seen": []}


def rel_error(out, ref):
    out, ref = np.asarray(out, np.float64), np.asarray(ref, np.float64)
    if out.shape != ref.shape:
        return float("inf")
    scale = np.max(np.abs(ref)) if ref.size else 0.0
    diff = np.max(np.abs(out - ref)) if ref.size else 0.0
    return diff / scale if scale > 0 else diff


def ort_outputs(model_path, feeds):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    sess = ort.InferenceSession(model_path, so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, feeds)))


def compile_model(model_path, out_bin, cores, extra=()):
    cmd = [KANN_C, model_path, "-o", out_bin, "--cores", str(cores), *extra]
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def run_model(model_bin, feeds, out_dir, threads):
    cmd = [KANN_RUN, model_bin, "--threads", str(threads), "--output-dir", out_dir, *BACKEND_ARGS]
    for name, path in feeds.items():
        cmd += ["-i", f"{name}={path}"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def same_bits(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def safe(name):
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name)


def check(name, model_path, feeds, refs, work, cores_list, threads_list, tol, extra=(),
          expect_summary=None):
    """Returns a list of failure messages (empty when everything matched)."""
    failures = []
    feed_files = {}
    for k, v in feeds.items():
        path = os.path.join(work, f"{safe(name)}.in.{safe(k)}.npy")
        np.save(path, v)
        feed_files[k] = path
    for cores in cores_list:
        first = {}  # output name -> the first thread count's output: more threads give the same bits
        model_bin = os.path.join(work, f"{safe(name)}.p{cores}.bin")
        code, log = compile_model(model_path, model_bin, cores, extra)
        if code != 0:
            failures.append(f"{name}: kann-c --cores {cores} failed ({code}):\n{log}")
            continue
        if expect_summary and expect_summary not in log:
            failures.append(f"{name}: summary lacks '{expect_summary}':\n{log}")
        for threads in threads_list:
            if threads > cores:
                continue
            out_dir = os.path.join(work, f"{safe(name)}.p{cores}.t{threads}")
            os.makedirs(out_dir, exist_ok=True)
            code, log = run_model(model_bin, feed_files, out_dir, threads)
            if code != 0 and UNSUPPORTED["allowed"] and "backend has no kernel" in log:
                print(f"  {name:34s} P={cores}: unsupported by the backend: {log.strip()}")
                UNSUPPORTED["seen"].append(name)
                continue
            if code != 0:
                failures.append(f"{name}: kann-run (P={cores}, T={threads}) failed ({code}):\n{log}")
                continue
            for oname, ref in refs.items():
                path = os.path.join(out_dir, safe(oname) + ".npy")
                if not os.path.exists(path):
                    failures.append(f"{name}: output {oname} not written ({path})")
                    continue
                out = np.load(path)
                err = rel_error(out, ref)
                status = "ok" if err <= tol else "MISMATCH"
                print(f"  {name:34s} P={cores} T={threads} {oname}: rel err {err:.2e} {status}")
                if err > tol:
                    failures.append(f"{name}: output {oname} P={cores} T={threads}: "
                                    f"rel err {err:.3e} > {tol}")
                if BACKEND_ARGS:
                    continue
                if oname not in first:
                    first[oname] = (threads, out)
                elif not same_bits(out, first[oname][1]):
                    failures.append(f"{name}: output {oname} P={cores}: {threads} threads differ "
                                    f"from {first[oname][0]} (records cut into parts must "
                                    f"compute the bits the whole does)")
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["cases", "model"])
    ap.add_argument("files", nargs="*")
    ap.add_argument("--cores", default="1,2")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--only", default=None, help="run only cases whose name contains this")
    ap.add_argument("--backend", default="cpu", help="kann-run --backend (cpu or opencl)")
    ap.add_argument("--allow-unsupported", action="store_true",
                    help="report, not fail, models the backend refuses for a kernel it lacks")
    args = ap.parse_args()
    BACKEND_ARGS[:] = ["--backend", args.backend] if args.backend != "cpu" else []
    UNSUPPORTED["allowed"] = args.allow_unsupported
    cores = [int(c) for c in args.cores.split(",")]
    threads = [int(t) for t in args.threads.split(",")]
    failures = []
    n = 0
    with tempfile.TemporaryDirectory() as work:
        if args.what == "cases":
            sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
            import importlib
            import onnx
            # cases.py and the op families' cases_<family>.py modules
            modules = [importlib.import_module(m) for m in
                       ("cases", "cases_data", "cases_reduce", "cases_transformer",
                        "cases_elementwise")]
            for name, m, feeds, extra in (c for mod in modules for c in mod.all_cases()):
                if args.only and args.only not in name:
                    continue
                expect = None
                if "--expect-summary" in extra:
                    i = extra.index("--expect-summary")
                    expect = extra[i + 1]
                    extra = extra[:i] + extra[i + 2:]
                path = os.path.join(work, name + ".onnx")
                onnx.save(m, path)
                refs = ort_outputs(path, feeds)
                failures += check(name, path, feeds, refs, work, cores, threads, args.tol, extra,
                                  expect)
                n += 1
        else:
            model_path, input_path = args.files[0], args.files[1]
            import onnx
            m = onnx.load(model_path, load_external_data=False)
            init_names = {i.name for i in m.graph.initializer}
            input_name = [i.name for i in m.graph.input if i.name not in init_names][0]
            feeds = {input_name: np.load(input_path)}
            if len(args.files) > 2:
                out_name = m.graph.output[0].name
                refs = {out_name: np.load(args.files[2])}
            else:
                refs = ort_outputs(model_path, feeds)
            name = os.path.splitext(os.path.basename(model_path))[0]
            failures += check(name, model_path, feeds, refs, work, cores, threads, args.tol)
            n = 1
    for f in failures:
        print("FAIL", f)
    if UNSUPPORTED["seen"]:
        print(f"{len(set(UNSUPPORTED['seen']))} refused by the backend (a kernel it lacks): "
              + ", ".join(sorted(set(UNSUPPORTED["seen"]))))
    print(f"{n - len(set(f.split(':')[0] for f in failures))} passed, "
          f"{len(set(f.split(':')[0] for f in failures))} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
