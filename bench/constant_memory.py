"""Peak memory of analysing a model whose Constant holds 100 MB, against the same interpreter
analysing a model without it (the baseline: Python, onnx and opcost loaded).

Each case runs in a fresh interpreter (``resource.getrusage(RUSAGE_SELF).ru_maxrss``, KiB on
Linux, read in that child at its end).  Linux carries a parent's peak across fork and exec, so
the model files are written by another child and this process stays small (it never imports
numpy or onnx): no case inherits another's peak, nor the peak of building the files.  Cases:

- ``value``: a top-level Constant with a 25e6-float ``value`` tensor (raw_data, 100 MB);
- ``value_floats``: the same tensor written as the ``value_floats`` list attribute (125 MB
  file: a tag per float);
- ``branch``: the ``value`` Constant inside an If's then-branch.

Prints, per case, the file size, the peak RSS, the peak over the baseline and that excess over
the file size (the copies of the file the analysis holds at once).  Usage:
``PYTHONPATH=. python bench/constant_memory.py [--elements N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = """
import json, resource, sys
import analyzer
r = analyzer.analyze(sys.argv[1], values={"c": True} if sys.argv[2] == "branch" else {})
print(json.dumps({"kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  "params": r.totals.params, "uncosted": len(r.coverage.uncosted)}))
"""


CASES = ("baseline", "value", "value_floats", "branch")


def write_models(n: int, folder: str) -> None:
    """The cases' model files in ``folder`` (run in a child: building them peaks high)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    def _vi(name, shape, t=TensorProto.FLOAT):
        return helper.make_tensor_value_info(name, t, shape)

    def _model(nodes, inputs):
        g = helper.make_graph(nodes, "g", inputs, [_vi("y", None)])
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)

    add = helper.make_node("Add", ["x", "w"], ["y"], name="add")
    value = helper.make_node("Constant", [], ["w"], name="k",
                             value=numpy_helper.from_array(np.ones(n, np.float32), "w"))
    floats = helper.make_node("Constant", [], ["w"], name="k")
    a = floats.attribute.add()
    a.name, a.type = "value_floats", onnx.AttributeProto.FLOATS
    a.floats.extend(np.ones(n, np.float32))
    then = helper.make_graph([value, helper.make_node("Add", ["x", "w"], ["t"], name="add")],
                             "then", [], [_vi("t", None)])
    other = helper.make_graph([helper.make_node("Relu", ["x"], ["e"], name="relu")], "else", [],
                              [_vi("e", None)])
    branch = helper.make_node("If", ["c"], ["y"], name="if", then_branch=then, else_branch=other)
    x = _vi("x", [1])
    ms = {"baseline": _model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [x]),
          "value": _model([value, add], [x]),
          "value_floats": _model([floats, add], [x]),
          "branch": _model([branch], [x, _vi("c", [], TensorProto.BOOL)])}
    for case in CASES:
        onnx.save(ms[case], os.path.join(folder, f"{case}.onnx"))


def peak(path: str, case: str) -> dict:
    env = {**os.environ, "PYTHONPATH": ROOT}
    out = subprocess.run([sys.executable, "-c", CHILD, path, case], capture_output=True,
                         text=True, env=env, check=True, timeout=600)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--elements", type=int, default=25_000_000, help="floats in the Constant")
    ap.add_argument("--write", metavar="DIR", help=argparse.SUPPRESS)  # (the child's job)
    args = ap.parse_args()
    if args.write:
        write_models(args.elements, args.write)
        return
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, __file__, "--elements", str(args.elements), "--write", tmp],
                       check=True, timeout=600)
        rows = []
        for case in CASES:
            path = os.path.join(tmp, f"{case}.onnx")
            rows.append((case, os.path.getsize(path), peak(path, case)))
    base = rows[0][2]["kib"] * 1024
    print(f"{'case':<14}{'file MB':>10}{'peak MB':>10}{'over base MB':>14}{'excess/file':>13}"
          f"{'params':>11}{'uncosted':>10}")
    for case, size, r in rows:
        rss = r["kib"] * 1024
        ratio = (rss - base) / size if case != "baseline" else float("nan")
        print(f"{case:<14}{size / 1e6:>10.1f}{rss / 2**20:>10.0f}{(rss - base) / 2**20:>14.0f}"
              f"{ratio:>13.2f}{r['params']:>11}{r['uncosted']:>10}")


if __name__ == "__main__":
    main()
