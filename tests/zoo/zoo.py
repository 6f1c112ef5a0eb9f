"""Real exported models through kann-c: torchvision and Hugging Face architectures exported by
PyTorch's TorchScript exporter (opsets 13/14 and 17) and its dynamo exporter (opset 18), with
random weights (batch-norm statistics randomized so the folds matter), each compiled with kann-c,
run with kann-run and compared with ONNX Runtime: max|out - ref| / max|ref| <= 1e-4.

Needs torch, torchvision, transformers and onnxscript (pip), which the test suite does not
install; this is a coverage tool, run by hand:

  python3 tests/zoo/zoo.py --out /tmp/zoo --build build [--only NAME,...] [--report docs/models.md]
                           [--bench RUNS]

--bench RUNS also times the first exporter's model that passes: kann-run --threads 1 against
ONNX Runtime with one thread in the same run (bench/bench.py's timers), as a ratio.

Exports are cached in --out. Exit status 1 when any model fails to compile or mismatches.
"""
import argparse
import os
import subprocess
import sys
import warnings

import numpy as np

TOL = 1e-4
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))


def vision(name, make, hw=224):
    return name, make, lambda torch: (torch.randn(1, 3, hw, hw),)


def video(name, make, frames=8, hw=112):
    return name, make, lambda torch: (torch.randn(1, 3, frames, hw, hw),)


def text(name, make, seq=32, mask=True):
    def inputs(torch):
        ids = torch.randint(0, 1000, (1, seq))
        return (ids, torch.ones(1, seq, dtype=torch.long)) if mask else (ids,)
    return name, make, inputs


def models():
    import torchvision.models as M
    import transformers as T

    small = dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                 intermediate_size=256, vocab_size=1000)
    seg = M.segmentation
    return [
        vision("mobilenet_v3_small", M.mobilenet_v3_small),
        vision("mobilenet_v3_large", M.mobilenet_v3_large),
        vision("efficientnet_b0", M.efficientnet_b0),
        vision("efficientnet_v2_s", M.efficientnet_v2_s),
        vision("shufflenet_v2_x0_5", M.shufflenet_v2_x0_5),
        vision("mnasnet0_5", M.mnasnet0_5),
        vision("resnet18", M.resnet18),
        vision("resnext50_32x4d", M.resnext50_32x4d),
        vision("googlenet", lambda: M.googlenet(init_weights=True, aux_logits=False)),
        vision("inception_v3", lambda: M.inception_v3(init_weights=True, aux_logits=False), 299),
        vision("densenet121", M.densenet121),
        vision("regnet_x_400mf", M.regnet_x_400mf),
        vision("regnet_y_400mf", M.regnet_y_400mf),
        vision("squeezenet1_0", M.squeezenet1_0),
        vision("alexnet", M.alexnet),
        vision("convnext_tiny", M.convnext_tiny),
        vision("vit_b_32", M.vit_b_32),
        vision("swin_t", M.swin_t),
        vision("maxvit_t", M.maxvit_t),
        vision("lraspp_mobilenet_v3", lambda: seg.lraspp_mobilenet_v3_large(
            weights=None, weights_backbone=None)),
        vision("deeplabv3_mobilenet_v3", lambda: seg.deeplabv3_mobilenet_v3_large(
            weights=None, weights_backbone=None, aux_loss=False)),
        vision("fcn_resnet50", lambda: seg.fcn_resnet50(
            weights=None, weights_backbone=None, aux_loss=False)),
        vision("deeplabv3_resnet50", lambda: seg.deeplabv3_resnet50(
            weights=None, weights_backbone=None, aux_loss=False)),
        video("r3d_18", M.video.r3d_18),
        video("mc3_18", M.video.mc3_18),
        video("r2plus1d_18", M.video.r2plus1d_18),
        text("bert", lambda: T.BertModel(T.BertConfig(max_position_embeddings=128, **small))),
        text("roberta", lambda: T.RobertaModel(T.RobertaConfig(
            max_position_embeddings=128, pad_token_id=1, **small))),
        text("albert", lambda: T.AlbertModel(T.AlbertConfig(embedding_size=64, **small))),
        text("distilbert", lambda: T.DistilBertModel(T.DistilBertConfig(
            dim=128, n_layers=2, n_heads=4, hidden_dim=256, vocab_size=1000))),
        text("gpt2", lambda: T.GPT2Model(T.GPT2Config(
            n_embd=128, n_layer=2, n_head=4, vocab_size=1000, n_positions=128)), mask=False),
        text("t5_encoder", lambda: T.T5EncoderModel(T.T5Config(
            d_model=128, num_layers=2, num_heads=4, d_ff=256, d_kv=32, vocab_size=1000)),
            mask=False),
        ("vit_hf", lambda: T.ViTModel(T.ViTConfig(image_size=64, patch_size=8, **{
            k: v for k, v in small.items() if k != "vocab_size"})),
         lambda torch: (torch.randn(1, 3, 64, 64),)),
        ("mobilevit_hf", lambda: T.MobileViTModel(T.MobileViTConfig(image_size=64)),
         lambda torch: (torch.randn(1, 3, 64, 64),)),
    ]


EXPORTERS = {"ts13": ("torchscript", 13), "ts17": ("torchscript", 17),
             "dynamo18": ("dynamo", 18)}


def export(torch, name, make, make_inputs, out_dir, exporters):
    """Writes OUT/NAME.EXPORTER.onnx for each exporter and OUT/NAME.inK.npy; returns the paths
    written (or cached) and the export failures."""
    torch.manual_seed(0)
    model = make().eval()
    for mod in model.modules():  # statistics that make the batch-norm folds matter
        if isinstance(mod, torch.nn.modules.batchnorm._BatchNorm):
            mod.running_mean.uniform_(-0.5, 0.5)
            mod.running_var.uniform_(0.5, 2.0)
    for p in model.parameters():  # zero-initialized heads would make the output trivially 0
        if p.dim() >= 1 and not p.detach().abs().sum():
            p.data.normal_(0, 0.02)

    class FirstOutput(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, *a):
            o = self.m(*a)
            if isinstance(o, dict) or hasattr(o, "keys"):
                o = list(o.values())
            return o[0] if isinstance(o, (tuple, list)) else o

    wrapped = FirstOutput(model).eval()
    inputs = make_inputs(torch)
    names = [f"in{i}" for i in range(len(inputs))]
    for i, x in enumerate(inputs):
        np.save(os.path.join(out_dir, f"{name}.in{i}.npy"), x.numpy())
    done, failed = [], []
    for ex in exporters:
        kind, opset = EXPORTERS[ex]
        path = os.path.join(out_dir, f"{name}.{ex}.onnx")
        if not os.path.exists(path):
            try:
                with torch.no_grad():
                    kw = dict(dynamo=kind == "dynamo", opset_version=opset, input_names=names,
                              output_names=["out"])
                    if kind == "dynamo":
                        kw["external_data"] = False
                    torch.onnx.export(wrapped, inputs, path, **kw)
            except Exception as e:  # an exporter's limitation, not ours
                failed.append((ex, f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"))
                continue
        done.append((ex, path))
    return done, failed


def check(path, name, out_dir, kann_c, kann_run):
    import onnxruntime as ort
    base = path[:-len(".onnx")]
    p = subprocess.run([kann_c, "-q", path, "-o", base + ".bin"], capture_output=True, text=True)
    if p.returncode:
        first = (p.stderr.strip().splitlines() or ["?"])[0]
        return "unsupported", first.split(": error: ", 1)[-1][:150]
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds, args = {}, []
    for i, inp in enumerate(sess.get_inputs()):
        f = os.path.join(out_dir, f"{name}.in{i}.npy")
        feeds[inp.name] = np.load(f)
        args += ["-i", f"{inp.name}={f}"]
    ref = sess.run(None, feeds)[0]
    out_npy = base + ".out.npy"
    r = subprocess.run([kann_run, base + ".bin", *args, "-o", out_npy], capture_output=True,
                       text=True)
    if r.returncode:
        return "fail", "kann-run: " + r.stderr.strip()[-150:]
    out = np.load(out_npy)
    if out.shape != ref.shape:
        return "fail", f"shape {out.shape} vs {ref.shape}"
    err = float(np.abs(out - ref).max() / max(np.abs(ref).max(), 1e-30))
    return ("pass" if err <= TOL else "fail"), f"{err:.1e}"


def latency_ratio(path, name, out_dir, kann_c, kann_run, runs):
    """kann-c / ONNX Runtime median latency, one thread each, as text with both medians."""
    import onnxruntime as ort
    from bench import compare
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    inputs = {inp.name: os.path.join(out_dir, f"{name}.in{i}.npy")
              for i, inp in enumerate(sess.get_inputs())}
    feeds = {k: np.load(v) for k, v in inputs.items()}
    kann, ref = compare(kann_c, kann_run, path, inputs, feeds, 1, runs, 5, out_dir)
    return f"{kann / ref:.2f} ({kann:.2f} / {ref:.2f} ms)"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="directory for the exports (a cache)")
    ap.add_argument("--build", default="build", help="build directory with kann-c and kann-run")
    ap.add_argument("--only", default=None, help="comma-separated model names")
    ap.add_argument("--exporters", default="ts13,ts17,dynamo18")
    ap.add_argument("--report", default=None, help="write the markdown table here")
    ap.add_argument("--bench", type=int, default=0, help="runs for the latency ratio (0: none)")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    import torch
    kann_c = os.path.join(args.build, "compiler", "kann-c")
    kann_run = os.path.join(args.build, "runtime", "kann-run")
    os.makedirs(args.out, exist_ok=True)
    only = set(args.only.split(",")) if args.only else None
    rows, bad = [], 0
    for name, make, make_inputs in models():
        if only and name not in only:
            continue
        done, failed = export(torch, name, make, make_inputs, args.out,
                              args.exporters.split(","))
        cells = {ex: f"export failed ({why})" for ex, why in failed}
        for ex, path in done:
            status, detail = check(path, name, args.out, kann_c, kann_run)
            bad += status != "pass"
            cells[ex] = f"{status} ({detail})"
            print(f"{name:24s} {ex:9s} {status:12s} {detail}", flush=True)
            if args.bench and status == "pass" and "ratio" not in cells:
                cells["ratio"] = latency_ratio(path, name, args.out, kann_c, kann_run, args.bench)
                print(f"{name:24s} {ex:9s} kann/ORT  {cells['ratio']}", flush=True)
        rows.append((name, cells))
    if args.report:
        exs = args.exporters.split(",")
        with open(args.report, "w") as f:
            f.write("# Real exported models\n\nGenerated by `tests/zoo/zoo.py` (torch "
                    f"{torch.__version__}): each model exported with random weights by "
                    "PyTorch's TorchScript exporter (ts13, ts17: opset) and dynamo exporter "
                    "(dynamo18), compiled by kann-c with default options, run by kann-run and "
                    "compared with ONNX Runtime; the number is max|out - ref| / max|ref| "
                    f"(pass: <= {TOL:g}).\n\n")
            if args.bench:
                exs.append("ratio")
                f.write("ratio: kann-c / ONNX Runtime median latency, one thread each, same run "
                        f"(--bench {args.bench}), for the first export that passes.\n\n")
            f.write("| model | " + " | ".join(exs) + " |\n|---|" + "---|" * len(exs) + "\n")
            for name, cells in rows:
                f.write(f"| {name} | " + " | ".join(cells.get(e, "-") for e in exs) + " |\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
