"""Transcendentals priced by function: the ``xla`` runtime's kernels on a profile whose XLA
calibration has ``trans_ns`` (``{function: nanoseconds}``).

XLA's CPU backend evaluates each transcendental with its own vectorised code (a rational
approximation for ``tanh``, a polynomial for ``exp``, ``logistic`` through an exp and a divide,
``erf`` through a polynomial and an exp on part of its range), so one element of each costs a
different time whichever loop fusion it sits in. A calibration fits one time per function that
its rows evaluate alone (``measure.xla.fit.function_seconds``: ``t_f``, seconds of one element on
one core). A kernel of ``n_f`` evaluations of function ``f`` (counted by the rules:
``NodeCost.functions``, per launch) has the compute term

    compute = (mac + vec + trans_weight x (trans - sum_f n_f)) / (peak x e_c) + sum_f n_f x t_f

over the functions ``f`` the profile prices; the others stay at ``trans_weight`` vector FLOPs at
the class's rate. A kernel XLA splits into ``p`` parts (``xla_partition``) runs ``1 / p`` of them
on each core. What that changes of each launch's work term, ``max(compute, memory)``, against
the kernel form's (every transcendental at ``trans_weight``) is added to its fixed seconds
(``add_fixed``), as the split's is.
"""

from __future__ import annotations

import numpy as np


def kernel_functions(nodes, plan, runs) -> list[dict[str, float]]:
    """Per kernel of ``plan``: ``{function: evaluations per launch}`` of its members'
    ``NodeCost.functions`` (``runs``: the kernel's launches; a member's counts cover its runs)."""
    out = []
    for k, members in enumerate(plan.members):
        r = max(float(runs[k]), 1.0)
        fns: dict[str, float] = {}
        for i in members:
            for f, c in getattr(nodes[i], "functions", ()):
                fns[f] = fns.get(f, 0.0) + c / r
        out.append(fns)
    return out


def priced(calibration) -> dict[str, float]:
    """``{function: seconds of one evaluation on one core}`` of a calibration's ``trans_ns``
    (positive entries only; none: {})."""
    table = (calibration or {}).get("trans_ns") or {}
    return {f: float(ns) * 1e-9 for f, ns in table.items() if float(ns) > 0}


def function_terms(kfns: list[dict[str, float]], seconds: dict[str, float]) -> tuple[np.ndarray, np.ndarray]:
    """([K] seconds on one core of each launch's priced evaluations, [K] how many they are)."""
    T = np.array([sum(c * seconds[f] for f, c in fns.items() if f in seconds) for fns in kfns])
    N = np.array([sum(c for f, c in fns.items() if f in seconds) for fns in kfns])
    return T, N


def function_s(T: np.ndarray, N: np.ndarray, parts: np.ndarray, feats: dict, hw_p: dict, consts_p: dict,
               share: float | None) -> np.ndarray:
    """[K] seconds a launch's work term changes by pricing ``N`` of its transcendentals at ``T``
    seconds (on one core) instead of ``trans_weight`` vector FLOPs each, the kernel in its
    ``parts`` (FLOPs and ``T`` over them, bytes x ``memory_share``; ``share``: the profile's
    ``core_bw_share``); ``hw_p``/``consts_p``: one profile's figures and constants."""
    from analyzer.prediction.cpu.xla_partition import memory_share
    from analyzer.prediction.efficiency import kernel_time as eff

    if not N.any():
        return np.zeros_like(T)
    e_c = np.asarray(consts_p["e_compute"])[feats["op_class"]]
    rate = np.asarray(hw_p["vector_peak"]) * e_c
    m = memory_share(parts, share)

    def work(f):
        scaled = {k: (v / parts if k in ("mac_flops", "vec_flops", "trans_flops") else v * m if k == "bytes" else v)
                  for k, v in f.items()}
        t = eff.kernel_time(np, scaled, hw_p, consts_p)
        return np.maximum(t["compute_s"], t["memory_s"])
    by_fn = {**feats, "trans_flops": feats["trans_flops"] - N, "vec_flops": feats["vec_flops"] + T * rate}
    return np.where(N > 0, work(by_fn) - work(feats), 0.0)


def add_fixed(p: int, fixed: np.ndarray, prof, nodes, plan, feats, runs, split, hw_p: dict,
              consts_p: dict, notes: list[str]) -> np.ndarray | None:
    """Add ``function_s`` of each launch to ``fixed[p]`` ([P, K], in place) where ``plan`` is the
    ``xla_cpu`` plan and ``prof``'s calibration prices functions (``priced``); its note to
    ``notes``. ``split``: ``xla_partition.add_fixed``'s arrays (None: no kernel split). Returns
    the [K] seconds added (None where nothing is priced by function)."""
    from analyzer.prediction import xla_cpu_fusion
    from analyzer.prediction.cpu.xla_partition import core_bw_share

    seconds = priced(prof.calibration)
    if plan.policy != xla_cpu_fusion.POLICY or not seconds:
        return None
    T, N = function_terms(kernel_functions(nodes, plan, runs), seconds)
    if not N.any():
        return None
    parts = split[0][p] if split is not None else np.ones_like(T)
    delta = function_s(T, N, parts, feats, hw_p, consts_p, core_bw_share(prof.calibration))
    fixed[p] += delta
    names = ", ".join(f"{f} {s * 1e9:.3g}" for f, s in sorted(seconds.items()))
    notes.append(f"transcendentals priced by function (ns an element on one core: {names}; "
                 f"analyzer/prediction/cpu/xla_functions.py)")
    return delta
