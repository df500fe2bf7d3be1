"""Cold weights on a CPU: what a model whose weights overflow the last-level cache pays per run.

A calibration row runs one op again and again, so its weights sit in the caches; a network reads
each weight once per run, and when all of its weights do not fit the last-level cache (LLC) every
run streams them from DRAM again. On a 2-core EPYC (32 MB L3) with onnxruntime 1.32 at 1 thread
the kernels with large weights in resnet18 (47 MB of weights) and convnext_tiny (114 MB) ran
longer than their hot-weight prediction by about their weight bytes / 34 GB/s, compute-bound
or not (a 3x3 conv with 9.4 MB of weights: 914 -> 1187 us; one with 4.7 MB: 460 -> 588 us;
classifier GEMVs of 2-3 MB ran at 34 GB/s instead of the hot 90-100 GB/s): the stream is not
hidden behind the arithmetic. 34 GB/s is what a GEMV whose weights are twice the LLC reaches
(``calibrate`` measures it: ``calibration.cold_weight_bw_gbs``).

So, for a profile calibrated with both figures (``cold_weight_bw_gbs``, ``llc_bytes``) and a model
whose weight bytes exceed ``llc_bytes``, a kernel with ``w`` weight bytes takes::

    t_cold = floor + max(compute, memory without w) + w / cold_weight_bw

instead of ``floor + max(compute, memory)``: its weights leave the hot streaming term and are
charged, unhidden, at the cold rate. ``cold_weight_s`` returns ``t_cold - t_hot`` per kernel (0
for kernels without weights and for models that fit the LLC); lowering adds it to the kernel's
per-launch fixed cost.

How much of a model's weights stay cached is not a step at the sysfs L3 size: the cache is
shared, its replacement is not a perfect LRU, and above 1 thread the cores may see more than one
L3 slice. A chain of GEMVs (1 x 1024 @ 1024 x 1024, 4 MB of fp32 weights each) read its weights
at 97, 94, 88, 78, 64, 54, 56, 51, 49, 47 GB/s with 8.4, 12.6, 16.8, 21.0, 25.2, 29.4, 33.6,
41.9, 50.3, 67.1 MB of weights in all (1 thread, onnxruntime 1.32, wall-clock; sysfs L3 32 MB),
and at 2 threads 181, 183, 173, 149, 130, 115, 106, 92, 75, 64 GB/s: a smooth step whose middle
(about 25 MB at 1 thread) is below the sysfs figure, and higher above 1 thread. EfficientNet-B0
(21 MB of weights) ran its 5 MB classifier at the cold rate although the sysfs L3 holds all of
them. So ``calibrate`` times such chains (``capacity_models``: 2 MB layers, 0.25-2x the sysfs
L3) and fits ``time per byte = h / hot + (1 - h) / cold``, ``h = s(total / C)``, ``s(x) = 1 /
(1 + x**p)`` (``fit_capacity``): ``calibration.llc_effective_bytes`` = C and
``llc_step_power`` = p. A model with W bytes of weights then pays the cold penalty on the share
``1 - s(W / C)`` of them (``cold_share``); a profile without the fit keeps the step at
``llc_bytes``. W counts what a run sweeps through the cache between two reads of a weight: the
weights and the activation bytes the run writes (a chain of GEMVs writes next to none; an
image model writes more than its weights: MobileNetV2 14 MB of weights and 52 MB of activations
at 224x224, EfficientNet-B0 21 and 86 MB). Replayed on a 1-thread recording of the 20 evaluated
models with a 1-thread calibrated profile (`bench/cpu_replay.py`), counting them moved MobileNetV2
from -10.6% to -3.7% and EfficientNet-B0 from -16.4% to -11.5% and no other model by more than
0.7 points (6.68% -> 6.06% MAPE); the weights alone are what pays the penalty.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from analyzer.prediction.efficiency import kernel_time as eff


# a model whose weights are below this share cold is charged none (the step's far tail)
MIN_SHARE = 0.01


def cold_share(calibration: Mapping[str, Any] | None, total_weight_bytes: float,
               activation_bytes: float = 0.0) -> float:
    """The share of a model's weights that comes from DRAM on every run: ``1 - s(W / C)`` with
    the fitted effective capacity (``llc_effective_bytes``, ``llc_step_power``), else 1 above
    ``llc_bytes`` and 0 below; 0 without the cold figures or below ``MIN_SHARE``. ``W``: what a
    run sweeps through the cache, the weights plus the ``activation_bytes`` it writes."""
    if not calibration or not calibration.get("cold_weight_bw_gbs"):
        return 0.0
    cap, power = calibration.get("llc_effective_bytes"), calibration.get("llc_step_power")
    w = float(total_weight_bytes) + float(activation_bytes)
    if cap and power:
        share = 1.0 - float(eff.l2_step(np, w, float(cap), float(power)))
    else:
        llc = calibration.get("llc_bytes")
        share = 1.0 if llc and w > float(llc) else 0.0
    return share if share >= MIN_SHARE else 0.0


def applies(calibration: Mapping[str, Any] | None, weight_bytes: np.ndarray,
            activation_bytes: float = 0.0) -> bool:
    """Whether ``calibration`` carries the cold-weight figures and some of the model's weights
    overflow its last-level cache (``cold_share`` > 0)."""
    w = float(np.sum(weight_bytes))
    return w > 0.0 and cold_share(calibration, w, activation_bytes) > 0.0


def cold_weight_s(calibration: Mapping[str, Any] | None, feats: Mapping[str, Any],
                  weight_bytes: np.ndarray, hw: Mapping[str, Any], consts: Mapping[str, Any],
                  activation_bytes: float = 0.0) -> np.ndarray:
    """Seconds per launch each kernel adds when its weights come from DRAM (see the module
    docstring); zeros where the figures are missing or the weights fit the LLC. ``feats``,
    ``hw``, ``consts``: ``efficiency.kernel_time``'s arguments for one profile;
    ``activation_bytes``: what a run writes besides (``cold_share``)."""
    w = np.asarray(weight_bytes, dtype=np.float64)
    share = cold_share(calibration, float(np.sum(w)), activation_bytes)
    if share <= 0.0:
        return np.zeros_like(w)
    bw_cold = float(calibration["cold_weight_bw_gbs"]) * 1e9
    hot = eff.kernel_time(np, feats, hw, consts)
    without = dict(feats)
    without["bytes"] = np.maximum(np.asarray(feats["bytes"], dtype=np.float64) - w, 0.0)
    rest = eff.kernel_time(np, without, hw, consts)
    extra = (np.maximum(rest["compute_s"], rest["memory_s"]) - np.maximum(hot["compute_s"], hot["memory_s"])
             + w / bw_cold)
    return np.where(w > 0, share * extra, 0.0)


