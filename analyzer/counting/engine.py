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

from analyzer.counting import rules as _rules  # fills the registry
from analyzer.counting.cost import COUNT_FIELDS, Cost, RuleContext, Work, by_function, lookup
from analyzer.counting.located import (Located, context_error, internal_error, missing_shape,
                                       unbindable_shape, with_model_inputs)
from analyzer.counting.traffic import add_held, new_params, node_bytes
from analyzer.counting import value_rules
from analyzer.errors import AnalyzerError, InternalError, ShapeError
from analyzer.ir.graph import Graph, Node, TensorSpec
from analyzer.ir.ops import CONTROL, facts

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
    kernel: str | None = None        # Work.kernel: the kernel variant its specs do not show
    # a scan's (body input names of its scanned xs, count of its stacked ys outputs, the body's
    # result names): the slices and updates a compiler runs each trip and what the body writes
    # (the frontend's ``loop_io`` attribute); () for any other node
    loop_io: tuple = ()
    # its transcendentals by function (``cost.by_function``: every one counted, those its rule
    # does not name as ``cost.UNNAMED``), (function, count) pairs; () where it has none
    functions: tuple[tuple[str, int], ...] = ()

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


def _uncosted_note(node: Node) -> str:
    why = _rules.WHY_UNCOSTED.get((node.domain, node.op))
    return f"no cost rule for {node.domain or 'ai.onnx'}::{node.op}" + (f": {why}" if why else "")


@dataclass(frozen=True, slots=True)
class Options:
    """Costing options that are not properties of the graph."""

    loop_trips: int | None = None   # trip count for loops whose count is not a constant
    causal: bool = False            # fused attention ops skip the masked half (a causal kernel)


def cost_graph(graph: Graph, options: Options | None = None,
               records: list | None = None) -> list[NodeCost]:
    """Exact counts for every node of ``graph``, in topological order.

    Nodes inside control-flow sub-graphs follow their parent as ``parent/child`` rows,
    their counts already multiplied by how often they run (params are never multiplied).
    ``records``: a list that gets, per node of ``graph`` (not of its sub-graphs), the record
    its row was built from (``NodeRecord``; None for a folded, control-flow or uncountable
    node); a search reuses them for nodes of equal signature (``analyzer.search.fastpath.signatures``)."""
    out: list[NodeCost] = []
    try:
        _walk(graph, "", 1, set(), out, options or Options(), records)
    except AnalyzerError as e:
        better = with_model_inputs(e, graph)
        if better is e:
            raise
        raise better from None
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


class NodeRecord(NamedTuple):
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
    kernel: str | None             # Work.kernel
    functions: tuple               # cost.by_function of the Work, scaled by the trips


def _walk(graph: Graph, prefix: str, times: int, counted: set[str], out: list[NodeCost],
          opts: Options, records: list | None = None) -> None:
    get = graph.tensors.get
    constants = graph.constants
    folded = graph.folded
    opsets = graph.opsets
    # Repeated blocks: nodes with the same rule, the same (shared) spec objects, the same
    # attributes and the same constant pattern have the same Work and bytes. Only params
    # depend on which tensors were already counted, so they are not memoised.
    memo: dict[tuple, NodeRecord] = {}
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
            out.append(_bare_row(name, node, FOLDED, ins, outs, "constant-folded", prefix, times))
            if records is not None:
                records.append(None)
            continue
        active = None  # the rule running now, for an internal error's stage
        try:
            key = hit = None
            if node.attr_key is not None:  # (None: a node with sub-graphs, never memoised)
                key = value_rules.memo_key(graph, node, ins, outs, is_const)
                hit = memo.get(key)
            if hit is None:
                rule, (io, shape_inputs) = _rule_of(rules, node)
                if rule is not None and io == CONTROL:
                    active = rule
                    if records is not None:
                        records.append(None)
                    _control(graph, node, name, rule, shape_inputs, ins, outs, times, counted, out, opts)
                    continue
                if rule is None:
                    work, status = Work(), UNCOSTED
                else:
                    ctx = contexts.get(node.domain) or _context(contexts, node.domain, opsets, opts)
                    ctx = value_rules.context(graph, node, ctx)
                    active = rule
                    work = _rule_work(rule, node, ins, outs, ctx)
                    active = None
                    status = COSTED
                hit = _new_record(node, ins, outs, work, status, shape_inputs, io, constants, times)
                if key is not None:
                    memo[key] = hit
            pover, status, cidx, cost, by_dtype, note, mac_dtype, params, estimate, kernel, fns = hit
            if cidx:
                params += new_params(node, ins, cidx, counted, pover, graph)
        except AnalyzerError as e:
            if isinstance(e, Located):
                raise
            err = e
        except InternalError:
            raise
        except Exception as e:  # not a problem of the input the rule was given: a bug
            if not missing_shape(node, ins, outs):
                raise internal_error(node, name, active, e) from e
            # a tensor without a type or rank: the rule cannot be blamed for failing on it
            err = ShapeError("tensor rank is unknown after shape inference",
                             reason=ShapeError.RANK_UNKNOWN)
        else:
            err = None
        if err is not None:
            out.append(_unbindable_row(graph, node, name, err, ins, outs, prefix, times))
            if records is not None:
                records.append(None)
            continue
        if params:
            cost = Cost(params, *cost[1:])  # params are never multiplied by loop trips
        if records is not None:
            records.append(hit)
        out.append(NodeCost(name, node.op, node.domain, status, cost, ins, outs, mac_dtype, note,
                            by_dtype, None, estimate, node.inputs, node.outputs, prefix, times, cidx,
                            dropout_kernel(graph, node) or kernel, functions=fns))


DROPOUT_TRAIN = "dropout-train"   # the key of its kernel word


def dropout_kernel(graph: Graph, node: Node) -> str | None:
    """``NodeCost.kernel`` of an ONNX Dropout in training mode (its ``training_mode`` input a
    known true value): ``dropout-train=<ratio>`` (ratio default 0.5); None otherwise (an
    identity at inference).  Counts do not depend on it."""
    if node.op != "Dropout" or node.domain not in ("", "ai.onnx"):
        return None
    ins = node.inputs
    mode = graph.values.get(ins[2]) if len(ins) > 2 and ins[2] else None
    if mode is None or not bool(mode):
        return None
    ratio = graph.values.get(ins[1]) if len(ins) > 1 and ins[1] else None
    return f"{DROPOUT_TRAIN}={0.5 if ratio is None else float(ratio)!r}"


def _bare_row(name: str, node: Node, status: Status, ins, outs, note: str, prefix: str,
              times: int) -> NodeCost:
    """The row of a node with no counts: constant-folded, or uncosted for a stated reason."""
    return NodeCost(name, node.op, node.domain, status, _ZERO, ins, outs, note=note,
                    in_names=node.inputs, out_names=node.outputs, level=prefix, runs=times)


def _unbindable_row(graph: Graph, node: Node, name: str, err: AnalyzerError, ins, outs, prefix: str,
                    times: int) -> NodeCost:
    """An uncosted row where a dim the rule needs cannot be bound; any other error is raised,
    located at the node."""
    why = unbindable_shape(graph, node, err)
    if why is None:
        raise context_error(graph, node, err, name) from None
    return _bare_row(name, node, UNCOSTED, ins, outs, f"uncosted: {why}", prefix, times)


def _rule_of(rules: dict, node: Node) -> tuple:
    """(rule or None, its op facts) of the node's (domain, op), looked up once a walk."""
    rkey = (node.domain, node.op)
    found = rules.get(rkey)
    if found is None:
        found = rules[rkey] = (lookup(node.domain, node.op), facts(node.domain, node.op))
    return found


def _context(contexts: dict, domain: str, opsets, opts: Options) -> RuleContext:
    """The domain's rule context (its opset; the newest semantics without one), made once a walk."""
    ctx = contexts[domain] = RuleContext(opsets.get(domain, 0) or _DEFAULT_OPSET, opts)
    return ctx


def _rule_work(rule, node: Node, ins, outs, ctx: RuleContext) -> Work:
    """The rule's Work for one node, given only the attributes the rule declares."""
    attrs = node.attrs
    if attrs:
        take = rule.attrs
        return rule.fn(ins, outs, ctx, **{k: v for k, v in attrs.items() if k in take})
    return rule.fn(ins, outs, ctx)


def _new_record(node: Node, ins, outs, work: Work, status: Status, shape_inputs, io, constants,
                times: int) -> NodeRecord:
    """What every node of one memo key shares: bytes from the Work, held parameters, the constant
    data inputs, the note, and the counts scaled by the loop trips ``times``."""
    cost, by_dtype = node_bytes(node, ins, outs, work, shape_inputs, io, constants)
    held_params = 0
    if work.held is not None:
        held_params, cost, by_dtype = add_held(work.held, cost, by_dtype)
    cidx = tuple(i for i, x in enumerate(node.inputs)
                 if x and i not in shape_inputs and x in constants)
    note = work.note or (_uncosted_note(node) if status == UNCOSTED else None)
    if times != 1:
        note = f"x{times} (runs in a loop)" + (f"; {note}" if note else "")
        cost = cost.scaled(times)
        by_dtype = tuple((d, b * times) for d, b in by_dtype)
    mac_dtype = work.mac_dtype or (ins[0].dtype if work.mac_flops and ins and ins[0] else None)
    return NodeRecord(params_override=work.params, status=status, const_inputs=cidx, cost=cost,
                      by_dtype=by_dtype, note=note, mac_dtype=mac_dtype, held_params=held_params,
                      estimate=work.estimate, kernel=work.kernel,
                      functions=by_function(work.functions, work.transcendentals, times))


def _work_of(plan, name, times, counted, opts, cost, fns: dict, note):
    """``plan.work_of``'s counts (other nodes' counts, m times over, as a control node's own work)
    added to ``cost`` and to ``fns`` (its transcendentals by function, in place): (cost, bytes by
    dtype, mac dtype, note)."""
    by_dtype: dict[str, int] = {}
    mac_dtype = None
    for g, m in plan.work_of:
        trial: list[NodeCost] = []
        _walk(g, name + "/", times * m, set(counted), trial, opts)
        for n in trial:
            cost = cost + Cost(0, *n.cost[1:])
            mac_dtype = mac_dtype or n.mac_dtype
            for f, c in n.functions:
                fns[f] = fns.get(f, 0) + c
            for d, b in n.bytes_by_dtype:
                by_dtype[d] = by_dtype.get(d, 0) + b
        unc = [n.name for n in trial if n.status == UNCOSTED]
        if unc:
            note = (f"{note}; " if note else "") + (
                f"incomplete: {len(unc)} uncosted node(s) among them ({', '.join(unc[:3])})")
    return cost, by_dtype, mac_dtype, note


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
        failed: dict[str, AnalyzerError] = {}  # branch -> why it cannot run at these shapes

        def weight(attr):
            trial: list[NodeCost] = []
            try:
                _walk(node.subgraphs[attr], name + "/", times, set(counted), trial, opts)
            except AnalyzerError as e:
                if e.hints:  # an option fixes it (a dim to bind): say so rather than guess
                    raise
                failed[attr] = e
                return None
            tot = sum((n.cost for n in trial), Cost())
            unknown[attr] = sum(n.status == UNCOSTED for n in trial)
            return (tot.flops, tot.bytes_moved)
        costs = {attr: weight(attr) for attr in plan.costlier_of}
        # a branch that fails at these shapes, with nothing an option could fix (silero-VAD's
        # 8 kHz path given a 16 kHz chunk), cannot be the one that runs: the others are
        # compared; all failing, the first error
        able = [a for a in plan.costlier_of if costs[a] is not None]
        if not able:
            raise failed[plan.costlier_of[0]]
        pick = max(able, key=lambda a: costs[a])
        runs.append((pick, 1))
        others = ", ".join(a for a in plan.costlier_of if a != pick)
        note = (f"{note}; " if note else "") + (
            f"condition not constant: costed the costlier branch '{pick}' (not {others})"
            if len(able) > 1 else f"condition not constant: costed '{pick}', the branch that "
            f"runs at these shapes")
        if failed:
            from analyzer.counting.provenance import describe_value

            cond = describe_value(graph, node.inputs[0]) if node.inputs and node.inputs[0] else ""
        for attr, e in failed.items():
            note += (f"; '{attr}' fails at these shapes ({str(e).split('; ')[0]}); the "
                     f"condition is {cond}: values= chooses a branch")
        for attr in plan.costlier_of:
            if attr != pick and attr not in failed and unknown[attr]:
                note += (f"; '{attr}' has {unknown[attr]} uncosted node(s) (a shape known only "
                         f"at run time, or no rule): its cost was not compared in full")
    w = plan.work
    cost = Cost(0, w.mac_flops * times, w.vector_flops * times, w.transcendentals * times, 0, 0, 0)
    fns = dict(by_function(w.functions, w.transcendentals, times))
    cost, by_dtype, mac_dtype, note = _work_of(plan, name, times, counted, opts, cost, fns, note)
    # constants handed to the body as its inputs (Loop carried values, Scan states and scanned
    # tensors: a KNN's training set) are weights the body reads as activations: counted here
    # (the op's shape_inputs are its non-data inputs: If's condition, Loop's M and cond)
    cidx = tuple(i for i, x in enumerate(node.inputs)
                 if x and i not in shape_inputs and x in graph.constants)
    if cidx:
        cost = Cost(new_params(node, ins, cidx, counted, None, graph), *cost[1:])
    out.append(NodeCost(name, node.op, node.domain, COSTED, cost, ins, outs, mac_dtype, note,
                        tuple(by_dtype.items()), None, plan.estimate or bool(plan.costlier_of), node.inputs,
                        node.outputs, name[: len(name) - len(node.name)], times, cidx, loop_io=node.attrs.get("loop_io", ()),
                        functions=tuple(sorted(fns.items()))))
    for attr, m in runs:
        sub = node.subgraphs.get(attr)
        if sub is None:
            raise ShapeError(f"has no sub-graph '{attr}'")
        _walk(sub, name + "/", times * m, counted, out, opts)
