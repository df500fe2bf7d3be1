"""The family files ``bench/fit_efficiency.py`` writes to ``hardware_db/efficiency/``: each
family's description, devices and parent, the provenance text of a fitted set (its filter and
timing), the "-pytorch2.3" variants (the 2024 kernels vidur measured) and ``write_files``, which
keeps the sets other scripts own (``POOLED_CLASSES``, ``KEPT_SETS``).
"""

from __future__ import annotations

import json
import os

from efficiency_data import FAMILY_DEVICES, TRANS_WEIGHT
from analyzer.prediction.efficiency.constants import PYTORCH23, variant_of
from analyzer.prediction.efficiency.op_classes import POOLED_CLASSES

LEGACY = "-" + PYTORCH23   # the variant of a family with the 2024 kernels vidur measured


def scored_family(fam: str, src: tuple, directory: str | None = None) -> str:
    """The family that predicts ``src``'s rows: the "-pytorch2.3" variant for vidur (2024 PyTorch
    kernels) where ``directory`` has one (a baseline from before the variants has none)."""
    return variant_of(fam, PYTORCH23 if src[0] == "vidur" else "", directory)


def _timing(fkey: str) -> str:
    if fkey == "h200_ops":
        return "kernel_sum (PyTorch profiler kernel durations, median of 20 calls on the same inputs: L2-warm)"
    return ("kernel_sum (PyTorch profiler kernel durations, median of 20)" if fkey == "vidur"
            else "graph (mean of 6 CUDA-graph replays)")


def _filter_text(parts, ops) -> str:
    f = []
    for (fkey, dev), _ in parts:
        if fkey == "aic_gemm":
            f.append(f"aic_gemm device_system={dev} dtype=bfloat16 timing=graph")
        elif fkey == "aic_attention":
            f.append(f"aic_attention device_system={dev} kv_cache_dtype=bfloat16 window_size=0 timing=graph")
        elif fkey == "h200_ops":
            f.append(f"h200_ops (this project's H200 SXM, torch 2.11.0+cu130, fp16 and bf16) op in "
                     f"{{{', '.join(ops)}}}")
        else:
            f.append(f"vidur gpu={dev} op in {{{', '.join(o for o in ops if not o.startswith('attn'))}}}")
    return "; ".join(f)


_INHERIT_WHY = ("The other memory-bound op classes (no measurements of them on this family) inherit {p}'s: bandwidth efficiency is "
                "a property of the kernel library and the memory system ({mem} here as there: "
                "shared/reference/digest_latency_modeling.md, mechanism 3); pooling GDDR and HBM devices "
                "(generic.json) mixed two memory systems.")
_AIC_EW = ("quantize (QuantizeLinear / DequantizeLinear) pooled over seven "
           "systems' vendor bf16->fp8 quantize kernels (aic_elementwise.csv; bench/fit_aic_elementwise.py). ")
FAMILY_INHERITS = {"nvidia-hopper": "nvidia-ampere", "nvidia-blackwell": "nvidia-ampere",
                   "nvidia-ada": "nvidia-ampere-ga10x"}
LEGACY_DESCRIPTION = (
    "{base} with the 2024 PyTorch gather kernel that vidur measured (index_select; torch 2.2/2.3): a rate per "
    "SM-cycle, not per DRAM byte (about 2 bytes per SM-cycle at fp16 on the A100 and the A40 alike, 0.15 and 0.48 "
    "of their DRAM bandwidths; bench/gather_lodo.py). PyTorch's embedding now runs a vectorized gather (pytorch/pytorch PRs "
    "151490 and 151753, April 2025; vectorized_gather_kernel in torch 2.11's traces), which {base}.json "
    "predicts as a row copy with its elementwise constants. Applies to no device by itself: set a profile's "
    "family to it to predict the older kernels (bench/accuracy.py does for the 2024 rows).")
# sets other scripts own in these files: the softmax sets (bench/ampere_softmax.py) and the FMA-unit
# GEMM and convolution sets (bench/family_simt.py, which also appends a note to the description: ``KEPT_NOTES``)
_SIMT = ("gemm_simt", "bgemm_simt", "conv3_simt", "conv_simt")
# XLA's own kernel sets (bench/xla_sets.py)
_XLA = ("xla_loop", "xla_act", "xla_reduce", "xla_softmax", "xla_softmax_block", "xla_gemm", "xla_bgemm")
# and the Hopper row-kernel sets with the file's ``row_kernels``, where bench/hopper_rows.py --write put them
KEPT_SETS = {"nvidia-ampere": ("softmax", "softmax_block") + _SIMT + ("conv", "conv_1x1", "conv_dw"),
             "nvidia-ampere-ga10x": ("softmax", "softmax_block") + _SIMT,
             "nvidia-hopper": ("conv3_simt", "conv_simt",   # bench/hopper_conv_simt.py
                               "conv", "conv_1x1", "conv_dw",  # bench/hopper_conv_tc.py
                               "bgemm",                     # bench/hopper_bgemm.py
                               "norm_row", "softmax_row", "softmax_block_row") + _XLA,
             # Hopper's warm start, softmax row and XLA sets, inherited (bench/hopper_bgemm.py,
             # bench/hopper_rows.py, bench/xla_sets.py)
             "nvidia-blackwell": ("bgemm", "softmax_row", "softmax_block_row") + _XLA}
KEPT_NOTES = (" FMA-unit GEMM sets (", " FMA-unit sets of nvidia-ampere, inherited (",
              " gemm_simt, bgemm_simt: nvidia-ampere's, inherited (",
              " FMA-unit convolution sets fitted on this repository's H200",
              " Tensor-core convolution sets fitted on this repository's H200",
              " Tensor-core convolution sets of nvidia-hopper, inherited (")
DESCRIPTIONS = {
    "nvidia-ampere": "NVIDIA Ampere GA100 (A100): gemm/attention from aiconfigurator a100_sxm (CUDA-graph), "
                     "memory-bound classes from vidur a100_80gb's PyTorch-native kernels (2024: LayerNorm, GELU, add, "
                     "index_select embedding; vLLM's rms_norm and silu_and_mul left out), kernel sum. softmax and "
                     "softmax_block (rows of at most / more than 1,024 elements) from NeuSight's fp32 A100 PCIe eager "
                     "rows, host dispatch fitted apart (bench/ampere_softmax.py).",
    "nvidia-ampere-ga10x": "NVIDIA Ampere GA10x with GDDR6 (A40; applied to A10, RTX 3090): all classes from "
                           "vidur a40's PyTorch-native kernels (kernel sum; vLLM's rms_norm and silu_and_mul "
                           "left out). softmax and softmax_block: nvidia-ampere's, inherited (bench/ampere_softmax.py; "
                           "no softmax measurements on GA10x).",
    "nvidia-ada": "NVIDIA Ada (L40S): gemm/attention from aiconfigurator l40s (CUDA-graph); " + _AIC_EW
                  + _INHERIT_WHY.format(p="nvidia-ampere-ga10x", mem="GDDR6/GDDR6X"),
    "nvidia-hopper": "NVIDIA Hopper (H200; H100 is a held-out test device, never fitted on): gemm/attention from "
                     "aiconfigurator h200_sxm (CUDA-graph); " + _AIC_EW
                     + "elementwise (add) and activation (GELU) from this project's H200 SXM measurement of "
                       "PyTorch 2.11's own kernels (bench/data/hopper_mem, kernel sum, inputs reused; the norms "
                       "of the same run scored, not fitted: bench/hopper_mem.py). "
                     + _INHERIT_WHY.replace("(no measurements of them on this family)",
                                            "(norm, softmax, the gather variant)").format(p="nvidia-ampere", mem="HBM"),
    "nvidia-blackwell": "NVIDIA Blackwell (B200; GB200 scored cross-device; B300, GB300, RTX PRO 6000 applied): "
                        "gemm/attention from aiconfigurator b200_sxm (CUDA-graph); " + _AIC_EW
                        + _INHERIT_WHY.format(p="nvidia-ampere", mem="HBM"),
    "generic": "Pooled fit over every device with data for the class (a100_sxm, a100_80gb, a40, l40s, h200_sxm, "
               "b200_sxm); classes without measurements inherit a measured class (documented per set).",
}


def kept_note(description: str) -> str:
    """The part of a family file's description another script appended (``KEPT_NOTES``: from the
    first such marker to the end), '' where there is none."""
    at = [description.find(m) for m in KEPT_NOTES if m in description]
    return description[min(at):] if at else ""


def replace_note(description: str, markers, note: str) -> str:
    """``description`` with each note that starts with one of ``markers`` taken out (from its marker
    to the next ``KEPT_NOTES`` marker after it, or the end: another script's note stays) and
    ``note`` appended."""
    for m in markers:
        at = description.find(m)
        if at < 0:
            continue
        ends = [description.find(k, at + len(m)) for k in KEPT_NOTES]
        end = min((e for e in ends if e > at), default=len(description))
        description = description[:at] + description[end:]
    return description + note


def write_files(fams: dict, directory: str) -> None:
    os.makedirs(directory, exist_ok=True)
    for fam, sets in fams.items():
        base = fam[:-len(LEGACY)] if fam.endswith(LEGACY) else None
        doc = {"schema_version": 1, "family": fam,
               "description": LEGACY_DESCRIPTION.format(base=base) if base else DESCRIPTIONS[fam]}
        if fam != "generic" and not base:
            doc["devices"] = FAMILY_DEVICES[fam]
        if base or fam in FAMILY_INHERITS:
            doc["inherits"] = base or FAMILY_INHERITS[fam]
        doc["scalars"] = {"trans_weight": TRANS_WEIGHT, "provenance": {
            "kind": "prior", "source": "XLA GPU op profile (xla/service/gpu/model/hlo_op_profiles_data.h): f32 exp "
            "79 cycles vs add 7, per shared/reference/digest_latency_modeling.md; not fitted"}}
        doc["sets"] = {cls: {"constants": c, "provenance": p} for cls, (c, p) in sets.items()}
        path = os.path.join(directory, f"{fam}.json")
        # the pooled FMA-unit sets are bench/fit_neusight.py's, the Ampere softmax sets (and GA10x's
        # inherited copies) bench/ampere_softmax.py's: kept as they are
        keep = POOLED_CLASSES if fam == "generic" else KEPT_SETS.get(fam, ())
        if keep and os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                old = json.load(f)
            doc["sets"].update({c: v for c, v in old["sets"].items() if c in keep})
            for c, v in doc["sets"].items():   # the cold starts bench/hopper_cold_start.py measured
                if "cold_start_s" in old["sets"].get(c, {}).get("constants", {}):
                    v["constants"]["cold_start_s"] = old["sets"][c]["constants"]["cold_start_s"]
            if old.get("row_kernels"):
                doc["row_kernels"] = old["row_kernels"]
            doc["description"] += kept_note(old.get("description", ""))
        with open(path, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")


def drift(new_dir: str, old_dir: str, rel: float = 1e-6) -> list[str]:
    """One line per constant of a set in ``new_dir``'s family files (a fit's fresh output) that
    differs from the same family, set and constant in ``old_dir`` (the committed files) by more
    than ``rel`` relative (|a - b| > rel x max(|a|, |b|); a constant, set or family missing on
    either side is a line too). Only the sets the fit wrote are compared: the ones other scripts
    own (``KEPT_SETS``, ``POOLED_CLASSES``) are not in ``new_dir``'s output unless kept there."""
    return [line for _, _, line in _drift_items(new_dir, old_dir, rel)]


def _drift_items(new_dir: str, old_dir: str, rel: float = 1e-6) -> list[tuple]:
    """``drift``'s lines as (new set entry or None, committed set entry or None, line): the
    entries of the family and set a constant line names; None for a missing family or set."""
    out = []
    for name in sorted(os.listdir(new_dir)):
        if not name.endswith(".json") or name == "schema.json":
            continue
        with open(os.path.join(new_dir, name), encoding="utf-8") as f:
            new = json.load(f)["sets"]
        path = os.path.join(old_dir, name)
        if not os.path.exists(path):
            out.append((None, None, f"{name}: not in {old_dir}"))
            continue
        with open(path, encoding="utf-8") as f:
            old = json.load(f)["sets"]
        for cls, entry in sorted(new.items()):
            if cls not in old:
                out.append((None, None, f"{name} {cls}: set not committed"))
                continue
            a, b = entry["constants"], old[cls]["constants"]
            for k in sorted(set(a) | set(b)):
                x, y = a.get(k), b.get(k)
                if x is None or y is None:
                    out.append((entry, old[cls], f"{name} {cls} {k}: {'fit only' if y is None else 'committed only'}"))
                elif abs(float(x) - float(y)) > rel * max(abs(float(x)), abs(float(y))):
                    out.append((entry, old[cls], f"{name} {cls} {k}: committed {y!r}, the fit now {x!r}"))
    return out


def unpinned(new_dir: str, old_dir: str, rel: float = 1e-6) -> tuple[list[str], list[str]]:
    """``drift``'s lines split into (moved, unpinned): a constant line is *unpinned* when its
    set's stated fit error (``provenance.fit_error``: MAPE, median, bias, within 10 / 25 %, at
    the digits the files keep) is the same in both folders, so the constant moved along a
    direction the rows do not pin down (a fit that converges there from another numpy / scipy
    build gives the same error); every other line, a missing set or family among them, moved."""
    def error(entry):
        return ((entry or {}).get("provenance") or {}).get("fit_error") or None

    moved, flat = [], []
    for new, old, line in _drift_items(new_dir, old_dir, rel):
        (flat if error(new) is not None and error(new) == error(old) else moved).append(line)
    return moved, flat
