"""Efficiency constants as data: the per-family files under ``hardware_db/efficiency/`` (written by
``bench/fit_efficiency.py``), their schema and provenance checks, and which family a profile
belongs to. The model those constants parameterise is ``efficiency.kernel_time``."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import hardware_db

from analyzer.prediction.efficiency.kernel_time import (CLASS_PARAMS, FILE_PARAMS, OP_CLASSES,
                                                        PARAM_DEFAULTS, RUN_PARAMS, SCALAR_PARAMS,
                                                        class_chain)
from analyzer.prediction.efficiency.op_classes import POOLED_CLASSES

# the fitted constants ship as data of the hardware_db package
EFFICIENCY_DIR = os.path.join(os.path.dirname(os.path.abspath(hardware_db.__file__)), "efficiency")


class EfficiencyError(ValueError):
    """A constants file is missing, malformed or lacks provenance."""


@dataclass(frozen=True)
class FamilyConstants:
    family: str
    arrays: dict                      # name -> np.ndarray[len(OP_CLASSES)] or float (trans_weight)
    provenance: dict                  # op class -> provenance text
    generic: bool                     # True: the family had no file; everything is the generic set
    inherited: tuple = field(default=())  # classes taken from the generic set

    def describe(self, op_class: str) -> str:
        return self.provenance[op_class]


def _schema() -> dict:
    """The schema with its local ``$ref``s inlined (hardware_db's interpreter resolves refs
    against the hardware-profile schema only)."""
    with open(os.path.join(EFFICIENCY_DIR, "schema.json"), encoding="utf-8") as f:
        root = json.load(f)

    def inline(node):
        if isinstance(node, dict):
            if "$ref" in node:
                target = root
                for part in node["$ref"][2:].split("/"):
                    target = target[part]
                return inline(target)
            return {k: inline(v) for k, v in node.items() if k != "$defs"}
        if isinstance(node, list):
            return [inline(v) for v in node]
        return node

    return inline(root)


def validate(data: Any, where: str = "constants") -> None:
    """Check a constants document against ``hardware_db/efficiency/schema.json``."""
    import jsonschema

    error = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(_schema()).iter_errors(data))
    if error is not None:
        at = ".".join(str(x) for x in error.absolute_path) or "(top level)"
        raise EfficiencyError(f"{where}: {at}: {error.message}")
    for cls, entry in data.get("sets", {}).items():
        if cls not in OP_CLASSES:
            raise EfficiencyError(f"{where}: set '{cls}' is not an op class ({', '.join(OP_CLASSES)})")
        prov = entry["provenance"]
        if prov["kind"] != "fit" and "source" not in prov:
            raise EfficiencyError(f"{where}: set '{cls}' ({prov['kind']}) lacks provenance.source")
        if prov["kind"] == "fit":
            for key in ("measurement_file", "device_system", "timing", "rows", "fit_date", "fit_script",
                        "command", "fit_error"):
                if key not in prov:
                    raise EfficiencyError(f"{where}: fitted set '{cls}' lacks provenance.{key}")


_READ_CACHE: dict[tuple[str, int, int], dict] = {}


def _read(path: str) -> dict:
    """The validated document at ``path``, cached by (path, mtime, size): schema validation
    costs ~2 ms per file and ``lowering.lower`` loads 2-3 files per profile on every call
    (it was ~90% of ``analyze(hw=...)`` on small graphs).  Callers only read the document."""
    st = os.stat(path)
    key = (path, st.st_mtime_ns, st.st_size)
    data = _READ_CACHE.get(key)
    if data is None:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        validate(data, path)
        _READ_CACHE[key] = data
    return data


def _prov_text(prov: dict) -> str:
    if prov["kind"] == "fit":
        return (f"architecture constants fitted on {prov['device_system']} {prov['measurement_file']} "
                f"({prov['rows']} rows, {prov['timing']} timing, {prov['fit_date']})")
    return f"{prov['kind']}: {prov.get('source', '')}".rstrip(": ")


def load_constants(family: str, directory: str | None = None) -> FamilyConstants:
    """The constants of ``family`` (``<directory>/<family>.json``).

    Each op class comes from the first of: the family's own set; the set of the family it
    ``inherits`` (when its file names one: a GPU of the same memory technology running the same
    kernel libraries), and of the family that one inherits, and so on; the same for the class's
    ``CLASS_FALLBACK``; ``generic.json``. A family without a file is the generic set
    (``generic=True``).  The per-call scalars (``RUN_PARAMS``) come from the nearest file of the
    same chain that states them (a TPU generation without measurements takes the fitted v5e's)."""
    directory = directory or EFFICIENCY_DIR
    generic = _read(os.path.join(directory, "generic.json"))
    path = os.path.join(directory, f"{family}.json")
    own = _read(path) if family != "generic" and os.path.exists(path) else None
    chain = [(own, "")] if own else []
    # the families it inherits, nearest first (a "-pytorch2.3" variant of nvidia-hopper reaches
    # nvidia-ampere's memory-bound sets through nvidia-hopper)
    seen, doc = {family}, own
    while doc is not None and doc.get("inherits") and doc["inherits"] not in seen:
        name = doc["inherits"]
        seen.add(name)
        doc = _read(os.path.join(directory, f"{name}.json"))
        chain.append((doc, f"inherited from {name}: "))
    arrays = {p: np.zeros(len(OP_CLASSES)) for p in CLASS_PARAMS}
    provenance, inherited = {}, []
    for i, cls in enumerate(OP_CLASSES):
        src = text = None
        # a pooled class (``POOLED_CLASSES``): the family's own set, else generic.json's, before
        # its fallback class (and so on down its chain); a datasheet set stays a datasheet set
        pooled = cls in POOLED_CLASSES and family not in DATASHEET_SETS
        look = chain + [(generic, "generic: ")] if pooled else chain
        for want in class_chain(cls):
            for doc, how in look:
                if want in doc["sets"]:
                    src = doc["sets"][want]
                    via = "" if want == cls else f"as {want}: "
                    text = how + via + _prov_text(src["provenance"])
                    break
            if src is not None:
                break
        if src is None:
            want = next((c for c in class_chain(cls) if c in generic["sets"]), None)
            if want is None:
                raise EfficiencyError(f"generic.json has no set for op class '{cls}'")
            src = generic["sets"][want]
            via = "" if want == cls else f"as {want}: "
            text = "generic: " + via + _prov_text(src["provenance"])
        if own is None or cls not in own["sets"]:
            inherited.append(cls)
        for p in FILE_PARAMS:
            arrays[p][i] = float(src["constants"].get(p, PARAM_DEFAULTS.get(p)))
        if want != cls:   # a cold start is its own kernels' first loads: not carried to a fallback class
            arrays["cold_start_s"][i] = 0.0
        provenance[cls] = text
    scalars = (own or generic).get("scalars", generic["scalars"])
    for p in SCALAR_PARAMS:
        arrays[p] = float(scalars.get(p, generic["scalars"][p]))
    for p in RUN_PARAMS:   # optional: the nearest family of the chain that has it; else 0
        arrays[p] = float(next((d["scalars"][p] for d, _ in chain if p in d.get("scalars", {})), 0.0))
    return FamilyConstants(family if own else "generic", arrays, provenance, own is None, tuple(inherited))


def row_constants(family: str, directory: str | None = None) -> dict:
    """``row_kernels`` of ``family``'s file, or of the nearest file it inherits that states them
    (kind -> its constants: ``c0_cycles``, ``step_cycles``, ``overlap``; ``prediction.row_kernels``);
    {} where none does (no row term)."""
    directory = directory or EFFICIENCY_DIR
    seen, name = set(), family
    while name and name not in seen and os.path.exists(os.path.join(directory, f"{name}.json")):
        seen.add(name)
        doc = _read(os.path.join(directory, f"{name}.json"))
        if doc.get("row_kernels"):
            return {k: v["constants"] for k, v in doc["row_kernels"].items()}
        name = doc.get("inherits")
    return {}


# the kernels of a family's variant file "<family>-<era>.json": "pytorch2.3", PyTorch's 2024
# index_select gather (the families themselves predict its vectorized gather of 2025 on)
PYTORCH23 = "pytorch2.3"
# constants sets that are datasheet peaks, not a family's measured constants
DATASHEET_SETS = ("datasheet", "datasheet-tpu")


def variant_of(family: str, kernels: str, directory: str | None = None) -> str:
    """``family``'s ``-<kernels>`` variant where ``directory`` has its file, else ``family``
    (``kernels`` "": the family itself)."""
    name = f"{family}-{kernels}"
    ok = kernels and os.path.exists(os.path.join(directory or EFFICIENCY_DIR, name + ".json"))
    return name if ok else family


_LOADED: dict[str, FamilyConstants] = {}


def class_provenance(family: str, op_class: str) -> str:
    """The provenance text of ``family``'s constants of ``op_class`` in the shipped files (its own
    set's, or the set it inherits or falls back to, as ``load_constants`` resolved it); each
    family file read once."""
    if family not in _LOADED:
        _LOADED[family] = load_constants(family)
    return _LOADED[family].describe(op_class)


def family_of(profile_id: str, directory: str | None = None) -> str:
    """The family whose file lists ``profile_id`` under ``devices``; ``"generic"`` if none does."""
    directory = directory or EFFICIENCY_DIR
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".json") or name in ("schema.json", "generic.json"):
            continue
        with open(os.path.join(directory, name), encoding="utf-8") as f:
            data = json.load(f)
        if profile_id in data.get("devices", ()):
            return data["family"]
    return "generic"


def units_of(profile) -> float:
    """SM / compute-unit count from a profile's notes ("Units: 108 SMs"); 0 when not stated."""
    hit = re.search(r"Units:\s*(\d+)\s*SMs", getattr(profile, "notes", None) or "")
    return float(hit.group(1)) if hit else 0.0


# the families whose fitted class floors are pooled into one number of cycles per class
# (``floor_cycles``): NVIDIA's, measured on their own kernels; not the "-<kernels>" variants
# (another kernel of the class) nor the datasheet and generic sets
POOLED_FLOOR_PREFIX = "nvidia-"


def floor_cycles(directory: str | None = None) -> np.ndarray:
    """Per op class (``OP_CLASSES``): the kernel floor in cycles of the device clock, pooled over
    the NVIDIA family files: the median, over the families whose own set of the class states the
    clock it was fitted at (``floor_clock_hz``), of ``floor_s * floor_clock_hz``; a class none
    measured takes the first class of its ``class_chain`` that has one; NaN where none has.

    Why pooled: a floor (launch to first instruction, block scheduling, the last wave's drain)
    is the same few thousand cycles on every recent NVIDIA GPU of a class (GEMM 4.4-8.2 k
    cycles, attention 20.6-24.8 k across Ampere, Ada, Hopper and Blackwell), and a family's own
    fitted floor carries its fit's artefacts: a floor fitted in seconds on one device and
    applied to a faster one made the faster device slower on small kernels."""
    directory = directory or EFFICIENCY_DIR
    key = (directory, tuple(sorted((n, os.stat(os.path.join(directory, n)).st_mtime_ns)
                                   for n in os.listdir(directory) if n.endswith(".json"))))
    hit = _FLOOR_CACHE.get(key)
    if hit is not None:
        return hit
    per: dict[str, list[float]] = {}
    for name in sorted(os.listdir(directory)):
        if not (name.startswith(POOLED_FLOOR_PREFIX) and name.endswith(".json")):
            continue
        doc = _read(os.path.join(directory, name))
        if doc["family"] != name[:-5] or "-pytorch" in doc["family"]:
            continue
        for cls, entry in doc["sets"].items():
            c = entry["constants"]
            if cls in POOLED_CLASSES:
                continue   # (generic.json's pooled fit, below)
            if c.get("floor_own", 0.0) > 0:
                continue   # (a set whose floor excludes the row latency: prediction.row_kernels)
            if c.get("floor_clock_hz", 0.0) > 0 and c["floor_s"] > 0:
                per.setdefault(cls, []).append(c["floor_s"] * c["floor_clock_hz"])
    # the pooled classes: generic.json's fit over several GPUs is already one number of cycles
    for cls, entry in _read(os.path.join(directory, "generic.json"))["sets"].items():
        c = entry["constants"]
        if cls in POOLED_CLASSES and c.get("floor_clock_hz", 0.0) > 0 and c["floor_s"] > 0:
            per[cls] = [c["floor_s"] * c["floor_clock_hz"]]
    out = np.full(len(OP_CLASSES), np.nan)
    for i, cls in enumerate(OP_CLASSES):
        want = next((c for c in class_chain(cls) if c in per), None)
        if want is not None:
            out[i] = float(np.median(per[want]))
    _FLOOR_CACHE[key] = out
    return out


_FLOOR_CACHE: dict = {}
