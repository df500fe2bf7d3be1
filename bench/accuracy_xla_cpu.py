#!/usr/bin/env python3
"""XLA CPU accuracy of opcost's calibrated ``runtime="xla"`` predictions on JAX programs that no
calibration ever ran.

    PYTHONPATH=$PWD python bench/accuracy_xla_cpu.py [--profile A.toml[,B.toml] | --rows A.json[,B.json]]
        [--measured RUN.json] [--calibrations 2] [--passes 5] [--out bench/results/accuracy_xla_cpu_<date>]

1. ``--calibrations N`` runs of ``calibrate_xla`` (synthetic jitted programs only,
   ``analyzer/prediction/xla_rows.py``), each written as ``<out>_profile_<i>.toml`` with its rows
   (``<out>_rows_<i>.json``); or ``--profile`` reuses profiles; or ``--rows`` refits saved rows
   with the current code (``<out>_refit_<i>.toml``: a change of the fit compared on the same
   measurements);
2. the programs (``--programs samples``, the default): ``samples/jax_models.py``'s MLP, CNN, transformer block and scan RNN, inference
   (``*_infer``, weights closed over) at batch 1, 8 and 32 and a train step (``jax.grad`` + SGD,
   params as arguments) at batch 8: 16 programs. Each is predicted with the product's call,
   ``analyzer.analyze_jax(fn, *shapes, hw=profile, runtime="xla")``, per profile; ``--programs
   heldout2``: ``bench/xla_cpu_heldout.py``'s 8 programs of other architectures (GRU scan, 1-D
   convolutions, MLP-Mixer, multi-head attention, depthwise-separable convolution, residual MLP);
   ``--programs heldout3``: ``bench/xla_cpu_heldout3.py``'s 12 (temporal convolutions, ConvNeXt,
   inverted residual, causal decoder, autoencoder, U-Net piece, graph convolution, ViT stem);
   ``--programs heldout4``: ``bench/xla_cpu_heldout4.py``'s 10 (EfficientNet block, LSTM, wide MLP,
   ViT block, ResNet basic block, each inference and train step);
3. each is measured here (or ``--measured RUN.json`` takes a saved run's ``measured_us``: with
   ``--rows`` of the same run, a change of the code is scored on exactly the measurements it was
   scored on before, nothing timed): jitted, JAX's CPU async dispatch off (as the calibration measures: the
   program's own execution, no hand-off to another thread; ``calibrate_xla``'s docstring), the
   25th percentile of its wall-clock runs (``calibrate_xla.time_program``, at least 0.1 s of
   runs), the fastest of ``--passes`` passes over all programs in turn;
4. writes ``<out>.md`` / ``<out>.json``: per program measured and predicted us, error %; overall
   MAPE, share within +-10 % / +-20 %, bias, for inference and train steps apart; and how far
   apart the calibrations' predictions are (the issue's "two runs predict within 5 %").
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import sys
import time

import numpy as np
from report_lines import emit

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "samples"))

NETS = ("mlp", "cnn", "transformer", "rnn")
BATCHES = (1, 8, 32)
TRAIN_BATCH = 8
Q = 0.25


def programs():
    """``[(name, fn, example shapes, params_argnums or None)]``."""
    import jax_models as jm

    out = []
    for net in NETS:
        for b in BATCHES:
            _, x, _ = jm.example_inputs(net, b)
            out.append((f"{net}_infer_b{b}", getattr(jm, f"{net}_infer"), (x,), None))
        p, x, lab = jm.example_inputs(net, TRAIN_BATCH)
        if net == "transformer":
            lab = x   # (its loss regresses onto a target shaped like x)
        out.append((f"{net}_train_b{TRAIN_BATCH}", getattr(jm, f"{net}_train_step"), (p, x, lab), 0))
    return out


HELDOUT = {"heldout2": "xla_cpu_heldout", "heldout3": "xla_cpu_heldout3", "heldout4": "xla_cpu_heldout4"}


def heldout_programs(which: str = "heldout2"):
    """A later set (``HELDOUT[which]``: ``bench/xla_cpu_heldout.py``, ``..._heldout3.py``, ``..._heldout4.py``),
    in ``programs``' form."""
    import importlib

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    return importlib.import_module(HELDOUT[which]).programs()


def relower(rows: list[dict], threads: int = 1) -> int:
    """Replace each saved calibration row's ``kernels`` by what the current lowering makes of its
    program (rebuilt from its label, ``xla_rows``; traced, not run) on ``threads`` cores (the
    saved calibration's ``cores``); its measured seconds are kept. Returns how many rows'
    kernels changed."""
    from analyzer.measure.xla import rows as xr
    from analyzer.measure.xla.calibrate import _rng, row_kernels

    builders = {label: build for rs in xr.xla_rows().values() for label, build in rs}
    changed = 0
    for r in rows:
        fn, args = builders[r["label"]](_rng(r["label"]))
        ks = row_kernels(fn, args, threads)
        changed += ks != r["kernels"]
        r["kernels"] = ks
    return changed


def concrete(shapes, rng):
    import jax
    import jax.numpy as jnp

    def one(s):
        if s.dtype == jnp.int32:
            return jnp.asarray(rng.integers(0, 10, s.shape), jnp.int32)
        return jnp.asarray(rng.standard_normal(s.shape).astype(np.float32))
    return jax.tree_util.tree_map(one, shapes, is_leaf=lambda x: isinstance(x, jax.ShapeDtypeStruct))


def measure(progs, passes: int) -> dict[str, float]:
    """Fastest over ``passes`` passes of each program's ``Q`` quantile, seconds."""
    from analyzer.measure.xla.calibrate import time_program

    rng = np.random.default_rng(0)
    args = {name: concrete(shapes, rng) for name, _, shapes, _ in progs}
    best = {name: np.inf for name, *_ in progs}
    for p in range(passes):
        order = progs if p % 2 == 0 else progs[::-1]
        for name, fn, _, _ in order:
            best[name] = min(best[name], time_program(fn, args[name], Q, min_s=0.1))
        print(f"  pass {p + 1}/{passes} done", file=sys.stderr, flush=True)
    return best


def predict(progs, profile: str) -> dict[str, float]:
    from analyzer import analyze_jax

    out = {}
    for name, fn, shapes, pa in progs:
        kw = {} if pa is None else {"params_argnums": pa}
        out[name] = analyze_jax(fn, *shapes, hw=profile, runtime="xla", **kw).predictions[0].latency_s
    return out


def summary(pred: dict[str, float], meas: dict[str, float], names) -> dict[str, float]:
    e = np.array([pred[n] / meas[n] - 1 for n in names])
    return {"cases": len(e), "mape_pct": float(100 * np.mean(np.abs(e))),
            "within10_pct": float(100 * np.mean(np.abs(e) <= 0.10)),
            "within20_pct": float(100 * np.mean(np.abs(e) <= 0.20)), "bias_pct": float(100 * np.mean(e))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", default="", help="comma-separated calibrated profiles to reuse")
    ap.add_argument("--rows", default="", help="comma-separated saved calibration rows (<out>_rows_<i>.json) "
                    "to refit with the current code instead of calibrating")
    ap.add_argument("--keep-row-kernels", action="store_true", help="with --rows: fit the rows' saved "
                    "kernels instead of lowering each row's program again with the current code")
    ap.add_argument("--measured", default="", help="a saved run's <out>.json: score on its program timings "
                    "instead of measuring (with --rows of the same run: a code change on the same data)")
    ap.add_argument("--programs", choices=("samples", *HELDOUT), default="samples",
                    help="samples: samples/jax_models.py's 16 programs; heldout2: bench/xla_cpu_heldout.py's 8; "
                         "heldout3: bench/xla_cpu_heldout3.py's 12; heldout4: bench/xla_cpu_heldout4.py's 10")
    ap.add_argument("--calibrations", type=int, default=2)
    ap.add_argument("--passes", type=int, default=5)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results",
                                                 f"accuracy_xla_cpu_{datetime.date.today().isoformat()}"))
    a = ap.parse_args()
    import jax

    jax.config.update("jax_cpu_enable_async_dispatch", False)
    from analyzer.measure.xla.calibrate import calibrate_xla, profile_doc
    from hardware_db.write import write_profile

    t0 = time.time()
    profiles = [p for p in a.profile.split(",") if p]
    cal_seconds = []
    for i, path in enumerate(p for p in a.rows.split(",") if p):
        with open(path) as f:
            saved_rows = json.load(f)
        if not a.keep_row_kernels:
            relower(saved_rows["rows"], int(saved_rows.get("cores") or 1))
        doc = profile_doc(saved_rows)
        for k in ("_rows", "_measured", "_warnings"):
            doc.pop(k, None)
        profiles.append(write_profile(doc, f"{a.out}_refit_{i + 1}.toml"))
    if not profiles:
        for i in range(1, a.calibrations + 1):
            print(f"calibration {i}/{a.calibrations}", file=sys.stderr, flush=True)
            doc = calibrate_xla()
            cal_seconds.append(doc["calibration"]["seconds"])
            with open(f"{a.out}_rows_{i}.json", "w") as f:
                json.dump({"rows": doc.pop("_rows"), **doc.pop("_measured")}, f)
            doc.pop("_warnings", None)
            profiles.append(write_profile(doc, f"{a.out}_profile_{i}.toml"))
    progs = programs() if a.programs == "samples" else heldout_programs(a.programs)
    if a.measured:
        with open(a.measured) as f:
            saved = json.load(f)
        meas = {n: us * 1e-6 for n, us in saved["measured_us"].items()}
        missing = sorted({n for n, *_ in progs} - set(meas))
        if missing:
            sys.exit(f"{a.measured} has no timing of {', '.join(missing)}")
    else:
        print("measuring the programs", file=sys.stderr, flush=True)
        meas = measure(progs, a.passes)
    preds = [predict(progs, p) for p in profiles]
    names = [n for n, *_ in progs]
    groups = {"all": names, "inference": [n for n in names if "_infer_" in n],
              "train steps": [n for n in names if "_train_" in n]}
    table = {os.path.basename(p): {g: summary(pr, meas, ns) for g, ns in groups.items()}
             for p, pr in zip(profiles, preds)}
    spread = (float(100 * max(abs(preds[i][n] / preds[0][n] - 1) for i in range(1, len(preds)) for n in names))
              if len(preds) > 1 else None)
    import jaxlib

    from analyzer.prediction.cpu import host

    head = (f"{datetime.date.today().isoformat()}, {platform.processor() or platform.machine()} "
            f"({host.cpu_name()}, widest vector extension {host.simd()}), {os.cpu_count()} cores, JAX {jax.__version__} (jaxlib {jaxlib.__version__}), XLA CPU, async dispatch off, "
            f"{Q:g} quantile of wall-clock runs, fastest of {a.passes} passes")
    if a.measured:
        head = f"timings {saved['machine']}"
    res = {"machine": head, "profiles": [os.path.relpath(p, ROOT) for p in profiles],
           "calibration_seconds": cal_seconds, "measured_us": {n: meas[n] * 1e6 for n in names},
           "predicted_us": [{n: pr[n] * 1e6 for n in names} for pr in preds], "summary": table,
           "calibrations_max_difference_pct": spread, "seconds": round(time.time() - t0, 1)}
    with open(a.out + ".json", "w") as f:
        json.dump(res, f, indent=1)
    lines = [f"# XLA CPU accuracy ({head})", "",
             f"Command: `PYTHONPATH=$PWD python bench/accuracy_xla_cpu.py {' '.join(map(shlex.quote, sys.argv[1:]))}`", "",
             ("Programs: samples/jax_models.py (never calibrated on)" if a.programs == "samples" else
              f"Programs: bench/{HELDOUT[a.programs]}.py (never calibrated on)") +
             (f", timings of `{os.path.relpath(a.measured, ROOT)}` (not measured in this run)" if a.measured else "") +
             "; profiles: " +
             ", ".join(f"`{os.path.relpath(p, ROOT)}`" for p in profiles) + "", "",
             "| program | measured us | " + " | ".join(f"predicted us ({i + 1}) | error ({i + 1})" for i in range(len(preds))) + " |",
             "|---|---:|" + "---:|---:|" * len(preds)]
    for n in names:
        cells = " | ".join(f"{pr[n] * 1e6:.1f} | {100 * (pr[n] / meas[n] - 1):+.1f}%" for pr in preds)
        lines.append(f"| {n} | {meas[n] * 1e6:.1f} | {cells} |")
    lines += ["", "| profile | programs | cases | MAPE | within ±10% | within ±20% | bias |", "|---|---|---:|---:|---:|---:|---:|"]
    for p, per in table.items():
        for g, s in per.items():
            lines.append(f"| {p} | {g} | {s['cases']} | {s['mape_pct']:.1f}% | {s['within10_pct']:.0f}% | "
                         f"{s['within20_pct']:.0f}% | {s['bias_pct']:+.1f}% |")
    if spread is not None:
        lines += ["", f"Largest difference between the calibrations' predictions of a program: {spread:.1f}%"]
    if cal_seconds:
        lines += [f"Calibration wall-clock: {', '.join(f'{s:.0f} s' for s in cal_seconds)}"]
    write_markdown(a.out, lines)
    return 0


def write_markdown(out: str, lines: list[str]) -> None:
    """``<out>.md`` of ``lines``, and the same on stdout."""
    emit(out + ".md", lines)


if __name__ == "__main__":
    sys.exit(main())
