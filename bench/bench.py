"""Batch-1 latency of kann-c against ONNX Runtime, same machine, same run, as a ratio.

  python3 bench/bench.py [--models-dir ../shared/models] [--threads 1,2] [--runs 50] [--rounds 5]

Models: the shared ones (squeezenet1_1, mobilenet_v2, resnet18) when present, the sample CNN,
and a BERT-style encoder (4 layers, hidden 256, 4 heads, sequence 64; tests/e2e/cases_transformer.py).
For each model and thread count T: compiles with `kann-c --cores T`, opens an ONNX Runtime
session (CPU provider, intra_op_num_threads=T, inter_op_num_threads=1, sequential, all graph
optimizations, 10 warm-up runs), then alternates the two engines over ROUNDS rounds of
RUNS / ROUNDS runs each (`kann-run --bench --threads T`, its own warm-up runs first; the session's
runs timed one by one), the engine going first swapping every round. Each engine's latency is
the median of its round medians: the host's noise comes in bursts of seconds on one core or
both, and alternating short rounds exposes both engines to the same bursts where one long
block each would not. On one thread both engines of a round run on the same CPU (the bench
pins itself, kann-run inherits it), the CPU changing every two rounds: left to the scheduler,
kann-run, a new process, went to whichever CPU the bench was not on, and on a host where one
virtual CPU is slowed for seconds at a time (another tenant on its core) one engine got the slow
one round after round. Prints a Markdown table; ratio = kann-c / ONNX Runtime (< 1 is faster).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def tool(name, build):
    sub = "compiler" if name == "kann-c" else "runtime"
    return os.environ.get(name.upper().replace("-", "_"), os.path.join(build, sub, name))


def ort_session(model, threads):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.log_severity_level = 3
    return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])


def ort_round_ms(sess, feeds, runs):
    """The median of runs timed runs of an open, warmed-up session."""
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        sess.run(None, feeds)
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def kann_compile(kann_c, model, threads, work):
    out = os.path.join(work, os.path.basename(model) + f".p{threads}.bin")
    subprocess.run([kann_c, model, "-o", out, "--cores", str(threads), "-q"], check=True)
    return out


def kann_round_ms(kann_run, binary, inputs, threads, runs):
    """inputs: input name -> .npy path. The median of runs timed runs of kann-run."""
    cmd = [kann_run, binary, "--threads", str(threads), "--bench", str(runs), "--json"]
    for name, path in inputs.items():
        cmd += ["-i", f"{name}={path}"]
    p = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(p.stdout)["latency_ms"]["median"]


def compare(kann_c, kann_run, model, inputs, feeds, threads, runs, rounds, work):
    """Median of round medians of both engines, alternated round by round."""
    binary = kann_compile(kann_c, model, threads, work)
    sess = ort_session(model, threads)
    for _ in range(10):
        sess.run(None, feeds)
    per_round = max(1, runs // rounds)
    k, o = [], []
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    try:
        for r in range(rounds):
            if threads == 1 and len(cpus) > 1:  # both engines on one CPU, each order on each
                os.sched_setaffinity(0, {cpus[(r // 2) % len(cpus)]})
            engines = [lambda: k.append(kann_round_ms(kann_run, binary, inputs, threads,
                                                      per_round)),
                       lambda: o.append(ort_round_ms(sess, feeds, per_round))]
            for run in engines if r % 2 == 0 else engines[::-1]:
                run()
    finally:
        if cpus:
            os.sched_setaffinity(0, set(cpus))
    return statistics.median(k), statistics.median(o)


def models(args):
    """The shared models present: (name, model path, input .npy path)."""
    found = []
    d = args.models_dir
    for m in ["squeezenet1_1", "mobilenet_v2", "resnet18"]:
        if d and os.path.exists(os.path.join(d, m + ".onnx")):
            found.append((m, os.path.join(d, m + ".onnx"), os.path.join(d, m + ".input.npy")))
    return found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models-dir", default=os.environ.get(
        "KANN_MODELS_DIR", os.path.join(ROOT, "..", "shared", "models")))
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--runs", type=int, default=50, help="timed runs per engine, all rounds")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-generated", action="store_true",
                    help="only the shared models, not the sample CNN and the BERT encoder")
    args = ap.parse_args()
    kann_c, kann_run = tool("kann-c", args.build), tool("kann-run", args.build)
    threads = [int(t) for t in args.threads.split(",")]
    import onnx
    with tempfile.TemporaryDirectory() as work:
        todo = models(args)
        sys.path.insert(0, os.path.join(ROOT, "samples"))
        sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
        import sample_cnn
        import cases_transformer
        generated = [] if args.no_generated else [("sample_cnn", sample_cnn.build(224)),
                                                  ("bert_encoder", cases_transformer.build())]
        for name, (m, feeds) in generated:
            path = os.path.join(work, name + ".onnx")
            onnx.save(m, path)
            paths = {}
            for k, v in feeds.items():
                paths[k] = os.path.join(work, f"{name}.{k}.npy")
                np.save(paths[k], v)
            todo.append((name, path, paths))
        rows = []
        for name, model, inputs in todo:
            if not isinstance(inputs, dict):
                mp = onnx.load(model, load_external_data=False)
                inits = {i.name for i in mp.graph.initializer}
                inputs = {[i.name for i in mp.graph.input if i.name not in inits][0]: inputs}
            feeds = {k: np.load(p) for k, p in inputs.items()}
            for t in threads:
                k, o = compare(kann_c, kann_run, model, inputs, feeds, t, args.runs,
                               max(1, args.rounds), work)
                rows.append((name, t, k, o))
                print(f"{name:14s} T={t}  kann-c {k:8.2f} ms  onnxruntime {o:8.2f} ms  "
                      f"ratio {k / o:5.2f}", file=sys.stderr)
    import onnxruntime
    print(f"| model | threads | kann-c median (ms) | ONNX Runtime {onnxruntime.__version__} "
          f"median (ms) | ratio |")
    print("|---|---|---|---|---|")
    for name, t, k, o in rows:
        print(f"| {name} | {t} | {k:.2f} | {o:.2f} | {k / o:.2f} |")


if __name__ == "__main__":
    main()
