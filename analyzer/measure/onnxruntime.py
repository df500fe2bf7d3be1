"""Measure a model with onnxruntime (CPU): whole-run latency and per-kernel times.

``measure(model, threads, level, runs)`` runs the model on random inputs of its declared shapes
(symbolic dims bound by ``dims``) in two sessions at the same options:

- a plain session: ``latency_s`` = median wall-clock of ``session.run`` after warm-up;
- a profiled session (``enable_profiling``): the trace's ``"Node"`` events
  (``<node name>_kernel_time``, ``args.op_name``, ``dur`` in us) give ``node_s``, the median
  kernel time per node name over the profiled runs (warm-up runs dropped).

``by_fused`` joins the profiled kernels to the node names of ``ort_graph.fused_graph`` (what
opcost predicts, per kernel): at the default level onnxruntime's session also applies the CPU
layout transformer, which renames a kernel ``X`` to ``X_nchwc`` and inserts
``ReorderInput``/``ReorderOutput`` nodes; the suffix is stripped; reorder kernels (layout
conversions that have no node in the fused graph) are listed in ``unmatched``. ``groups`` maps each fused kernel to the original
nodes it replaced (``ort_graph.fusion_map``), so per-kernel times join to the user's nodes; at
the layout levels a residual Add (and its activation) that the layout transform folds into a
blocked convolution joins that convolution's group (``ort_layout.layout_sums``).

onnxruntime is the optional extra ``measure``: imported lazily; ``RuntimeMissingError`` (an
``AnalyzerError``) says how to install it.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Mapping

from analyzer.errors import InputSpecError, ModelLoadError
from analyzer.prediction.onnxruntime.graph import (LAYOUT_LEVELS, fused_graph, fusion_map, import_ort,
                                                   model_bytes, session_options)
from analyzer.prediction.onnxruntime.layout import layout_graph
from analyzer.prediction.onnxruntime.record import REORDERS

_INT_TYPES = {"tensor(int64)": "int64", "tensor(int32)": "int32", "tensor(int8)": "int8",
              "tensor(uint8)": "uint8", "tensor(bool)": "bool", "tensor(int16)": "int16"}
_FLOAT_TYPES = {"tensor(float)": "float32", "tensor(float16)": "float16",
                "tensor(double)": "float64"}


@dataclass(frozen=True)
class Measured:
    """What onnxruntime measured. Times in seconds (medians)."""

    latency_s: float                      # median wall-clock of session.run
    node_s: dict[str, float]              # session kernel name -> median kernel time
    node_op: dict[str, str]               # session kernel name -> op type
    by_fused: dict[str, float]            # fused_graph node name -> kernel time (layout joined)
    groups: dict[str, list[str]]          # fused_graph node name -> original node names
    unmatched: dict[str, float] = field(default_factory=dict)  # profiled kernels not joined
    threads: int = 1
    level: str = "default"
    runs: int = 0
    run_samples_s: tuple[float, ...] = ()

    @property
    def kernel_sum_s(self) -> float:
        return sum(self.node_s.values())


def random_feeds(session, dims: Mapping[str, int] | None = None, seed: int = 0) -> dict:
    """Random inputs of the session's declared shapes. Floats: U(0, 1); integers: ones (valid
    token ids, masks and indices for any vocabulary); symbolic dims from ``dims``."""
    import numpy as np

    dims = dict(dims or {})
    rng = np.random.default_rng(seed)
    feeds = {}
    for i in session.get_inputs():
        shape = []
        for d in i.shape:
            if isinstance(d, int) and d >= 0:
                shape.append(d)
            elif isinstance(d, str) and d in dims:
                shape.append(int(dims[d]))
            else:
                raise InputSpecError(f"input '{i.name}' has unbound dim {d!r}; pass dims={{'{d}': N}}")
        if i.type in _FLOAT_TYPES:
            feeds[i.name] = rng.random(shape, dtype=np.float32).astype(_FLOAT_TYPES[i.type])
        elif i.type in _INT_TYPES:
            feeds[i.name] = np.ones(shape, dtype=_INT_TYPES[i.type])
        else:
            raise InputSpecError(f"input '{i.name}' has unsupported type {i.type}")
    return feeds


def _session(data: bytes, so):
    ort = import_ort()
    try:
        return ort.InferenceSession(data, so, providers=["CPUExecutionProvider"])
    except Exception as e:  # onnxruntime's own exception types
        raise ModelLoadError(f"onnxruntime cannot load the model: {e}") from None


def time_runs(session, feeds, runs: int, warmup: int = 3, min_time_s: float = 0.0) -> list[float]:
    """Wall-clock seconds of ``runs`` calls of ``session.run`` after ``warmup`` calls."""
    for _ in range(warmup):
        session.run(None, feeds)
    out = []
    t_end = time.perf_counter() + min_time_s
    while len(out) < runs or time.perf_counter() < t_end:
        t0 = time.perf_counter()
        session.run(None, feeds)
        out.append(time.perf_counter() - t0)
    return out


def wall_runs(data: bytes, threads: int, level: str, runs: int, dims: Mapping[str, int] | None = None,
              min_time_s: float = 0.5) -> tuple[list[float], dict]:
    """(wall-clock seconds of ``runs`` calls of ``session.run`` (more while ``min_time_s`` has
    not passed) on a fresh session, after 3 warm-up calls; the random feeds it ran on)."""
    s = _session(data, session_options(level, threads))
    feeds = random_feeds(s, dims)
    return time_runs(s, feeds, runs, warmup=3, min_time_s=min_time_s), feeds


def profile_runs(data: bytes, level: str, threads: int | None, feeds: dict | None, runs: int,
                 warmup: int = 2, dims: Mapping[str, int] | None = None, q: float = 0.5) -> tuple[dict[str, float], dict[str, str]]:
    """Kernel time per node name (seconds; the ``q`` quantile over runs, median by default) and
    op type, from onnxruntime's profiler."""
    so = session_options(level, threads)
    so.enable_profiling = True
    with tempfile.TemporaryDirectory(prefix="opcost-prof-") as tmp:
        so.profile_file_prefix = os.path.join(tmp, "p")
        s = _session(data, so)
        if feeds is None:
            feeds = random_feeds(s, dims)
        for _ in range(warmup + runs):
            s.run(None, feeds)
        path = s.end_profiling()
        with open(path) as f:
            events = json.load(f)
    samples: dict[str, list[float]] = {}
    ops: dict[str, str] = {}
    for e in events:
        if e.get("cat") != "Node" or not e.get("name", "").endswith("_kernel_time"):
            continue
        name = e["name"][: -len("_kernel_time")]
        samples.setdefault(name, []).append(float(e.get("dur", 0)) * 1e-6)
        ops[name] = e.get("args", {}).get("op_name", "")
    med = {}
    for k, v in samples.items():
        v = v[warmup:] if len(v) > warmup else v
        med[k] = quantile(v, q)
    return med, ops


def quantile(v, q: float) -> float:
    """The ``q`` quantile of ``v`` (the exact median at 0.5)."""
    import numpy as np
    return float(statistics.median(v)) if q == 0.5 else float(np.quantile(v, q))


def _join(node_s: dict[str, float], node_op: dict[str, str], fused) -> tuple[dict, dict]:
    names = [n.name for n in fused.graph.node]
    known = set(names)
    # the layout transformer names a rewritten kernel after its node *or* its output tensor
    by_output = {o: n.name for n in fused.graph.node for o in n.output if o}
    by: dict[str, float] = {n: 0.0 for n in names}
    unmatched: dict[str, float] = {}
    for k, t in node_s.items():
        base = k[: -len("_nchwc")] if k.endswith("_nchwc") else k
        if base in known:
            by[base] += t
        elif base in by_output:
            by[by_output[base]] += t
        else:
            unmatched[k] = t
    return by, unmatched


def measure(model: Any, threads: int | None = None, level: str = "default", runs: int = 20, *,
            dims: Mapping[str, int] | None = None, min_time_s: float = 0.5,
            fused=None, q: float = 0.5) -> Measured:
    """Run ``model`` with onnxruntime's CPU provider and return what it measured.

    ``threads``: ``intra_op_num_threads`` (default: the machine's cores). ``level``: the
    session's optimization level ("default" = onnxruntime's default, ALL). ``runs``: timed runs
    (at least; more while ``min_time_s`` has not passed). ``dims``: values of symbolic input
    dims. ``fused``: the ``fused_graph`` to join to (computed when not given). ``q``: the
    quantile over runs reported (0.5: medians; a lower one, e.g. 0.25, is robust to other
    processes on a shared machine, whose interference only ever adds time).
    """
    data = model_bytes(model)
    threads = int(threads or os.cpu_count() or 1)
    wall, feeds = wall_runs(data, threads, level, runs, dims, min_time_s)
    node_s, node_op = profile_runs(data, level, threads, feeds, max(5, runs // 2), q=q)
    if fused is None:
        fused = fused_graph(data, level, threads)
    by_fused, unmatched = _join(node_s, node_op, fused)
    groups = fusion_map(model, fused)
    if level in LAYOUT_LEVELS:   # residual Adds the layout transform folds into a convolution
        from analyzer.prediction.onnxruntime.layout import layout_graph, layout_sums

        for k, conv in layout_sums(fused, layout_graph(data, threads)).items():
            groups[conv] = groups.get(conv, []) + groups.pop(k, [])
            by_fused[conv] = by_fused.get(conv, 0.0) + by_fused.pop(k, 0.0)
    return Measured(latency_s=quantile(wall, q), node_s=node_s, node_op=node_op,
                    by_fused=by_fused, groups=groups, unmatched=unmatched, threads=threads,
                    level=level, runs=len(wall), run_samples_s=tuple(wall))


def profiled_reorders(row_model, node, threads: int, level: str, runs: int = 10
                 ) -> list[tuple[int, float]]:
    """``(bytes moved, seconds)`` of each NCHWc layout reorder onnxruntime runs around a row's
    node of a single-op model (``calibrate``'s rows: ``ReorderInput`` of an input, ``ReorderOutput`` of an output; bytes: its tensor read
    and written, as ``fusion`` charges them). Seconds are the profiler's median for the reorder
    less its median for the row's 1-element Slice sink: the profiler's own cost per node
    (2-3 us here, against a Slice kernel of tenths of a microsecond)."""

    size = {t: s.nbytes() for t, s in zip(node.in_names, node.in_specs) if s is not None}
    size.update({t: s.nbytes() for t, s in zip(node.out_names, node.out_specs) if s is not None})
    found = [n for n in layout_graph(row_model, threads).graph.node
             if n.op_type in REORDERS and n.input and n.output]
    if not found:
        return []
    node_s, node_op = profile_runs(row_model.SerializeToString(), level, threads, None, runs, 2)
    own = min((t for k, t in node_s.items() if node_op.get(k) == "Slice"), default=0.0)
    out = []
    for n in found:
        if n.name in node_s:
            b = 2 * size.get(n.input[0] if n.op_type == "ReorderInput" else n.output[0], 0)
            out.append((b, max(node_s[n.name] - own, 0.1 * node_s[n.name])))
    return out
