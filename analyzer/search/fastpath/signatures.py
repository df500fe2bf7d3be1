"""The search fast path: a candidate's counts from what earlier candidates taught, or None.

A ``CostModel`` scores thousands of candidates built from the same few kinds of node.  Every
candidate the full frontend + engine count is also a lesson: for each node whose result cannot
depend on anything but its **signature** (opset header, op, domain, serialized attributes, the
spec of each input, which inputs are constants and, where a constant's value can steer a shape,
its value; which outputs exist and, for a graph output, its declared type), the memo keeps the
output specs and the engine's ``NodeRecord``.  A later candidate whose every node's signature
is known is counted from the memo alone: specs flow node to node as inference would compute
them, params are counted per tensor name by the engine's own ``new_params``, and each
``NodeCost`` is built exactly as the engine builds it.

What the memo learns from is restricted to graphs whose results are local: nothing folded (no
value computed ahead of run time, so no node's output depends on a value the signature omits),
no decomposed, control-flow or sequence nodes, and every learned output spec static.  Nodes
carry the frontend's names (``structure``: unnamed nodes are ``<op>_<index>``, a name used
twice gets ``~k``), and a renamed node's row gets the engine's note saying so.
``structure.read`` refuses (the full path then runs) anything outside the plain structure it can
vouch for.  Anything not learned misses, and a miss runs the full path on the whole candidate.
"""

from __future__ import annotations

from typing import Any

from analyzer.counting.cost import Cost
from analyzer.counting.engine import NodeCost
from analyzer.counting.traffic import new_params
from analyzer.ir.graph import Graph
from analyzer.search import candidate_counts
from analyzer.search.fastpath import structure

_NO_SOURCES = Graph("", [], {}, (), ())   # what new_params reads: no folded sources
# nodes of unknown signature learned one by one per candidate before the whole candidate takes
# the full path instead (a one-node full count costs ~1/30 of a 100-node candidate's)
MINI_PER_CANDIDATE = 8
# why ``count`` missed (``FastCounter.missed``; ``CostModel.stats()["slow"]``'s keys)
NEW_HEADER = "a new opset header (learning)"
TOO_MANY = f"over {MINI_PER_CANDIDATE} new node signatures (learning)"
UNLEARNABLE = "a node signature a one-node model does not teach"


def _decl(outs: dict, node: structure.LeanNode) -> tuple | None:
    """The declared types of a node's outputs (``outs``: graph output name -> its declared
    TypeProto bytes) when one of them is a graph output, else None."""
    if outs.keys().isdisjoint(node.named_out):
        return None
    return tuple(outs.get(o) for o in node.outputs)


class FastCounter:
    """The memo of one ``CostModel`` (one set of counting options) and its hit statistics."""

    def __init__(self, options):
        self.options = options
        # signature -> (output specs, NodeRecord, output spec ids, the entry's number: the
        # node's key for lowering, equal for nodes equal but for their names)
        self.memo: dict[tuple, tuple] = {}
        self.ids: dict = {}                 # TensorSpec -> small int (cheap to hash in keys)
        self.constants: dict = {}           # (dims, dtype code) -> ``_constant``
        self.headers: dict = {}             # (IR version, opsets) -> small int
        self.stats = {"fast": 0, "full": 0, "learned": 0, "nodes": 0}
        self.unlearnable: set = set()       # signatures a one-node model did not teach
        self.missed = ""                    # why the last ``count`` returned None

    # ------------------------------------------------------------------ signatures
    def _sid(self, spec) -> int:
        i = self.ids.get(spec)
        if i is None:
            i = self.ids[spec] = len(self.ids)
        return i

    def _header(self, st: structure.Structure) -> int:
        """The id of the candidate's opset header; a header joins only through a candidate the
        full path counted (it checked the IR version and opsets: a graph with no nodes still
        errs as analyze does on a header it rejects)."""
        h = self.headers.get(st.header)
        if h is None:
            h = self.headers[st.header] = len(self.headers)
        return h

    def _sig(self, st: structure.Structure, node: structure.LeanNode, header: int,
             citems: tuple[dict, dict]) -> tuple:
        """(opset header id, node kind: op, domain, attributes and which outputs exist, per
        input its spec id and for a constant the key of its value where it can matter, the
        declared types of the graph outputs it produces).  ``citems``: per tensor the item it
        puts in a signature, for ops whose float constants are data (``structure.FLOAT_DATA_OPS``:
        a float constant is "c") and for other ops; the run-time tensors' spec ids are in both
        (``_citems``, ``_hits``), the other constants' items are added on first use."""
        items = []
        mine = citems[0] if node.data_op else citems[1]
        for x in node.inputs:
            if not x:
                items.append(None)
                continue
            it = mine.get(x)
            if it is None:   # a constant (the frontend never reads a value above VALUE_ELEMENTS)
                c = st.constants[x]
                sid, _, spec = self._constant(c)
                it = mine[x] = (sid, structure.value(c) if spec.numel() <= structure.VALUE_ELEMENTS
                                else "big")
            items.append(it)
        return (header, node.kind, tuple(items), _decl(st.outputs, node))

    def _constant(self, c) -> tuple:
        """(spec id, the item a data op's signature takes for it or None, spec) of a constant
        (``structure.read``'s ``protobuf_walk.Init``), per (dims, dtype code)."""
        k = (c.dims, c.dtype)
        e = self.constants.get(k)
        if e is None:
            spec = structure.spec(c)
            i = self._sid(spec)
            e = self.constants[k] = (i, (i, "c") if c.dtype in structure.FLOAT_CODES else None,
                                     spec)
        return e

    def _citems(self, st: structure.Structure, specs: dict | None) -> tuple[dict, dict]:
        """``_sig``'s items (the graph inputs' spec ids, and the data ops' float constants'
        items, filled here); with ``specs``, every input's and constant's spec put in it."""
        sid = self._sid
        other = {name: sid(s) for name, s in st.inputs.items()}
        data = dict(other)
        get, constant = self.constants.get, self._constant
        if specs is not None:
            specs.update(st.inputs)
        for name, c in st.constants.items():
            e = get((c.dims, c.dtype)) or constant(c)
            if specs is not None:
                specs[name] = e[2]
            if e[1] is not None:
                data[name] = e[1]
        return data, other

    # ------------------------------------------------------------------ use
    def _hits(self, st: structure.Structure, learn: bool, specs: dict | None, header: int,
              citems: tuple[dict, dict]) -> list | None:
        """Each node's memo entry (graph order), output spec ids flowed into ``citems`` (and
        the specs into ``specs`` unless None), or None when a signature is unknown (``learn``:
        a node of unknown signature is first learned on its own, ``count``'s docstring)."""
        memo_get, sig_of = self.memo.get, self._sig
        data, other = citems
        outs = st.outputs
        budget = MINI_PER_CANDIDATE if learn else 0
        out = []
        for i, node in enumerate(st.nodes):
            # ``_sig`` inline where every input's item is already known (most nodes)
            items = tuple(map((data if node.data_op else other).get, node.inputs))
            sig = sig_of(st, node, header, citems) if None in items else \
                (header, node.kind, items, _decl(outs, node))
            hit = memo_get(sig)
            if hit is None:
                if sig in self.unlearnable:
                    self.missed = UNLEARNABLE
                    return None
                if budget <= 0:
                    self.missed = TOO_MANY if learn else "a new node signature"
                    return None
                budget -= 1
                self._learn_node(st, i, specs)
                hit = memo_get(sig)
                if hit is None:
                    self.unlearnable.add(sig)
                    self.missed = UNLEARNABLE
                    return None
            o = node.single
            if o is not None and specs is None:   # (most nodes: one output, no specs kept)
                data[o] = other[o] = hit[2][0]
            else:
                for o, s, j in zip(node.outputs, hit[0], hit[2]):
                    if o:
                        data[o] = other[o] = j
                        if specs is not None:
                            specs[o] = s
            out.append(hit)
        return out

    def keys(self, st: structure.Structure) -> list[int] | None:
        """Each node's memo entry number (``lowering``'s node keys), or None when a node's
        signature is unknown; nothing is learned and no ``NodeCost`` is built.

        ``st`` may come unordered (``structure.read(..., ordered=False)``): an input not defined
        before its node is no constant and no tensor seen yet (a KeyError in ``_sig``: None),
        and a node whose inputs are all constants has no learned signature (every learned
        node had a run-time input, whose item is a spec id; a constant's is a tuple)."""
        header = self.headers.get(st.header)
        if header is None:
            return None
        try:
            hits = self._hits(st, False, None, header, self._citems(st, None))
        except KeyError:
            return None
        return None if hits is None else [h[3] for h in hits]

    def count(self, st: structure.Structure,
              learn: bool = False) -> candidate_counts.Counted | None:
        """The candidate's counts from the memo, or None when a node's signature is unknown.
        ``learn``: a node of unknown signature is first learned on its own (``learn_node``: the full
        path on a one-node model), up to ``MINI_PER_CANDIDATE`` per candidate.  ``st`` must be
        ordered (``structure.ordered``)."""
        if not st.ordered:
            raise ValueError("FastCounter.count needs an ordered structure (structure.ordered)")
        header = self.headers.get(st.header)
        if header is None:
            self.missed = NEW_HEADER
            return None
        specs: dict = {}
        citems = self._citems(st, specs)
        get = specs.get
        counted: set[str] = set()
        out = []
        keys = []
        hits = self._hits(st, learn, specs, header, citems)
        if hits is None:
            return None
        renamed = st.renamed or {}
        for node, hit in zip(st.nodes, hits):   # (names are unique: specs is final for each)
            outs, rec, _, key = hit
            keys.append(key)
            pover, status, cidx, cost, by_dtype, note, mac_dtype, params, estimate, kernel, fns = rec
            ins = tuple(map(get, node.inputs))   # ('' is never a tensor: None)
            if cidx:
                params += new_params(node, ins, cidx, counted, pover, _NO_SOURCES)
            if params:
                cost = Cost(params, *cost[1:])
            if node.name in renamed:   # (the note ``engine.cost_graph`` adds, word for word)
                k = node.name.rsplit("~", 1)[-1]
                rn = f"renamed: node #{k} named '{renamed[node.name]}' in the file"
                note = f"{rn}; {note}" if note else rn
            out.append(NodeCost(node.name, node.op, node.domain, status, cost, ins, outs,
                                mac_dtype, note, by_dtype, None, estimate, node.inputs,
                                node.outputs, "", 1, cidx, kernel, functions=fns))
        self.stats["fast"] += 1
        return candidate_counts.Counted(out, "onnx", {o: specs[o] for o in st.outputs}, keys=keys)

    # ------------------------------------------------------------------ learn
    def full(self, candidate: Any, st: structure.Structure | None) -> candidate_counts.Counted:
        """The full path's counts of ``candidate``; its local results are learned."""
        records: list = []
        counted, graph = candidate_counts.count_graph(candidate, self.options, records)
        self.stats["full"] += 1
        if st is not None and graph is not None:
            self.stats["learned"] += self._learn(st, graph, counted.nodes, records)
        return counted

    def _learn_node(self, st: structure.Structure, index: int, specs) -> None:
        """Learn ``st.nodes[index]`` from the full path on a model of that node alone; a
        failure there teaches nothing (the candidate then takes the full path, which reports
        whatever is wrong as analyze does)."""
        from analyzer.search.fastpath import learn_node

        self.stats["nodes"] += 1
        try:
            data = learn_node.model(st, index, specs)
            small = structure.read(data, external=True)   # (its large weights: specs only)
            if small is None:
                return
            records: list = []
            counted, graph = candidate_counts.count_graph(data, self.options, records)
            self.stats["learned"] += self._learn(small, graph, counted.nodes, records)
        except Exception:  # noqa: BLE001  (see the docstring)
            return

    def _learn(self, st: structure.Structure, graph: Graph, nodes: list, records: list) -> int:
        if (graph.folded or graph.sources or graph.decomposed or graph.sequences
                or graph.fold_errors or graph.newer_ops or graph.constants != st.constants.keys()
                or not set(graph.values) <= st.constants.keys()
                or not len(nodes) == len(records) == len(st.nodes)):
            return 0
        tensors = graph.tensors
        for name, spec in st.inputs.items():
            if tensors.get(name) != spec:
                return 0
        for name, c in st.constants.items():
            if tensors.get(name) != structure.spec(c):
                return 0
        learned = 0
        header = self._header(st)
        citems = self._citems(st, None)
        for node, n, rec in zip(st.nodes, nodes, records):
            if rec is None or n.name != node.name or n.op != node.op or n.level or n.runs != 1:
                return learned
            outs = n.out_specs
            out_ids = tuple(self._sid(s) if s is not None else -1 for s in outs)
            sig = self._sig(st, node, header, citems)
            for o, i in zip(node.outputs, out_ids):
                if o:
                    citems[0][o] = citems[1][o] = i
            if any(o and (s is None or not s.is_static) for o, s in zip(node.outputs, outs)):
                continue
            if sig not in self.memo:
                # (len: the entry's key for lowering; the memo only grows)
                self.memo[sig] = (outs, rec, out_ids, len(self.memo))
                learned += 1
        return learned
