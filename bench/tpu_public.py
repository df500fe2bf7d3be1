"""Score opcost's ``xla`` runtime on the public TPU single-op timings (v5e, v6e, TPU7x).

    PYTHONPATH=$PWD python bench/tpu_public.py [--out FILE.md]

Data: ``bench/data/tpu/tpu_single_ops.csv`` (sources, chips, statistics: bench/data/tpu/README.md)
and the v5e XLA rows of ``../shared/measurements/accelerators/tpu_ops.csv``.  Each row is rebuilt
as the JAX program its source timed (``program``), analysed with ``analyzer.analyze_jax`` and
predicted under ``runtime="xla"`` on the row's profile.  Two time definitions:

- ``host_call``: a jitted call's wall-clock from the host (``jax.block_until_ready`` per call):
  the prediction's ``latency_s`` (per-call launch + kernels).
- ``device_op``: the profiler's device duration of the call's ops (no host dispatch): the
  prediction's kernels alone, ``latency_s - run_overhead_s``.

Error = predicted / measured - 1 (%).  Reported per source, chip, time definition and dtype
(MAPE, bias, max), and per row with what the prediction consists of (``Prediction.explain``
of its kernels: MXU seconds at ``e_compute``, HBM seconds, the MXU padding factor, the per-kernel
floor; the per-call launch).  Nothing is fitted here.  Writes bench/results/tpu_public.md.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
DATA = os.path.join(ROOT, "bench", "data", "tpu", "tpu_single_ops.csv")
V5E = os.path.join(ROOT, "..", "shared", "measurements", "accelerators", "tpu_ops.csv")
RESULT = os.path.join(ROOT, "bench", "results", "tpu_public.md")
COMMAND = "PYTHONPATH=$PWD python bench/tpu_public.py"


def rows() -> list[dict]:
    """The public rows: the committed file plus the v5e notebook's XLA ``jnp.matmul`` rows."""
    with open(DATA, encoding="utf-8") as fh:
        out = list(csv.DictReader(fh))
    with open(V5E, encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            if r["implementation"] == "xla jnp.matmul":
                out.append({"source": "jax-notebook", "profile": r["device_profile"], "op": "matmul",
                            "dtype": r["dtype"], "m": r["m"], "k": r["k"], "n": r["n"], "bytes": "",
                            "time_definition": "host_call", "statistic": "mean of 100 calls",
                            "measured_us": str(float(r["measured_ms"]) * 1e3)})
    return out


def program(row: dict):
    """(function, example args) of the row's timed JAX program."""
    import jax
    import jax.numpy as jnp

    dt = {"bf16": jnp.bfloat16, "f32": jnp.float32, "int8": jnp.int8}[row["dtype"]]
    if row["op"] == "copy":
        return (lambda a: a.copy()), (jax.ShapeDtypeStruct((int(row["bytes"]) // dt.dtype.itemsize,), dt),)
    m, k, n = int(row["m"]), int(row["k"]), int(row["n"])
    args = (jax.ShapeDtypeStruct((m, k), dt), jax.ShapeDtypeStruct((k, n), dt))
    if row["op"] == "matmul_f32acc":
        return (lambda a, b: jnp.einsum("ij,jk->ik", a, b, preferred_element_type=jnp.float32)
                .astype(jnp.bfloat16)), args
    acc = jnp.int32 if row["dtype"] == "int8" else dt
    return (lambda a, b: jax.lax.dot_general(a, b, (((1,), (0,)), ((), ())), preferred_element_type=acc)), args


def predict_row(row: dict) -> dict:
    """The row's prediction (us, under its time definition) and its terms."""
    import analyzer

    fn, args = program(row)
    (pred,) = analyzer.analyze_jax(fn, *args, hw=row["profile"], runtime="xla").predictions
    terms = [pred.explain(i) for i in range(len(pred.nodes))]
    terms = [t for t in terms if t is not None]
    kernels = {t.kernel: t for t in terms}.values()
    device = pred.latency_s - pred.run_overhead_s
    us = (pred.latency_s if row["time_definition"] == "host_call" else device) * 1e6
    parts = [(t.compute_s, t.memory_s, t.fixed_s) for t in kernels]
    return {"pred_us": us, "parts": parts, "launch_s": pred.run_overhead_s,
            "launch_us": pred.run_overhead_s * 1e6 if row["time_definition"] == "host_call" else 0.0,
            "mxu_us": sum(t.compute_s for t in kernels) * 1e6, "hbm_us": sum(t.memory_s for t in kernels) * 1e6,
            "floor_us": sum(t.fixed_s for t in kernels) * 1e6, "kernels": len(kernels),
            "pad": max((t.pad for t in kernels), default=1.0), "bound": "+".join(t.bound for t in kernels)}


def summary(scored: list[dict], key) -> list[tuple]:
    """(group, rows, MAPE %, bias %, max |err| %) per ``key(row)``, in first-seen order."""
    groups: dict = {}
    for r in scored:
        groups.setdefault(key(r), []).append(r["err"])
    return [(g, len(e), sum(abs(x) for x in e) / len(e), sum(e) / len(e), max(abs(x) for x in e))
            for g, e in groups.items()]


def table(title: str, stats: list[tuple], head: str) -> list[str]:
    out = [f"## {title}", "", f"| {head} | rows | MAPE % | bias % | max % |", "|---|---:|---:|---:|---:|"]
    out += [f"| {g if isinstance(g, str) else ' / '.join(g)} | {n} | {mape:.1f} | {bias:+.1f} | {mx:.1f} |"
            for g, n, mape, bias, mx in stats]
    return out + [""]


def row_lines(scored: list[dict]) -> list[str]:
    out = ["## Rows", "",
           "launch: the per-call launch (host_call rows); MXU / HBM: the kernels' compute and memory terms; "
           "floor: the per-kernel fixed cost; pad: the MXU padding factor.", "",
           "| source | profile | time | op | dtype | m x k x n or bytes | measured us | predicted us | error % | "
           "launch us | MXU us | HBM us | floor us | kernels | pad | bound |",
           "|---|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in scored:
        shape = r["bytes"] if r["op"] == "copy" else f"{r['m']}x{r['k']}x{r['n']}"
        out.append(f"| {r['source']} | {r['profile']} | {r['time_definition']} | {r['op']} | {r['dtype']} | {shape} | "
                   f"{float(r['measured_us']):.2f} | {r['pred_us']:.2f} | {r['err']:+.1f} | {r['launch_us']:.1f} | "
                   f"{r['mxu_us']:.2f} | {r['hbm_us']:.2f} | {r['floor_us']:.2f} | {r['kernels']} | {r['pad']:.3g} | "
                   f"{r['bound']} |")
    return out + [""]


def report(scored: list[dict]) -> list[str]:
    by_def = summary(scored, lambda r: (r["profile"], r["time_definition"]))
    by_src = summary(scored, lambda r: (r["source"], r["profile"], r["time_definition"], r["op"], r["dtype"]))
    out = ["# TPU single ops: opcost's `xla` runtime against public timings", "", f"Command: `{COMMAND}`", "",
           "Nothing here is fitted on these rows (the v5e jax-notebook rows are the ones the v5e constants were "
           "fitted on: in-sample).  Sources, chips and statistics: bench/data/tpu/README.md.", ""]
    out += table("By chip and time definition", by_def, "profile / time definition")
    out += table("By source, chip, time definition, op and dtype", by_src, "source / profile / time / op / dtype")
    return out + row_lines(scored)


def scored_rows() -> list[dict]:
    """Every row with its prediction (``predict_row``) and error ``err`` (%)."""
    out = []
    for row in rows():
        r = dict(row, **predict_row(row))
        r["err"] = (r["pred_us"] / float(r["measured_us"]) - 1) * 100
        out.append(r)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=RESULT)
    a = ap.parse_args()
    lines = report(scored_rows())
    with open(a.out, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    print("\n".join(lines[: lines.index("## Rows")]))


if __name__ == "__main__":
    main()
