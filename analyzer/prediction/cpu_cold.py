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
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from analyzer.prediction import efficiency as eff


def applies(calibration: Mapping[str, Any] | None, weight_bytes: np.ndarray) -> bool:
    """Whether ``calibration`` carries the cold-weight figures and the model's weights overflow
    its last-level cache."""
    if not calibration:
        return False
    bw, llc = calibration.get("cold_weight_bw_gbs"), calibration.get("llc_bytes")
    return bool(bw and llc and float(np.sum(weight_bytes)) > float(llc))


def cold_weight_s(calibration: Mapping[str, Any] | None, feats: Mapping[str, Any],
                  weight_bytes: np.ndarray, hw: Mapping[str, Any], consts: Mapping[str, Any]) -> np.ndarray:
    """Seconds per launch each kernel adds when its weights come from DRAM (see the module
    docstring); zeros where the figures are missing or the weights fit the LLC. ``feats``,
    ``hw``, ``consts``: ``efficiency.kernel_time``'s arguments for one profile."""
    w = np.asarray(weight_bytes, dtype=np.float64)
    if not applies(calibration, w):
        return np.zeros_like(w)
    bw_cold = float(calibration["cold_weight_bw_gbs"]) * 1e9
    hot = eff.kernel_time(np, feats, hw, consts)
    without = dict(feats)
    without["bytes"] = np.maximum(np.asarray(feats["bytes"], dtype=np.float64) - w, 0.0)
    rest = eff.kernel_time(np, without, hw, consts)
    extra = (np.maximum(rest["compute_s"], rest["memory_s"]) - np.maximum(hot["compute_s"], hot["memory_s"])
             + w / bw_cold)
    return np.where(w > 0, extra, 0.0)
