"""Was the machine's multi-threaded speed steady while ``calibrate`` measured it?

A calibration at more than one intra-op thread is only as good as the state of the cores during
its minute or two. On a shared host the same cores can run onnxruntime's thread pool in very
different states: on the 2-core EPYC VM opcost is developed on, the ort BERT fixture at 2 threads
runs 0.084-0.100 ms for minutes at a time, then 0.185-0.192 ms for minutes (0.115-0.118 ms at 1
thread, either way), and the switch moves 2-thread predictions of small models by tens of
percent (bench/ort_thread_modes.py; bench/results/accuracy_cpu_2026-11-24f.md). Nothing in a
profile can follow that, but a calibration can say what it saw: it times one small parallel
model at the start and at the end, at 1 thread and at its own thread count, and records the
speed-ups. ``notes`` turns them into plain warnings (the CLI prints them; predictions on the
profile carry them in their provenance).
"""

from __future__ import annotations

import time
from typing import Any, Callable

# a probe whose speed-up at 2+ threads falls below this ran slower with its threads than
# without: the cores were shared or contended
SLOWER = 1.0
# start and end speed-ups further apart than this ratio: the state changed during calibration
CHANGED = 1.25


def probe_model() -> Any:
    """12 blocks of MatMul (32x256 @ 256x256) -> LayerNormalization over 256: ~60-80 us at 1
    thread on a 2-core EPYC, every kernel large enough for onnxruntime to split over threads."""
    import numpy as np
    from onnx import helper, numpy_helper

    from analyzer.prediction.onnx_build import build_model, value_info

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


# calibration steps measured once above 1 thread, each after a probe (``wait_fast``/``bracketed``):
# (the probe's key, what was measured, what a slow probe does to the profile)
_STEPS = (("thread_speedup_reorders", "the NCHWc reorders around the convolution rows were profiled",
           "the convolution rows less them are too fast"),
          ("thread_speedup_cache", "the effective cache size was measured",
           "in that state this VM's two vCPUs see more cache"))


def another_pass(done: int, passes: int, extra: int, probes: list[float] | None) -> bool:
    """Whether to start pass ``done + 1``: fewer than ``passes`` done, or, with the probes timed
    before each pass done and, where taken, one after the last (above 1 thread), no pass between
    two fast probes and fewer than ``passes + extra`` done. A fast probe before a pass alone says
    little: run y's default/2-thread bench read 1.57 before its first pass, which ran slow, and
    0.92 and 0.89 before the next two. (``calibrate.time_rows`` over its rows,
    ``bench/accuracy_cpu.py`` over the models.)"""
    if done < passes:
        return True
    if probes is None or done >= passes + extra:
        return False
    fast = [state(s) == "fast" for s in probes[:done + 1]]
    return not any(a and b for a, b in zip(fast, fast[1:]))


def notes(calibration: dict) -> list[str]:
    """Warnings about a calibration's thread state (none at 1 thread or when it was steady)."""
    t = calibration.get("threads")
    s0, s1 = calibration.get("thread_speedup_start"), calibration.get("thread_speedup_end")
    if not t or t <= 1 or s0 is None or s1 is None:
        return []
    out = []
    lo, hi = calibration.get("thread_speedup_passes_min"), calibration.get("thread_speedup_passes_max")
    # (where the row passes were probed, a slow start or end says nothing of the rows: each kept
    # its fastest pass, and the warning below says whether any was fast)
    if min(s0, s1) < SLOWER and hi is None:
        out.append(f"at {t} threads onnxruntime ran a parallel probe slower than at 1 thread (speed-up "
                   f"{s0:.2f} at the start of the calibration, {s1:.2f} at the end): the cores were "
                   f"shared or contended, and the profile fits that state")
    if lo is not None and hi is not None and hi < SLOWER:
        out.append(f"every row pass of the calibration ran with {t} threads slower than 1 (probe "
                   f"speed-ups {lo:.2f}-{hi:.2f} before its {calibration.get('row_passes', '?')} "
                   f"passes): the profile fits that state; calibrate again when it is gone")
    for key, what, why in _STEPS:   # the steps measured once, after a probe
        s = calibration.get(key)
        if s is not None and s < SLOWER:
            out.append(f"{what} while {t} threads ran slower than 1 (probe {s:.2f}): {why}; "
                       f"calibrate again when that state is gone")
    if max(s0, s1) / max(min(s0, s1), 1e-9) > CHANGED:
        out.append(f"the machine's {t}-thread speed changed during the calibration (probe speed-up "
                   f"{s0:.2f} at the start, {s1:.2f} at the end): calibrate again when it is steady")
    return out
