"""``CostModel``: built once per (hardware, precision, runtime), reused over a whole search.

    cm = analyzer.CostModel(hw=["a100", "h100"], precision="bf16")
    lat = cm.score(candidates)                     # [n_candidates, n_profiles] seconds
    lat = cm.score_dims("m.onnx", {"width": [64, 128], "seq": [128, 256]})   # [n_assign, P]
    table = cm.table(space, input_shape=(1, 3, 32, 32)); table.score(choices)
    f = cm.latency_fn(candidate); jax.grad(lambda s: f(s, f.hw).sum())(f.node_scale)
    cm.sensitivity(candidate)                      # d latency / d (FLOPs, bytes, peak, bw)

Every latency equals ``analyze(candidate, hw, precision=..., runtime=...)
.predictions[p].latency_s`` (same lowering, same kernel; float32 kernel times summed in
float64), for the profiles in the order given.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from analyzer.options import Options
from analyzer.search import batched_kernels as batch, candidate_counts
from analyzer.search.fastpath import structure


@dataclass(frozen=True)
class Detail:
    """What ``score(..., detail=True)`` adds per candidate: its ``NodeCost`` list and the
    predicted time of each node on each profile (``node_time_s[p, i]``: the node's share of its
    kernel's time, 0 for a node that launches nothing), plus the per-kernel times."""

    nodes: list
    node_time_s: np.ndarray
    kernel_time_s: tuple[np.ndarray, ...]     # per runtime group: [P_group, K]
    lowered: tuple                            # per runtime group: lowering.Lowered


class CostModel:
    """Latency of many candidates on a fixed list of hardware profiles.

    ``hw``: profile ids / aliases / .toml paths / ``HardwareProfile``s / ``targets.Target``s
    (one or a list); ``precision``, ``runtime``, ``overlap``, ``loop_trips``, ``causal``, ``l2``: as
    for ``analyzer.analyze``.  Profiles are loaded once and their targets decided once per model
    format (``targets``); the compiled kernels are shared by every candidate of a similar size."""

    def __init__(self, hw: Any, *, precision: str | None = None, runtime: str | None = None,
                 overlap: bool = True, loop_trips: int | None = None, causal: bool = False,
                 l2: str | None = None):
        from analyzer.prediction import engines, runtimes
        from analyzer.prediction.targets import Target, load_profile

        one = isinstance(hw, (str, bytes, Target)) or hasattr(hw, "peak_flops")
        # targets given keep their runtime; anything else is loaded once, here
        self._hw = [h if isinstance(h, Target) else load_profile(h) for h in ([hw] if one else list(hw))]
        self.profiles = [load_profile(h) for h in self._hw]
        self.hw = tuple(p.id for p in self.profiles)
        if precision is not None and precision not in engines.PRECISIONS:
            from analyzer.errors import InputSpecError

            raise InputSpecError(f"unknown precision '{precision}'; choose from "
                                 f"{', '.join(engines.PRECISIONS)}")
        if runtime is not None:
            runtimes.get(runtime)
        # the search sums each candidate's kernel times (and composes tables of blocks): the
        # eager stream (runtimes.stream_times) is not a sum, so it is refused, not approximated
        stream = [r for r in ([runtime] if runtime else [getattr(p, "default_runtime", None)
                                                          for p in self.profiles])
                  if r and runtimes.get(r).stream]
        if stream:
            from analyzer.errors import InputSpecError

            raise InputSpecError(f"the search API does not model runtime '{stream[0]}' (the eager "
                                 "stream: host dispatch overlapping the device); use 'eager-op' "
                                 "(the per-op sum) or 'kernel'")
        self.precision, self.runtime, self.overlap = precision, runtime, overlap
        self.options = Options(precision=precision, overlap=overlap, loop_trips=loop_trips,
                               causal=causal, runtime=runtime, l2=l2)
        self._targets: dict[tuple[str, str | None], tuple] = {}
        self._fast = None   # fastpath.signatures.FastCounter, made on the first ONNX candidate
        self._lowering: dict = {}   # lowering.lower's memo: per profile, per op and dtype
        self._rows = None   # fastpath.kernel_cache.KernelRows (False: kernel entries not local)
        self._off = ""      # why the fast path is off for this model ("": it is not)
        self._slow: dict[str, int] = {}   # reason -> candidates counted by the full frontend

    # ------------------------------------------------------------------ internals
    def spec(self) -> dict:
        """What rebuilds this model elsewhere (a Dask worker): ``CostModel(**spec)``."""
        o = self.options
        return {"hw": list(self._hw), "precision": o.precision, "runtime": o.runtime,
                "overlap": o.overlap, "loop_trips": o.loop_trips, "causal": o.causal, "l2": o.l2}

    def targets(self, fmt: str, runtime: str | None = None) -> tuple:
        """The profiles' ``targets.Target``s for a model format ("onnx" or "jaxpr"), decided once
        (``runtime``: another runtime option than this model's, e.g. a ``count`` call's)."""
        key = (fmt, runtime or self.runtime)
        t = self._targets.get(key)
        if t is None:
            from analyzer.prediction.targets import resolve

            t = self._targets[key] = resolve(self._hw, key[1], "jaxpr" if fmt == "jaxpr" else "onnx")
        return t

    def groups(self, fmt: str) -> list[tuple[str, list[int]]]:
        """[(runtime name, profile indices)] as ``predict`` groups them for a model format."""
        from analyzer.prediction.targets import groups

        return [(rt.name, idx) for rt, idx in groups(self.targets(fmt))]

    def count(self, candidate: Any, options: Options | None = None) -> candidate_counts.Counted:
        if options is None:
            if not self._fast_ok():
                self._left(self._off)
            elif not structure.onnx_source(candidate):
                self._left(_not_source(candidate))
            else:
                # the fast path: nodes of signatures earlier candidates taught
                # (fastpath.signatures); anything else runs the full frontend, and is learned from
                why: list[str] = []
                return self._count_read(candidate, structure.read(candidate, why=why), why)
        counted = candidate_counts.count(candidate, options or self.options)
        if counted.fmt == "onnx" and _is_onnx_source(candidate):
            # what analyze does: onnxruntime's own fusion record where a profile runs under it
            from dataclasses import replace

            from analyzer.api import onnxruntime_record

            rec = onnxruntime_record(candidate, self.targets("onnx", (options or self.options).runtime))
            if rec is not None:
                counted = replace(counted, fused=rec)
        return counted

    def _count_read(self, candidate: Any, st, why: list[str]) -> candidate_counts.Counted:
        """The fast path's counts of a candidate ``structure.read`` gave ``st`` (None: it refused,
        ``why`` says why), else the full frontend's, learned from."""
        got = self._fast.count(st, learn=True) if st is not None else None
        if got is not None:
            return got
        self._left(why[0] if st is None else self._fast.missed)
        return self._fast.full(candidate, st)

    def _left(self, reason: str) -> None:
        """One candidate counted by the full frontend instead of the fast path, for ``reason``."""
        self._slow[reason] = self._slow.get(reason, 0) + 1

    def stats(self) -> dict:
        """How candidates were counted so far (by ``score``, ``count`` and what calls them):
        ``fast`` (ONNX candidates from learned node signatures), ``full`` (ONNX candidates the
        fast path sent to the full frontend and learned from), ``learned`` (signatures
        learned), ``nodes`` (nodes of new signatures learned one by one,
        ``fastpath.learn_node``), and ``slow``: {reason: candidates} of every candidate the full
        frontend counted instead of the fast path, e.g. ``"a new opset header (learning)"``,
        ``"value_info"``, ``"a file path"`` or the reason the fast path is off for this model
        (its values sum to ``full`` plus the candidates that could not take the fast path at
        all)."""
        out = dict(self._fast.stats) if self._fast else {"fast": 0, "full": 0, "learned": 0,
                                                         "nodes": 0}
        out["slow"] = dict(self._slow)
        return out

    def _fast_ok(self) -> bool:
        """Whether ONNX candidates may take the fast path: no onnxruntime group (its fusion
        record is read from the candidate itself) and no bound inputs."""
        if self._fast is None:
            o = self.options
            if o.inputs or o.dims or o.values:
                self._off = "fast path off: inputs, dims or values bound"
            elif any(t.runtime.fusion_record for t in self.targets("onnx")):
                rt = next(t.runtime.name for t in self.targets("onnx") if t.runtime.fusion_record)
                self._off = f"fast path off: a profile runs under {rt}"
            if self._off:
                self._fast = False
            else:
                from analyzer.search.fastpath.signatures import FastCounter

                self._fast = FastCounter(o)
        return self._fast is not False

    def _rows_ok(self) -> bool:
        """Whether fast-path candidates may be scored from learned kernel rows
        (``fastpath.kernel_cache``): the fast path applies, every group's fusion is a policy and
        no profile is calibrated."""
        if self._rows is None:
            from analyzer.search.fastpath.kernel_cache import KernelRows

            rows = KernelRows(self.groups("onnx"), self.precision, self.profiles) if self._fast_ok() else None
            self._rows = rows if rows is not None and rows.usable and not any(
                p.calibration for p in self.profiles) else False
        return self._rows is not False

    def _lower_fast(self, candidate: Any):
        """One candidate's lowered groups for ``score``: from the kernel rows when every kernel
        is known, else counted and lowered in full (and its rows learned)."""
        if not structure.onnx_source(candidate):
            return self.lower(self.count(candidate))
        # (the nodes' order is checked by the signature walk here, by ``structure.ordered`` below)
        why: list[str] = []
        st = structure.read(candidate, ordered=False, why=why)
        keys = self._fast.keys(st) if st is not None else None
        if keys is not None and self._rows.usable:
            got = self._rows.lowered(st, keys)
            if got is not None:
                self._fast.stats["fast"] += 1
                return got
        st = structure.ordered(st, why)
        counted = self._count_read(candidate, st, why)
        lowered = self.lower(counted)
        if counted.keys is not None and self._rows.usable:
            from analyzer.prediction import kernel_rows as kr

            fnodes, nbytes = kr.fusion_nodes(counted.nodes, self.precision,
                                             self._lowering.setdefault("fusion", {}), counted.keys)
            self._rows.harvest(st, counted.keys, counted.nodes, fnodes, nbytes, lowered)
        return lowered

    def lower(self, counted: candidate_counts.Counted) -> list[tuple[list[int], Any]]:
        """[(profile indices, lowering.Lowered)] per runtime group of one counted candidate."""
        from analyzer.prediction.lowering import lower
        from analyzer.prediction.targets import groups

        outputs = frozenset(counted.outputs)   # (written even where fused with their readers)
        return [(idx, lower(counted.nodes, [self.profiles[i] for i in idx], self.precision,
                            rt, graph_outputs=outputs, fused=counted.fused if rt.fusion_record else None,
                            memo=self._lowering, keys=counted.keys, l2_state=self.options.l2))
                for rt, idx in groups(self.targets(counted.fmt))]

    def _latency(self, lowered_all: Sequence[list[tuple[list[int], Any]]], detail: bool = True):
        """Latency ``[n, P]`` of many lowered candidates, batched per runtime group, and (with
        ``detail``) each candidate's per-kernel times per group, else None."""
        P = len(self.profiles)
        lat = np.zeros((len(lowered_all), P))
        # per candidate, per group in the candidate's own group order (``Detail`` pairs them)
        ktimes: list[list[Any]] | None = [[None] * len(g) for g in lowered_all] if detail else None
        keyed: dict[tuple, list[tuple[int, int, Any]]] = {}
        for c, groups in enumerate(lowered_all):
            for gi, (idx, low) in enumerate(groups):
                keyed.setdefault((low.runtime, tuple(idx)), []).append((c, gi, low))
        for (_, idx), items in keyed.items():
            lows = [low for _, _, low in items]
            # + the per-run fixed cost analyze adds once (a calibrated profile's session.run)
            # and the host-only ops (eager-op's views: Lowered.besides_kernels_s)
            over = np.array([low.besides_kernels_s for low in lows], np.float64).reshape(len(lows), -1)
            rows = [c for c, _, _ in items]
            if not detail:
                lat[np.ix_(rows, idx)] = batch.kernel_sums(lows, self.overlap) + over
                continue
            times = batch.kernel_times(lows, self.overlap)
            for (c, gi, _low), t, o in zip(items, times, over):
                lat[c, list(idx)] = t.sum(axis=1) + o
                ktimes[c][gi] = t
        return lat, ktimes

    # ------------------------------------------------------------------ the API
    def score(self, candidates: Iterable[Any], *, detail: bool = False):
        """Predicted latency ``[n_candidates, n_profiles]`` (seconds).  ``detail=True``: also a
        list of ``Detail`` (per-node breakdown and counts), returned as ``(latency, details)``."""
        import gc

        # The per-candidate records live until the batch is done, so the collector's full passes
        # (over the whole heap: the memos, jax, onnx) kept firing during a batch for no garbage:
        # ~25% of a search's time (600/s with it paused, 410-470/s without; see the commit).
        # Paused for the batch only and restored even on an error (cycles made meanwhile, e.g.
        # by the full frontend on a miss, are collected after it).
        paused = gc.isenabled()
        if paused:
            gc.disable()
        try:
            if not detail and self._rows_ok():
                counted = None
                self._rows.begin()
                lowered = [self._lower_fast(c) for c in candidates]
            else:
                counted = [self.count(c) for c in candidates]
                lowered = [self.lower(c) for c in counted]
        finally:
            if paused:
                gc.enable()
        lat, ktimes = self._latency(lowered, detail)
        if not detail:
            return lat
        details = []
        for cnt, groups, kts in zip(counted, lowered, ktimes):
            nt = np.zeros((len(self.profiles), len(cnt.nodes)))
            for (idx, low), t in zip(groups, kts):
                kof = np.asarray(low.plan.kernel_of)
                on = kof >= 0
                nt[np.ix_(idx, np.nonzero(on)[0])] = t[:, kof[on]] * low.member_weight[on]
            details.append(Detail(cnt.nodes, nt, tuple(kts), tuple(low for _, low in groups)))
        return lat, details

    def score_dims(self, model: Any, dims: Mapping[str, Sequence[int]], *, product: bool = True,
                   inputs: Mapping[str, Any] | None = None, return_assignments: bool = False):
        """One ONNX graph with symbolic dims at many assignments in one vectorized call.

        ``dims``: ``{"width": [...], "seq": [...]}``; ``product=True``: every combination
        (``itertools.product`` order, first dim slowest), else the lists are zipped.  Returns
        latency ``[n_assignments, n_profiles]`` (and the ``[n_assignments, n_dims]`` int array
        of assignments with ``return_assignments=True``).  Counts are exact polynomials in the
        dims fitted from a few exact analyses and verified at extra points; a graph whose counts
        are not polynomial (or whose kernels change with the dims) is analysed point by point
        (``analyzer.search.dims.polynomial``)."""
        from analyzer.search.dims import polynomial

        return polynomial.score_dims(self, model, dims, product=product, inputs=inputs,
                                   return_assignments=return_assignments)

    def table(self, space: Sequence[Sequence[Any]], input_shape: Sequence[int]):
        """A latency table of a choice-based space (``analyzer.search.table.LatencyTable``)."""
        from analyzer.search import table as table_mod

        return table_mod.build(self, space, tuple(input_shape))

    def latency_fn(self, candidate: Any):
        """A pure JAX function ``f(node_scale, hw) -> latency [P]`` (``analyzer.search.grad``)."""
        from analyzer.search import grad

        return grad.latency_fn(self, candidate)

    def sensitivity(self, candidate: Any):
        """d latency / d (FLOPs, bytes) per node and d latency / d (peak, bandwidth) per
        profile (``analyzer.search.grad.Sensitivity``); ``candidate`` may be a ``Report``."""
        from analyzer.search import grad

        return grad.sensitivity(self, candidate)


def _not_source(candidate: Any) -> str:
    """Why a candidate cannot take the fast path, which reads bytes and ModelProtos only."""
    import os

    if isinstance(candidate, (str, os.PathLike)):
        return "a file path (read by the full frontend)"
    return "not ONNX bytes or a ModelProto"


def _is_onnx_source(candidate: Any) -> bool:
    """An ONNX model as analyze takes it (a ModelProto, its bytes or a path), not a Report."""
    import os

    return (isinstance(candidate, (bytes, bytearray, memoryview, str, os.PathLike))
            or type(candidate).__name__ == "ModelProto")
