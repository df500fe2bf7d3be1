"""``--explain LAYER``: one layer's arithmetic on every profile, as text (formatting only: the
terms come from ``Prediction.explain``, the kernel-time model's own numbers)."""

from __future__ import annotations

from typing import NamedTuple

from analyzer.prediction import cudnn_conv
from analyzer.render import safe
from analyzer.render.headline import assumed, human_time
from analyzer.render.explain_terms import (index_loop_lines, kloop_lines, loop_work_lines, per_output_lines, placed_lines,
                                            reread_lines, row_lines, stem_lines, with_rows, ynn_lines)
from analyzer.render.explain_train import training_lines
from analyzer.render.pieces import human
from analyzer.render.layout import wrap


class Vocab(NamedTuple):
    """A profile's own words for the terms: ``unit`` its compute units (hardware_db's
    ``unit_name``: SM, CU, TensorCore, core), ``cache`` the cache the cache-share term uses (the
    profile's ``onchip_mb``: an NVIDIA GPU's L2, another GPU's or a CPU's last-level cache, an
    accelerator's on-chip memory), ``gpu``
    whether every GPU factor is shown (elsewhere a factor is shown only where it acts: not 1),
    ``memory`` the memory the bandwidth term streams from: DRAM (HBM, GDDR, LPDDR, a CPU's), or
    the Edge TPU's on-chip SRAM (the ``edgetpu`` runtime charges activations there; its weights
    beyond the SRAM cross the host link in the fixed term)."""

    unit: str
    cache: str
    gpu: bool
    memory: str = "DRAM"

    def units(self, n: float) -> str:
        if not n:
            return f"{self.unit} count unknown"
        return f"{n:g} {self.unit}{'' if n == 1 else 's'}"


def vocab(p) -> Vocab:
    """The words of prediction ``p``'s profile (a GPU's when the prediction names none)."""
    prof = getattr(getattr(p, "target", None), "profile", None)
    kind = getattr(prof, "kind", None) or "gpu"
    unit = getattr(prof, "unit_name", None) or ("SM" if kind == "gpu" else "unit")
    # the cache is the profile's onchip_mb: an NVIDIA GPU's L2; an AMD GPU's L2 or Infinity Cache
    nvidia = (getattr(prof, "vendor", None) or "NVIDIA") == "NVIDIA"
    cache = ("L2" if nvidia else "last-level cache") if kind == "gpu" else \
        "last-level cache" if kind == "cpu" else "on-chip memory"
    memory = "on-chip SRAM" if getattr(p, "runtime", None) == "edgetpu" else "DRAM"
    return Vocab(safe.text(unit), cache, kind == "gpu", memory)


def _factor(v: Vocab, text: str, value: float) -> str:
    """`` x TEXT`` where the factor applies: always on a GPU, elsewhere where it is not 1."""
    return f" x {text}" if v.gpu or value != 1.0 else ""


def _compute_lines(e, v: Vocab) -> list[str]:
    """The factors of the compute term (a part with no work is left out; off a GPU, a factor of
    1 too): with the memory and fixed lines, the printed terms give the kernel's time."""
    out = []
    if e.mac_flops:
        algo = (f" x multiplies {e.algo:.3g} of direct (Winograd/FFT)" if e.algo != 1.0 else "")
        clock = (f" x boost window {e.clock:.3g} (of the sustained-clock time)" if e.clock != 1.0 else "")
        waves = _factor(v, f"waves {e.wave:.3g} (split-K {e.split_k:g}, {v.units(e.units)})",
                        e.wave if e.split_k == 1.0 else 0.0)
        out += kloop_lines(e)
        out.append(f"    {'tiles' if e.kloop_s else 'matrix'} = MAC {human(e.mac_flops)}"
                   f"{_factor(v, f'padding {e.pad:.3g}', e.pad)}{algo}{waves}"
                   f"{_factor(v, f'narrow {e.narrow:.3g}', e.narrow)}{clock} / (matrix peak "
                   f"{human(e.matrix_peak, 'FLOP/s')} x e_compute {e.e_compute:.3g})")
        out += stem_lines(e)
    if e.vector_flops or e.transcendental_flops:
        out.append(f"    vector = (vector + transcendentals x {e.trans_weight:g}) / (vector peak "
                   f"{human(e.vector_peak, 'FLOP/s')} x e_compute {e.e_compute:.3g})")
    if e.dw_rate:
        out.append(f"    depthwise: matrix + vector = output elements {human(e.dw_outputs)} / rate "
                   f"{human(e.dw_rate, '/s')} = {human_time(e.dw_outputs / e.dw_rate)} per launch (the runtime's "
                   "depthwise output rate, whatever the window: the peaks above are set to give it)")
    return out






def _per_call_lines(p) -> list[str]:
    """The per-call term of an accelerator runtime that times a whole call (xla on a TPU, qnn:
    ``Prediction.run_overhead_s``), in no layer's row: the layers' sum plus it is the latency."""
    kind = getattr(getattr(getattr(p, "target", None), "profile", None), "kind", "")
    if not p.run_overhead_s or kind == "cpu":
        return []
    return [f"  per call {human_time(p.run_overhead_s):>9}  once per call, in no layer: latency "
            f"{human_time(p.latency_s)} = layers {human_time(p.latency_s - p.run_overhead_s)} + per call"]










def _gather_dep(e) -> str:
    """PyTorch's gather on Hopper (``KernelTerms.gather_dep_s`` / ``gather_rate``,
    ``prediction.gather_latency``): the id load's round trip, as a term of the memory line."""
    return f" + id load before the row {human_time(e.gather_dep_s)}" if e.gather_dep_s else ""


def _gather_lines(e) -> list[str]:
    """What the gather's two factors are (``prediction.gather_latency``), where they act."""
    if not e.gather_dep_s and e.gather_rate == 1.0:
        return []
    rate = (f"; the vectorized gather streams at 1 / {e.gather_rate:.4g} of a copy's rate (a thread's 16-B "
            "row load waits on its id)" if e.gather_rate != 1.0 else "")
    return [f"    gather: the id load ends before the row load issues: one dependent load's latency "
            f"{human_time(e.gather_dep_s)} (the L2 state's){rate}"]


def _onchip_lines(e) -> list[str]:
    """An NPU runtime's on-chip activations (``KernelTerms.onchip``): which of the kernel's bytes
    reach DRAM (bytes less those kept on chip) and why."""
    if not e.onchip:
        return []
    act = max(e.bytes - e.weight_bytes, 0.0)
    if getattr(e, "placed", None) is not None:
        why = f"on the {safe.text(e.placed.unit)}: none kept in the NPU's on-chip memory"
    elif not e.onchip_budget:
        why = "no NPU on-chip memory stated (npu_onchip_mb): all from DRAM"
    elif act <= e.onchip_budget:
        why = (f"<= the NPU's on-chip {human(e.onchip_budget, 'B')} (npu_onchip_mb): kept on chip, only the "
               "weights reach DRAM")
    else:
        why = (f"> the NPU's on-chip {human(e.onchip_budget, 'B')} (npu_onchip_mb): that much kept on chip, "
               f"the rest {human(act - e.onchip_budget, 'B')} and the weights from DRAM")
    return [f"    bytes to DRAM {human(e.dram_bytes, 'B')} = bytes {human(e.bytes, 'B')} - kept on chip "
            f"{human(e.onchip_bytes, 'B')}; weights {human(e.weight_bytes, 'B')} (always from DRAM), "
            f"activations {human(act, 'B')} {why}"]


def _inserted_lines(e) -> list[str]:
    """The launches the runtime inserted into the kernel (``KernelTerms.inserted``), one line each:
    inside the fixed line's time."""
    out = []
    for op, nbytes, *loop in e.inserted:
        inside = cudnn_conv.inside(op)
        rate = f" + its {human(nbytes, 'B')} at its class's rate"
        if loop:   # (``bn_stats``: one block per channel walking N x H x W serially)
            rate = (f" + max(its {human(nbytes, 'B')} at its class's rate, its serial loop "
                    f"{human_time(loop[0])}: waves x (wave + steps x step) cycles / clock, bn_stats)")
        out.append(f"    of which inserted launch {safe.text(op)}: max(class floor, launch figure) "
                   + ("without a dispatch (inside the library call)" if inside else "+ its dispatch") + rate)
    return out






def _host_lines(p, x, h) -> list[str]:
    """A host-only op's lines (``Prediction.host_step``): its host time and what of it the
    prediction shows."""
    runs = f"{h.runs:g} run{'s' if h.runs != 1 else ''}"
    shown = ("exposed on the eager stream: the part of its host time the device waited for "
             "(the rest overlaps earlier kernels)" if h.stream else "added to the per-op sum")
    return [f"  launches no kernel, but runs on the host: a host-only op (eager PyTorch runs it "
            f"as an aten op: Python, binding, dispatcher), {runs}; counted in host-only ops, "
            f"not in launches",
            f"  host     {human_time(h.host_s):>9}  = runs x ratio {h.ratio:g} x dispatch "
            f"{human_time(h.dispatch_s)} (the runtime's figure of a small elementwise op)",
            f"  layer    {human_time(x.time_s):>9}  {100 * x.share:.2f}% of "
            f"{human_time(p.latency_s)}: {shown}; overhead-bound",
            f"  ratio: {safe.text(h.source)}"]


def _no_kernel_line(report, p, index: int) -> str:
    """Why a node launches no kernel: folded into a matrix product's operand layout
    (``Prediction.folded_into``), else no work or folded."""
    into = p.folded_into(index)
    if into is not None:
        return (f"  launches no kernel: a rank-2 transpose read only by matrix products, folded into the "
                f"operand layout of {safe.text(report.nodes[into].name)} (XLA's GPU TransposeFolding): 0 s")
    return "  launches no kernel (no work, or folded): 0 s"


def _merged_lines(report, p, index: int) -> list[str]:
    """The dots a node is merged with into one (``Prediction.merged_with``), or no line."""
    group = p.merged_with(index)
    if group is None:
        return []
    t = p.kernel_table
    k = int(t.kernel_of[index])
    view = " x ".join(f"{float(t.feats[f][k]):g}" for f in ("m", "n", "k"))
    return [f"  merged dot: {', '.join(safe.text(report.nodes[i].name) for i in group)} run as one "
            f"dot of their shared operand (XLA's GPU DotMerger), one GEMM of m x n x k = {view}"]


_APART = {"reduction beside a matrix kernel":
          "a reduction whose producer a matrix kernel also reads (XLA's GPU PriorityFusion fuses a "
          "producer into all its users or none)",
          "reduction epilogue":
          "an op that reads a reduction XLA runs with its reduction emitter and is not a one-operand "
          "intermediate op, or the reduction has other readers (XLA's GPU IsProducerConsumerFusible)"}


def _apart_lines(report, p, index: int) -> list[str]:
    """Why a node starts a kernel apart from its producer's (``Prediction.kept_apart``), or no line."""
    got = p.kept_apart(index)
    if got is None:
        return []
    i, why = got
    return [f"  kernel apart from {safe.text(report.nodes[i].name)}'s: {_APART.get(why, safe.text(why))}"]


def _functions(node) -> str:
    """The node's transcendentals by function (``NodeCost.functions``) as `` (tanh 4,096)``,
    or nothing where it has none."""
    fns = getattr(node, "functions", ())
    return f" ({', '.join(f'{safe.text(f)} {c:,}' for f, c in fns)})" if fns else ""


def _memory_lines(e, p, v: Vocab) -> list[str]:
    """The memory term of kernel ``e`` (``KernelTerms``) of prediction ``p``, factor by factor, in
    the profile's words ``v``: off a GPU, the per-unit issue term, the cache share and the ramp
    only where they act (not off, not 0)."""
    per_unit = v.gpu or bool(e.sm_rate or e.sm_s)
    loop = (f" + index loop {human_time(e.index_loop_s)}" if e.index_loop_s else "") + _gather_dep(e)
    rate = f"gather rate {e.gather_rate:.4g} x " if e.gather_rate != 1.0 else ""
    terms = rate + (f"{'max' if e.sm_overlap else 'sum'}({v.memory} {human_time(e.dram_s)}, per-{v.unit} "
                    f"{human_time(e.sm_s)}){loop}" if per_unit else f"{v.memory} {human_time(e.dram_s)}{loop}")
    terms = with_rows(e, terms)
    cache = v.gpu or e.cache_share > 0
    ramp = f" + ramp b_half {human(e.b_half_bytes, 'B')}" if v.gpu or e.b_half_bytes else ""
    if p.l2 == "cold":
        where = f"({v.cache} cold: flushed before each kernel, every {'counted ' if e.reread_l2_bytes else ''}byte " \
                "from DRAM)"
    else:
        where = f"({v.cache} {human(e.l2_bytes, 'B')})"
    return [
        f"  memory   {human_time(e.memory_s):>9}  = launches x ({terms})",
        f"    {v.memory} = (bytes to {v.memory} {human(e.dram_bytes, 'B')}"
        + (f" + kept on chip {human(e.onchip_bytes, 'B')} x onchip_cost {e.onchip_cost:.3g}" if e.onchip else "")
        + f"{ramp}) / (bandwidth {human(e.mem_bw, 'B/s')} x e_bw {e.e_bw:.3g}"
        + (f" x cache gain {e.cache_gain:.3g}" if v.gpu or e.cache_gain != 1.0 else "") + ")"
        + (f"; cache share {100 * e.cache_share:.1f}% of the bytes {where}" if cache else ""),
        *_onchip_lines(e),
        *reread_lines(e, p.l2 == "cold"),
        *index_loop_lines(e),
        *_gather_lines(e),
        *row_lines(e),
        *([f"    per-{v.unit} = bytes / {v.unit} issue rate "
           + (human(e.sm_rate, 'B/s') if e.sm_rate else "(off)")] if per_unit else [])]


def _warm_text(e) -> str:
    """The class floor's warm-start factor (``efficiency.warm_share``) or its cold start
    (``efficiency.cold_start``), '' where there is neither."""
    if e.cold_start_s:
        return f" + cold start {human_time(e.cold_start_s)} (the first loads wait for DRAM: not in the L2)"
    if not e.warm_start:
        return ""
    step = e.warm_start / e.l2_floor if e.l2_floor else 0.0
    return (f" x (1 - warm start {e.warm_start:.4f} = l2_floor {e.l2_floor:.4g} x cache step {step:.4f}: "
            f"the first loads served by a warm L2)")


def render_explain(report, index: int, width: int | None = None) -> str:
    """One layer's arithmetic on every profile: counts, bytes by class, intensity, the ridge
    point, each term and the efficiency constants with their provenance."""
    n = report.nodes[index]
    c = n.cost
    out = [f"layer {safe.text(n.name)} ({safe.text(n.op)}), status {n.status}",
           f"  counts: MAC {c.mac_flops:,} FLOP, vector {c.vector_flops:,} FLOP, transcendental "
           f"{c.transcendentals:,}{_functions(n)}, params {c.params:,}",
           f"  bytes: weights {c.weight_bytes:,} B, activations read "
           f"{c.activation_bytes_read:,} B, written {c.activation_bytes_written:,} B "
           f"(= {c.bytes_moved:,} B)"]
    if n.note:
        out.append(f"  note: {safe.text(n.note)}")
    if not report.predictions:
        out.append("  no prediction: predict on a hardware profile to see the time terms")
    for p in report.predictions:
        x = p.for_node(index)
        e = p.explain(index)
        v = vocab(p)
        out.append(f"on {safe.text(p.hardware)} ({p.precision}, {p.runtime}, {'max' if p.overlap else 'sum'}"
                   f" of compute and memory):")
        h = p.host_step(index) if e is None else None
        if x is not None and h is not None:
            out += _host_lines(p, x, h)
            continue
        if x is None or e is None:
            out.append(_no_kernel_line(report, p, index))
            continue
        fused = (f"kernel {safe.text(e.kernel)}: {e.members} fused nodes, this layer's share "
                 f"{100 * e.member_share:.1f}%") if e.members > 1 else f"kernel {safe.text(e.kernel)}"
        out += [f"  {fused}; op class {e.op_class}; {e.runs:g} launch{'es' if e.runs != 1 else ''}",
                *_merged_lines(report, p, index),
                *_apart_lines(report, p, index),
                f"  per launch: MAC {human(e.mac_flops)}, vector {human(e.vector_flops)}, transc. "
                f"{human(e.transcendental_flops)} FLOP; {human(e.bytes, 'B')} moved (fused "
                f"intermediates excluded)",
                f"  arithmetic intensity {e.intensity:.3g} FLOP/B; ridge point {e.ridge:.3g} FLOP/B "
                f"({e.engine} peak {human(e.matrix_peak if e.engine == 'matrix' else e.vector_peak, 'FLOP/s')}"
                f" / {human(e.mem_bw, 'B/s')}), {e.effective_ridge:.3g} FLOP/B with the efficiencies",
                f"  compute  {human_time(e.compute_s):>9}  = launches x "
                f"(matrix {human_time(e.matrix_s)} + vector {human_time(e.vector_s)})",
                *_compute_lines(e, v),
                *placed_lines(e, "compute"),
                *_memory_lines(e, p, v),
                f"  fixed    {human_time(e.overhead_s):>9}  = launches x {human_time(e.fixed_s)} "
                f"(class floor {human_time(e.floor_s)}{_warm_text(e)}, launch figure, dispatch)",
                *_inserted_lines(e),
                *placed_lines(e, "fixed"),
                *([f"    of which loop-resident -{human_time(-e.resident_s * e.runs)} = (launches - 1) x "
                   f"(max(compute, memory less {human(e.resident_bytes, 'B')} of cached loop-invariant "
                   f"weights) - max(compute, memory)): trips after the first read them from the cache"]
                  if e.resident_bytes else []),
                *([f"    of which split -{human_time(-e.split_s * e.runs)}: XLA runs the kernel in "
                   f"{e.split_parts:g} part(s) (and its inserted copies of 512 KiB or more in 2 or more) on the "
                   f"calibrated threads: max(compute of FLOPs / parts, memory of bytes x s / min(parts x s, 1)), "
                   f"s the profile's core_bw_share (none: 1 / parts)"]
                  if e.split_s else []),
                *loop_work_lines(e),
                *per_output_lines(e),
                *ynn_lines(e),
                f"  kernel   {human_time(e.time_s):>9}  = fixed + {'max' if p.overlap else 'sum'}(compute, "
                f"memory): {e.bound}-bound; attained {human(e.attained_flops, 'FLOP/s')}, effective roof "
                f"{human(e.effective_roof, 'FLOP/s')}",
                *([f"  stream   {human_time(e.stream_s):>9}  = kernel on the device "
                   f"{human_time(e.time_s - e.host_s)} (kernel less its host dispatch "
                   f"{human_time(e.host_s)}, issued while earlier kernels ran) + exposed host gap "
                   f"{human_time(e.gap_s)} (the device waited for the host): dev_end_i - dev_end_i-1 "
                   f"of the eager stream; {x.bound}-bound"] if e.stream else []),
                f"  layer    {human_time(x.time_s):>9}  {100 * x.share:.2f}% of "
                f"{human_time(p.latency_s)}", *training_lines(report, p, index, _inserted_lines),
                *_per_call_lines(p),
                f"  constants: {safe.text(e.provenance)}: {safe.text(e.provenance_detail)}",
                *([f"  {safe.text(e.op_class)} set: {safe.text(e.class_provenance)}"] if e.class_provenance else [])]
        out += [f"  assumed: {safe.text(n)}" for n in assumed(p)]
    return "\n".join(y for line in out for y in wrap(line, width)) + "\n"
