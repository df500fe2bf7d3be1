"""Two per-device terms of the kernel-time model (``kernel_time``): the L2 cache step and a
family's constants at a device's clock.

- ``l2_step``: ``s(x) = 1 / (1 + x**L2_STEP_POWER)``, ``x = working set / L2 bytes`` (1 where the
  working set is far under the L2, 0 far over it or with the L2 flushed: ``l2_bytes`` 0), and the
  warm start it gives a class floor (``warm_share``: ``l2_floor x s``) or the cold start it adds
  (``cold_start``: ``cold_start_s x (1 - s)``).
- ``with_clock``: the constants stated in cycles (per-SM issue rate ``bpc``, bytes per SM-cycle; the
  serial k loop ``kloop_cycles``; floors fitted at ``floor_clock_hz``) in seconds at a device's clock.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from analyzer.prediction.efficiency.op_classes import OP_CLASSES

L2_STEP_POWER = 2.0


def with_clock(arrays: Mapping[str, Any], clock_hz: float, scale_floor: bool = True) -> dict:
    """``arrays`` (one family's constants) for a device clocked at ``clock_hz``: a copy with
    ``sm_bw = bpc * clock_hz`` (bytes per second per SM; 0 where ``clock_hz`` is unknown or <= 0),
    ``kloop_s = kloop_cycles / clock_hz`` (seconds per k-loop element; 0 there too) and each floor
    a fixed number of cycles: ``floor_s * floor_clock_hz / clock_hz`` where the set
    states the clock of the device it was fitted on (``floor_clock_hz`` > 0) and ``clock_hz`` is
    known (``scale_floor``: False where ``clock_hz`` is a stand-in, not the device's own figure);
    else the floor in seconds as fitted."""
    out = {k: (np.array(v, dtype=float) if np.ndim(v) else v) for k, v in arrays.items()}
    bpc = np.asarray(arrays.get("bpc", np.zeros(len(OP_CLASSES))), dtype=float)
    known = bool(clock_hz and clock_hz > 0)
    out["sm_bw"] = bpc * float(clock_hz) if known else np.zeros_like(bpc)
    kc = np.asarray(arrays.get("kloop_cycles", np.zeros(len(OP_CLASSES))), dtype=float)
    out["kloop_s"] = kc / float(clock_hz) if known else np.zeros_like(kc)
    if known and scale_floor and "floor_clock_hz" in out and "floor_s" in out:
        ref = out["floor_clock_hz"]
        out["floor_s"] = np.where(ref > 0, out["floor_s"] * ref / float(clock_hz), out["floor_s"])
    return out


def l2_step(xp, working_set, l2_bytes, power: float = L2_STEP_POWER):
    """``s(x) = 1 / (1 + x**power)``, ``x = working_set / l2_bytes``; 0 where ``l2_bytes <= 0``.

    Written as ``(1 - tanh(power/2 * ln x)) / 2`` with ``x`` clamped to [1e-30, 1e30], so it
    never overflows and its gradient is finite everywhere (jit/vmap/grad-safe)."""
    ws = xp.asarray(working_set)
    l2 = xp.asarray(l2_bytes) * xp.ones_like(ws)
    known = l2 > 0
    x = xp.clip(xp.maximum(ws, 1.0) / xp.where(known, l2, 1.0), 1e-30, 1e30)
    s = 0.5 * (1.0 - xp.tanh(0.5 * power * xp.log(x)))
    return xp.where(known, s, 0.0)


def warm_share(xp, arrays: Mapping[str, Any], cls, nbytes, l2_bytes):
    """``l2_floor[c] * s(bytes / l2_bytes)``: the share of a class floor a warm start saves (0 where
    the set has no ``l2_floor`` or the L2 is cold: ``l2_bytes`` 0)."""
    if "l2_floor" not in arrays:
        return xp.zeros_like(xp.asarray(nbytes, dtype=float))
    return xp.take(xp.asarray(arrays["l2_floor"]), cls) * l2_step(xp, nbytes, l2_bytes)


def cold_start(xp, arrays: Mapping[str, Any], cls, nbytes, l2_bytes):
    """``cold_start_s[c] * (1 - s(bytes / l2_bytes))``: the seconds a kernel's first loads wait for
    DRAM where its working set is not in the L2 (flushed: ``l2_bytes`` 0, s = 0; or far over it),
    for a set whose floor was measured L2-warm (0 where the set has no ``cold_start_s``)."""
    if "cold_start_s" not in arrays:
        return xp.zeros_like(xp.asarray(nbytes, dtype=float))
    return xp.take(xp.asarray(arrays["cold_start_s"]), cls) * (1.0 - l2_step(xp, nbytes, l2_bytes))
