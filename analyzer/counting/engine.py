"""Graph -> per-node ``Cost``: apply the rules, split bytes into classes, count params.

Classification of a node:
- ``folded``: all outputs are constant (shape arithmetic, weight preprocessing); a
  runtime computes them ahead of time, so they cost nothing and are listed as such.
- ``costed``: a rule counted it.
- ``uncosted``: no rule; its bytes and params are still counted exactly, its
  arithmetic is unknown, and the report says so (never a silent zero).

A node decomposed from a function op (``frontends/functions.py``) is costed like any other
and carries ``origin``: the file node it came from (the report counts them apart).

Params: each constant tensor consumed as data (not a shape-like argument) by a
runtime node is counted once, at its first consumer. Weight bytes are counted at
every read (traffic), activation bytes per read and per write.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import NamedTuple

from analyzer.counting import rules as _rules  # noqa: F401  (fills the registry)
from analyzer.counting.cost import COUNT_FIELDS, Cost, RuleContext, Work, lookup
from analyzer.errors import AnalyzerError, Hint, InternalError, ShapeError, UnboundDimError
from analyzer.ir.graph import Graph, Node, TensorSpec
from analyzer.ir.ops import CONTROL, facts
from analyzer.counting.traffic import add_held, new_params, node_bytes

class Status(StrEnum):
    """How a node's counts were obtained (the module docstring says what each means). A str
    enum: it compares equal to, formats and serializes as its value ("costed"...)."""

    COSTED = "costed"
    FOLDED = "folded"
    UNCOSTED = "uncosted"


COSTED, FOLDED, UNCOSTED = Status.COSTED, Status.FOLDED, Status.UNCOSTED
_ZERO = Cost()
_DEFAULT_OPSET = 10**6  # a graph without opset info (JAX) gets the newest semantics


@dataclass(slots=True)
class NodeCost:
    """One node's result: its counts and how they were obtained. A record: treat it as
    read-only (not frozen only because frozen construction is slow at 100k nodes)."""

    name: str
    op: str
    domain: str
    status: Status
    cost: Cost
    in_specs: tuple[TensorSpec | None, ...]
    out_specs: tuple[TensorSpec | None, ...]
    mac_dtype: str | None = None
    note: str | None = None
    # bytes moved (weights + activations read + written) per dtype, for precision overrides
    bytes_by_dtype: tuple[tuple[str, int], ...] = ()
    # (name, op) of the file's function-op node this node was decomposed from, if any
    origin: tuple[str, str] | None = None
    # the counts rest on an assumption stated in ``note`` (Work.estimate)
    estimate: bool = False
    # where the node sits in the dataflow (what fusion and launch counts need): its tensor
    # names, its graph level ('' for the model, 'loop/' inside a body: names are local to a
    # level), how often it runs (a loop body's trips), and its constant data input positions
    in_names: tuple[str, ...] = ()
    out_names: tuple[str, ...] = ()
    level: str = ""
    runs: int = 1
    constant_inputs: tuple[int, ...] = ()

    @property
    def flops(self) -> int:
        return self.cost.flops

    @property
    def inputs(self) -> tuple[str, ...]:
        """Input specs as display strings ("float32[1,3,224,224]"; "-" for an omitted input)."""
        return tuple(str(x) if x is not None else "-" for x in self.in_specs)

    @property
    def outputs(self) -> tuple[str, ...]:
        return tuple(str(x) if x is not None else "-" for x in self.out_specs)


def _count_property(field: str):
    return property(lambda self: getattr(self.cost, field), doc=f"``cost.{field}``")


for _f in COUNT_FIELDS:
    setattr(NodeCost, _f, _count_property(_f))


def _describe(graph: Graph, node: Node) -> str:
    def fmt(names):
        return ", ".join(f"{x}: {graph.tensors.get(x, '?')}" for x in names if x)
    return f"inputs ({fmt(node.inputs)}) outputs ({fmt(node.outputs)})"


def _uncosted_note(node: Node) -> str:
    why = _rules.WHY_UNCOSTED.get((node.domain, node.op))
    return f"no cost rule for {node.domain or 'ai.onnx'}::{node.op}" + (f": {why}" if why else "")


def _shape_gap(err: Exception, graph: Graph) -> bool:
    """An unknown shape that no bound dim explains (a '?' or derived dim, an unknown rank)."""
    if isinstance(err, UnboundDimError):
        return err.dim == "?" or (err.dim.startswith("unk__") and err.dim not in _input_symbols(graph))
    return isinstance(err, ShapeError) and err.reason == ShapeError.RANK_UNKNOWN


def _unbindable_shape(graph: Graph, node: Node, err: Exception):
    """A shape that depends on a run-time value no option can bind: inside a control-flow body
    (the iteration number, a carried value) or decided by text (a tokenizer's token count):
    why (a ``Message``), or None. The node is reported uncosted and the rest of the model is still counted;
    a numeric graph input stays an error that names ``values=``."""
    if not _shape_gap(err, graph):
        return None
    from analyzer.counting.provenance import data_dependent

    return data_dependent(graph, node, unbindable_only=not graph.is_body)


def _not_in_opset(graph: Graph, node: Node) -> str | None:
    """For a standard op the model's opset does not define yet: 'Erf is not defined in opset 7
    (it exists from opset 9)'; else None (only error paths call this). The frontend, which knows
    the schemas, recorded such ops in ``graph.newer_ops``."""
    first = None if node.domain else graph.newer_ops.get(node.op)
    if first is None:
        return None
    opset = graph.opsets.get("", 0)
    return (f"{node.op} is not defined in opset {opset} (it exists from opset {first}): "
            f"the model is invalid; re-export it at a newer opset")


def _context_error(graph: Graph, node: Node, err: Exception, name: str | None = None) -> AnalyzerError:
    where = f"node '{name or node.name}' ({node.op})"
    bad_op = _not_in_opset(graph, node)
    if bad_op is not None:
        return _LocatedShape(f"{where}: {bad_op}")
    if _shape_gap(err, graph):
        from analyzer.counting.provenance import data_dependent, failed_fold

        # a constant computation upstream that fails on the bound dims, or a shape decided by
        # a run-time value: either says more than "a dim is unknown"
        why = failed_fold(graph, node) or data_dependent(graph, node)
        if why is not None:
            msg = f"{where}: {why.template}; {_describe(graph, node)}"
            if isinstance(err, UnboundDimError):
                return _LocatedUnbound(err.dim, msg, hints=why.hints)
            return _LocatedShape(msg, hints=why.hints, reason=err.reason)
    if isinstance(err, UnboundDimError):
        d = err.dim
        own = _input_symbols(graph)
        if d == "?" or (d.startswith("unk__") and d not in own):
            # never the inference's own name ('unk__0'): the graph's input dims that dims=
            # binds (tf2onnx's own 'unk__314' among them), or the inputs whose dims are
            # unknown, or (all fixed) nothing to set
            open_inputs = [x for x in graph.inputs if (s := graph.tensors.get(x)) is not None
                           and s.shape is not None and "?" in s.shape]
            if own:
                d = own[0]
                msg = (f"{where}: a dim that shape inference derived from the unbound input dims "
                       f"({', '.join(repr(s) for s in own)}) is unknown; pass {{dims}}; "
                       f"{_describe(graph, node)}")
                hints = (Hint("dims", {s: "VALUE" for s in own}),)
            elif open_inputs:
                msg = (f"{where}: a dim is unknown after shape inference; give the shapes of "
                       f"{', '.join(repr(x) for x in open_inputs)} with {{inputs}}; "
                       f"{_describe(graph, node)}")
                hints = (Hint("inputs", {x: "DIMS" for x in open_inputs}),)
            else:  # every input dim is fixed: no option binds it
                msg = (f"{where}: a dim is unknown after shape inference although every input "
                       f"dim is fixed (an op ONNX cannot type?); {_describe(graph, node)}")
                hints = ()
        else:
            from analyzer.ir.dims import is_expression, symbols

            need = symbols(d) if is_expression(d) else [d]
            # name every unbound symbol of the inputs at once: one run, not one per dim
            for s in _input_symbols(graph):
                if s not in need:
                    need.append(s)
            what = (f"dim '{d}' is an expression of symbolic dims" if is_expression(d)
                    else f"symbolic dim '{d}' is unbound")
            msg = f"{where}: {what}; pass {{dims}}"
            hints = (Hint("dims", {s: "VALUE" for s in need}),)
        return _LocatedUnbound(d, msg, hints=hints)
    return _LocatedShape(f"{where}: {err.template}; {_describe(graph, node)}", hints=err.hints,
                         reason=err.reason if isinstance(err, ShapeError) else None)


def _input_symbols(graph: Graph) -> list[str]:
    """The symbolic dims of the graph's inputs, in order (what ``dims=`` can bind)."""
    out: list[str] = []
    for x in graph.inputs:
        s = graph.tensors.get(x)
        for d in (s.shape or ()) if s is not None else ():
            if type(d) is str and d != "?" and d not in out:  # (the file's names, even unk__7)
                out.append(d)
    return out


@dataclass(frozen=True, slots=True)
class Options:
    """Costing options that are not properties of the graph."""

    loop_trips: int | None = None   # trip count for loops whose count is not a constant
    causal: bool = False            # fused attention ops skip the masked half (a causal kernel)


def cost_graph(graph: Graph, options: Options | None = None) -> list[NodeCost]:
    """Exact counts for every node of ``graph``, in topological order.

    Nodes inside control-flow sub-graphs follow their parent as ``parent/child`` rows,
    their counts already multiplied by how often they run (params are never multiplied)."""
    out: list[NodeCost] = []
    _walk(graph, "", 1, set(), out, options or Options())
    if graph.renamed:  # a file with duplicate node names: say which row is which
        renamed = graph.renamed
        for n in out:
            if n.name in renamed:
                k = n.name.rsplit("~", 1)[-1]
                note = f"renamed: node #{k} named '{renamed[n.name]}' in the file"
                n.note = f"{note}; {n.note}" if n.note else note
    if graph.decomposed:  # nodes from function bodies say which file node they replace
        origin = graph.decomposed.get
        for n in out:
            n.origin = origin(n.name)
    return out


class _Memo(NamedTuple):
    """What nodes of one memo key share (everything but the params of tensors not yet counted)."""

    params_override: object        # Work.params: parameter elements of packed inputs, or None
    status: Status
    const_inputs: tuple[int, ...]  # indices of the constant data inputs (params candidates)
    cost: Cost                     # params 0 (counted per tensor name, not memoised)
    by_dtype: tuple[tuple[str, int], ...]
    note: str | None
    mac_dtype: str | None
    held_params: int               # Work.held's parameter elements (every node holds its own)
    estimate: bool


def _walk(graph: Graph, prefix: str, times: int, counted: set[str], out: list[NodeCost],
          opts: Options) -> None:
    get = graph.tensors.get
    constants = graph.constants
    folded = graph.folded
    opsets = graph.opsets
    # Repeated blocks: nodes with the same rule, the same (shared) spec objects, the same
    # attributes and the same constant pattern have the same Work and bytes. Only params
    # depend on which tensors were already counted, so they are not memoised.
    memo: dict[tuple, _Memo] = {}
    rules: dict[tuple[str, str], tuple] = {}  # (domain, op) -> (rule or None, its op facts)
    contexts: dict[str, RuleContext] = {}  # domain -> the context of its (non-control) rules
    if "" in graph.tensors:  # "" names an omitted optional input, never a tensor
        tensors = graph.tensors
        get = lambda x: tensors.get(x) if x else None  # noqa: E731
    is_const = constants.__contains__
    for node in graph.nodes:
        name = prefix + node.name
        ins = tuple(map(get, node.inputs))
        outs = tuple(map(get, node.outputs))
        if node.name in folded:
            out.append(NodeCost(name, node.op, node.domain, FOLDED, _ZERO, ins, outs,
                                note="constant-folded", in_names=node.inputs,
                                out_names=node.outputs, level=prefix, runs=times))
            continue
        active = None  # the rule running now, for an internal error's stage
        try:
            key = hit = None
            if node.attr_key is not None:  # (None: a node with sub-graphs, never memoised)
                key = (node.op, node.domain, node.attr_key, *map(id, ins), *map(id, outs),
                       *map(is_const, node.inputs))
                hit = memo.get(key)
            if hit is None:
                rkey = (node.domain, node.op)
                found = rules.get(rkey)
                if found is None:
                    found = rules[rkey] = (lookup(node.domain, node.op), facts(node.domain, node.op))
                rule, (io, shape_inputs) = found
                if rule is not None and io == CONTROL:
                    active = rule
                    _control(graph, node, name, rule, shape_inputs, ins, outs, times, counted, out,
                             opts)
                    continue
                if rule is None:
                    work, status = Work(), UNCOSTED
                else:
                    ctx = contexts.get(node.domain)
                    if ctx is None:
                        ctx = contexts[node.domain] = RuleContext(
                            opsets.get(node.domain, 0) or _DEFAULT_OPSET, opts)
                    active = rule
                    attrs = node.attrs
                    if attrs:  # only the attributes the rule declares
                        take = rule.attrs
                        work = rule.fn(ins, outs, ctx, **{k: v for k, v in attrs.items() if k in take})
                    else:
                        work = rule.fn(ins, outs, ctx)
                    active = None
                    status = COSTED
                cost, by_dtype = node_bytes(node, ins, outs, work, shape_inputs, io, constants)
                held_params = 0
                if work.held is not None:
                    held_params, cost, by_dtype = add_held(work.held, cost, by_dtype)
                # the constant data inputs (same for every node of this memo key)
                cidx = tuple(i for i, x in enumerate(node.inputs)
                             if x and i not in shape_inputs and x in constants)
                note = work.note or (_uncosted_note(node) if status == UNCOSTED else None)
                if times != 1:
                    note = f"x{times} (runs in a loop)" + (f"; {note}" if note else "")
                    cost = cost.scaled(times)
                    by_dtype = tuple((d, b * times) for d, b in by_dtype)
                mac_dtype = work.mac_dtype or (ins[0].dtype if work.mac_flops and ins and ins[0] else None)
                hit = _Memo(work.params, status, cidx, cost, by_dtype, note, mac_dtype, held_params,
                            work.estimate)
                if key is not None:
                    memo[key] = hit
            pover, status, cidx, cost, by_dtype, note, mac_dtype, params, estimate = hit
            if cidx:
                params += new_params(node, ins, cidx, counted, pover, graph)
        except AnalyzerError as e:
            if isinstance(e, _Located):
                raise
            err = e
        except InternalError:
            raise
        except Exception as e:  # not a problem of the input the rule was given: a bug
            if not _missing_shape(node, ins, outs):
                raise _internal(node, name, active, e) from e
            # a tensor without a type or rank: the rule cannot be blamed for failing on it
            err = ShapeError("tensor rank is unknown after shape inference",
                             reason=ShapeError.RANK_UNKNOWN)
        else:
            err = None
        if err is not None:
            why = _unbindable_shape(graph, node, err)
            if why is None:
                raise _context_error(graph, node, err, name) from None
            out.append(NodeCost(name, node.op, node.domain, UNCOSTED, _ZERO, ins, outs,
                                note=f"uncosted: {why}", in_names=node.inputs,
                                out_names=node.outputs, level=prefix, runs=times))
            continue
        if params:
            cost = Cost(params, *cost[1:])  # params are never multiplied by loop trips
        out.append(NodeCost(name, node.op, node.domain, status, cost, ins, outs, mac_dtype, note,
                            by_dtype, None, estimate, node.inputs, node.outputs, prefix, times, cidx))


def _missing_shape(node: Node, ins, outs) -> bool:
    """Some input or output of ``node`` has no spec, or a spec of unknown rank: shape inference
    left it untyped (decided on the specs, never on an exception's text)."""
    return any(s is None or s.shape is None
               for xs, specs in ((node.inputs, ins), (node.outputs, outs))
               for x, s in zip(xs, specs) if x)


def _internal(node: Node, name: str, rule, err: Exception) -> InternalError:
    """A rule (or the engine around it) failed on a node whose inputs it was given in full."""
    fn = getattr(rule, "fn", None)
    stage = f"rule {fn.__module__}.{fn.__qualname__}" if fn is not None else "counting"
    return InternalError(stage, err, node=name, op=node.op)


def _control(graph, node, name, rule, shape_inputs, ins, outs, times, counted, out, opts):
    """A control-flow node: its own (usually empty) work, then its sub-graphs' rows."""
    values = tuple(graph.values.get(x) if x else None for x in node.inputs)
    ctx = RuleContext(graph.opsets.get(node.domain, 0) or _DEFAULT_OPSET, opts, values, graph, node)
    take = rule.attrs
    plan = rule.fn(ins, outs, ctx, **{k: v for k, v in node.attrs.items() if k in take})
    runs = list(plan.run)
    note = plan.note
    if plan.costlier_of:
        unknown: dict[str, int] = {}  # branch -> its uncosted nodes (a cost no one can compare)

        def weight(attr):
            trial: list[NodeCost] = []
            _walk(node.subgraphs[attr], name + "/", times, set(counted), trial, opts)
            tot = sum((n.cost for n in trial), Cost())
            unknown[attr] = sum(n.status == UNCOSTED for n in trial)
            return (tot.flops, tot.bytes_moved)
        costs = {attr: weight(attr) for attr in plan.costlier_of}
        pick = max(plan.costlier_of, key=lambda a: costs[a])
        runs.append((pick, 1))
        others = ", ".join(a for a in plan.costlier_of if a != pick)
        note = (f"{note}; " if note else "") + (
            f"condition not constant: costed the costlier branch '{pick}' (not {others})")
        for attr in plan.costlier_of:
            if attr != pick and unknown[attr]:
                note += (f"; '{attr}' has {unknown[attr]} uncosted node(s) (a shape known only "
                         f"at run time, or no rule): its cost was not compared in full")
    w = plan.work
    cost = Cost(0, w.mac_flops * times, w.vector_flops * times, w.transcendentals * times, 0, 0, 0)
    by_dtype: dict[str, int] = {}
    mac_dtype = None
    for g, m in plan.work_of:  # counts of other nodes, m times over, as this node's own work
        trial = []
        _walk(g, name + "/", times * m, set(counted), trial, opts)
        for n in trial:
            cost = cost + Cost(0, *n.cost[1:])
            mac_dtype = mac_dtype or n.mac_dtype
            for d, b in n.bytes_by_dtype:
                by_dtype[d] = by_dtype.get(d, 0) + b
        unc = [n.name for n in trial if n.status == UNCOSTED]
        if unc:
            note = (f"{note}; " if note else "") + (
                f"incomplete: {len(unc)} uncosted node(s) among them ({', '.join(unc[:3])})")
    # constants handed to the body as its inputs (Loop carried values, Scan states and scanned
    # tensors: a KNN's training set) are weights the body reads as activations: counted here
    # (the op's shape_inputs are its non-data inputs: If's condition, Loop's M and cond)
    cidx = tuple(i for i, x in enumerate(node.inputs)
                 if x and i not in shape_inputs and x in graph.constants)
    if cidx:
        cost = Cost(new_params(node, ins, cidx, counted, None, graph), *cost[1:])
    out.append(NodeCost(name, node.op, node.domain, COSTED, cost, ins, outs, mac_dtype, note,
                        tuple(by_dtype.items()), None, plan.estimate or bool(plan.costlier_of),
                        node.inputs, node.outputs, name[: len(name) - len(node.name)], times, cidx))
    for attr, m in runs:
        sub = node.subgraphs.get(attr)
        if sub is None:
            raise ShapeError(f"has no sub-graph '{attr}'")
        _walk(sub, name + "/", times * m, counted, out, opts)


class _Located:
    """Marker mixin: the error already names its node (raised inside a sub-graph)."""


class _LocatedShape(_Located, ShapeError):
    pass


class _LocatedUnbound(_Located, UnboundDimError):
    pass
