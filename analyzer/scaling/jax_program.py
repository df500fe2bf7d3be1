"""Data parallel for a JAX program: ``analyzer.scale(fn, hw, devices, args=(...),
params_argnums=...)``, the curve ``curve.scale`` returns for a function.

A JAX training step is one program: forward, backward (``jax.grad``'s transposed equations,
named ``transpose(jvp(...))``) and the update. Over N devices in data parallel (seed 002):

- each device runs the program on the per-device batch ``B/N``: the example args re-traced with
  dim 0 of every input that is not a parameter set to ``B/N``
  (``analyzer.frontends.jaxpr.batch``; ``B`` is their common dim 0, or ``batch=``), so the
  per-device compute carries the small-batch inefficiency; ``rescale="linear"`` instead holds
  the launch overheads constant and divides the rest of the step by N;
- then the gradients are all-reduced: ``bytes = sum over the leaves of the params_argnums args
  of elements x bytes per element`` (their own dtype: 4 per fp32 element; the deploy
  precision's bytes when a precision is given), through the fabric's collective model;
- with ``overlap``, the backward pass that hides the buckets is the predicted time of the nodes
  under a ``transpose(...)`` scope.

A program without a backward of its own is a forward pass: with ``train`` the training step of
``analyzer.training`` (backward and update modelled, as ``Options.train`` adds it) is what each
device runs. A program that already runs over a mesh (``shard_map``, ``pmap``, or collective
primitives such as ``psum``) is costed by ``analyzer.scaling.mesh_program`` instead: one step
at its mesh's device count. Tensor and pipeline parallel are not modelled for a JAX program (the Megatron pattern finder
reads ONNX graphs).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Sequence

from analyzer.errors import Hint, InputSpecError
from analyzer.ir.graph import PRECISION_BITS
from analyzer.scaling import mesh_program as M
from analyzer.scaling import parallel as P

# primitives of a program that already runs over several devices (collectives over mesh axes)
MESH_PRIMITIVES = frozenset({
    "psum", "psum2", "psum_invariant", "pmax", "pmin", "all_gather", "all_gather_invariant",
    "reduce_scatter", "psum_scatter", "all_to_all", "ppermute", "pbroadcast", "axis_index"})


def is_program(model: Any) -> bool:
    """True for a JAX function (any callable) or a ``ClosedJaxpr``; an ONNX model is a path,
    bytes or a ``ModelProto``, none of them callable."""
    return callable(model) or type(model).__name__ in ("ClosedJaxpr", "Jaxpr")


def is_backward(name: str) -> bool:
    """A node of the transposed (backward) program: ``jax.grad`` names it ``transpose(...)``."""
    return "transpose(" in name


def mesh_nodes(report) -> list[str]:
    """What shows the program runs over a mesh: its collective primitives (``psum``, ...), and
    ``shard_map`` / ``pmap`` where a body of one holds its nodes (each named once)."""
    found: dict[str, None] = {}
    for n in report.nodes:
        if n.op in MESH_PRIMITIVES:
            found[n.op] = None
    for n in report.nodes:
        for p in n.name.split("/"):
            if p == "shard_map" or p.startswith("pmap("):
                found[p.split("(")[0]] = None
    return list(found)


def scaled(scaling_cls, fn: Any, hw, devs: Sequence[int], fab, notes: list[str],
           settings: dict, keywords: dict, requested: Sequence[int] | None = None):
    """``curve.scale`` for a JAX function: the Report at the global batch with its
    ``scaling_cls`` (``curve.Scaling``) curve. ``notes``: the fabric's; ``settings``: scale's
    keywords (parallel, batch, train, optimizer, overlap, buckets, rescale, options, algorithm);
    ``keywords``: the rest (``args``, ``kwargs``, ``analyze_jax``'s). ``requested``: the
    device counts as asked (``devs`` has 1 added); a program over a mesh runs on its mesh's
    count only (``mesh_program``)."""
    traced = type(fn).__name__ in ("ClosedJaxpr", "Jaxpr")   # refused by ``curve``
    first = None if traced else _as_given(fn, hw, settings["options"], keywords)
    if first is not None and M.is_mesh_program(first):
        return M.scaled(scaling_cls, first, requested or devs, fab, notes, settings)
    algorithm = settings.pop("algorithm")
    base, points, setup, more = curve(fn, hw, devs, fab, **settings, first=first, **keywords)
    setup = {"devices": list(devs), "per_node": fab.per_node, "nics": fab.nics,
             "algorithm": algorithm, "overlap": settings["overlap"],
             "buckets": settings["buckets"], **setup}
    return base.with_scaling(scaling_cls(settings["parallel"], fab.inter.name, tuple(points),
                                         setup, tuple(notes + more)))


def curve(fn: Any, hw, devs: Sequence[int], fab, *, parallel: str, batch: int | None,
          train: bool, optimizer: str, overlap: bool, buckets: int, rescale: str | None,
          options, args: Sequence[Any] = (), kwargs=None, data_parallel: str = "allreduce",
          bucket_mb: float | None = None, first=None, **keywords):
    """(the Report at the global batch, points, setup, notes) of ``fn``'s data-parallel
    curve (see the module). ``keywords``: ``analyze_jax``'s own (``params_argnums``,
    ``precision``, ``runtime``, ...), or more of ``fn``'s keyword arguments. The gradient sync
    is the whole-gradient all-reduce in ``buckets`` equal parts; another ``data_parallel``
    mode (DDP's size-capped buckets ``bucket_mb``, ZeRO) reads per-layer gradients of a
    modelled backward, which a JAX step's own backward does not give: refused. ``first``: the
    program analysed at its args as given (``_as_given``), reused at that batch."""
    from analyzer.api import analyze_jax
    from analyzer.frontends.jaxpr import batch as jb

    _check_request(fn, parallel, data_parallel, bucket_mb)
    opts, params = _program_options(fn, args, options, keywords)
    if not params:
        raise InputSpecError("data parallel all-reduces the gradients of the parameters: name "
                             "the arguments that hold them with {params_argnums}",
                             hints=(Hint("params_argnums"),))
    given = jb.global_batch(args, kwargs, params)   # checked even where batch= replaces it
    big = batch or given

    def analyse(b: int, model_train: bool):
        a, k = jb.at_batch(args, kwargs, params, b)
        o = replace(opts, train=True, optimizer=optimizer) if model_train else opts
        return analyze_jax(fn, *a, hw=hw, options=o, kwargs=k, **keywords)

    base = first if first is not None and big == given else analyse(big, False)
    _refuse_mesh(base)
    model_train = train and not any(is_backward(n.name) for n in base.nodes)
    if model_train:
        base = analyse(big, True)
    step1 = _steps(base, model_train)
    elements = jb.param_elements(args, params)
    grad_bytes = _gradient_bytes(base, elements)
    mode = rescale or "analyze"
    points = []
    for n in devs:
        if n > big or big % n:
            raise InputSpecError(f"data parallel: the global batch {big} does not split evenly "
                                 f"over {n} devices (each runs batch / devices): give device "
                                 f"counts that divide {big}, or a global batch that {n} divides")
        if n == 1:
            at_n = step1
        elif mode == "analyze":
            at_n = _steps(analyse(big // n, model_train), model_train)
        else:
            at_n = {h: (o + (s - o) / n, b / n, o) for h, (s, b, o) in step1.items()}
        for h, (s, b, _) in at_n.items():
            comm, exp = P.exposed(lambda nb: fab.allreduce(nb, n), grad_bytes, b, overlap, buckets)
            points.append(P.point(h, n, s, comm, exp, 0.0, step1[h][0]))
    order = {p.hardware: i for i, p in enumerate(base.predictions)}
    points.sort(key=lambda p: (order.get(p.hardware, 0), p.devices))
    n_elem = sum(e for e, _ in elements)
    setup = {"program": "jax", "batch": big, "per_device_batch": [big // n for n in devs],
             "gradient_elements": n_elem, "gradient_bytes": grad_bytes, "rescale": mode,
             "train": train, "backward": "modelled" if model_train else "the program's own"}
    notes = [f"JAX program at the per-device batch B/N (B = {big}); the gradient all-reduce "
             f"carries the parameter args ({n_elem:,} elements, {grad_bytes:,} bytes)"]
    if model_train:
        notes.append("the program has no backward of its own (no transpose equations): "
                     f"backward and the {optimizer} update modelled")
    elif optimizer != "sgd":
        notes.append(f"the program runs its own backward and update: optimizer {optimizer!r} "
                     "not applied")
    return base, points, setup, notes


def _program_options(fn: Any, args: Sequence[Any], options, keywords: dict):
    """(the Options a JAX program is analysed with, the positions of its parameter args);
    pops ``params_argnums`` from ``keywords``."""
    from analyzer.frontends.jaxpr import batch as jb
    from analyzer.options import Options

    opts = options or Options()
    pa = keywords.pop("params_argnums", opts.params_argnums)
    params = jb.params_positions(fn, args, pa) if pa is not None else set()
    return replace(opts, params_argnums=sorted(params), train=None, optimizer=None), params


def _as_given(fn: Any, hw, options, keywords: dict):
    """The program analysed at its example args as given (``keywords``: ``args``, ``kwargs``
    and ``analyze_jax``'s own; not changed)."""
    from analyzer.api import analyze_jax

    kw = dict(keywords)
    args, kwargs = kw.pop("args", ()), kw.pop("kwargs", None)
    opts, _ = _program_options(fn, args, options, kw)
    return analyze_jax(fn, *args, hw=hw, options=opts, kwargs=kwargs, **kw)


def _check_request(fn: Any, parallel: str, data_parallel: str, bucket_mb) -> None:
    """What a JAX program cannot be scaled as: an input error that says what is supported."""
    if parallel != "data":
        what = ("the Megatron column/row pattern finder reads ONNX graphs only"
                if parallel == "tensor" else "its stage cuts are not modelled for a JAX program")
        raise InputSpecError(f"{parallel} parallel of a JAX program: {what}; a JAX program "
                             "scales as data parallel ({parallel}), or export the model to ONNX",
                             hints=(Hint("parallel", "data"),))
    if data_parallel != "allreduce" or bucket_mb is not None:
        raise InputSpecError(f"data parallel of a JAX program: the gradient all-reduce in equal "
                             f"buckets only (data_parallel 'allreduce'); got {data_parallel!r}"
                             + (f" with bucket_mb {bucket_mb}" if bucket_mb is not None else ""))
    if type(fn).__name__ in ("ClosedJaxpr", "Jaxpr"):
        raise InputSpecError("data parallel re-traces a JAX program at the per-device batch: "
                             "pass the function, not a traced jaxpr")


def _refuse_mesh(base) -> None:
    """A program over devices that ``mesh_program`` cannot cost (``mesh_nodes`` without a
    ``shard_map`` mesh the frontend read: an old jax's ``pmap`` primitive, whose body's
    collectives name an axis no mesh sizes)."""
    sharded = mesh_nodes(base)
    if sharded:
        raise InputSpecError(
            f"'{base.model.get('path')}' already runs over several devices ({', '.join(sharded)}) "
            "without a shard_map mesh opcost can read: its device count is not known. A program "
            "over a mesh is costed when written with shard_map over a Mesh or AbstractMesh; "
            "data parallel scales a one-device step that takes its parameters as arguments")


def _steps(report, model_train: bool) -> dict:
    """(profile id -> (step s, backward s, overhead s)): the training model's step, or the
    program as it runs with its ``transpose(...)`` nodes as the backward pass."""
    if model_train:
        return {s.hardware: (s.step_s, s.backward_s, s.overhead_s) for s in report.training.steps}
    return {p.hardware: (p.latency_s,
                         sum(r.time_s for r in p.nodes if is_backward(report.nodes[r.index].name)),
                         sum(r.overhead_s for r in p.nodes))
            for p in report.predictions}


def _gradient_bytes(report, elements: list[tuple[int, int]]) -> int:
    """Sum of elements x bytes per element over the parameter leaves (their own dtypes), or x
    the deploy precision's bytes where a precision was given."""
    pred = report.predictions[0] if report.predictions else None
    if pred is not None and pred.precision_explicit:
        per = PRECISION_BITS.get(pred.precision, 32) // 8
        return sum(e for e, _ in elements) * per
    return sum(e * b for e, b in elements)
