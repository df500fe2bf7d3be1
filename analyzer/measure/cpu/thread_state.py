"""Was the machine's multi-threaded speed steady while a calibration measured it?

A calibration above 1 thread times one small parallel model (``probe_model``) at 1 thread and
at its own thread count; the ratio is the probe's speed-up (``speedup``), "fast" at or above
``SLOWER`` and "slow" below (``state``). ``wait_fast`` and ``bracketed`` retry a step until the
probes around it read fast, and ``another_pass`` decides whether a row pass is repeated. The
warnings a profile carries from these figures are ``analyzer.prediction.cpu.thread_notes``.
"""

from __future__ import annotations

import itertools
import time
from typing import Any, Callable

from analyzer.prediction.cpu.thread_notes import SLOWER


def probe_model() -> Any:
    """12 blocks of MatMul (32x256 @ 256x256) -> LayerNormalization over 256: ~60-80 us at 1
    thread on a 2-core EPYC, every kernel large enough for onnxruntime to split over threads."""
    import numpy as np
    from onnx import helper, numpy_helper

    from analyzer.measure.onnx_build import build_model, value_info

    rng = np.random.default_rng(3)
    nodes, inits, prev = [], [], "x"
    for i in range(12):
        w = numpy_helper.from_array((rng.standard_normal((256, 256)) * 0.05).astype(np.float32), f"w{i}")
        g = numpy_helper.from_array(np.ones(256, np.float32), f"g{i}")
        inits += [w, g]
        out = "y" if i == 11 else f"n{i}"
        nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [f"m{i}"], name=f"mm{i}"))
        nodes.append(helper.make_node("LayerNormalization", [f"m{i}", f"g{i}"], [out], name=f"ln{i}",
                                      axis=-1))
        prev = out
    return build_model(nodes, [value_info("x", (1, 32, 256))], [value_info("y", (1, 32, 256))], inits)


def speedup(threads: int, wall: Callable[[Any, int], float]) -> float:
    """The probe's wall-clock at 1 thread over its wall-clock at ``threads`` (``wall(model,
    threads)`` -> seconds; the caller's timer, so that the session options are the calibration's)."""
    m = probe_model()
    return float(wall(m, 1) / max(wall(m, threads), 1e-12))


def state(speedup_: float) -> str:
    """"fast" where the threads sped the probe up, "slow" where they slowed it down (``SLOWER``)."""
    return "fast" if speedup_ >= SLOWER else "slow"


def wait_fast(probe: Callable[[], float], tries: int, wait_s: float = 2.0,
              sleep: Callable[[float], None] | None = None) -> list[float]:
    """``probe()`` up to ``tries`` times, ``wait_s`` apart, until one reads fast; the speed-ups."""
    out = [probe()]
    while state(out[-1]) != "fast" and len(out) < tries:
        (sleep or time.sleep)(wait_s)
        out.append(probe())
    return out


def bracketed(probe: Callable[[], float], fn: Callable[[], Any], tries: int) -> tuple[Any, tuple[float, float]]:
    """``fn()`` between two probes, again (up to ``tries`` times) until both read fast: (its last
    result, the two probes around it). A measurement across a change of state mixes the two."""
    for _ in range(tries):
        s0 = probe()
        out = fn()
        s1 = probe()
        if state(s0) == state(s1) == "fast":
            break
    return out, (s0, s1)


def another_pass(done: int, passes: int, extra: int, probes: list[float] | None) -> bool:
    """Whether to start pass ``done + 1``: fewer than ``passes`` done, or, with the probes timed
    before each pass done and, where taken, one after the last (above 1 thread), no pass between
    two fast probes and fewer than ``passes + extra`` done. A fast probe before a pass alone says
    little: a default-level 2-thread bench read 1.57 before its first pass, which ran slow, and
    0.92 and 0.89 before the next two. (``calibrate.time_rows`` over its rows,
    ``bench/accuracy_cpu.py`` over the models.)"""
    if done < passes:
        return True
    if probes is None or done >= passes + extra:
        return False
    fast = [state(s) == "fast" for s in probes[:done + 1]]
    return not any(a and b for a, b in itertools.pairwise(fast))
