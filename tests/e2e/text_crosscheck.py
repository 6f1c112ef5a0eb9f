"""Checks kann-c's ONNX text parser and printer against the onnx Python package.

  text_crosscheck.py corpus DIR        every DIR/valid/*.onnxtxt and DIR/errors/*.onnxtxt
  text_crosscheck.py binary MODEL...   binary models: print -> parse gives the same model

valid/*.onnxtxt: kann-c's ModelProto (kann-c --save-onnx) equals onnx.parser.parse_model's;
printing is a fixed point (print(parse(print(x))) == print(x)) and the printed text parses, in
both parsers, to the same model. Files named diverge_* hold what onnx.parser gets wrong (it
drops the elements of tensor, graph and type lists): there kann-c must keep them.
errors/*.onnxtxt: the first line is "# error: LINE:COL: MESSAGE"; kann-c must exit 3 with
"FILE:LINE:COL: error: ...MESSAGE...", the source line and a caret under COL. A second line
"# onnx.parser accepts" marks texts the reference parser takes (where kann-c is stricter).
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnx.parser
from onnx import numpy_helper

KANN_C = os.environ.get("KANN_C", "kann-c")


def run(*args):
    p = subprocess.run([KANN_C, *args], capture_output=True)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def kann_proto(path, work):
    out = os.path.join(work, "out.onnx")
    code, _, err = run(path, "--save-onnx", out)
    if code != 0:
        raise RuntimeError(f"kann-c --save-onnx failed ({code}): {err}")
    m = onnx.ModelProto()
    with open(out, "rb") as f:
        m.ParseFromString(f.read())
    return m


def kann_print(path):
    code, out, err = run(path, "--print")
    if code != 0:
        raise RuntimeError(f"kann-c --print failed ({code}): {err}")
    return out


def diff(a, b):
    sa, sb = str(a).splitlines(), str(b).splitlines()
    for i, (x, y) in enumerate(zip(sa, sb)):
        if x != y:
            return f"line {i + 1}: onnx.parser {x.strip()!r} vs kann-c {y.strip()!r}"
    return f"lengths {len(sa)} vs {len(sb)}"


def check_valid(path, work):
    text = open(path, encoding="utf-8").read()
    diverges = os.path.basename(path).startswith("diverge_")
    ref = onnx.parser.parse_model(text)
    mine = kann_proto(path, work)
    if diverges:
        if ref == mine:
            return "expected onnx.parser to differ (it drops list elements), but it matched"
        for n in mine.graph.node:
            for a in n.attribute:
                if a.type in (onnx.AttributeProto.TENSORS, onnx.AttributeProto.GRAPHS,
                              onnx.AttributeProto.TYPE_PROTOS):
                    if not (a.tensors or a.graphs or a.type_protos):
                        return f"attribute {a.name}: elements lost"
    elif ref != mine:
        return "ModelProto differs from onnx.parser's: " + diff(ref, mine)
    printed = kann_print(path)
    p1 = os.path.join(work, "p1.onnxtxt")
    with open(p1, "wb") as f:
        f.write(printed)
    if kann_print(p1) != printed:
        return "print(parse(print(x))) != print(x)"
    again = kann_proto(p1, work)
    if again != mine:
        return "the printed text parses to another model: " + diff(mine, again)
    if not diverges and onnx.parser.parse_model(printed.decode("utf-8")) != ref:
        return "onnx.parser reads the printed text as another model"
    return None


def check_error(path, work):
    with open(path, "rb") as f:
        first = f.readline().decode("utf-8", "replace")
        second = f.readline().decode("utf-8", "replace")
    m = re.match(r"# error: (\d+):(\d+): (.*)", first)
    if not m:
        return "first line is not '# error: LINE:COL: MESSAGE'"
    line, col, msg = int(m.group(1)), int(m.group(2)), m.group(3).strip()
    code, _, err = run(path, "--print")
    if code != 3:
        return f"exit {code}, expected 3: {err}"
    head = f"{path}:{line}:{col}: error: "
    lines = err.splitlines()
    if not lines or not lines[0].startswith(head) or msg not in lines[0]:
        return f"expected '{head}...{msg}...', got: {err}"
    with open(path, "rb") as f:
        src = f.read().replace(b"\r", b"\n").split(b"\n")[line - 1]
    shown = "".join(chr(c) if 0x20 <= c < 0x7f or c == 9 else "?" for c in src)
    if len(lines) < 3 or lines[1].split("| ", 1)[-1] != shown:
        return f"the source line is not shown: {err}"
    pad = "".join("\t" if c == 9 else " " for c in src[:col - 1])
    if lines[2].split("| ", 1)[-1] != pad + "^":
        return f"the caret is not under column {col}: {lines[2]!r}"
    accepts = second.startswith("# onnx.parser accepts")
    try:
        onnx.parser.parse_model(open(path, encoding="utf-8", errors="replace").read())
        ref_ok = True
    except Exception:  # the reference parser raises its own error types
        ref_ok = False
    if ref_ok != accepts:
        return ("onnx.parser accepts it" if ref_ok else "onnx.parser rejects it") + \
               " (mark the file '# onnx.parser accepts' accordingly)"
    return None


def canonical(m):
    """What the text syntax keeps of a binary model: tensors as arrays, no doc strings."""
    m = onnx.ModelProto.FromString(m.SerializeToString())

    def tensor(t):
        arr = numpy_helper.to_array(t)
        c = numpy_helper.from_array(arr, t.name)
        t.CopyFrom(c)

    def graph(g):
        g.ClearField("doc_string")
        for t in g.initializer:
            tensor(t)
        for vi in list(g.input) + list(g.output) + list(g.value_info):
            vi.ClearField("doc_string")
        for n in g.node:
            n.ClearField("doc_string")
            if not n.name:
                n.ClearField("name")
            n.domain = n.domain
            for a in n.attribute:
                a.ClearField("doc_string")
                if a.HasField("t"):
                    tensor(a.t)
                for t in a.tensors:
                    tensor(t)
                if a.HasField("g"):
                    graph(a.g)
                for sg in a.graphs:
                    graph(sg)

    graph(m.graph)
    for o in m.opset_import:
        o.domain = o.domain  # an absent domain is "" in the text syntax
    return m


def check_binary(path, work):
    orig = onnx.load(path, load_external_data=False)
    printed = kann_print(path)
    p1 = os.path.join(work, "b1.onnxtxt")
    with open(p1, "wb") as f:
        f.write(printed)
    if kann_print(p1) != printed:
        return "print(parse(print(x))) != print(x)"
    want = canonical(orig)
    if canonical(kann_proto(p1, work)) != want:
        return "kann-c reads the printed text as another model: " + diff(want, canonical(
            kann_proto(p1, work)))
    if canonical(onnx.parser.parse_model(printed.decode("utf-8"))) != want:
        return "onnx.parser reads the printed text as another model"
    return None


def main():
    what, args = sys.argv[1], sys.argv[2:]
    failures, n = [], 0
    with tempfile.TemporaryDirectory() as work:
        if what == "corpus":
            cases = [(p, check_valid) for p in sorted(glob.glob(os.path.join(args[0], "valid",
                                                                              "*.onnxtxt")))]
            cases += [(p, check_error) for p in sorted(glob.glob(os.path.join(args[0], "errors",
                                                                               "*.onnxtxt")))]
        else:
            cases = [(p, check_binary) for p in args]
        for path, check in cases:
            n += 1
            try:
                problem = check(path, work)
            except Exception as e:  # a parser or tool failure is this case's failure
                problem = f"{type(e).__name__}: {e}"
            shown = os.path.basename(path)
            if shown == "model.onnx":  # ONNX backend test cases: name the case
                shown = os.path.basename(os.path.dirname(path))
            print(f"  {'ok  ' if not problem else 'FAIL'} {shown}"
                  + (f": {problem}" if problem else ""))
            if problem:
                failures.append(path)
    print(f"{n - len(failures)} passed, {len(failures)} failed")
    return 1 if failures or n == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
