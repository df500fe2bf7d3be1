"""The per-kernel and per-run fixed costs the lowering (``lowering.lower``) adds to a kernel's
time: a launch's floor and host dispatch (``fixed_s``), what a profile calibrated on this machine
charges besides (``calibrated_terms``: fork/join, im2col, cold weights, epilogues, broadcast spans,
a loop body's resident weights, XLA's loop splits and YNNPACK dots), and the launches a runtime
inserts with no node of their own (``inserted_s``, ``add_at``).  Seconds, per launch, over
(profiles P, kernels K) arrays, numpy."""

from __future__ import annotations

import numpy as np

from analyzer.prediction import bn_stats, cudnn_conv
from analyzer.prediction.efficiency import kernel_time as eff
from analyzer.prediction.cpu import broadcast as cpu_broadcast
from analyzer.prediction.cpu import cold as cpu_cold
from analyzer.prediction.cpu import epilogue as cpu_epilogue
from analyzer.prediction.cpu import loop_launch as cpu_loop_launch
from analyzer.prediction.cpu import loop_resident as cpu_loop
from analyzer.prediction.cpu import loop_work as cpu_loop_work
from analyzer.prediction.cpu import op_rates as cpu_op_rates
from analyzer.prediction.cpu import xla_partition as cpu_partition
from analyzer.prediction.cpu import ynn_dot as cpu_ynn
from analyzer.prediction.hardware import clock_hz, host_dispatch

# the calibrated terms' state carried over the profiles of one lowering: (the bytes a run writes
# besides its weights, the loop-resident arrays, the XLA split arrays, the YNNPACK dot arrays, the
# in-loop vector work arrays, the per-output arrays)
NO_CALIBRATED = (None, None, None, None, None, None)


def calibrated_terms(state, p: int, prof, runtime, once: float, fixed, graph, hw_p: dict, consts: dict,
                     note: list[str]):
    """What a profile calibrated with the runtime predicted adds, in place to ``fixed[p]``: its
    measured per-run overhead (returned, seconds, with ``once``: a loop program's once-a-run
    launches), ``add_calibrated_fixed``'s terms, a CPU loop body's resident weights, XLA's split
    of loop fusions over the threads, its loop bodies' vector work and its YNNPACK dots.  ``graph``: (nodes, fusion nodes, plan,
    feats, kernel rows' class arrays, matrix view, weight bytes, runs); ``state``: ``NO_CALIBRATED``
    or the last profile's; returns (run overhead, the new state)."""
    nodes, fnodes, plan, feats, arrays, view, wbytes, runs = graph
    act, resident, split, ynn, work, outs = state
    consts_p = {n: consts[n][p] for n in consts}
    run_overhead = float(prof.calibration.get("run_overhead_us", 0.0)) * 1e-6 + once
    act = float(sum(n.cost.activation_bytes_written for n in nodes)) if act is None else act  # cpu_cold
    add_calibrated_fixed(fixed[p], prof, nodes, plan, feats, arrays, view, wbytes, hw_p, consts_p, act, note)
    outs = per_output(outs, p, fixed, feats["op_class"], arrays, view)
    resident = loop_resident(resident, p, prof, nodes, plan, feats, wbytes, runs, hw_p, consts, fixed, note)
    split = cpu_partition.add_fixed(split, p, fixed, prof, nodes, fnodes, plan, feats, runs, hw_p, consts_p, note)
    work = cpu_loop_work.add_fixed(work, p, fixed, prof, runtime.fusion, nodes, plan, feats, runs, hw_p, consts_p,
                                   None if resident is None else resident[1][p], None if split is None else split[1][p],
                                   note)
    ynn = cpu_ynn.add_fixed(ynn, p, fixed, prof, True, runtime.fusion, nodes, plan, feats, arrays, runs, note)
    return run_overhead, (act, resident, split, ynn, work, outs)


def per_output(outs, p: int, fixed, cls, arrays, view):
    """Add to ``fixed[p]`` ([P, K], in place) each kernel's class's cost per output element
    (``out_s`` x ``m x n x max(batch, 1)`` of its view: ``efficiency.class_fixed_s``; XLA's CPU
    depthwise convolution); returns ``outs`` ((outputs [K], seconds [P, K]), created on the first
    profile whose classes have one) with row ``p`` set; ``outs`` itself where none has one."""
    if "out_s" not in arrays:
        return outs
    rate = np.take(np.asarray(arrays["out_s"], np.float64), cls)
    if not (rate > 0).any():
        return outs
    n_out = np.asarray(view[0], np.float64) * np.asarray(view[1], np.float64) * np.maximum(np.asarray(view[3], np.float64), 1.0)
    if outs is None:
        outs = (n_out, np.zeros_like(fixed))
    outs[1][p] = rate * n_out
    fixed[p] += outs[1][p]
    return outs


def fixed_s(floor_arr, names, *, prof, runtime, calibrated: bool, prov: str, launch: float,
             note: list[str], host_out: list | None = None):
    """Per-launch fixed seconds of kernels of the classes ``names`` with fitted floors
    ``floor_arr``: a calibrated profile's floors were fitted net of the measured per-node
    dispatch (calibrate), which is added back; otherwise max(floor, launch figure) (the floor
    alone for architecture constants) plus the runtime's host dispatch.  ``host_out``: the host
    dispatch part (seconds per launch) is appended to it."""
    if calibrated:
        h = launch if runtime.host_dispatch else 0.0
        f = floor_arr + h
    else:
        f = floor_arr if prov == "architecture constants" else np.maximum(floor_arr, launch)
        h = host_dispatch(prof, runtime, names, launch, note) if runtime.host_dispatch else 0.0
        f = f + h
    if host_out is not None:
        host_out.append(h)
    return f


def add_calibrated_fixed(fixed_p, prof, nodes, plan, feats, arrays, view, wbytes, hw_p: dict,
                          consts_p: dict, act: float, note: list[str]) -> None:
    """Add to ``fixed_p`` (one profile's per-kernel fixed seconds, in place) what a calibrated
    profile charges: a multi-threaded calibration's fork/join of kernels split over the threads,
    a batched kernel's cost per piece, a convolution's im2col copy (a strided one's more), a
    recurrent layer's chain of recurrent products; weights streamed from DRAM each run where
    they overflow the last-level cache (``act``: the bytes a run writes besides its weights);
    fused epilogues; broadcast spans; Div's and Clip's own rates (``cpu_op_rates``)."""
    cal = prof.calibration
    cls = feats["op_class"]
    fixed_p += eff.class_fixed_s(np, feats["bytes"], cls, arrays, view[0], view[2], view[3], view[4], view[5])
    if cpu_cold.applies(cal, wbytes, act):
        fixed_p += cpu_cold.cold_weight_s(cal, feats, wbytes, hw_p, consts_p, act)
        share = cpu_cold.cold_share(cal, float(np.sum(wbytes)), act)
        note.append(f"{share:.0%} of the weights overflow {prof.id}'s last-level cache: "
                    "read from DRAM each run")
    fixed_p += cpu_epilogue.epilogue_s(cal, nodes, plan.members, cls)
    fixed_p += cpu_broadcast.span_s(cal, nodes, plan.members)
    fixed_p += cpu_op_rates.op_s(cal, nodes, plan.members, feats, hw_p, consts_p)


def loop_resident(resident, p: int, prof, nodes, plan, feats, wbytes, runs, hw_p: dict, consts: dict,
                   fixed, note: list[str]):
    """Add to ``fixed[p]`` ([P, K], in place) what a CPU loop body's cached weights save on the
    trips after the first (``cpu.loop_resident``; ``consts``: the lowering's per-profile
    constants); returns ``resident`` ((bytes, seconds) arrays [P, K], created on the first
    profile with any) with profile ``p``'s row filled."""
    if prof.kind != "cpu":
        return resident
    in_loop = [nodes[m[0]].level != "" for m in plan.members]
    w = cpu_loop.resident_bytes(prof.calibration, in_loop, runs, wbytes)
    if not (w > 0).any():
        return resident
    consts_p = {n: consts[n][p] for n in consts}
    delta = cpu_loop.resident_s(prof.calibration, in_loop, runs, feats, wbytes, hw_p, consts_p)
    fixed[p] += delta
    note.append(cpu_loop.note(prof.calibration, prof.id, w, delta, runs))
    if resident is None:
        resident = (np.zeros_like(fixed), np.zeros_like(fixed))
    resident[0][p], resident[1][p] = w, delta
    return resident


def resident_fields(resident, split, ynn, work, outs=None) -> dict:
    """``Lowered``'s loop-resident fields of ``loop_resident``'s arrays, its split fields of
    ``cpu_partition.add_fixed``'s, its YNNPACK dots' of ``cpu_ynn.add_fixed``'s and its in-loop vector
    work's of ``cpu_loop_work.add_fixed``'s (none: left at None)."""
    return {**({} if resident is None else {"resident_bytes": resident[0], "resident": resident[1]}),
            **cpu_partition.fields(split), **({} if ynn is None else {"ynn_dot": ynn}),
            **({} if work is None else {"loop_work": work}), **({} if outs is None else {"per_output": outs})}


def add_at(extra_cls, fixed_p, host_p, added) -> None:
    """Charge each launch the runtime inserted to its kernel, in place: its fixed seconds
    (``added[0]``: its class's fixed cost, a copy's bytes) to ``fixed_p``, its dispatch
    (``added[1]``) to ``host_p`` too: the host issues it (the eager stream's host time)."""
    ks = np.asarray([k for k, _ in extra_cls], np.int64)
    np.add.at(fixed_p, ks, added[0])
    np.add.at(host_p, ks, added[1])


def extra_loops_s(plan, units: float, cycle_s: float):
    """[E] seconds of each inserted launch's per-channel block loop (``plan.extra_loops``:
    ``bn_stats.loop_s``), in ``extra_ops``' flattened order; None where the plan has none or the
    profile no term (``cycle_s`` 0: ``bn_stats.profile_term``)."""
    if not plan.extra_loops or not cycle_s:
        return None
    lp = [(plan.extra_loops[k][j] if k < len(plan.extra_loops) and j < len(plan.extra_loops[k]) else (0, 0))
          for k, ops in enumerate(plan.extra_ops) for j in range(len(ops))]
    blocks = np.asarray([b for b, _ in lp], np.float64)
    steps = np.asarray([s for _, s in lp], np.float64)
    return bn_stats.loop_s(np, blocks, steps, float(units), cycle_s)


def extra_loop_row(extra_loop, p: int, P: int, plan, units: float, prof):
    """(``extra_loop``, row ``p`` of it) with profile ``p``'s ``extra_loops_s`` (a training
    BatchNorm's statistics loop, ``bn_stats``) written in: ``extra_loop`` ([P, E] or None) made
    where the first row is; (``extra_loop``, None) where the plan or the profile has none."""
    row = extra_loops_s(plan, units, bn_stats.profile_term(prof, clock_hz(prof)))
    if row is None:
        return extra_loop, None
    extra_loop = np.zeros((P, len(row))) if extra_loop is None else extra_loop
    extra_loop[p] = row
    return extra_loop, row


def extra_launch_s(extra_cls, plan, arrays, fixed_of, hw_p: dict, consts_p: dict, loop=None):
    """Seconds of each launch the runtime inserted with no original node (``extra_cls``: (kernel,
    class code) pairs): its class's fixed cost, and a layout reorder (or an eager copy) also
    streams its tensor at its class's rate; a launch with a serial loop (``loop``: ``extra_loops_s``)
    takes the loop's seconds where they are longer than all that; and the host dispatch part of
    that fixed cost."""
    codes = np.asarray([c for _, c in extra_cls], np.int32)
    said_host: list = []
    add = fixed_of(np.asarray(arrays["floor_s"])[codes], [eff.OP_CLASSES[c] for c in codes], host_out=said_host)
    host = np.broadcast_to(np.asarray(said_host[0], np.float64), codes.shape)
    inside = np.asarray([cudnn_conv.inside(op) for ops in plan.extra_ops for op in ops], bool)
    add, host = add - np.where(inside, host, 0.0), np.where(inside, 0.0, host)   # (no dispatch of its own)
    if plan.extra_bytes:
        moved = np.asarray([b for bs in plan.extra_bytes for b in bs], np.float64)
        t = eff.kernel_time(np, {"op_class": codes, "mac_flops": np.zeros_like(moved), "bytes": moved},
                            {**hw_p, "matrix_peak": 1.0, "vector_peak": 1.0}, consts_p)
        add = add + np.where(moved > 0, np.maximum(t["compute_s"], t["memory_s"]), 0.0)
    if loop is not None:   # the serial loop holds its own launch: the longer of the two
        add = np.maximum(add, loop)
    return add, host


def inserted_s(extra_cls, nodes, plan, arrays, fixed_of, hw_p, consts_p, loop_s, prog_s, bn_loop=None):
    """``extra_launch_s`` of the inserted launches, those of a loop body (slices, updates,
    counter) at the calibrated in-loop launch cost ``loop_s``, the others (a loop's once-a-run
    launches) at the program launch cost ``prog_s`` (None: their class floors); ``bn_loop``:
    ``extra_loops_s``."""
    added = extra_launch_s(extra_cls, plan, arrays, fixed_of, hw_p, consts_p, bn_loop)
    loop = cpu_loop_launch.in_loop(nodes, plan.members)[[k for k, _ in extra_cls]]
    floors_e = np.asarray(arrays["floor_s"])[[c for _, c in extra_cls]]
    return cpu_loop_launch.inserted_fixed(added[0], floors_e, loop, loop_s, prog_s), added[1]
