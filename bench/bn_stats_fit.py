"""Fit ``prediction.bn_stats``' loop constants on the H200's batch-statistics kernels (no H100 row).

    PYTHONPATH=$PWD python bench/bn_stats_fit.py [--kernels bench/results/h200_kernels_2026-12-04.json.gz]

Per BatchNorm of a bf16 training step's forward, in graph order: the measured median of
``batch_norm_collect_statistics_kernel`` (the profiler's per-kernel list of one eager call) beside
the launch the eager plan prices (rule ``bn-train``): its fixed cost ``F`` (class floor, no
dispatch: inside ``batch_norm``), its bytes at the ``reduce`` rate ``M`` and its loop shape
(blocks, steps: ``bn_stats.loop``), read from the lowering of ``analyzer.analyze(..., hw="h200-sxm",
runtime="eager-kernel", train=True)``.  The model ``F + max(M, waves x (c0 + steps x cs) / clock)``
is fitted by a grid over (c0, cs) cycles for each blocks-per-SM in 1, 2, 4, least squares in
relative error, on ResNet-50 (batch 1 and 8); MobileNetV2 (batch 1 and 8) is printed as the check.
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

HW = "h200-sxm"
STATS = "batch_norm_collect_statistics_kernel"
MODELS = {"resnet50": "tests/fixtures/accel/resnet50.onnx", "mobilenet_v2": "tests/fixtures/torch/mobilenet_v2.onnx"}
FIT, CHECK = ("resnet50",), ("mobilenet_v2",)


def measured(kernels: dict, model: str, batch: int) -> list[float]:
    """The statistics kernels' medians (us) of one bf16 training call, in issue order."""
    x = kernels["models"][f"part=models|op={model}|variant=eager|dtype=bf16|mode=train|B={batch}"]
    return [t for n, t in zip(x["names"], x["median_us"]) if STATS in n]


def planned(model: str, batch: int) -> list[tuple[float, float, int, int]]:
    """(F s, M s, blocks, steps) of each statistics launch the eager plan prices, in graph order."""
    import analyzer
    from analyzer.prediction import lowering_fixed as lf

    rows, orig = [], lf.extra_launch_s

    def spy(extra_cls, plan, arrays, fixed_of, hw_p, consts_p, loop=None):
        if plan.extra_loops:
            bare = dataclasses.replace(plan, extra_bytes=tuple((0,) * len(b) for b in plan.extra_bytes))
            f = orig(extra_cls, bare, arrays, fixed_of, hw_p, consts_p)[0]
            fm = orig(extra_cls, plan, arrays, fixed_of, hw_p, consts_p)[0]
            lp = [lps[j] for lps in plan.extra_loops for j in range(len(lps))]
            rows.extend((f[i], fm[i] - f[i], *lp[i]) for i in range(len(lp)) if lp[i][0])
        return orig(extra_cls, plan, arrays, fixed_of, hw_p, consts_p, loop)

    lf.extra_launch_s = spy
    try:
        analyzer.analyze(os.path.join(ROOT, MODELS[model]), hw=HW, runtime="eager-kernel", precision="bf16",
                         batch=batch, train=True, optimizer="none")
    finally:
        lf.extra_launch_s = orig
    return rows


def predict(rows: np.ndarray, c0, cs, per_sm: int, units: int, clock: float, form: str) -> np.ndarray:
    """us of each row under (c0, cs) cycles (arrays broadcast) and ``per_sm`` blocks per SM; form
    ``sum``: F + max(M, loop); ``max``: max(F + M, loop) (the loop holds its own launch)."""
    f, m, blocks, steps = (rows[:, i][:, None, None] for i in range(4))
    loop = np.ceil(blocks / (units * per_sm)) * (c0 + steps * cs) / clock
    return 1e6 * (f + np.maximum(m, loop) if form == "sum" else np.maximum(f + m, loop))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kernels", default=os.path.join(ROOT, "bench/results/h200_kernels_2026-12-04.json.gz"))
    a = ap.parse_args(argv)
    import hardware_db
    from analyzer.prediction.hardware import clock_hz

    prof = hardware_db.get(HW)
    units, clock = int(prof.units), clock_hz(prof)
    with gzip.open(a.kernels) as fh:
        kernels = json.load(fh)
    data = {}
    for model in FIT + CHECK:
        for b in (1, 8):
            meas, rows = measured(kernels, model, b), planned(model, b)
            assert len(meas) == len(rows), (model, b, len(meas), len(rows))
            data[(model, b)] = (np.asarray(rows, np.float64), np.asarray(meas))
    fit_rows = np.concatenate([data[k][0] for k in data if k[0] in FIT])
    fit_meas = np.concatenate([data[k][1] for k in data if k[0] in FIT])
    c0 = np.arange(0.0, 10001.0, 50.0)[:, None]
    cs = np.arange(100.0, 900.1, 5.0)[None, :]
    best = None
    for form in ("sum", "max"):
        for per_sm in (1, 2, 4):
            err = predict(fit_rows, c0, cs, per_sm, units, clock, form) / fit_meas[:, None, None] - 1
            sse = (err ** 2).sum(axis=0)
            i, j = np.unravel_index(np.argmin(sse), sse.shape)
            print(f"{form}, blocks/SM {per_sm}: c0 {c0[i, 0]:.0f} cycles, step {cs[0, j]:.0f} cycles, "
                  f"rms rel err {np.sqrt(sse[i, j] / len(fit_meas)):.3f}")
            if best is None or sse[i, j] < best[0]:
                best = (sse[i, j], form, per_sm, c0[i, 0], cs[0, j])
    _, form, per_sm, w, s = best
    print(f"chosen: {form}, blocks/SM {per_sm}, WAVE_CYCLES {w:.0f}, STEP_CYCLES {s:.0f}")
    for (model, b), (rows, meas) in data.items():
        pred = predict(rows, np.asarray(w), np.asarray(s), per_sm, units, clock, form)[:, 0, 0]
        old = 1e6 * (rows[:, 0] + rows[:, 1])
        e = pred / meas - 1
        tag = "fit" if model in FIT else "check"
        print(f"{model} b{b} ({tag}): measured sum {meas.sum():.1f} us, predicted {pred.sum():.1f} "
              f"(bytes only {old.sum():.1f}); MAPE {100 * np.abs(e).mean():.1f} %, bias {100 * e.mean():+.1f} %")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
