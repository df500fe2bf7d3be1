"""The lines ``--explain`` prints for the kernel-time model's optional terms (the serial k loop,
an accelerator runtime's placement, PyTorch's long-row softmax re-reads, small-index gather and
row kernels, XLA CPU's YNNPACK dots and in-loop vector work): formatting only, from
``Prediction.explain``'s ``KernelTerms``."""

from __future__ import annotations

from analyzer.prediction import stem_conv
from analyzer.render import safe
from analyzer.render.headline import human_time
from analyzer.render.pieces import human


def kloop_lines(e) -> list[str]:
    """The serial k loop's bound on the matrix time (``KernelTerms.kloop_s``; none: no line)."""
    if not e.kloop_s:
        return []
    how = "sum" if e.kloop_sum else "max"
    return [f"    matrix = {how}(tiles {human_time(e.tiles_s)}, k loop {human_time(e.kloop_s)})",
            f"    k loop = k {e.kloop_k:g} x {human_time(e.kloop_step_s)} a step (kloop_cycles / clock): "
            "a small grid's CTAs walk the whole GEMM depth, one latency-bound step after another"]


def stem_lines(e) -> list[str]:
    """An image-stem convolution priced on the FMA units (class ``conv_stem``, ``stem_conv``): which
    engine and why (none for any other class)."""
    if e.op_class != "conv_stem":
        return []
    return [f"    engine: FMA units (CUDA cores), not the tensor cores: an fp32 image-stem convolution (ungrouped, "
            f"fewer than {stem_conv.STEM_CIN} input channels), as cuDNN runs it; matrix peak "
            f"{human(e.matrix_peak, 'FLOP/s')} = the FMA units' fp32 peak x clock share x fp32_datapath_factor "
            "(the note below), constants the FMA-unit conv_simt set"]


def placed_lines(e, part: str) -> list[str]:
    """A kernel the runtime's placement moved off the accelerator (``KernelTerms.placed``):
    ``part`` "compute" (where it runs and at what rate) or "fixed" (its segment's switches and
    boundary tensors, inside the fixed line); no line for any other kernel."""
    pl = getattr(e, "placed", None)
    if pl is None:
        return []
    if part == "compute":
        work = e.mac_flops + e.vector_flops + e.trans_weight * e.transcendental_flops
        return [f"    placed on the {safe.text(pl.unit)} ({safe.text(pl.why)}): matrix + vector = work "
                f"{human(work)} / rate {human(pl.rate, 'FLOP/s')} = {human_time(work / pl.rate if pl.rate else 0.0)} "
                "per launch (the peaks above are rate / e_compute)"]
    if not (pl.switches or pl.moved_bytes):
        return []
    hand = pl.moved_bytes / pl.mem_bw if pl.mem_bw else 0.0
    return [f"    of which hand-over {human_time(pl.switches * pl.switch_s + hand)} = {pl.switches} switch(es) x "
            f"{human_time(pl.switch_s)} + boundary tensors {human(pl.moved_bytes, 'B')} / {human(pl.mem_bw, 'B/s')} "
            f"(its CPU segment's, over {e.runs:g} launch(es))"]


def reread_lines(e, cold: bool) -> list[str]:
    """PyTorch's long-row CUDA softmax (``KernelTerms.reread_l2_bytes`` / ``reread_dram_bytes``):
    the bytes its max and sum-of-exps passes read again, and where they are served."""
    if not (e.reread_l2_bytes or e.reread_dram_bytes):
        return []
    fits = (f"a row {human(e.reread_row_bytes, 'B')} vs {human(e.reread_l2_row, 'B')} of L2 per row in flight "
            f"(L2 / (SMs x resident 1024-thread blocks))" if e.reread_l2_row else "L2 or SM count unknown")
    if e.reread_l2_bytes:
        return [f"    re-reads {human(e.reread_l2_bytes, 'B')} (cunn_SoftMaxForward reads each row 3 times, the count "
                f"once) from the L2, {fits}: they add to the per-SM bytes only"
                + (" (a cold L2 is flushed before the kernel, not between its passes)" if cold else "")]
    return [f"    re-reads {human(e.reread_dram_bytes, 'B')} (cunn_SoftMaxForward reads each row 3 times, the count "
            f"once) from DRAM, {fits}: in the bytes to DRAM"]


def index_loop_lines(e) -> list[str]:
    """PyTorch's small-index gather (``KernelTerms.index_loop_s``, ``prediction.small_index``)."""
    if not e.index_loop_s:
        return []
    return [f"    index loop = (steps - 1) x one dependent load ({human_time(e.index_loop_s)}): "
            "index_select of 16 ids or fewer, each thread steps through every id in turn"]


def with_rows(e, terms: str) -> str:
    """The memory line's terms with PyTorch's row-kernel term (``KernelTerms.row_s``): added to
    the streaming terms, or their max (``row_kernels``: the kind's overlap)."""
    if not e.row_s:
        return terms
    rows = f"rows {human_time(e.row_s)}"
    return f"max({terms}, {rows})" if e.row_overlap else f"{terms} + {rows}"


def row_lines(e) -> list[str]:
    """PyTorch's row kernels (``KernelTerms.row_s``, ``prediction.row_kernels``)."""
    if not e.row_s:
        return []
    return [f"    rows = waves {e.row_waves:.0f} (rows / (SMs x rows resident per SM)) x (c0 {human_time(e.row_c0_s)} "
            f"+ steps {e.row_steps:.0f} x step {human_time(e.row_step_s)}) (cycles / clock): one block or warp "
            "walks each row, its steps one after the other"]


def ynn_lines(e) -> list[str]:
    """The YNNPACK dot's share of the fixed line (``KernelTerms.ynn_dot_s``; none: no line)."""
    if not e.ynn_dot_s:
        return []
    return [f"    of which YNNPACK dot {human_time(e.ynn_dot_s * e.runs)} = launches x {human_time(e.ynn_dot_s)}: "
            "XLA runs the dot as a YNNPACK fusion; outside a loop dot_call_us a launch, in a loop body "
            "dot_trip_us a trip + dot_loop_us once per execution of the loop (the profile's calibration)"]


def per_output_lines(e) -> list[str]:
    """The per-output-element share of the fixed line (``KernelTerms.per_output_s``; none: no line)."""
    if not e.per_output_s:
        return []
    return [f"    of which per output {human_time(e.per_output_s * e.runs)} = launches x output elements "
            f"{human(e.outputs)} x {e.per_output_s / e.outputs * 1e9:.4g} ns (the class's calibrated out_ns)"]


def loop_work_lines(e) -> list[str]:
    """The in-loop vector work's share of the fixed line (``KernelTerms.loop_work_s``; none: no line)."""
    if not e.loop_work_s:
        return []
    return [f"    of which in-loop vector work -{human_time(-e.loop_work_s * e.runs)} = launches x (loop_work_scale - 1) "
            f"x work ({human_time(e.loop_work_s)}): a loop body's vector kernel at the profile's calibrated "
            "loop_work_scale of max(compute, memory) with its loop-resident and split terms"]
