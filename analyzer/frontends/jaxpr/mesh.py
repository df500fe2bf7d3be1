"""The device mesh of a JAX program and its equations over named mesh axes (``shard_map``).

A ``shard_map`` body runs on every device of its mesh at the per-device shapes (its jaxpr's own
avals). The lowerer keeps, for the scaling stage:

- each mesh: axis name -> size, in the mesh's order (``shard_map``'s ``mesh`` param, a ``Mesh``
  or an ``AbstractMesh``; devices are numbered row-major over the axes, the last one fastest);
- each equation over named axes (``psum``'s ``axes``, ``all_gather``'s ``axis_name``, ...),
  keyed by its first output tensor: the primitive, the axis names, their sizes in the enclosing
  mesh (None for a name that is not one of its axes), ``axis_index_groups`` where given and
  ``ppermute``'s ``perm`` (pairs of indices along the axes, linearised row-major in the order the
  names are given).

The frontend records what the program says; which primitive communicates how is the scaling
stage's (``analyzer.scaling.mesh_program``). ``jax`` is not imported here.
"""

from __future__ import annotations

from typing import Any, Mapping


def mesh_axes(params: Mapping[str, Any]) -> dict[str, int] | None:
    """``{axis: size}`` of an equation's ``mesh`` param (None where it has none)."""
    shape = getattr(params.get("mesh"), "shape", None)
    if shape is None:
        return None
    return {str(k): int(v) for k, v in dict(shape).items()}


def named_axes(params: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The mesh axis names an equation runs over: its ``axis_name`` or ``axes`` param when every
    entry is a name (a reduction's ``axes`` are positions: None)."""
    for key in ("axis_name", "axes"):
        if key not in params:
            continue
        v = params[key]
        vs = tuple(v) if isinstance(v, (tuple, list)) else (v,)
        if vs and all(isinstance(x, str) for x in vs):
            return vs
    return None


def record(prim: str, params: Mapping[str, Any], mesh: Mapping[str, int] | None) -> dict | None:
    """What the scaling stage reads of an equation over named axes (None for any other)."""
    axes = named_axes(params)
    if axes is None:
        return None
    rec: dict[str, Any] = {"op": prim, "axes": list(axes),
                           "sizes": [(mesh or {}).get(a) for a in axes]}
    groups = params.get("axis_index_groups")
    if groups is not None:
        rec["axis_index_groups"] = [[int(i) for i in g] for g in groups]
    if "perm" in params:
        rec["perm"] = [[int(s), int(d)] for s, d in params["perm"]]
    return rec
