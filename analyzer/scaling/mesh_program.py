"""One step of a JAX program that already runs over a device mesh (``shard_map``):
``analyzer.scale(fn, hw, [N], args=...)`` with N the mesh's size.

The program fixes its device count: N = the product of its mesh's axis sizes (the
``shard_map`` ``mesh`` param, ``analyzer.frontends.jaxpr.mesh``); any other count is an input
error. Per profile, one device's step is

    step = compute + sum over the collectives c of runs_c x t_c          (serial: no overlap)

- ``compute``: the program's predicted latency (every node at its per-device shapes: a
  ``shard_map`` body as each device runs it) less the rows of its collective nodes, which
  the per-device prediction prices as copy kernels;
- ``t_c``: the collectives model (``analyzer.scaling.collectives``, the fabric the caller
  gives) of each collective primitive in the program, ``runs_c`` times (a loop body's trips):

    psum, psum_invariant, pmax, pmin   all-reduce       bytes: the operands per device
    all_gather(_invariant)             all-gather       bytes: the gathered output per device
    reduce_scatter (psum_scatter)      reduce-scatter   bytes: the operand per device
    all_to_all                         all-to-all       bytes: the operand per device
    ppermute                           point-to-point   bytes: the operand; crosses nodes when
                                                        any of its pairs does

  over the group its named axes span: an axis of size k is a group of k devices; several axes,
  the product. Devices are numbered row-major over the mesh's axes (the last fastest) and fill
  nodes of ``per_node`` in that order; a group's devices per node are those of device 0's
  group in node 0 (``group_fabric``), each device with a full node's share of the network.

The collectives run one after another with the compute (XLA's asynchronous collectives may
hide some of them behind independent compute; not modelled). Nodes outside any ``shard_map``
body are counted at their global shapes, as one device would run them. The program is costed as
traced: its own backward where it has one; no backward or update is added. There is no one-device
run of a mesh program, so its points have no speed-up or efficiency (None).

What cannot be costed is an input error naming it: asynchronous collective pairs
(``*_start`` / ``*_done``), ``ragged_all_to_all`` (sizes from the data), ``pbroadcast``,
``psend`` / ``precv``, ``axis_index_groups``, an axis name that is not one of the mesh's, and
meshes of different sizes in one program.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace

from analyzer.errors import Hint, InputSpecError
from analyzer.scaling import collectives as C
from analyzer.scaling import fabric as FB
from analyzer.scaling import parallel as P

# primitive -> the collective it runs (``analyzer.scaling.collectives``)
KINDS = {"psum": "all_reduce", "psum2": "all_reduce", "psum_invariant": "all_reduce",
         "pmax": "all_reduce", "pmin": "all_reduce", "all_gather": "all_gather",
         "all_gather_invariant": "all_gather", "reduce_scatter": "reduce_scatter",
         "all_to_all": "all_to_all", "ppermute": "p2p"}
# equations over named axes that move no data between devices (casts, the device's own index)
FREE = frozenset({"pvary", "pcast", "axis_index"})


@dataclass(frozen=True)
class MeshCollective:
    """One collective node: its bytes per device, group and time (seconds, per run)."""

    name: str
    op: str
    kind: str
    nbytes: int
    group: int
    axes: tuple[str, ...]
    runs: int
    per_node: int        # group devices in one node (device 0's)
    comm: C.Comm

    def to_dict(self) -> dict:
        return {"name": self.name, "op": self.op, "kind": self.kind, "bytes": self.nbytes,
                "group": self.group, "axes": list(self.axes), "runs": self.runs,
                "group_per_node": self.per_node, "time_s": self.comm.total * self.runs,
                "bandwidth_s": self.comm.bandwidth_s * self.runs,
                "latency_s": self.comm.latency_s * self.runs}


def is_mesh_program(report) -> bool:
    """The frontend found a ``shard_map`` mesh or an equation over named axes."""
    return bool(report.model.get("mesh"))


def mesh_of(report) -> dict[str, int]:
    """The program's mesh (axis -> size); meshes of one size but other names: the first."""
    meshes = (report.model.get("mesh") or {}).get("meshes") or []
    if not meshes:
        raise InputSpecError(f"'{report.model.get('path')}' runs collectives over named axes "
                             "outside a shard_map (an old jax's pmap): their devices are not "
                             "known; write it with shard_map over a Mesh or AbstractMesh")
    sizes = {math.prod(m.values()) for m in meshes}
    if len(sizes) > 1:
        raise InputSpecError(f"'{report.model.get('path')}' runs shard_maps over meshes of "
                             f"different sizes ({_names(meshes)}): one step runs on one device "
                             "count")
    return meshes[0]


def _names(meshes) -> str:
    return ", ".join(" x ".join(f"{a}={k}" for a, k in m.items()) for m in meshes)


def check_devices(report, requested) -> int:
    """The mesh's size N; ``requested`` (the device counts asked for) must be exactly [N]."""
    mesh = mesh_of(report)
    n = math.prod(mesh.values())
    asked = sorted({int(d) for d in requested})
    if asked != [n]:
        raise InputSpecError(
            f"'{report.model.get('path')}' runs over a mesh of {n} devices ({_names([mesh])}): "
            f"the only device count it runs on is {n}; got {', '.join(map(str, asked))}. "
            "Give {devices}", hints=(Hint("devices", [n]),))
    return n


def _members(mesh: dict[str, int], axes) -> tuple[list[int], list[int]]:
    """(offsets of a group's members, row-major over ``axes`` in their order; the base devices,
    one per group) for devices numbered row-major over the mesh's axes."""
    names = list(mesh)
    stride = {a: math.prod(mesh[b] for b in names[i + 1:]) for i, a in enumerate(names)}
    offsets = [sum(c * stride[a] for c, a in zip(cs, axes))
               for cs in itertools.product(*(range(mesh[a]) for a in axes))]
    rest = [a for a in names if a not in axes]
    bases = [sum(c * stride[a] for c, a in zip(cs, rest))
             for cs in itertools.product(*(range(mesh[a]) for a in rest))]
    return offsets, bases


def group_fabric(fab: FB.Fabric, offsets: list[int]) -> tuple[FB.Fabric, int]:
    """(the fabric a group of devices at ``offsets`` from device 0 runs on, its devices per
    node): ``g`` = the members in device 0's node; each device's network share
    ``inter.bw * min(nics, G) / G`` of a full node of ``G``."""
    G = fab.per_node
    size = len(offsets)
    if size <= 1 or G == 1:
        return fab, 1 if G == 1 else size
    g = sum(1 for r in offsets if r < G)
    share = fab.inter.bw * min(fab.nics, G) / G
    return replace(fab, inter=replace(fab.inter, bw=share), intra=fab.intra if g > 1 else None,
                   per_node=g, nics=g), g


def _crosses(fab: FB.Fabric, perm, offsets, bases) -> bool:
    """Any pair of ``perm`` (indices into ``offsets``) in two nodes, for any base device."""
    G = fab.per_node
    if G == 1:
        return True
    return any((b + offsets[s]) // G != (b + offsets[d]) // G
               for b in bases for s, d in perm if s != d)


def _bytes(specs) -> int:
    """Bytes of tensors (elements x their dtype's bytes, exact ints)."""
    return sum(s.nbytes() for s in specs if s is not None)


def _refuse(report, node, why: str):
    raise InputSpecError(f"'{report.model.get('path')}': {node.name} ({node.op}) {why}; a "
                         "program over a mesh is costed with psum/pmax/pmin, all_gather, "
                         "psum_scatter, all_to_all and ppermute over its mesh axes")


def collectives(report, fab: FB.Fabric) -> list[MeshCollective]:
    """Each collective node of the program, priced on ``fab`` (see the module)."""
    mesh = mesh_of(report)
    named = report.model["mesh"].get("named_axis_ops") or {}
    out = []
    for node in report.nodes:
        rec = named.get(node.out_names[0]) if node.out_names else None
        if node.op in FREE:
            continue
        if rec is None:
            if node.op in KINDS or node.op.endswith(("_start", "_done")) or node.op in (
                    "ragged_all_to_all", "pbroadcast", "psend", "precv"):
                _refuse(report, node, "is a collective whose named axes were not read")
            continue
        if node.op not in KINDS:
            _refuse(report, node, "is not modelled" + (
                " (an asynchronous collective pair)" if node.op.endswith(("_start", "_done"))
                else ""))
        if "axis_index_groups" in rec:
            _refuse(report, node, "runs over axis_index_groups, which are not modelled")
        axes = tuple(rec["axes"])
        if any(a not in mesh for a in axes):
            _refuse(report, node, f"runs over axes {', '.join(axes)}, not all of the mesh's "
                    f"({', '.join(mesh)})")
        kind = KINDS[node.op]
        offsets, bases = _members(mesh, axes)
        gfab, g = group_fabric(fab, offsets)
        group = len(offsets)
        if kind == "p2p":
            nbytes = _bytes(node.in_specs)
            perm = rec.get("perm") or []
            comm = fab.p2p(nbytes, _crosses(fab, perm, offsets, bases)) if perm else C.ZERO
        else:
            nbytes = _bytes(node.out_specs if kind == "all_gather" else node.in_specs)
            try:
                comm = (gfab.all_to_all(nbytes, group) if kind == "all_to_all"
                        else gfab.collective(kind, nbytes, group))
            except ValueError as e:
                _refuse(report, node, f"runs over a group the fabric cannot place ({e})")
        out.append(MeshCollective(node.name, node.op, kind, nbytes, group, axes,
                                  node.runs, g, comm))
    return out


def points(report, fab: FB.Fabric, n: int) -> tuple[list[P.Point], list[MeshCollective]]:
    """One point per profile of ``report``: per-device compute + its collectives, serial."""
    colls = collectives(report, fab)
    names = {c.name for c in colls}
    by_kind: dict[str, float] = {}
    total = C.ZERO
    for c in colls:
        by_kind[c.kind] = by_kind.get(c.kind, 0.0) + c.comm.total * c.runs
        total = total + C.Comm(c.comm.bandwidth_s * c.runs, c.comm.latency_s * c.runs)
    pts = []
    for pred in report.predictions:
        coll_rows = sum(r.time_s for r in pred.nodes if report.nodes[r.index].name in names)
        compute = pred.latency_s - coll_rows
        pts.append(P.Point(hardware=pred.hardware, devices=n, step_s=compute + total.total,
                           compute_s=compute, communication_s=total.total,
                           exposed_communication_s=total.total, bubble_s=0.0, speedup=None,
                           efficiency=None, serial_fraction=None, bandwidth_s=total.bandwidth_s,
                           latency_s=total.latency_s, collective_calls=sum(c.runs for c in colls),
                           comm_kinds={k: by_kind.get(k, 0.0) for k in P.COMM_KINDS}))
    return pts, colls


def check_request(settings: dict) -> None:
    """What a mesh program's step does not take: an input error naming it."""
    bad = [k for k, v in (("parallel", settings["parallel"] != "data"),
                          ("batch", settings["batch"] is not None),
                          ("overlap", settings["overlap"]), ("buckets", settings["buckets"] != 1),
                          ("rescale", settings["rescale"] is not None),
                          ("data_parallel", settings.get("data_parallel", "allreduce") != "allreduce"),
                          ("bucket_mb", settings.get("bucket_mb") is not None)) if v]
    if bad:
        raise InputSpecError(f"a program over a device mesh runs as its shard_map splits it: "
                             f"{', '.join(bad)} do not apply (its collectives are priced as the "
                             "program runs them)")


def scaled(scaling_cls, base, requested, fab: FB.Fabric, notes: list[str], settings: dict):
    """``base`` (the program analysed as given) carrying its one-step ``scaling_cls`` point
    per profile at the mesh's device count (see the module)."""
    check_request(settings)
    n = check_devices(base, requested)
    fab.split(n)
    pts, colls = points(base, fab, n)
    mesh = mesh_of(base)
    outside = sum(1 for x in base.nodes if "shard_map" not in x.name.split("/")
                  and x.cost.flops and x.op not in KINDS)
    setup = {"devices": [n], "per_node": fab.per_node, "nics": fab.nics,
             "algorithm": settings["algorithm"], "overlap": False, "program": "jax mesh",
             "mesh": dict(mesh), "collectives": [c.to_dict() for c in colls],
             "train": False, "backward": "the program's own"}
    more = [f"a program over a mesh of {n} devices ({_names([mesh])}): one device's step = its "
            "kernels at the per-device shapes + each collective through the collectives model, "
            "one after another (no overlap); no one-device run, so no speed-up",
            "groups: an axis of size k is k devices; devices row-major over the mesh's axes, "
            "filling nodes in that order",
            "the program as traced: its own backward where it has one, none added"]
    if outside:
        more.append(f"{outside} node(s) outside any shard_map body counted at their global "
                    "shapes, as one device would run them")
    return base.with_scaling(scaling_cls("mesh", fab.inter.name, tuple(pts), setup,
                                         tuple(notes + more)))
