"""The result of a prediction: ``Prediction``, one model on one hardware profile, and its
per-kernel rows ``NodePrediction`` (``predict.predict`` builds them).  ``Prediction.explain(i)``
gives a layer's terms (``KernelTerms``) and ``Prediction.host_step(i)`` a host-only op's
(``HostStep``), both read back from the kernel table the prediction keeps."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from analyzer.prediction.kernels import BOUNDS
from analyzer.prediction.terms import HostStep, KernelTable, KernelTerms


class NodePrediction(NamedTuple):
    """Predicted time of one kernel on one profile (immutable)."""

    name: str
    time_s: float
    compute_s: float
    memory_s: float
    overhead_s: float
    bound: str
    intensity: float   # FLOPs per byte moved (at the prediction's precision)
    share: float       # this layer's fraction of the model's predicted latency
    index: int = -1    # position of the node in ``report.nodes`` (not in JSON: names are)
    kernel: str = ""   # the kernel this node runs in (its first node's name; itself if unfused)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "time_s": self.time_s, "compute_s": self.compute_s,
                "memory_s": self.memory_s, "overhead_s": self.overhead_s, "bound": self.bound,
                "intensity": self.intensity, "share": self.share, "kernel": self.kernel}


def _f32(x) -> float:
    """``x`` as the float32 the jitted kernel computed with (the per-launch fixed cost and the class
    floor enter it as float32: shown in float64 they can round to another last digit than the
    kernel's product ``launches x fixed``)."""
    return float(np.float32(x))


@dataclass(frozen=True, slots=True, kw_only=True)
class Prediction:
    """Predicted latency of one model on one hardware profile (frozen; ``nodes`` and
    ``warnings`` are tuples, ``nodes`` in graph order)."""

    hardware: str
    hardware_name: str
    precision: str
    overlap: bool
    latency_s: float
    bound_share: dict[str, float]
    nodes: tuple[NodePrediction, ...]
    warnings: tuple[str, ...] = ()
    precision_explicit: bool = False   # True when --precision overrode the model's dtypes
    runtime: str = "kernel"            # runtimes.RUNTIMES: what runs the model
    time_definition: str = ""          # which time is predicted (runtimes.Runtime)
    provenance: str = "datasheet"      # lowering.PROVENANCE: where the efficiencies come from
    provenance_detail: str = ""
    notes: tuple[str, ...] = ()        # assumptions that change the answer (headline material)
    kernels: int = 0                   # distinct kernels (fusion groups)
    # fixed cost of one run besides its kernels (a profile calibrated with this runtime:
    # calibration.run_overhead_us, e.g. session.run's own cost); included in latency_s
    run_overhead_s: float = 0.0
    launches: int = 0                  # kernel launches: a loop body's kernels once per trip
    # host-only ops per run (``HostStep``: eager views that launch nothing but cost host time),
    # a loop body's once per trip; not in ``launches``
    host_ops: int = 0
    # the L2 state its GPU kernels start in (``l2_state``): "warm", or "cold" (the L2 flushed
    # before each kernel; part of ``time_definition``)
    l2: str = "warm"
    # per-kernel terms (``explain``, ``roofline``); not part of the value or its JSON
    kernel_table: KernelTable | None = field(default=None, repr=False, compare=False)
    # the target predicted for (profile object, runtime, why): what later stages (training,
    # scaling) use instead of looking the profile up again by id; not part of the value
    target: Any = field(default=None, repr=False, compare=False)
    # node index -> row, built on the first ``for_node`` call (a cache, not part of the value)
    _by_index: dict[int, NodePrediction] | None = field(default=None, init=False, repr=False,
                                                        compare=False)

    def __post_init__(self) -> None:
        for name in ("nodes", "warnings", "notes"):
            if not isinstance(v := getattr(self, name), tuple):
                object.__setattr__(self, name, tuple(v))

    def __repr__(self) -> str:
        """One line: profile, precision, runtime, latency, bound shares, rows (``to_dict()``
        is the whole value)."""
        shares = ", ".join(f"{b} {s:.0%}" for b, s in self.bound_share.items() if s > 0)
        return (f"Prediction({self.hardware!r}, {self.precision}, {self.runtime}, "
                f"latency_s={self.latency_s:.4g} [{shares}], {len(self.nodes)} rows)")

    def to_dict(self) -> dict[str, Any]:
        return {"hardware": self.hardware, "hardware_name": self.hardware_name,
                "precision": self.precision,
                "model": "overlap" if self.overlap else "additive",
                "runtime": self.runtime, "time_definition": self.time_definition, "l2": self.l2,
                "provenance": self.provenance, "provenance_detail": self.provenance_detail,
                "kernels": self.kernels, "launches": self.launches, "host_ops": self.host_ops,
                "run_overhead_s": self.run_overhead_s,
                "latency_s": self.latency_s, "bound_share": dict(self.bound_share),
                "nodes": [n.to_dict() for n in self.nodes], "warnings": list(self.warnings),
                "notes": list(self.notes)}

    def for_node(self, index: int) -> NodePrediction | None:
        """The row of ``report.nodes[index]``, or None when that node launches no kernel and
        is no host-only op."""
        by_index = self._by_index
        if by_index is None:
            by_index = {x.index: x for x in self.nodes}
            object.__setattr__(self, "_by_index", by_index)
        return by_index.get(index)

    def node(self, name: str) -> NodePrediction:
        """The row of the node named ``name`` (a convenience for people; code joins rows to
        nodes by index: ``for_node`` / ``Report.rows``)."""
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)

    def _class_provenance(self, op_class: str) -> str:
        """Where ``op_class``'s constants on this profile come from (``hardware.class_provenance``);
        "" where its constants are not a family file's (calibrated,
        generic, datasheet) or the prediction kept no target."""
        if self.provenance != "architecture constants" or self.target is None:
            return ""
        from analyzer.prediction.hardware import class_provenance

        return class_provenance(self.target.profile, op_class)

    def explain(self, index: int) -> KernelTerms | None:
        """The kernel-time arithmetic of ``report.nodes[index]`` on this profile, or None when
        the node launches no kernel (or the prediction kept no kernel table)."""
        t = self.kernel_table
        if t is None or index < 0 or index >= len(t.kernel_of) or t.kernel_of[index] < 0:
            return None
        k = int(t.kernel_of[index])
        mac, vec, trans, nb = (float(a[k]) for a in (t.mac, t.vec, t.trans, t.nbytes))
        flops = mac + vec + trans
        engine = "matrix" if mac >= vec + trans and mac > 0 else "vector"
        peak = float(t.matrix_peak[k] if engine == "matrix" else t.vector_peak[k])
        time = float(t.time[k])
        runs = float(t.runs[k])
        d = t.detail(k)
        body = max(d["compute_s"], d["memory_s"]) if t.overlap else d["compute_s"] + d["memory_s"]
        return KernelTerms(
            kernel=t.names[k], members=int(t.members[k]), member_share=float(t.weight[index]),
            op_class=t.op_class[k], runs=runs, mac_flops=mac, vector_flops=vec,
            transcendental_flops=trans, bytes=nb, intensity=flops / nb if nb > 0 else float("inf"),
            engine=engine, matrix_peak=float(t.matrix_peak[k]), vector_peak=float(t.vector_peak[k]),
            mem_bw=t.mem_bw, ridge=peak / t.mem_bw if t.mem_bw else float("inf"),
            effective_ridge=(peak * float(t.consts["e_compute"][k]) / (t.mem_bw * float(t.consts["e_bw"][k]))
                             if t.mem_bw and t.consts["e_bw"][k] else float("inf")),
            e_compute=float(t.consts["e_compute"][k]), e_bw=float(t.consts["e_bw"][k]),
            b_half_bytes=float(t.consts["b_half_bytes"][k]), floor_s=_f32(t.consts["floor_s"][k]),
            trans_weight=float(t.consts["trans_weight"]), fixed_s=_f32(t.fixed[k] - t.consts["floor_s"][k] * d["warm_start"]
                                                                     + d.get("cold_start_s", 0.0)),
            compute_s=float(t.compute[k]), memory_s=float(t.memory[k]), overhead_s=float(t.overhead[k]),
            time_s=time, bound=BOUNDS[int(t.bound[k])],
            attained_flops=flops * runs / time if time > 0 else 0.0,
            provenance=self.provenance, provenance_detail=self.provenance_detail,
            class_provenance=self._class_provenance(t.op_class[k]),
            pad=d["pad"], wave=d["wave"], split_k=d["split_k"], narrow=d["narrow"], algo=d.get("algo", 1.0),
            clock=d.get("clock", 1.0), **_kloop_terms(d),
            matrix_s=d["matrix_s"], vector_s=d["vector_s"], dram_bytes=d["dram_bytes"], cache_share=d["cache_share"],
            **{k: d.get(k, 0.0) for k in ("reread_l2_bytes", "reread_dram_bytes", "reread_row_bytes", "reread_l2_row",
                                          "index_loop_s", "gather_dep_s", "row_s", "row_waves", "row_steps",
                                          "row_c0_s", "row_step_s", "row_overlap")}, gather_rate=d.get("gather_rate", 1.0),
            cache_gain=d["cache_gain"], dram_s=d["dram_s"], sm_s=d["sm_s"], sm_rate=d["sm_bw"], units=t.units,
            sm_overlap=bool(t.consts["sm_overlap"][k] > 0),
            l2_bytes=t.l2_bytes, warm_start=d.get("warm_start", 0.0), cold_start_s=d.get("cold_start_s", 0.0),
            l2_floor=float(t.consts["l2_floor"][k]), effective_roof=flops / body if body > 0 else 0.0,
            **({} if t.resident is None else
               {"resident_bytes": float(t.resident[0][k]), "resident_s": float(t.resident[1][k])}),
            **({} if t.split is None else {"split_parts": float(t.split[0][k]), "split_s": float(t.split[1][k])}),
            **({} if t.ynn_dot is None else {"ynn_dot_s": float(t.ynn_dot[k])}),
            **({} if t.loop_work is None else {"loop_work_s": float(t.loop_work[k])}),
            **({} if t.per_output is None or not t.per_output[1][k] else
               {"outputs": float(t.per_output[0][k]), "per_output_s": float(t.per_output[1][k])}),
            **({} if t.onchip is None else
               {"onchip": True, "onchip_bytes": float(t.onchip[0][k]), "weight_bytes": float(t.onchip[1][k]),
                "onchip_budget": t.onchip[2], "onchip_cost": t.onchip[3]}),
            **({} if t.dw_rate is None or not t.dw_rate[1][k] else
               {"dw_outputs": float(t.dw_rate[0][k]), "dw_rate": float(t.dw_rate[1][k])}),
            **({} if t.gap is None else
               {"stream": True, "host_s": float(t.host[k]), "gap_s": float(t.gap[k]),
                "stream_s": time - float(t.host[k]) + float(t.gap[k])}),
            inserted=t.inserted[k] if t.inserted else (), placed=t.placed.get(k))

    def folded_into(self, index: int) -> int | None:
        """The node index of the matrix product ``report.nodes[index]`` is folded into (a
        transpose XLA's GPU compiler makes part of the product's operand layout:
        ``transpose_fold.xla_folded``), else None."""
        t = self.kernel_table
        return None if t is None else t.folded.get(index)

    def merged_with(self, index: int) -> tuple[int, ...] | None:
        """The node indices of the dots ``report.nodes[index]`` is merged with into one dot,
        itself included, in graph order (XLA's GPU ``DotMerger``: ``dot_merge``), else None."""
        t = self.kernel_table
        return None if t is None else t.merged.get(index)

    def kept_apart(self, index: int) -> tuple[int, str] | None:
        """(the producer node index, the reason) where ``report.nodes[index]`` starts a kernel apart
        from its producer's at a reduction (XLA's GPU fusion rules: ``xla_gpu_reduce``), else None."""
        t = self.kernel_table
        return None if t is None else t.apart.get(index)

    def host_step(self, index: int) -> HostStep | None:
        """The host time of ``report.nodes[index]`` when it is a host-only op, else None."""
        t = self.kernel_table
        if t is None or index not in t.host_nodes:
            return None
        from analyzer.prediction.runtimes import HOST_ONLY_RATIO, HOST_ONLY_SOURCE

        j = t.host_nodes.index(index)
        runs = float(t.host_runs[j])
        h = float(t.host_only[j])
        return HostStep(runs=runs, host_s=h, ratio=HOST_ONLY_RATIO,
                        dispatch_s=h / runs / HOST_ONLY_RATIO if HOST_ONLY_RATIO else 0.0,
                        stream=t.gap is not None, exposed_s=float(t.host_gap[j]), source=HOST_ONLY_SOURCE)

    def roofline(self) -> tuple[list[tuple[int, float, float]], dict[str, float]]:
        """Points and roofs of a roofline chart: ``[(node index, intensity FLOP/B, attained
        FLOP/s, effective roof FLOP/s)]`` for every row that does work (its kernel's figures; a
        node that moves no bytes is left out; the effective roof is what the model's terms held
        the kernel to: its FLOPs over ``max(compute, memory)``, the fixed cost left out: padding,
        waves, the cache share and the ramp included), and ``{"matrix_peak", "vector_peak",
        "mem_bw"}``: the highest peaks the kernels ran at and the bandwidth."""
        t = self.kernel_table
        if t is None:
            return [], {}
        flops = (t.mac + t.vec + t.trans) * t.runs
        pts = []
        for x in self.nodes:
            k = int(t.kernel_of[x.index])
            if k < 0:      # a host-only op: no kernel, no point
                continue
            tk = float(t.time[k])
            if x.intensity != float("inf") and tk > 0 and flops[k] > 0:
                body = (max(float(t.compute[k]), float(t.memory[k])) if t.overlap
                        else float(t.compute[k] + t.memory[k]))
                pts.append((x.index, x.intensity, float(flops[k]) / tk,
                            float(flops[k]) / body if body > 0 else 0.0))
        mp = t.matrix_peak[t.mac > 0]
        vp = t.vector_peak[(t.vec + t.trans) > 0]
        return pts, {"matrix_peak": float(mp.max()) if mp.size else 0.0,
                     "vector_peak": float(vp.max()) if vp.size else 0.0,
                     "mem_bw": float(t.mem_bw)}

    def top(self, k: int) -> list[NodePrediction]:
        """The ``k`` layers with the largest predicted time."""
        return sorted(self.nodes, key=lambda n: -n.time_s)[:k]


def _kloop_terms(d: dict) -> dict:
    """``KernelTerms``' serial k-loop fields from ``kernel_time``'s detail ``d`` of one kernel
    (``efficiency.tiles.kloop_bound``; none where the class has no k loop: the defaults, 0)."""
    if not d.get("kloop_s", 0.0):
        return {}
    return {"tiles_s": d["tiles_s"], "kloop_s": d["kloop_s"], "kloop_k": d["kloop_k"],
            "kloop_step_s": d["kloop_step_s"], "kloop_sum": bool(d["kloop_sum"] > 0)}
