"""What a prediction takes from a hardware profile besides its peaks: the efficiency constants
(calibrated, family, generic or datasheet, with provenance), stand-ins for missing essential
figures (flagged INCOMPLETE), and the runtime's host dispatch per kernel."""

from __future__ import annotations

import functools
import os

import numpy as np

from analyzer.errors import HardwareError, Hint
from analyzer.prediction.efficiency import kernel_time as eff
from analyzer.prediction.efficiency import constants as fc
from analyzer.prediction import runtimes, tpu_mxu


def other_simd(calibration: dict) -> str | None:
    """A warning where the calibration recorded a vector extension other than this machine's:
    the kernels a runtime picks here (onnxruntime's graph, its NCHWc blocks) are this machine's,
    the calibrated constants another's. None where they agree or the calibration did not say."""
    from analyzer.prediction.cpu.host import this_simd

    then, now = calibration.get("simd"), this_simd()
    if not then or then == now or "unknown" in (then, now):
        return None
    return (f"calibrated on a CPU with {then} ({calibration.get('cpu', '?')}), predicted on one with "
            f"{now}: the runtime's kernels here may differ from those it measured; calibrate this "
            f"machine for its own figures")


def family_name(profile) -> str:
    """The constants family a profile takes: its own ``family``, else the family file that lists
    its id (``"generic"`` where none does)."""
    return profile.family or fc.family_of(profile.id)


def class_provenance(profile, op_class: str) -> str:
    """Where ``profile``'s constants of ``op_class`` come from in its family's file (its own set,
    or the set it inherits or falls back to: ``constants.class_provenance``)."""
    return fc.class_provenance(family_name(profile), op_class)


def efficiency_constants(profile) -> tuple[dict, str, str]:
    """(arrays, provenance, detail) for one profile."""
    cal = profile.calibration
    if cal and cal.get("tables"):
        base = fc.load_constants("datasheet")
        arrays = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in base.arrays.items()}
        tables = cal["tables"]
        for i, cls in enumerate(eff.OP_CLASSES):
            t = next((tables[c] for c in eff.class_chain(cls) if c in tables), None)
            if t is None:
                continue  # the datasheet set: peaks and bandwidth as calibrated
            arrays["e_compute"][i] = float(t.get("e_c", 1.0))
            arrays["e_bw"][i] = float(t.get("e_bw", 1.0))
            arrays["b_half_bytes"][i] = float(t.get("b_half_bytes", 0.0))
            arrays["floor_s"][i] = float(t.get("floor_us", 0.0)) * 1e-6
            if "l2_gain" in arrays:
                arrays["l2_gain"][i] = float(t.get("l2_gain", 0.0))
            # a matrix class's tile of output columns (one row per tile) and narrow-tile factor
            tile_n = float(t.get("tile_n", 0.0))
            arrays["tile_m"][i] = 1.0 if tile_n > 0 else 0.0
            arrays["tile_n"][i] = tile_n
            arrays["n_half"][i] = float(t.get("n_half", 0.0)) if tile_n > 0 else 0.0
            arrays["k_block"][i] = float(t.get("k_block", 0.0)) if tile_n > 0 else 0.0
            # a multi-threaded calibration's fork/join of split kernels and where it steps in
            arrays["par_s"][i] = float(t.get("par_us", 0.0)) * 1e-6
            arrays["b_par"][i] = float(t.get("b_par_bytes", 0.0))
            # per extra piece of a batched kernel, per im2col element (a strided one's more), per
            # recurrent FLOP of an RNN (efficiency.class_fixed_s)
            for name, key, unit in eff.CPU_FIXED_KEYS:
                arrays[name][i] = float(t.get(key, 0.0)) * unit
        # what one transcendental costs in vector FLOPs (an XLA calibration fits it: its fused
        # kernels mix adds with tanh, exp and erf); 1 where the calibration did not measure it
        arrays["trans_weight"] = float(cal.get("trans_weight", arrays["trans_weight"]))
        from analyzer.prediction.cpu.thread_notes import notes

        elsewhere = other_simd(cal)
        said = "".join(f"; {w}" for w in notes(cal) + ([elsewhere] if elsewhere else []))
        where = "another machine" if elsewhere else "this machine"
        return arrays, "calibrated", (f"calibrated on {where} ({cal.get('measured_on', '?')}, "
                                      f"{cal.get('runtime', '?')}){said}")
    fam = family_name(profile)
    # a GPU profile that names the datasheet set (a test device, the bench's datasheet scoring)
    # is a datasheet prediction, not one with architecture constants; another kind uses a family
    # only where that family has its own file (the NPUs bench/fit_accelerators.py fitted)
    own = fam not in ("generic", *fc.DATASHEET_SETS) and os.path.exists(
        os.path.join(fc.EFFICIENCY_DIR, f"{fam}.json"))
    if fam not in fc.DATASHEET_SETS and (profile.kind == "gpu" or own):
        consts = fc.load_constants(fam)
        # the floors scale only with a clock the profile states (clock_hz may be a stand-in)
        arrays = eff.with_clock(consts.arrays, clock_hz(profile), scale_floor=bool(profile.clock_ghz))
        pooled_floors(profile, arrays)
        mxu = tpu_mxu.mxu_tiles(profile, arrays)
        if consts.generic:
            return arrays, "generic", ("generic GPU constants (no family constants for "
                                              f"{fam}): pooled fit over public NVIDIA measurements")
        generic = [c for c in consts.inherited if consts.describe(c).startswith("generic")]
        borrowed = [c for c in consts.inherited if c not in generic]
        every = len(borrowed) + len(generic) == len(eff.OP_CLASSES)   # a file without sets of its own
        inherited = ((("; every class inherited" if every else f"; {', '.join(borrowed)} from a related "
                       "family or class") if borrowed else "")
                     + (f"; {', '.join(generic)} from the pooled generic set" if generic else ""))
        return arrays, "architecture constants", (
            f"{consts.family} constants ({consts.describe('gemm')}){inherited}{mxu}")
    name = fam if fam in fc.DATASHEET_SETS else (
        "datasheet-tpu" if profile.kind == "tpu" else "datasheet")
    arrays = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in fc.load_constants(name).arrays.items()}
    mxu = tpu_mxu.mxu_tiles(profile, arrays)
    return arrays, "datasheet", (
        f"datasheet peaks and bandwidth ({profile.kind}: no measured efficiency constants); "
        f"expect datasheet-roofline error (20-55%), calibrate for better{mxu}")

def pooled_floors(profile, arrays: dict) -> None:
    """An NVIDIA GPU with a stated clock: each class floor becomes the pooled number of cycles of
    the NVIDIA families (``constants.floor_cycles``) over the device's clock, in place; a class
    without a pooled figure, another vendor's GPU or an unknown clock keeps its set's floor.
    The floor is then the same work on every NVIDIA GPU, and a faster clock never lengthens it.
    A set with ``floor_own = 1`` keeps its own floor (``prediction.row_kernels``: its row latency
    is a term of its own, which the pooled floor includes)."""
    if profile.kind != "gpu" or (profile.vendor or "").lower() != "nvidia" or not profile.clock_ghz:
        return
    cycles = fc.floor_cycles()
    own = np.asarray(arrays.get("floor_own", np.zeros_like(cycles))) > 0   # (row_kernels: the set's own floor)
    arrays["floor_s"] = np.where(np.isfinite(cycles) & ~own, cycles / (float(profile.clock_ghz) * 1e9),
                                 arrays["floor_s"])


def gather_note(profile) -> str | None:
    """What a GPU prediction with a gather kernel says of the kernel it assumes (None where its
    family's gather set is the older per-element kernel's, or it is not a GPU family's): the
    answer differs up to 6x between PyTorch releases (README "Which gather kernel")."""
    if profile.kind != "gpu" or (profile.calibration and profile.calibration.get("tables")):
        return None
    fam = family_name(profile)
    if fam in fc.DATASHEET_SETS:
        return None
    consts = fc.load_constants(fam)
    if consts.generic or consts.arrays["per_element"][eff.CLASS_CODE["gather"]] > 0:
        return None
    return (f"gathers (embedding lookups) are predicted as PyTorch's vectorized gather (since 2.8: "
            f"a row copy at {consts.family}'s elementwise rate); the index_select kernel of earlier "
            f"releases is up to 6x slower on large lookups: a copy of the profile with family = "
            f"\"{consts.family}-{fc.PYTORCH23}\" predicts it")


def profile_memo(memo: dict | None, prof, runtime_name: str) -> dict:
    """The part of a caller's ``memo`` that belongs to one profile object under one runtime
    (a fresh dict without a memo; the profile is held, so its id cannot be reused).
    ``lowering.lower`` keeps there what depends only on the profile."""
    if memo is None:
        return {}
    key = ("profile", id(prof), runtime_name)
    hit = memo.get(key)
    if hit is None or hit[0] is not prof:
        hit = memo[key] = (prof, {})
    return hit[1]


def profile_terms(prof) -> tuple:
    """(bandwidth B/s, units, cache bytes (``cache_bytes``), efficiency arrays, provenance,
    detail, launch seconds, notes) of a completed profile: what does not depend on the graph."""
    if not prof.mem_bw_gbs:
        raise HardwareError(f"hardware '{prof.id}' has no mem_bw_gbs figure; cannot predict "
                            f"memory time (calibrate the machine, or add a sourced value to a "
                            f"copy of its profile and pass that file as {{hw}})",
                            hints=(Hint("hw", "FILE"),))
    arrays, prov, detail = efficiency_constants(prof)
    said = []
    if prof.launch_overhead_us is not None:
        launch = prof.launch_overhead_us * 1e-6
    else:
        us, why = runtimes.KIND_LAUNCH_US[prof.kind]
        launch = us * 1e-6
        said.append(f"{prof.id} has no launch figure: {us:g} µs per kernel {why}")
    return (prof.mem_bw_gbs * 1e9, float(prof.units or fc.units_of(prof) or 0),
            cache_bytes(prof), arrays, prov, detail, launch, tuple(said))


def clock_hz(profile) -> float:
    """The clock the per-SM term of the efficiency model scales with (``[power] clock_ghz``, Hz).

    A GPU profile without one (b200-hgx, gb200-gpu, h100-pcie today) gets the median clock of
    the shipped GPU profiles that state one: the term is per SM-cycle, and leaving it off would
    predict the norms and gathers at DRAM speed (2-6x optimistic on the 2024 kernels); the
    median is the least-surprising stand-in, and ``clock_note`` says it was assumed."""
    if profile.clock_ghz:
        return float(profile.clock_ghz) * 1e9
    if profile.kind != "gpu":
        return 0.0
    return _median_gpu_clock_ghz() * 1e9


def clock_note(profile) -> str | None:
    """The note a prediction carries when ``clock_hz`` assumed a clock; None otherwise."""
    if profile.clock_ghz or profile.kind != "gpu":
        return None
    return (f"{profile.id} has no clock figure: the per-SM term of the memory-bound classes assumes "
            f"{_median_gpu_clock_ghz():g} GHz (median of the shipped GPU profiles)")


@functools.lru_cache(maxsize=1)
def _median_gpu_clock_ghz() -> float:
    import hardware_db

    clocks = sorted(q.clock_ghz for q in hardware_db.list_profiles() if q.kind == "gpu" and q.clock_ghz)
    return float(np.median(clocks)) if clocks else 0.0


def cache_bytes(profile) -> float:
    """The working-set size (bytes) of the efficiency form's cache step on ``profile``: a
    calibration's own ``cache_bytes`` (the cache its ``l2_gain`` constants were fitted against:
    a CPU's per-core L2 x threads), else the profile's ``onchip_mb``; 0 when unknown."""
    cal = profile.calibration
    if cal and cal.get("tables") and cal.get("cache_bytes"):
        return float(cal["cache_bytes"])
    return float(profile.onchip_mb or 0.0) * 1e6


def complete_profile(prof, note: list[str]):
    """``prof`` with a stand-in for a missing essential figure (memory bandwidth, any throughput):
    the figure of the slowest other shipped profile of its kind that has it, so every profile
    predicts; the note says which figure was assumed and from where (``hw list`` marks such a
    profile incomplete)."""
    import dataclasses

    import hardware_db

    assumed_clock = clock_note(prof)
    if assumed_clock:
        note.append(assumed_clock)
    missing_bw = not prof.mem_bw_gbs
    missing_peak = not (prof.matrix_tflops or prof.vector_tflops)
    if not (missing_bw or missing_peak):
        return prof
    peers = [q for q in hardware_db.list_profiles() if q.kind == prof.kind and q.id != prof.id]
    change = {}
    if missing_bw:
        src = min((q for q in peers if q.mem_bw_gbs), key=lambda q: q.mem_bw_gbs, default=None)
        if src is None:
            raise HardwareError(f"hardware '{prof.id}' has no mem_bw_gbs figure; cannot predict "
                                f"memory time (calibrate the machine, or add a sourced value to a "
                                f"copy of its profile and pass that file as {{hw}})",
                                hints=(Hint("hw", "FILE"),))
        change["mem_bw_gbs"] = src.mem_bw_gbs
        note.append(f"INCOMPLETE profile: {prof.id} has no memory bandwidth figure; assumed "
                    f"{src.mem_bw_gbs:g} GB/s, the slowest sourced {prof.kind} ({src.id}); add a "
                    f"sourced figure to a copy of the profile for a real answer")
    if missing_peak:
        def top(q):
            return max([*q.matrix_tflops.values(), *q.vector_tflops.values()], default=0.0)
        src = min((q for q in peers if top(q)), key=top, default=None)
        if src is not None:
            change["matrix_tflops"] = src.matrix_tflops
            change["vector_tflops"] = src.vector_tflops
            note.append(f"INCOMPLETE profile: {prof.id} has no throughput figure; assumed the "
                        f"peaks of {src.id}, the slowest sourced {prof.kind}; add a sourced figure "
                        f"to a copy of the profile for a real answer")
    return dataclasses.replace(prof, **change)

def host_dispatch(prof, runtime, class_names: list[str], launch: float, note: list[str]) -> np.ndarray:
    """Host dispatch per kernel (seconds) of ``runtime`` on ``prof``."""
    cal = prof.calibration
    if cal and cal.get("runtime") == runtime.dispatch_name and prof.launch_overhead_us is not None:
        return np.full(len(class_names), prof.launch_overhead_us * 1e-6)  # measured with it
    if runtime.name == "eager-op" and prof.kind == "gpu":
        own = runtimes.eager_host(runtime.host).op_call_source
        note.append(f"eager-op host time per call from {own or runtimes.EAGER_OP_CALL_SOURCE}")
        return np.array([runtimes.eager_op_call_us(c, runtime.host) for c in class_names]) * 1e-6
    if runtime.dispatch_name == "eager" and prof.kind == "gpu":
        host = runtimes.eager_host(runtime.host)
        note.append(f"eager dispatch per op, host {runtime.host}: {host.source}")
        return np.array([runtimes.eager_dispatch_us(c, runtime.host) for c in class_names]) * 1e-6
    us, why = runtimes.KIND_LAUNCH_US[prof.kind]
    if prof.launch_overhead_us is not None:
        note.append(f"{runtime.name} dispatch per kernel taken as {prof.id}'s launch figure "
                    f"({prof.launch_overhead_us:g} µs): not measured for this runtime")
        return np.full(len(class_names), launch)
    note.append(f"{runtime.name} dispatch per kernel {us:g} µs, {why}")
    return np.full(len(class_names), us * 1e-6)
