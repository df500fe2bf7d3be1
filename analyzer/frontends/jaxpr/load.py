"""The JAX frontend: a function (or a ``ClosedJaxpr``) -> ``ir.Graph``.

The function is traced with ``jax.make_jaxpr`` on abstract arguments (arrays, pytrees of arrays or
``jax.ShapeDtypeStruct``s: no data is needed).  Every equation becomes one IR node whose ``op`` is
the primitive name and whose ``domain`` is ``"jax"``; the rules live in ``analyzer/rules/lax_*.py``.

Sub-jaxprs are handled by one walker (``_Lowerer.emit``):

- call-like primitives with one sub-jaxpr (``jit``, ``custom_jvp_call``, ``custom_vjp_call``,
  ``remat``/``checkpoint``, ``closed_call``, ``core_call``, ``shard_map``, ...) are *inlined*: their
  equations become nodes of the enclosing graph, named under a prefix (``jit(relu)``);
- ``scan``, ``while`` and ``cond`` become control nodes whose ``subgraphs`` hold their bodies, and
  whose rule (``rules/lax_control.py``) says how often each runs.

Dead code is removed first (``live``: jax's own dead-code elimination, as XLA removes it), so the
counts are those of what runs, not of everything traced.

Constants and parameters (JAX has no notion of weights, so this is a decision, documented here):

- closed-over arrays (the ``consts`` of a ``ClosedJaxpr``) are constants, like ONNX initializers:
  their elements are ``params`` when consumed as data and their bytes are weight bytes;
- arguments listed in ``params_argnums`` (all their pytree leaves) are weights in the same way;
  every other argument is an activation (the default: no argument is a weight);
- literals (``x * 0.5``) and scalars computed only from literals are *immediates*: they are encoded
  in the instruction, so they are neither params nor bytes (an ONNX attribute, not an initializer).
  A scalar equation whose inputs are all known is evaluated once here (``folded``), which is how a
  ``lax.switch`` on a constant index or a ``while`` with constant bounds is recognised.

Node names come from ``eqn.source_info.name_stack`` (``jax.named_scope``, Flax/Equinox/Haiku module
paths, ``jvp(...)``/``transpose(...)`` for derivatives) plus ``jit(name)`` for inlined jits, then the
primitive: ``mlp/fc1/dot_general``.  Repeats get ``#2``, ``#3``, ... so names are unique.

Turning command-line strings into example args (``f32[8,224]`` specs, ``file.py:function``) is in
``jaxpr_inputs.py``; recognising static ``while`` trip counts in ``jaxpr_loops.py``; tracing a
function to a ``ClosedJaxpr`` in ``jaxpr_trace.py``.
``jax`` is imported only inside functions.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping, Sequence

from analyzer.errors import ShapeError
from analyzer.ir.graph import Graph, Node, TensorSpec
from analyzer.frontends.jaxpr.inputs import (bind_inputs, ir_dtype, is_jax_target, load_program,
                           load_target, parse_spec)
from analyzer.frontends.jaxpr.loops import while_trips
from analyzer.frontends.jaxpr.mesh import mesh_axes, record as mesh_record
from analyzer.frontends.jaxpr.values import Known, open_jaxpr
from analyzer.frontends.jaxpr.trace import Traced, spec_of_aval, trace  # Traced, trace: re-exported

__all__ = ["DOMAIN", "CONTROL", "Traced", "bind_inputs", "ir_dtype", "is_jax_target", "load",
           "load_program", "load_target", "parse_spec", "sub_jaxprs", "trace"]

# the name prefix of a closed-over array's tensor (``_Lowerer.const``): a constant of the
# compiled program (arguments in ``params_argnums`` are weights too, but runtime inputs)
CONST_PREFIX = "%const"


DOMAIN = "jax"


# ----------------------------------------------------------------------------- lowering to the IR

# Control-flow primitives: the sub-jaxpr params that become sub-graphs.
CONTROL = {"scan", "while", "cond"}
# call-like primitives whose inlined body gets a name component (others are transparent)
_CALL_SCOPE = {"jit": lambda p: f"jit({p.get('name', '')})", "pjit": lambda p: f"jit({p.get('name', '')})",
               "remat2": lambda p: "checkpoint", "checkpoint": lambda p: "checkpoint",
               "shard_map": lambda p: "shard_map", "xla_pmap": lambda p: f"pmap({p.get('name', '')})",
               "composite": lambda p: f"composite({p.get('name', '')})"}
_SMALL_VALUE = 64        # const arrays up to this many elements keep their values in Graph.values


def sub_jaxprs(params: Mapping[str, Any]) -> list[tuple[str, int | None, Any]]:
    """Every sub-jaxpr among an equation's params: ``(key, index in a tuple or None, jaxpr)``.

    The one helper that finds bodies for all primitives (jit, custom_jvp/vjp, remat, scan, while,
    cond branches, shard_map, reducers of reduce/scatter, pallas kernels, ...)."""
    from jax.extend.core import ClosedJaxpr, Jaxpr

    out = []
    for k, v in params.items():
        if isinstance(v, (ClosedJaxpr, Jaxpr)):
            out.append((k, None, v))
        elif isinstance(v, (tuple, list)) and v and all(isinstance(x, (ClosedJaxpr, Jaxpr)) for x in v):
            out.extend((k, i, x) for i, x in enumerate(v))
    return out


def _linear_solve(params: Mapping[str, Any], ins: list) -> tuple[list, list]:
    """``custom_linear_solve``'s solve jaxpr and its operands: the solve consts, then b."""
    lengths = tuple(params["const_lengths"])   # (matvec, vecmat, solve, transpose_solve)
    start = lengths[0] + lengths[1]
    operands = list(ins[start:start + lengths[2]]) + list(ins[sum(lengths):])
    return [("solve", None, params["jaxprs"].solve)], operands


def _count_eqns(j: Any) -> int:
    jaxpr, _ = open_jaxpr(j)
    return sum(1 + sum(_count_eqns(s) for _, _, s in sub_jaxprs(e.params)) for e in jaxpr.eqns)


def _plain_attrs(params: Mapping[str, Any]) -> dict[str, Any]:
    """Params a rule can read: dtypes become IR names, sub-jaxprs become ``KEY_ops`` (their
    equation count, for reducers and scatter updates)."""
    import numpy as np

    subs = {k for k, _, _ in sub_jaxprs(params)}
    attrs: dict[str, Any] = {}
    for k, v in params.items():
        if k in subs:
            vs = v if isinstance(v, (tuple, list)) else (v,)
            attrs[f"{k}_ops"] = sum(_count_eqns(x) for x in vs)
            continue
        if isinstance(v, np.dtype) or (isinstance(v, type) and issubclass(v, np.generic)):
            try:
                v = ir_dtype(np.dtype(v))
            except (ShapeError, TypeError):
                v = str(v)
        attrs[k] = v
    return attrs


class _Lowerer:
    """Walks jaxprs into ``Graph``s that share one table of tensors, constants and values."""

    def __init__(self, counted: Callable[[str, str], bool]):
        self.counted = counted  # (domain, primitive) -> counted directly (else a call is inlined)
        self.tensors: dict[str, TensorSpec] = {}
        self.constants: set[str] = set()
        self.values: dict[str, Any] = {}
        self.graphs: list[Graph] = []
        self._n = 0
        self.mesh: dict[str, int] | None = None    # the enclosing shard_map's mesh
        self.meshes: list[dict[str, int]] = []      # every shard_map mesh, first seen first
        self.named: dict[str, dict] = {}            # first output -> an equation over named axes

    # -- tensors

    def fresh(self, aval: Any, hint: str = "t") -> str:
        self._n += 1
        name = f"%{hint}{self._n}"
        self.tensors[name] = spec_of_aval(aval)
        return name

    def const(self, value: Any, aval: Any) -> "str | Known":
        """A closed-over constant: a scalar is an immediate; an array is a constant tensor."""
        size = math.prod(getattr(value, "shape", ()) or ())
        if size <= 1 and not hasattr(getattr(value, "dtype", None), "_impl"):
            return Known(value)
        name = self.fresh(aval, CONST_PREFIX[1:])
        self.constants.add(name)
        if size <= _SMALL_VALUE:
            try:
                import numpy as np

                self.values[name] = np.asarray(value)
            except Exception:  # key arrays and other extended dtypes
                pass
        return name

    # -- graphs

    def graph(self, name: str, jaxpr_like: Any, in_refs: Sequence["str | Known | None"],
              scope: str = "") -> Graph:
        """A ``Graph`` for a (closed) jaxpr whose invars are bound to ``in_refs`` (``None``: a
        fresh tensor of the invar's type)."""
        jaxpr, consts = open_jaxpr(jaxpr_like)
        g = Graph(name=name, nodes=[], tensors=self.tensors, inputs=(), outputs=())
        env: dict[Any, Any] = {}
        for v, c in zip(jaxpr.constvars, consts):
            env[v] = self.const(c, v.aval)
        inputs = []
        for v, ref in zip(jaxpr.invars, in_refs):
            if ref is None:
                ref = self.fresh(v.aval, "in")
            env[v] = ref
            if isinstance(ref, str):
                inputs.append(ref)
        used: dict[str, int] = {}
        folded: set[str] = set()
        self.emit(jaxpr, env, scope, g.nodes, used, folded)
        g.inputs = tuple(inputs)
        g.outputs = tuple(r for r in (self.read(env, v) for v in jaxpr.outvars) if isinstance(r, str))
        g.folded = frozenset(folded)   # type: ignore[assignment]
        g.values = self.values
        self.graphs.append(g)
        return g

    def read(self, env: dict, v: Any) -> "str | Known":
        from jax.extend.core import Literal

        if isinstance(v, Literal):
            return Known(v.val)
        return env[v]

    @staticmethod
    def _unique(base: str, used: dict[str, int]) -> str:
        n = used.get(base, 0) + 1
        used[base] = n
        if n == 1:
            return base
        while f"{base}#{n}" in used:   # a base that itself ends in #k
            n += 1
        used[base] = n
        used[f"{base}#{n}"] = 1
        return f"{base}#{n}"

    def emit(self, jaxpr: Any, env: dict, prefix: str, nodes: list[Node], used: dict[str, int],
             folded: set[str]) -> None:
        """Append the nodes of ``jaxpr``'s equations (recursing into calls) to ``nodes``."""
        for eqn in jaxpr.eqns:
            prim = eqn.primitive.name
            stack = str(eqn.source_info.name_stack)
            scope = "/".join(s for s in (prefix, stack) if s)
            ins = [self.read(env, v) for v in eqn.invars]
            subs = sub_jaxprs(eqn.params)
            counted = self.counted(DOMAIN, prim)

            if prim in CONTROL:
                self._control(eqn, prim, ins, scope, env, nodes, used)
                continue
            if prim == "custom_linear_solve" and not counted:
                # what runs is the ``solve`` jaxpr on (its consts, b); matvec and the transposes
                # only serve differentiation
                subs, ins = _linear_solve(eqn.params, ins)
            if not counted and len(subs) == 1 and prim != "pallas_call":
                self._inline(eqn, prim, subs[0][2], ins, scope, env, nodes, used, folded)
                continue

            name = self._unique(f"{scope}/{prim}" if scope else prim, used)
            if not subs and ins and all(isinstance(r, Known) for r in ins):
                vals = self._fold(eqn, ins)
                if vals is not None:
                    for v, val in zip(eqn.outvars, vals):
                        env[v] = Known(val)
                        self.fresh(v.aval)  # a spec for display only
                    folded.add(name)
                    nodes.append(Node(name, prim, DOMAIN, (), (), _plain_attrs(eqn.params)))
                    continue
            in_names = tuple(r if isinstance(r, str) else "" for r in ins)
            outs = []
            for v in eqn.outvars:
                t = self.fresh(v.aval)
                env[v] = t
                outs.append(t)
            domain = DOMAIN
            attrs = _plain_attrs(eqn.params)
            if prim == "pallas_call":
                domain, attrs = self._pallas(eqn, attrs)
            rec = mesh_record(prim, eqn.params, self.mesh)
            if rec is not None and outs:
                self.named[outs[0]] = rec
            nodes.append(Node(name, prim, domain, in_names, tuple(outs), attrs))

    def _inline(self, eqn, prim: str, body: Any, ins: list, scope: str, env: dict,
                nodes: list[Node], used: dict[str, int], folded: set[str]) -> None:
        """A call's body inlined under a name component. A ``shard_map`` body runs at the
        per-device shapes: an operand whose shape differs from the body's invar is bound to a
        new tensor of the body's shape (a weight's shard stays a weight), and so is a result
        whose global shape differs from the body's; its mesh is the one its named axes refer to."""
        comp = _CALL_SCOPE.get(prim, lambda p: "")(eqn.params)
        inner_jaxpr, consts = open_jaxpr(body)
        inner_env: dict[Any, Any] = {}
        for v, c in zip(inner_jaxpr.constvars, consts):
            inner_env[v] = self.const(c, v.aval)
        n_in = len(inner_jaxpr.invars)
        sharded = mesh_axes(eqn.params) if prim == "shard_map" else None
        # some calls pass leading consts that the body sees as its first invars
        for v, ref in zip(inner_jaxpr.invars, ins[len(ins) - n_in:] if len(ins) >= n_in else ins):
            if sharded is not None and isinstance(ref, str) and self.tensors[ref] != spec_of_aval(v.aval):
                shard = self.fresh(v.aval, "shard")
                if ref in self.constants:
                    self.constants.add(shard)
                ref = shard
            inner_env[v] = ref
        outer_mesh = self.mesh
        if sharded is not None:
            self.mesh = sharded
            if sharded not in self.meshes:
                self.meshes.append(sharded)
        try:
            self.emit(inner_jaxpr, inner_env, "/".join(s for s in (scope, comp) if s),
                      nodes, used, folded)
        finally:
            self.mesh = outer_mesh
        for outer, inner in zip(eqn.outvars, inner_jaxpr.outvars):
            ref = self.read(inner_env, inner)
            if sharded is not None and isinstance(ref, str) and self.tensors[ref] != spec_of_aval(outer.aval):
                ref = self.fresh(outer.aval)
            env[outer] = ref

    @staticmethod
    def _fold(eqn: Any, ins: list["Known"]) -> list | None:
        """Evaluate a scalar equation on known inputs (shape arithmetic, switch indices, loop
        bounds). Returns None where the outputs are not all scalars or evaluation fails."""
        if any(math.prod(getattr(v.aval, "shape", (1, 1)) or ()) != 1 for v in eqn.outvars):
            return None
        if eqn.effects:
            return None
        try:
            out = eqn.primitive.bind(*(k.value for k in ins), **eqn.params)
        except Exception:
            return None
        return list(out) if eqn.primitive.multiple_results else [out]

    def _pallas(self, eqn: Any, attrs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """A Pallas kernel is costed from its own ``cost_estimate``; without one it is uncosted
        (domain ``jax.pallas`` has no rules), never zero."""
        est = eqn.params.get("cost_estimate")
        grid = getattr(eqn.params.get("grid_mapping"), "grid", ())
        keep = {"name": eqn.params.get("name"), "grid": tuple(grid) if grid else ()}
        if est is None:
            return "jax.pallas", keep
        body = eqn.params.get("jaxpr")
        has_dot = body is not None and any(
            e.primitive.name in ("dot_general", "conv_general_dilated") for e in open_jaxpr(body)[0].eqns)
        keep.update(flops=int(getattr(est, "flops", 0) or 0),
                    transcendentals=int(getattr(est, "transcendentals", 0) or 0),
                    bytes_accessed=int(getattr(est, "bytes_accessed", 0) or 0),
                    has_dot=has_dot)
        return DOMAIN, keep

    # -- control flow

    def _control(self, eqn, prim, ins, scope, env, nodes, used) -> None:
        p = eqn.params
        name = self._unique(f"{scope}/{prim}" if scope else prim, used)
        outs = []
        for v in eqn.outvars:
            t = self.fresh(v.aval)
            env[v] = t
            outs.append(t)
        attrs = _plain_attrs(p)
        subgraphs: dict[str, Graph] = {}
        in_names = [r if isinstance(r, str) else "" for r in ins]
        if prim == "scan":
            nc = p["num_consts"]
            refs = list(ins[:nc]) + [None] * (len(ins) - nc)   # consts keep their (weight) names
            subgraphs["body"] = self.graph("body", p["jaxpr"], refs)
            n_xs = len(ins) - nc - p["num_carry"]
            # (the body's inputs of the scanned xs, the count of stacked ys, the body's results):
            # what a compiler slices and updates each trip and what the body writes
            # (``NodeCost.loop_io``); xs inputs are always fresh names
            body = subgraphs["body"]
            attrs["loop_io"] = (tuple(body.inputs[-n_xs:]) if n_xs else (), len(outs) - p["num_carry"],
                                tuple(body.outputs))
        elif prim == "while":
            cn, bn = p["cond_nconsts"], p["body_nconsts"]
            cond_consts, body_consts, init = ins[:cn], ins[cn:cn + bn], ins[cn + bn:]
            subgraphs["cond"] = self.graph("cond", p["cond_jaxpr"], list(cond_consts) + [None] * len(init))
            subgraphs["body"] = self.graph("body", p["body_jaxpr"], list(body_consts) + [None] * len(init))
            trips, how = while_trips(p, cond_consts, body_consts, init)
            attrs["trip_count"] = trips
            attrs["trip_source"] = how
        elif prim == "cond":
            branches = p["branches"]
            for i, br in enumerate(branches):
                subgraphs[f"branch{i}"] = self.graph(f"branch{i}", br, list(ins[1:]))
            attrs["num_branches"] = len(branches)
            if isinstance(ins[0], Known):   # a constant index: name it so the rule sees its value
                t = self.fresh(eqn.invars[0].aval, "index")
                self.values[t] = ins[0].value
                in_names[0] = t
        nodes.append(Node(name, prim, DOMAIN, tuple(in_names), tuple(outs), attrs, subgraphs))


# ----------------------------------------------------------------------------- dead code


def live(closed: Any) -> Any:
    """``closed`` without the equations nothing uses, as XLA removes them before it runs anything
    (the forward result ``jax.grad`` discards, a value computed and dropped).  jax's own
    dead-code elimination (``partial_eval.dce_jaxpr``, which recurses into jit, scan, while, cond
    and custom_jvp/vjp bodies by its per-primitive rules); equations with side effects
    (``io_callback``, ``debug.print``) stay.  Every input stays, used or not (inputs are named
    by position).  A jax without that function leaves the program as traced."""
    try:
        from jax._src.interpreters.partial_eval import dce_jaxpr
    except ImportError:  # a private module: a later jax may move it
        return closed
    jaxpr = closed.jaxpr
    pruned, _ = dce_jaxpr(jaxpr, [True] * len(jaxpr.outvars), instantiate=True)
    return closed.replace(jaxpr=pruned)


# ----------------------------------------------------------------------------- entry point

def load(fn: Any, args: Sequence[Any] = (), kwargs: Mapping[str, Any] | None = None, *,
         params_argnums: Any = None, path: str | None = None,
         counted: Callable[[str, str], bool]) -> tuple[Graph, dict]:
    """Trace ``fn`` and lower it to a ``Graph`` (with sub-graphs for loops and conds).

    ``counted(domain, primitive)``: whether the caller counts that primitive directly; a call
    primitive it does not count is inlined.  Returns the graph and the model info of the report
    (``format: "jaxpr"``)."""
    traced = trace(fn, args, kwargs or {}, params_argnums=params_argnums)
    traced.closed = live(traced.closed)
    low = _Lowerer(counted)
    jaxpr, consts = open_jaxpr(traced.closed)
    # a program that is one jit call reads better without the outer ``jit(f)/`` on every row
    scope_jaxpr = traced.closed
    refs: list[Any] = []
    for nm, is_w, v in zip(traced.in_names, traced.in_params, jaxpr.invars):
        low.tensors[nm] = spec_of_aval(v.aval)
        if is_w:
            low.constants.add(nm)
        refs.append(nm)
    if (not consts and len(jaxpr.eqns) == 1 and jaxpr.eqns[0].primitive.name in ("jit", "pjit")
            and list(jaxpr.eqns[0].invars) == list(jaxpr.invars)
            and list(jaxpr.eqns[0].outvars) == list(jaxpr.outvars)):
        scope_jaxpr = jaxpr.eqns[0].params["jaxpr"]
    graph = low.graph(traced.name, scope_jaxpr, refs)
    graph.inputs = tuple(traced.in_names)
    const_set = frozenset(low.constants)
    for g in low.graphs:
        g.constants = const_set   # one table of constants (names are unique program-wide)
    info = {
        "path": path or traced.name,
        "format": "jaxpr",
        "inputs": traced.inputs,
        "outputs": list(graph.outputs),
        "dims": {},
        "params_inputs": [n for n, w in zip(traced.in_names, traced.in_params) if w],
    }
    if low.meshes or low.named:   # a program over a device mesh (``jaxpr/mesh.py``)
        info["mesh"] = {"meshes": low.meshes, "named_axis_ops": low.named}
    return graph, info
