"""The per-kernel features and per-profile scalars of PyTorch's own CUDA kernels in a lowering
(``lowering.lower``; the runtimes of ``softmax_passes.PYTORCH_RUNTIMES``), and the per-profile
constant arrays they join: the long-row softmax's re-reads (``softmax_passes``), the gathers'
small-index loop and id load (``small_index``, ``gather_latency``), the row kernels' term and
classes (``row_kernels``) and a power-capped card's boost window (``engines.boost_terms``).
"""

from __future__ import annotations

import numpy as np

from analyzer.prediction import engines, gather_latency, row_kernels, small_index, softmax_passes
from analyzer.prediction.efficiency import constants as fc
from analyzer.prediction.efficiency import kernel_time as eff
from analyzer.prediction.hardware import clock_hz

ROW_FEATS = ("row_kind", "row_m", "row_n")   # (row_kernels.kernel_row's triple, in order)


def empty_consts(P: int) -> dict:
    """The per-profile constant arrays before any profile: the class parameters [P, classes],
    trans_weight [P], ``softmax_passes.profile_terms``' two scalars [P], ``small_index``'s
    seconds per step [P], ``gather_latency``'s two [P], ``row_profile_terms``' threads per
    SM [P] and per-kind constants [P, kinds] and a power-capped card's boost window
    (``engines.boost_terms``) [P]."""
    return {**{p: np.zeros((P, len(eff.OP_CLASSES))) for p in eff.CLASS_PARAMS}, "trans_weight": np.ones(P),
            "softmax_reread": np.zeros(P), "softmax_l2_row": np.zeros(P), "index_iter_s": np.zeros(P),
            "gather_dep_s": np.zeros(P), "gather_rate": np.ones(P),
            "row_threads_sm": np.zeros(P), **{f"row_{q}": np.zeros((P, len(row_kernels.KINDS)))
                                              for q in ("c0_s", "step_s", "overlap")},
            "boost_ratio": np.ones(P), "boost_window_s": np.zeros(P)}


def _reread_feats(runtime_name: str, cls_l, plan, nodes, fnodes) -> dict:
    """The kernel features of PyTorch's long-row CUDA softmax (``softmax_passes.kernel_features``):
    ``reread_bytes`` and ``row_bytes``, [K] float64 (0 for every kernel of another runtime)."""
    pairs = softmax_passes.per_node(nodes, fnodes) if runtime_name in softmax_passes.PYTORCH_RUNTIMES else {}
    reread, row = softmax_passes.kernel_features(runtime_name, cls_l, plan.members, pairs)
    return {"reread_bytes": np.array(reread, dtype=np.float64), "row_bytes": np.array(row, dtype=np.float64)}


def kernel_feats(feats: dict, runtime_name: str, cls_l, graph, profiles):
    """The kernel classes ``cls_l`` with PyTorch's row kernels moved to their row class where a
    profile has their kind's row term (``row_kernels.row_class``, ``row_kinds_on``), after ``feats`` (in place) took
    ``_reread_feats``, ``_index_feats`` and the moved classes (``op_class``); ``graph``: (plan,
    nodes, fusion nodes)."""
    plan, nodes, fnodes = graph
    feats.update({**_reread_feats(runtime_name, cls_l, plan, nodes, fnodes), **_index_feats(runtime_name, plan, nodes)})
    on = row_kinds_on(profiles, runtime_name)
    if on:
        cls_l = tuple(row_kernels.row_class(c, k, on) for c, k in zip(cls_l, feats["row_kind"]))
        feats["op_class"] = np.array(cls_l, dtype=np.int32)
    return cls_l


def profile_scalars(consts: dict, p: int, prof, cold: bool) -> None:
    """Profile ``p``'s scalars of PyTorch's CUDA kernels, in place: ``softmax_passes.profile_terms``
    (``softmax_reread``, ``softmax_l2_row``), ``small_index.profile_term`` (``index_iter_s``),
    ``gather_latency.profile_terms`` (``gather_dep_s``, ``gather_rate``; ``cold``: the L2 flushed),
    ``row_profile_terms`` (``row_*``)
    and its boost window (``engines.boost_terms``: ``boost_ratio``, ``boost_window_s``)."""
    consts["softmax_reread"][p], consts["softmax_l2_row"][p] = softmax_passes.profile_terms(prof)
    consts["index_iter_s"][p] = small_index.profile_term(prof, clock_hz(prof))
    consts["gather_dep_s"][p], consts["gather_rate"][p] = gather_latency.profile_terms(prof, clock_hz(prof), cold)
    for name, v in row_profile_terms(prof, clock_hz(prof)).items():
        consts[name][p] = v
    consts["boost_ratio"][p], consts["boost_window_s"][p] = engines.boost_terms(prof)


def _index_feats(runtime_name: str, plan, nodes) -> dict:
    """The kernel features of PyTorch's gather (``small_index.node_ids``): ``index_ids`` and
    ``index_slice``, and of its row kernels (``row_kernels.kernel_row``): ``row_kind``, ``row_m``,
    ``row_n``; [K] float64 (0 for every kernel of a runtime that does not run PyTorch's kernels,
    and for every kernel that is not one ``index_select`` or one row kernel)."""
    ids, sl = [0.0] * len(plan.members), [0.0] * len(plan.members)
    rows = [(0.0, 0.0, 0.0)] * len(plan.members)
    if runtime_name in softmax_passes.PYTORCH_RUNTIMES:
        for k, m in enumerate(plan.members):
            if len(m) == 1:
                ids[k], sl[k] = small_index.node_ids(nodes[m[0]])
        rows = [row_kernels.kernel_row([row_kernels.node_row(nodes[i]) for i in m]) for m in plan.members]
    return {"index_ids": np.array(ids, dtype=np.float64), "index_slice": np.array(sl, dtype=np.float64),
            **{f: np.array([r[j] for r in rows], dtype=np.float64) for j, f in enumerate(ROW_FEATS)}}


def row_profile_terms(prof, clock_hz: float) -> dict:
    """The row term's per-profile constants: ``row_threads_sm`` (resident threads per SM,
    ``softmax_passes.THREADS_PER_SM``), ``row_c0_s`` / ``row_step_s`` (per kind, ``row_kernels.KINDS``:
    cycles / ``clock_hz``) and ``row_overlap`` (per kind) where ``prof`` is an NVIDIA GPU with a
    known clock whose family file (or one it inherits) states ``row_kernels``; else all 0 (off)."""
    out = {"row_threads_sm": 0.0, **{f"row_{p}": np.zeros(len(row_kernels.KINDS))
                                     for p in ("c0_s", "step_s", "overlap")}}
    family = getattr(prof, "family", "") or ""
    if getattr(prof, "kind", "") != "gpu" or not family.startswith("nvidia-") or not clock_hz or clock_hz <= 0:
        return out
    table = fc.row_constants(family)
    if not table:
        return out
    for kind, c in table.items():
        i = row_kernels.KIND_CODE[kind]
        out["row_c0_s"][i], out["row_step_s"][i] = c["c0_cycles"] / clock_hz, c["step_cycles"] / clock_hz
        out["row_overlap"][i] = float(c.get("overlap", 0))
    out["row_threads_sm"] = float(softmax_passes.THREADS_PER_SM.get(family, softmax_passes.THREADS_PER_SM_DEFAULT))
    return out


def row_kinds_on(profiles, runtime_name: str) -> frozenset:
    """The kind codes (``row_kernels.KINDS``) whose row term some profile of ``profiles`` has under
    ``runtime_name`` (``row_profile_terms`` at ``hardware.clock_hz``: c0 or step > 0); empty off
    PyTorch's runtimes (``softmax_passes.PYTORCH_RUNTIMES``)."""
    if runtime_name not in softmax_passes.PYTORCH_RUNTIMES:
        return frozenset()
    on = set()
    for prof in profiles:
        t = row_profile_terms(prof, clock_hz(prof))
        on.update(i for i in range(1, len(row_kernels.KINDS)) if t["row_c0_s"][i] > 0 or t["row_step_s"][i] > 0)
    return frozenset(on)
