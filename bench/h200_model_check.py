"""Whole models measured on the H200 (bench/results/h200_models_*.csv) predicted on ``h200-sxm``: a check.

    PYTHONPATH=$PWD python bench/h200_model_check.py [--csv bench/results/h200_models_<date>.csv]
        [--out bench/results/h200_model_check.md]

Each ``models`` row (torchvision ResNet-50 / MobileNetV2 / ViT-B/16, Hugging Face BERT-base;
random weights; batch 1 and 8; bf16, fp32 with TF32 off, fp32 with TF32 on; inference and a
training step) is predicted from an ONNX graph of the same architecture already in the
repository (``EXPORTS``: each with what it holds and what it leaves out) with
``analyzer.analyze(path, hw="h200-sxm", runtime=R, precision=P, batch=B)``:

- runtime ``eager-kernel`` against ``kernel_sum_us`` (the profiler's kernel sum of one eager
  call: the eager plan's kernels, no host), runtime ``kernel`` (one kernel per node, no eager plan)
  beside it on the same column for comparison, runtime ``eager`` against ``eager_wall_us`` (median wall-clock of one call from Python and a
  synchronize), and again with ``host="torch2.11-h200"``; error = predicted / measured - 1, MAPE = mean |error|, bias = mean error;
- precision: ``bf16`` -> ``bf16``; ``fp32`` with TF32 off -> ``fp32`` (every product on the FMA
  units); ``fp32`` with TF32 on (both ``allow_tf32`` flags) -> ``tf32`` (docs/model.md, Precision);
- a training row (one call = ``zero_grad(set_to_none)`` + forward + ``out.float().mean()
  .backward()``, no optimizer) adds ``train=True, optimizer="none"`` (forward + backward, no
  update) and its dropout (``dropout=0.1`` for BERT, Hugging Face's default; none for the
  torchvision models, whose ViT-B/16 has dropout 0 and whose MobileNetV2 classifier dropout
  opcost does not place), and is scored on the step's ``step_s``; the loss's cast, mean and
  its backward fill are not in the graph.

Kernels: measured ``n_kernels`` of one call against the prediction's launches (a training row:
the training forward's launches, ``StepTime.forward_kernels``: its BatchNorms in training mode and
one per placed dropout, + the backward plan's kernels, which hold the dropouts' backward).

Left out, each listed with its reason: GPT-2-small (no GPT-2-small graph in the repository) and
the ``compile`` rows (torch.compile's inductor kernels: no opcost runtime plans them). Not an
H100: the data may be fitted on.  ``eager --host torch2.11-h200`` scores the eager rows on this
host's table (``runtimes.EAGER_HOSTS``), fitted on these eager rows (in-sample here); no other
constant is fitted or tuned on them (the eager plan's rules bn-eval-fp16, bn-train and cudnn-nhwc
were read from these rows' kernel names) but ``prediction.bn_stats``' three loop constants, fitted
on the same run's per-kernel ResNet-50 batch-statistics times (``bench/bn_stats_fit.py``).
"""

from __future__ import annotations

import argparse
import csv
import glob
import os
import sys
import tempfile
from collections import namedtuple

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for _p in (ROOT, HERE):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import plausibility  # noqa: E402  (its BERT-base and ViT-B/16 graph builders)
import whole_public  # noqa: E402  (its training-step options and its MAPE / bias)

HW = "h200-sxm"
PRECISION = {("bf16", "0"): "bf16", ("fp32", "0"): "fp32", ("fp32", "1"): "tf32"}
# eager-kernel: the eager plan's kernels without host, what the kernel sum of an eager call measures;
# kernel (one kernel per node, no eager plan) beside it for comparison
# eager twice: on the default host table and on this host's own (``runtimes.EAGER_HOSTS``
# "torch2.11-h200", fitted on these eager rows: in-sample; its leave-one-model-out figure is in
# docs/accuracy.md)
HOST = "torch2.11-h200"
RUNTIMES = (("eager-kernel", "kernel_sum_us"), ("kernel", "kernel_sum_us"), ("eager", "eager_wall_us"),
            (f"eager --host {HOST}", "eager_wall_us"))

# file: a path under the repository root, or a plausibility builder's name (built in a temporary
# folder); holds: what the graph is and where it differs from the measured model
Export = namedtuple("Export", "file holds dropout")
EXPORTS = {
    "resnet50": Export(
        "tests/fixtures/accel/resnet50.onnx",
        "torchvision `resnet50(weights=None)`, eval, TorchScript exporter opset 17 at batch 1 "
        "(tests/fixtures/accel/export.py), rebatched: the measured network; its BatchNorms are "
        "folded into the convolutions (a training step plans them back)", None),
    "mobilenet_v2": Export(
        "tests/fixtures/torch/mobilenet_v2.onnx",
        "torchvision `mobilenet_v2(weights=None)`, eval, TorchScript exporter at batch 1 "
        "(tests/fixtures/torch/reference.json), rebatched: the measured network; BatchNorms "
        "folded; the classifier's Dropout(0.2) is not placed in a training step", None),
    "bert_base": Export(
        "plausibility.bert_base",
        "BERT-base's shape built by bench/plausibility.py (12 x 768, 12 heads, MLP 3072, vocabulary "
        "30522, sequence 128, post-norm, erf GELU): not HF `BertModel`'s export; it lacks the "
        "token-type embedding, the pooler (768 x 768 dense + tanh) and SDPA's fused attention "
        "(planned as matmul-softmax-matmul)", 0.1),
    "vit_b_16": Export(
        "plausibility.vit_b16",
        "ViT-B/16's shape built by bench/plausibility.py (16 x 16 patch convolution, 197 tokens, "
        "12 x 768, 12 heads, MLP 3072, post-norm): not torchvision's export, which is pre-norm "
        "with one fused 768 x 2304 QKV projection (here three 768 x 768), fused attention, a final "
        "LayerNorm and a 768 x 1000 head on the class token", None),
}
LEFT_OUT = {
    "gpt2_small": "no GPT-2-small graph in the repository: tests/fixtures/torch/gpt2.onnx is "
                  "GPT2Model at 2 x 128 without the LM head, bench/data/whole_public/exports' "
                  "gpt2_large is 36 x 1280 at sequence 1024",
}
COMPILE_REASON = "torch.compile (inductor): no opcost runtime plans inductor's fused kernels"


def export_paths(tmp: str) -> dict[str, str]:
    """op -> ONNX path of every export in ``EXPORTS`` (the built ones written under ``tmp``)."""
    out = {}
    for op, ex in EXPORTS.items():
        if ex.file.startswith("plausibility."):
            builder = getattr(plausibility, ex.file.split(".", 1)[1])
            out[op] = builder(os.path.join(tmp, f"{op}.onnx"))
        else:
            out[op] = os.path.join(ROOT, ex.file)
    return out


def measured_model(r: dict) -> str:
    """The model the row measured, from its ``note`` (a torch.nn stand-in where HF was absent)."""
    if "not importable" in r["note"]:
        return f"{r['op']} (torch.nn stand-in, not HF's)"
    return f"{r['op']} ({r['note']})"


def select(rows: list[dict]) -> tuple[list[dict], list[tuple[dict, str]]]:
    """(cases, left out): a case is one row with its export, precision, batch, train flag and
    dropout; each left-out row comes with its reason."""
    cases, left = [], []
    for r in rows:
        if r["part"] != "models":
            left.append((r, COMPILE_REASON))
        elif r["error_a"] or not r["kernel_sum_us"]:
            left.append((r, f"not measured: {r['error_a'] or 'no kernel sum'}"))
        elif r["op"] not in EXPORTS:
            left.append((r, LEFT_OUT.get(r["op"], "no export of this model")))
        else:
            ex = EXPORTS[r["op"]]
            train = r["mode"] == "train"
            cases.append({"row": r, "op": r["op"], "export": ex.file, "measured": measured_model(r),
                          "precision": PRECISION[(r["dtype"], r["tf32"])], "batch": int(r["B"]),
                          "train": train, "dropout": ex.dropout if train else None,
                          "mode": r["mode"]})
    return cases, left


def options(case: dict, runtime: str) -> dict:
    """The ``analyzer.analyze`` keywords of one case under one runtime."""
    name, _, host = runtime.partition(" --host ")
    kw = {"hw": HW, "runtime": name, "precision": case["precision"], "batch": case["batch"]}
    if host:
        kw["host"] = host
    if case["train"]:
        kw.update(whole_public.TRAIN, dropout=case["dropout"])
    return kw


def predict(case: dict, path: str, runtime: str) -> tuple[float, int]:
    """(predicted us, predicted kernels) of one case under one runtime."""
    import analyzer

    rep = analyzer.analyze(path, **options(case, runtime))
    p = rep.predictions[0]
    if not case["train"]:
        return p.latency_s * 1e6, p.launches
    st = rep.training.steps[0]
    return st.step_s * 1e6, st.forward_kernels + st.backward_kernels


def run(cases: list[dict], paths: dict[str, str]) -> list[dict]:
    """One result per case and runtime: the case's fields, runtime, measured / predicted us, err,
    measured / predicted kernels."""
    out = []
    for c in cases:
        for rt, col in RUNTIMES:
            meas = float(c["row"][col])
            pred, kern = predict(c, paths[c["op"]], rt)
            out.append({**c, "runtime": rt, "meas_us": meas, "pred_us": pred, "err": pred / meas - 1.0,
                        "kern_meas": int(c["row"]["n_kernels"]), "kern_pred": kern})
    return out


def dtype_label(r: dict) -> str:
    return {"bf16": "bf16", "fp32": "fp32 (TF32 off)", "tf32": "fp32, TF32 on"}[r["precision"]]


def summary(results: list[dict]) -> list[str]:
    """MAPE and bias by runtime, then by runtime and dtype, model and mode."""
    out = ["| runtime | group | rows | MAPE | bias |", "|---|---|---:|---:|---:|"]
    for rt, _ in RUNTIMES:
        sel = [r for r in results if r["runtime"] == rt]
        groups = [("all", sel)]
        for key, label in (("precision", dtype_label), ("op", None), ("mode", None)):
            for v in sorted({r[key] for r in sel}):
                sub = [r for r in sel if r[key] == v]
                groups.append((label(sub[0]) if label else v, sub))
        for name, sub in groups:
            n, mape, bias = whole_public.stats(sub)
            out.append(f"| `{rt}` | {name} | {n} | {mape:.1f} % | {bias:+.1f} % |")
    return out


def row_table(results: list[dict]) -> list[str]:
    out = ["| model | mode | dtype | batch | runtime | measured us | predicted us | error "
           "| kernels measured / predicted |", "|---|---|---|---:|---|---:|---:|---:|---|"]
    for r in results:
        out.append(f"| {r['op']} | {r['mode']} | {dtype_label(r)} | {r['batch']} | {r['runtime']} "
                   f"| {r['meas_us']:.1f} | {r['pred_us']:.1f} | {100 * r['err']:+.1f} % "
                   f"| {r['kern_meas']} / {r['kern_pred']} |")
    return out


def render(results: list[dict], left: list[tuple[dict, str]], command: str) -> str:
    lines = ["# Whole models on the H200 (check only)", "", f"Command: `{command}`", "",
             f"Profile `{HW}`; runtime `eager-kernel` (and `kernel` beside it) vs the profiler's kernel sum of one "
             "call, `eager` vs the "
             "eager wall-clock of one call; training rows: `train=True, optimizer=\"none\"`, the step's "
             "`step_s` (bench/h200_model_check.py's docstring). In-sample status: the host table "
             f"`{HOST}` (`eager --host {HOST}` rows) was fitted on these `eager` rows (in-sample; its "
             "leave-one-model-out figure: docs/accuracy.md); Hopper's `conv_simt` / `conv3_simt` sets were "
             "fitted on the same run's per-layer fp32 convolution rows (bench/hopper_conv_simt.py): an "
             "in-sample device; the eager plan's rules `bn-eval-fp16`, `bn-train` and `cudnn-nhwc` and Hopper's fp32 "
             "convolutions without Winograd helpers were read from their kernel names (counts, not "
             "times); the three constants of `bn_stats` (the training BatchNorm's per-channel loop, "
             "forward statistics and bf16 backward) were fitted on the same run's ResNet-50 statistics "
             "kernels (bench/bn_stats_fit.py); no other constant is fitted or tuned on them.", "", "## Summary", ""]
    lines += summary(results)
    lines += ["", "## Which graph stood in for each measured model", "",
              "| measured model | graph | what it holds |", "|---|---|---|"]
    for op in sorted({r["op"] for r in results}):
        r = next(x for x in results if x["op"] == op)
        lines.append(f"| {r['measured']} | `{EXPORTS[op].file}` | {EXPORTS[op].holds} |")
    lines += ["", f"## Left out ({len(left)} rows)", ""]
    lines += [f"- {r['part']} {r['op']} {r['mode']} {r['dtype']} tf32={r['tf32']} batch {r['B']}: {why}"
              for r, why in left]
    lines += ["", "## Rows", ""] + row_table(results)
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--csv", default=max(glob.glob(os.path.join(ROOT, "bench", "results",
                                                                 "h200_models_*.csv"))))
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "h200_model_check.md"))
    args = ap.parse_args(argv)
    with open(args.csv, newline="") as f:
        rows = list(csv.DictReader(f))
    cases, left = select(rows)
    with tempfile.TemporaryDirectory() as tmp:
        results = run(cases, export_paths(tmp))
    command = (f"PYTHONPATH=$PWD python bench/h200_model_check.py --csv {os.path.relpath(args.csv, ROOT)} "
               f"--out {os.path.relpath(args.out, ROOT)}")
    text = render(results, left, command)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text)
    print("\n".join(summary(results)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
