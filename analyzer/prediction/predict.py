"""Predictions: a Report's counts lowered onto hardware profiles and run through the kernels.

``predict(report, hw)`` returns new ``Prediction`` values and changes nothing; the Report that
carries them is ``report.with_predictions(preds)`` (what ``analyzer.analyze(..., hw=...)``
returns).  Every ``NodePrediction`` holds the ``index`` of its node in ``report.nodes``: rows
exist only for nodes that launch a kernel, and ``Prediction.for_node(index)`` /
``Report.rows()`` join them to nodes by that index.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple, Sequence

from analyzer.prediction.kernels import BOUNDS


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


@dataclass(frozen=True, slots=True)
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
    # node index -> row, built on the first ``for_node`` call (a cache, not part of the value)
    _by_index: dict[int, NodePrediction] | None = field(default=None, init=False, repr=False,
                                                        compare=False)

    def __post_init__(self) -> None:
        for name in ("nodes", "warnings", "notes"):
            if not isinstance(v := getattr(self, name), tuple):
                object.__setattr__(self, name, tuple(v))

    def to_dict(self) -> dict[str, Any]:
        return {"hardware": self.hardware, "hardware_name": self.hardware_name,
                "precision": self.precision,
                "model": "overlap" if self.overlap else "additive",
                "runtime": self.runtime, "time_definition": self.time_definition,
                "provenance": self.provenance, "provenance_detail": self.provenance_detail,
                "kernels": self.kernels, "launches": self.launches,
                "run_overhead_s": self.run_overhead_s,
                "latency_s": self.latency_s, "bound_share": dict(self.bound_share),
                "nodes": [n.to_dict() for n in self.nodes], "warnings": list(self.warnings),
                "notes": list(self.notes)}

    def for_node(self, index: int) -> NodePrediction | None:
        """The row of ``report.nodes[index]``, or None when that node launches no kernel."""
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

    def top(self, k: int) -> list[NodePrediction]:
        """The ``k`` layers with the largest predicted time."""
        return sorted(self.nodes, key=lambda n: -n.time_s)[:k]



def profiles_of(hw: str | Sequence[str]) -> list:
    import hardware_db

    ids = [hw] if isinstance(hw, str) else list(hw)
    return [h if hasattr(h, "peak_flops") else hardware_db.get(h) for h in ids]


def predict(report, hw, *, precision: str | None = None, overlap: bool = True,
            runtime: str | None = None, fused=None) -> tuple[Prediction, ...]:
    """Predict per-layer latency of ``report`` on each profile in ``hw``: one new ``Prediction``
    per profile.  ``report`` is not changed; ``report.with_predictions(...)`` is the Report that
    carries them (calling this twice gives two independent results).

    ``runtime`` (``runtimes.RUNTIMES``): what runs the model, which decides the fusion, the
    per-kernel dispatch and the time predicted; default: xla for a JAX program, else the
    profile's ``default_runtime``, else its kind's.  Per kernel ``time = runs * (fixed +
    max(compute, memory))`` (``overlap=False``: seed 003's additive ``compute + memory``); the
    model's latency is the sum of its kernels (one stream).  A fused kernel's time is shared
    among its nodes by their FLOPs and bytes; each row names its kernel.  ``latency_s`` adds the
    profile's per-run fixed cost (``run_overhead_s``) once.

    ``fused``: a ``fusion.FusionRecord`` of the kernels onnxruntime runs for this model
    (``ort_graph.fusion_record``); used for the onnxruntime runtime instead of its fusion
    patterns (``analyzer.analyze`` passes it when onnxruntime is installed)."""
    from analyzer.prediction import runtimes
    from analyzer.prediction.kernels import run
    from analyzer.prediction.lowering import lower

    profiles = profiles_of(hw)
    fmt = report.model.get("format", "onnx") if isinstance(report.model, dict) else "onnx"
    chosen = [runtimes.choose(runtime, fmt, prof) for prof in profiles]
    out: dict[int, Prediction] = {}
    for rt_name in dict.fromkeys(rt.name for rt, _ in chosen):
        idx = [p for p, (rt, _) in enumerate(chosen) if rt.name == rt_name]
        group = [profiles[p] for p in idx]
        rt = runtimes.get(rt_name)
        low = lower(report.nodes, group, precision, rt,
                    fused=fused if rt.name == "onnxruntime" else None)
        compute, memory, ovh, time, bound = run(low, overlap=overlap)
        for g, p in enumerate(idx):
            out[p] = _prediction(report, profiles[p], low, g, compute[g], memory[g], ovh[g],
                                 time[g], bound[g], rt, chosen[p][1], overlap, precision)
    return tuple(out[p] for p in range(len(profiles)))


def _prediction(report, prof, low, g, compute, memory, ovh, time, bound, rt, why, overlap,
                precision) -> Prediction:
    """One profile's Prediction: kernel times shared among member nodes (rows in graph order)."""
    total = float(time.sum())   # the kernels' time (shares are of this)
    run_overhead = float(low.run_overhead[g])
    # launches the runtime inserted with no original node (their cost is in their kernel's fixed)
    n_extra = sum(len(e) for e in low.plan.extra_ops)
    extra_launches = sum(len(e) * float(r) for e, r in zip(low.plan.extra_ops, low.runs))
    share = {b: 0.0 for b in BOUNDS}
    for i, b in enumerate(BOUNDS):
        share[b] = float(time[bound == i].sum()) / total if total > 0 else 0.0
    f = low.feats
    flops = (f["mac_flops"] + f["vec_flops"] + f["trans_flops"]) * low.runs
    nbytes = f["bytes"] * low.runs
    rows = []
    for i, k in enumerate(low.plan.kernel_of):
        if k < 0:
            continue
        n = report.nodes[i]
        w = float(low.member_weight[i])
        intensity = float(flops[k] / nbytes[k]) if nbytes[k] > 0 else float("inf")
        t = float(time[k]) * w
        rows.append(NodePrediction(n.name, t, float(compute[k]) * w, float(memory[k]) * w,
                                   float(ovh[k]) * w, BOUNDS[int(bound[k])], intensity,
                                   t / total if total > 0 else 0.0, i, low.kernel_names[k]))
    notes = list(low.notes[g])
    if why != "requested":
        notes.insert(0, f"runtime {rt.name} ({why})")
    return Prediction(prof.id, prof.name, low.precision, overlap, total + run_overhead, share,
                      tuple(rows), tuple(low.warnings[g]), precision is not None, rt.name,
                      rt.time_definition, low.provenance[g], low.provenance_detail[g], tuple(notes),
                      low.plan.kernels + n_extra, run_overhead,
                      int(round(float(low.runs.sum() + extra_launches))))
