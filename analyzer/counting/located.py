"""Errors that name their node, for the counting engine: a failing rule's error with the
node, its specs and what to fix (``context_error``: an unbound dim, a shape decided by a
run-time value, a constant computation that failed, an op newer than the model's opset);
whether a body node's unknown shape is one no option can bind (``unbindable_shape``: the
node is then reported uncosted); and a rule's crash as an ``InternalError``.
"""

from __future__ import annotations

from analyzer.errors import AnalyzerError, Hint, InternalError, ShapeError, UnboundDimError
from analyzer.ir.graph import Graph, Node


def describe(graph: Graph, node: Node) -> str:
    """A node's input and output specs, for a message: 'inputs (x: float32[1,4]) outputs (...)'."""
    def fmt(names):
        return ", ".join(f"{x}: {graph.tensors.get(x, '?')}" for x in names if x)
    return f"inputs ({fmt(node.inputs)}) outputs ({fmt(node.outputs)})"


def shape_gap(err: Exception, graph: Graph) -> bool:
    """An unknown shape that no bound dim explains (a '?' or derived dim, an unknown rank)."""
    if isinstance(err, UnboundDimError):
        return err.dim == "?" or (err.dim.startswith("unk__") and err.dim not in input_symbols(graph))
    return isinstance(err, ShapeError) and err.reason == ShapeError.RANK_UNKNOWN


def unbindable_shape(graph: Graph, node: Node, err: Exception):
    """A shape that depends on a run-time value no option can bind: inside a control-flow body
    (the iteration number, a carried value) or decided by text (a tokenizer's token count):
    why (a ``Message``), or None. The node is reported uncosted and the rest of the model is still counted;
    a numeric graph input stays an error that names ``values=``."""
    if not shape_gap(err, graph):
        return None
    from analyzer.counting.provenance import data_dependent

    return data_dependent(graph, node, unbindable_only=not graph.is_body)


def not_in_opset(graph: Graph, node: Node) -> str | None:
    """For a standard op the model's opset does not define yet: 'Erf is not defined in opset 7
    (it exists from opset 9)'; else None (only error paths call this). The frontend, which knows
    the schemas, recorded such ops in ``graph.newer_ops``."""
    first = None if node.domain else graph.newer_ops.get(node.op)
    if first is None:
        return None
    opset = graph.opsets.get("", 0)
    return (f"{node.op} is not defined in opset {opset} (it exists from opset {first}): "
            f"the model is invalid; re-export it at a newer opset")


def context_error(graph: Graph, node: Node, err: Exception, name: str | None = None) -> AnalyzerError:
    """``err`` (raised by ``node``'s rule) as an error that names the node (``name``: its row
    name, ``parent/child`` inside a body), its specs and what would fix it."""
    where = f"node '{name or node.name}' ({node.op})"
    bad_op = not_in_opset(graph, node)
    if bad_op is not None:
        return LocatedShape(f"{where}: {bad_op}")
    if shape_gap(err, graph):
        from analyzer.counting.provenance import data_dependent, failed_fold

        # a constant computation upstream that fails on the bound dims, or a shape decided by
        # a run-time value: either says more than "a dim is unknown"
        why = failed_fold(graph, node) or data_dependent(graph, node)
        if why is not None:
            msg = f"{where}: {why.template}; {describe(graph, node)}"
            if isinstance(err, UnboundDimError):
                return LocatedUnbound(err.dim, msg, hints=why.hints)
            return LocatedShape(msg, hints=why.hints, reason=err.reason)
    if isinstance(err, UnboundDimError):
        d = err.dim
        own = input_symbols(graph)
        if d == "?" or (d.startswith("unk__") and d not in own):
            # never the inference's own name ('unk__0'): the graph's input dims that dims=
            # binds (tf2onnx's own 'unk__314' among them), or the inputs whose dims are
            # unknown, or (all fixed) nothing to set
            opened = open_inputs(graph)
            if own:
                # one short line: the node, the dims to bind and how; its specs are attributes
                msg = (f"{where}: a dim derived from the unbound input dims "
                       f"({', '.join(repr(s) for s in own)}) is unknown; pass {{dims}}")
                return _unbound(own[0], msg, (Hint("dims", {s: "VALUE" for s in own}),),
                                graph, node, name)
            elif opened:
                return _give_inputs(where, opened, describe(graph, node), d, (name or node.name, node.op))
            elif graph.is_body:  # a body does not see the model's inputs: the model's graph
                # says which have unknown dims (``with_model_inputs``)
                err = LocatedUnbound(d, f"{where}: a dim is unknown after shape inference (an "
                                        f"op ONNX cannot type?); {describe(graph, node)}")
                err.located = (where, describe(graph, node), name or node.name, node.op)
                return err
            else:  # every input dim is fixed: no option binds it
                msg = (f"{where}: a dim is unknown after shape inference although every input "
                       f"dim is fixed (an op ONNX cannot type, or a size the export traced, a "
                       f"Reshape target or a constant, that the dims or batch given contradict?); "
                       f"{describe(graph, node)}")
                hints = ()
        else:
            from analyzer.ir.dims import is_expression, symbols

            own = input_symbols(graph)
            # an input's own dim is a name as the file spells it, whatever its characters
            # (paddle's 'DynamicDimension.0'): never split into the names an expression reads
            expression = d not in own and is_expression(d)
            need = symbols(d) if expression else [d]
            # name every unbound symbol of the inputs at once: one run, not one per dim
            for s in own:
                if s not in need:
                    need.append(s)
            what = (f"dim '{d}' is an expression of symbolic dims" if expression
                    else f"symbolic dim '{d}' is unbound")
            return _unbound(d, f"{where}: {what}; pass {{dims}}",
                            (Hint("dims", {s: "VALUE" for s in need}),), graph, node, name)
        return LocatedUnbound(d, msg, hints=hints)
    return LocatedShape(f"{where}: {err.template}; {describe(graph, node)}", hints=err.hints,
                         reason=err.reason if isinstance(err, ShapeError) else None)


def open_inputs(graph: Graph) -> list[str]:
    """The graph's inputs with a dim that is neither a number nor a name (``?``)."""
    return [x for x in graph.inputs if (s := graph.tensors.get(x)) is not None
            and s.shape is not None and "?" in s.shape]


def _unbound(dim: str, msg: str, hints, graph: Graph, node: Node, name: str | None) -> LocatedUnbound:
    """An unbound dim that an option binds: the one line names the node, its op, the dims and
    the fix; ``node`` (its row name), ``op`` and ``specs`` (``describe``) are attributes."""
    err = LocatedUnbound(dim, msg, hints=hints)
    err.node, err.op, err.specs = name or node.name, node.op, describe(graph, node)
    return err


def _give_inputs(where: str, opened: list[str], specs: str, dim: str,
                 node: tuple[str, str] | None = None) -> LocatedUnbound:
    """Inputs whose dims are unknown (``?``): give their shapes; ``specs`` and ``node`` (row
    name, op) are attributes, not in the line."""
    msg = (f"{where}: a dim is unknown after shape inference; give the shapes of "
           f"{', '.join(repr(x) for x in opened)} with {{inputs}}")
    err = LocatedUnbound(dim, msg, hints=(Hint("inputs", {x: "DIMS" for x in opened}),))
    err.specs = specs
    if node is not None:
        err.node, err.op = node
    return err


def with_model_inputs(err: AnalyzerError, graph: Graph) -> AnalyzerError:
    """``err`` as the model's graph words it: an unknown dim inside a body, where the model
    has inputs whose dims are unknown (a spox export's ``input: float32[?,?]``), asks for
    those inputs' shapes; any other error as it is."""
    located = getattr(err, "located", None)
    if located is None or graph.is_body or not (opened := open_inputs(graph)):
        return err
    return _give_inputs(located[0], opened, located[1], err.dim, located[2:4] or None)


def input_symbols(graph: Graph) -> list[str]:
    """The symbolic dims of the graph's inputs, in order (what ``dims=`` can bind)."""
    out: list[str] = []
    for x in graph.inputs:
        s = graph.tensors.get(x)
        for d in (s.shape or ()) if s is not None else ():
            if type(d) is str and d != "?" and d not in out:  # (the file's names, even unk__7)
                out.append(d)
    return out


def missing_shape(node: Node, ins, outs) -> bool:
    """Some input or output of ``node`` has no spec, or a spec of unknown rank: shape inference
    left it untyped (decided on the specs, never on an exception's text)."""
    return any(s is None or s.shape is None
               for xs, specs in ((node.inputs, ins), (node.outputs, outs))
               for x, s in zip(xs, specs) if x)


def internal_error(node: Node, name: str, rule, err: Exception) -> InternalError:
    """A rule (or the engine around it) failed on a node whose inputs it was given in full."""
    fn = getattr(rule, "fn", None)
    stage = f"rule {fn.__module__}.{fn.__qualname__}" if fn is not None else "counting"
    return InternalError(stage, err, node=name, op=node.op)


class Located:
    """Marker mixin: the error already names its node (raised inside a sub-graph)."""


class LocatedShape(Located, ShapeError):
    pass


class LocatedUnbound(Located, UnboundDimError):
    pass
