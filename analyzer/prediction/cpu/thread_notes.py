"""Warnings about a CPU calibration's thread state, carried by predictions on its profile.

A calibration above 1 intra-op thread is only as good as the state of the cores while it ran:
on a shared host the same cores can run onnxruntime's thread pool in very different states for
minutes at a time (docs/accuracy.md shows such a host). The calibration records the speed-up of
a small parallel probe at its start and end and around its steps
(``analyzer.measure.cpu.thread_state``); ``notes`` turns those figures into plain warnings (the
CLI prints them; predictions on the profile carry them in their provenance).
"""

from __future__ import annotations


# a probe whose speed-up at 2+ threads falls below this ran slower with its threads than
# without: the cores were shared or contended
SLOWER = 1.0
# start and end speed-ups further apart than this ratio: the state changed during calibration
CHANGED = 1.25


# calibration steps measured once above 1 thread, each after a probe (``wait_fast``/``bracketed``):
# (the probe's key, what was measured, what a slow probe does to the profile)
_STEPS = (("thread_speedup_reorders", "the NCHWc reorders around the convolution rows were profiled",
           "the convolution rows less them are too fast"),
          ("thread_speedup_cache", "the effective cache size was measured",
           "in that state this VM's two vCPUs see more cache"))


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
