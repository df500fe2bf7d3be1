"""Kernel rows without a lowering: a fast-path candidate's arrays built from what earlier ones taught.

``lowering.lower`` turns a candidate's nodes into per-kernel arrays (features, peaks, fixed
costs).  For profiles no calibration touches and the ``none`` and ``xla`` fusion policies,
every kernel's entry is a function of that kernel alone:

- its row (``kernel_rows.fused_row``) of its members' parts (``kernel_rows.member_part``: a
  function of a node's content, i.e. of its fast-path node key) and the bytes its fusion saves
  (from how the members are wired, ``_saved``, as ``fusion`` computes it);
- its per-profile entries (matrix and vector peak, fixed cost) of the row's dtype, class and
  whether it has matrix and vector work (``_pkey``).

``KernelRows`` learns node parts and per-profile entries from candidates lowered in full
(``harvest``: every kernel rebuilt here is checked against the real lowering, and one mismatch
switches this path off for good), and then builds a candidate's arrays from its node keys alone
(``lowered``): the partition ``fusion.plan`` makes, rows cached per kernel key, arrays gathered
by fancy indexing.  Anything unknown returns None and the caller lowers in full.
"""

from __future__ import annotations

import numpy as np

from analyzer.prediction import dot_merge, engines, fusion_bytes, fusion_legality, fusion_xla, xla_gpu_classes, xla_gpu_joins
from analyzer.prediction import kernel_rows as kr
from analyzer.prediction import kernels, pytorch_terms, row_kernels, small_index, softmax_passes, stem_conv, transpose_fold
from analyzer.search.fastpath import xla_gpu
from analyzer.search.fastpath.row_moves import saved_bytes as _saved_bytes
from analyzer.search.fastpath.row_moves import simt as _simt

FEATS = kernels.FEATS
ROWS_CAP = 100_000    # cached kernel rows per runtime group (cleared when full)
CACHE_MEMBERS = 16    # a fused kernel of more members is rebuilt each time (its key is rare)
_POLICIES = ("none", "xla")


class Kernels:
    """A candidate's kernels as rows of a group's table: what ``batch.kernel_times`` and
    ``CostModel._latency`` read of a ``lowering.Lowered`` (the same names; the per-kernel
    arrays are gathered on first use, and ``batch`` gathers a whole bucket at once)."""

    def __init__(self, group: "_Group", ix: list[int]):
        self.group = group
        self.ix = ix   # (row numbers; len: the kernel count)
        self.runtime = group.runtime
        self.mem_bw, self.units, self.l2_bytes, self.consts, self.run_overhead = group.profile
        self._arrays = None

    def _get(self, j: int):
        if self._arrays is None:
            ix = np.asarray(self.ix, np.intp)
            self._arrays = self.group.take(ix) + (self.group.runs[ix],)
        return self._arrays[j]

    feats = property(lambda self: self._get(0))
    matrix_peak = property(lambda self: self._get(1))
    vector_peak = property(lambda self: self._get(2))
    fixed = property(lambda self: self._get(3))
    runs = property(lambda self: self._get(4))
    # what a kernel sum adds (``Lowered.besides_kernels_s``): the policies cached here (none,
    # xla) plan no host-only ops
    besides_kernels_s = property(lambda self: self.run_overhead)


def _feats(row, reread=(0.0,) * 7) -> tuple:
    """A ``kernel_rows`` row's values in ``FEATS`` order (class code, MACs, vector FLOPs,
    transcendentals, bytes, GEMM view m, n, k, batch, bytes per element of its dtype; not its
    strided flag, which only a calibrated profile's fixed cost reads), then ``reread``: its
    ``softmax_passes.kernel_pair``, ``small_index.kernel_pair`` and ``row_kernels.kernel_row`` (``_reread``)."""
    return (row[6], row[0], row[1], row[2], row[3], *row[7][:4], kr.PRECISION_BITS.get(row[8], 0) / 8, *reread)


def _reread(g, row, infos) -> tuple[float, ...]:
    """``softmax_passes.kernel_pair`` of a kernel ``row`` of group ``g`` (``infos``: its members'
    node data, whose entries 9, 11 and 13 are the node's ``node_rereads``, ``small_index.node_ids``
    and ``row_kernels.node_row``), then ``small_index.kernel_pair`` and ``row_kernels.kernel_row``
    where ``g``'s runtime runs PyTorch's kernels (``lowering``)."""
    torch = g.runtime in softmax_passes.PYTORCH_RUNTIMES
    index = small_index.kernel_pair([d[11] for d in infos]) if torch else (0.0, 0.0)
    rows = row_kernels.kernel_row([d[13] for d in infos]) if torch else (0.0, 0.0, 0.0)
    return (*softmax_passes.kernel_pair(g.runtime, row[6], [d[9] for d in infos]), *index, *rows)


def _pkey(row) -> tuple:
    """What a kernel's per-profile entries depend on (``lowering.lower``): dtype, matrix work, vector work, class,
    and whether its GEMM view has m = 1 or n = 1 (an XLA GPU dot of that form stays off the tensor cores:
    ``xla_precision.gpu_peaks``; an ONNX candidate's nodes ask for no precision, the other thing it reads)."""
    return row[8], bool(row[0]), bool(row[1] or row[2]), row[6], row[7][0] == 1.0 or row[7][1] == 1.0


class _Group:
    """One runtime group's cached rows (row number -> features, launches, per-profile key)."""

    def __init__(self, runtime: str, policy: str, idx: list[int]):
        self.runtime, self.policy, self.idx = runtime, policy, idx
        self.ids: dict = {}
        self.n = 0
        self.feats = np.zeros((256, len(FEATS)))
        self.runs = np.zeros(256)
        self.pk = np.zeros(256, np.intp)
        self.pkeys: dict = {}          # per-profile key -> its column
        self.pcols: list = []          # per column: (matrix peak [P], vector peak [P], fixed [P])
        self.parrays = None
        self.profile = None            # (mem_bw, units, l2_bytes, consts, run_overhead)
        self.simt = False              # fp32 matrix kernels take the FMA-unit classes
        self.stem = False              # image stems take ``conv_stem`` (``stem_conv.applies`` on a profile)
        self.fold = ""                 # ``xla`` plans XLA's GPU rules: the GPUs' ``xla_conv_layout.generation``
        self.xla = False               # ``xla`` on GPUs: XLA's own kernel classes (``xla_gpu_classes``)

    def put(self, at: int, row, pcol: int, reread=(0.0, 0.0, 0.0, 0.0)) -> None:
        if at >= len(self.runs):
            grow = max(2 * len(self.runs), at + 1)
            self.feats = np.resize(self.feats, (grow, len(FEATS)))
            self.runs = np.resize(self.runs, grow)
            self.pk = np.resize(self.pk, grow)
        self.feats[at] = _feats(row, reread)
        self.runs[at] = row[5]
        self.pk[at] = pcol

    def begin(self) -> None:
        """Start a batch: the rows it adds stay valid until the next ``begin`` (a full table
        is cleared here, never while a batch holds row numbers)."""
        if self.n > ROWS_CAP:
            self.ids.clear()
            self.n = 0

    def take(self, ix: np.ndarray):
        """(feats {name: [...]}, matrix peak [P, ...], vector peak [P, ...], fixed [P, ...])
        of rows ``ix`` (an index array of any shape)."""
        f = self.feats[ix]
        feats = {name: f[..., j] for j, name in enumerate(FEATS)}
        feats["op_class"] = f[..., 0].astype(np.int32)
        pk = self.pk[ix]
        return (feats,) + tuple(a[:, pk] for a in self.profile_columns())

    def profile_columns(self) -> tuple:
        """(matrix peak, vector peak, fixed cost), each ``[P, per-profile columns]``."""
        if self.parrays is None:
            self.parrays = tuple(np.stack([c[j] for c in self.pcols], axis=1) for j in range(3))
        return self.parrays


class KernelRows:
    """Per runtime group of a ``CostModel`` (``groups``: [(runtime name, profile indices)]),
    what lowers its fast-path candidates without ``lowering.lower``."""

    def __init__(self, groups: list[tuple[str, list[int]]], precision: str | None, profiles=()):
        from analyzer.prediction import runtimes

        # (the policy the group's profiles take: ``xla`` on a CPU plans XLA's CPU kernels,
        # which the fast path does not mirror)
        self.groups = [_Group(rt, runtimes.runtime_for(runtimes.get(rt), profiles[idx[0]] if profiles and idx else None)
                              .fusion, idx) for rt, idx in groups]
        # a group's FMA-unit classes (``engines.simt_classes``), row kinds on (``pytorch_terms.row_kinds_on``), folding
        for g in self.groups:
            g.simt = bool(profiles) and engines.simt_applies(g.runtime, [profiles[i] for i in g.idx])
            g.stem = bool(profiles) and any(stem_conv.applies(profiles[i], g.runtime) for i in g.idx)
            g.fold = xla_gpu.fold_of([profiles[i] for i in g.idx] if profiles else [])
            g.xla = xla_gpu_classes.applies(g.policy, bool(g.fold))
            g.rows = pytorch_terms.row_kinds_on([profiles[i] for i in g.idx if profiles], g.runtime)
        self.usable = all(g.policy in _POLICIES for g in self.groups)
        self.precision = precision
        # node key -> (launches, joins xla fusions, member part, input bytes, output bytes,
        # Winograd shape, a view that launches nothing, its part in transpose folding: 1 a
        # rank-2 transpose that launches, 2 a rank-2 matrix product, else 0; its
        # ``dot_merge.dot_form``; its ``softmax_passes.node_rereads``; its
        # ``xla_gpu_joins.node_role``; ...; 13: ``row_kernels.node_row``; 14: its ``conv_layout``; 15: it has an
        # XLA GPU tree split, ``FusionNode.tree``; 16: an image stem, ``stem_conv.is_stem``)
        self.nodes: dict[int, tuple] = {}
        self.stats = {"lowered": 0, "harvested": 0, "mismatch": 0}

    # ------------------------------------------------------------------ partition
    def _data(self, keys):
        """Each node's learned data (``self.nodes``), or None when one is not known yet."""
        try:
            return list(map(self.nodes.__getitem__, keys))
        except KeyError:
            return None

    def _kernels(self, nodes, data, policy: str, outputs=(), fold: bool = False):
        """(members of each kernel in ``fusion.plan``'s order, the bytes each saves) of the
        nodes with learned data ``data`` (``_data``) in a graph of outputs ``outputs``."""
        members, fused, _ = self._plan(nodes, data, policy, outputs, fold)
        return members, [fused.get(j, 0) for j in range(len(members))]

    def _plan(self, nodes, data, policy: str, outputs=(), fold: bool = False):
        """(members of each kernel in ``fusion.plan``'s order, {kernel position: the bytes it
        saves} for the kernels of more than one member, {kernel position: its op} for the dots
        merged into one (``dot_merge.KOPS``); ``outputs``: the graph's output names, always
        written; ``fold``: ``fusion.plan``'s ``fold_transposes``, with its dot merging)."""
        if policy == "none":
            return [(i,) for i, d in enumerate(data) if d[0]], {}, {}
        if fold:
            data = xla_gpu.folded(nodes, data, outputs)
        # one pass in graph (= topological) order: per output of a fusible node, its producer
        # and then its readers (a reader once per position it reads at, as ``fusion._index``
        # lists them; only a fusible node's output can be inside a fused kernel), each node's
        # producers and the fusible producers it takes in (``fusion_xla.joins``: through views that
        # launch nothing), then ``fusion_legality.xla_groups``' joins.  A fusible node
        # launches, so every group is a kernel: its root is its smallest node
        # tensor -> [its fusible producer (-1 - v: a view v launching nothing), its readers...]
        made: dict[str, list[int]] = {}
        producer: dict[str, int] = {}
        preds: list[list[int]] = []
        sources: list[list[int]] = []
        get, at = made.get, producer.get
        for j, nd in enumerate(nodes):
            d = data[j]
            ps, src = [], []
            for t in nd.inputs:
                e = get(t)   # (None for '', a graph input, a constant, a non-fusible output)
                if e is not None:
                    e.append(j)
                i = at(t)
                if i is None:
                    continue
                ps.append(i)
                if d[1]:
                    i = xla_gpu.through_views(nodes, data, i, at)
                    if i is not None and data[i][1]:
                        src.append(i)
            preds.append(ps)
            sources.append(src)
            if d[1] or d[10][0] == "conv":   # (a convolution's result: inside its cuDNN epilogue)
                t = nd.single
                if t is not None:
                    made[t] = [j]
                else:
                    for t in nd.outputs:
                        if t:
                            made[t] = [j]
            elif d[6]:   # a view that launches nothing: its readers read its input's buffer
                for t in nd.outputs:
                    if t:
                        made[t] = [-1 - j]
            for t in nd.outputs:
                if t:
                    producer[t] = j
        refuse = xla_gpu.reduce_refusal(nodes, data, producer) if fold else None
        if refuse is not None:
            sources = [[i for i in s if not refuse(i, j)] for j, s in enumerate(sources)]
        merged = xla_gpu.merged(nodes, data, preds, producer) if fold else []
        then = xla_gpu.joins_of(nodes, data, producer, outputs) if fold else None
        joins = fusion_legality.xla_groups(preds, [d[0] for d in data], [d[1] for d in data], sources, merged, then)
        kernel: dict[int, list[int]] = {}
        members = []
        find = joins.find
        for j, d in enumerate(data):
            if d[0]:
                r = find(j)
                if r == j:
                    m = kernel[j] = [j]
                    members.append(m)
                else:
                    kernel[r].append(j)
        at_root = {m[0]: k for k, m in enumerate(members)}
        kops = {at_root[g[1]]: dot_merge.KOPS[g[0]] for g in merged}
        return [tuple(m) for m in members], _saved_bytes(nodes, data, members, get, outputs), kops

    # ------------------------------------------------------------------ use
    def begin(self) -> None:
        """Start a batch (``_Group.begin``)."""
        for g in self.groups:
            g.begin()

    def lowered(self, st, keys: list[int]):
        """[(profile indices, ``Kernels``)] per runtime group of a candidate
        (``structure.Structure`` ``st``, node keys ``keys``), or None when something is not
        known yet."""
        data = self._data(keys)
        if data is None:
            return None
        out = []
        for g in self.groups:
            if g.profile is None or xla_gpu.conv_layouts(g.fold, data):
                return None
            ix = None
            if g.policy == "none":   # (one kernel per launching node: its key is the node's)
                ix = list(map(g.ids.get, [k for k, d in zip(keys, data) if d[0]]))
                if None in ix:
                    ix = None
            if ix is None:
                if g.fold and g.policy == "xla" and any(d[15] for d in data):   # (a tree split's launches)
                    return None
                ix = self._rows(g, keys, *self._plan(st.nodes, data, g.policy, st.outputs, g.fold))
            if ix is None:
                return None
            out.append((g.idx, Kernels(g, ix)))
        self.stats["lowered"] += 1
        return out

    def _rows(self, g: _Group, keys, members, fused, kops) -> list[int] | None:
        """Row numbers of the kernels (``members``, ``fused``: ``_plan``'s): cached (built here
        on a miss), a large fused kernel added without a key (valid until the next
        ``begin``)."""
        ids, info = g.ids, self.nodes
        # a one-node kernel saves nothing: its node key is its key; a fused kernel's is its
        # members' keys and the bytes it saves, or None when it is large (its key is rare: its
        # row is added without one)
        kk = [keys[m[0]] for m in members]
        for j, s in fused.items():
            m = members[j]
            kk[j] = tuple([keys[i] for i in m]) + (s, kops.get(j, "")) if len(m) <= CACHE_MEMBERS else None
        ix = list(map(ids.get, kk))
        if None not in ix:
            return ix
        for j, at in enumerate(ix):
            if at is not None:
                continue
            infos = [info[keys[i]] for i in members[j]]
            row = _simt(g, kr.fused_row([d[2] for d in infos], fused.get(j, 0), kops.get(j, "")), infos)
            pcol = g.pkeys.get(_pkey(row))
            if pcol is None:
                return None
            ix[j] = g.n
            if kk[j] is not None:
                ids[kk[j]] = g.n
            g.put(g.n, row, pcol, _reread(g, row, infos))
            g.n += 1
        return ix

    def harvest(self, st, keys: list[int], nodes, fnodes, nbytes, lowered) -> None:
        """Learn from one candidate lowered in full: ``nodes``/``fnodes``/``nbytes`` its
        ``NodeCost``s, ``FusionNode``s and bytes (``kernel_rows.fusion_nodes``), ``lowered``
        what ``CostModel.lower`` returned.  Every kernel row built here must equal the real
        one; a mismatch (a bug) switches this path off."""
        for k, n, fn, b in zip(keys, nodes, fnodes, nbytes):
            if k not in self.nodes:
                self.nodes[k] = (fn.launches, fusion_xla.fusible(fn),
                                 kr.member_part(n, fn, b, self.precision), fn.input_bytes,
                                 fn.output_bytes, engines.winograd_shape(n),
                                 not fn.launches and fusion_bytes.is_view(fn.domain, fn.op),
                                 transpose_fold.fold_role(fn), fn.dot_form, softmax_passes.node_rereads(n, fn),
                                 xla_gpu_joins.node_role(fn.op, fn.op_class, fn.launches, fusion_xla.fusible(fn),
                                                         fn.gemv, fn.inputs, xla_gpu_joins.compiled_constants(fn)),
                                 small_index.node_ids(n), (fn.reduce_form, fn.op_class, len(fn.inputs)),
                                 row_kernels.node_row(n), fn.conv_layout, bool(fn.tree), stem_conv.is_stem(n))
        data = self._data(keys)
        for g, (idx, low) in ((g, gl) for g, gl in zip(self.groups, lowered) if not xla_gpu.conv_layouts(g.fold, data)):
            if any(low.plan.extra_ops):   # (launches inserted into a kernel: not mirrored here, ``lowered``)
                return
            members, fused, kops = self._plan(st.nodes, data, g.policy, st.outputs, g.fold)
            saved = [fused.get(j, 0) for j in range(len(members))]
            if idx != g.idx or tuple(members) != low.plan.members:
                self.stats["mismatch"] += 1
                self.usable = False
                return
            rows = [_simt(g, kr.fused_row([self.nodes[keys[i]][2] for i in m], s, kops.get(j, "")),
                          [self.nodes[keys[i]] for i in m]) for j, (m, s) in enumerate(zip(members, saved))]
            if not rows:   # (no kernel: nothing to learn or check in this group)
                continue
            # (checked as whole arrays: a harvest is one candidate's every kernel)
            mine = np.array([_feats(r, _reread(g, r, [self.nodes[keys[i]] for i in m]))
                             for r, m in zip(rows, members)], np.float64).reshape(len(rows), len(FEATS))
            got = np.stack([np.asarray(low.feats[f], np.float64) for f in FEATS], axis=1)
            cols = []
            for k, r in enumerate(rows):
                pk = _pkey(r)
                c = g.pkeys.get(pk)
                if c is None:
                    c = g.pkeys[pk] = len(g.pcols)
                    g.pcols.append((low.matrix_peak[:, k].copy(), low.vector_peak[:, k].copy(),
                                    low.fixed[:, k].copy()))
                    g.parrays = None
                cols.append(c)
            ref = [a[:, cols] for a in g.profile_columns()]
            if not (np.array_equal(mine, got)
                    and np.array_equal([r[5] for r in rows], np.asarray(low.runs))
                    and all(np.array_equal(a, b) for a, b in
                            zip(ref, (low.matrix_peak, low.vector_peak, low.fixed)))):
                self.stats["mismatch"] += 1
                self.usable = False
                return
            if g.profile is None:
                g.profile = (low.mem_bw, low.units, low.l2_bytes, low.consts, low.run_overhead)
        self.stats["harvested"] += 1

