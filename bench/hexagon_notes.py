"""The fit and cross-validation figures the Hexagon profiles' texts quote, filled from their records.

bench/fit_accelerators.py writes its fit's figures to ``FIT_RECORD`` (bench/results/
fit_accelerators.json) and bench/hexagon_transfer.py its cross-validation scores to
``TRANSFER_RECORD`` (bench/results/hexagon_transfer.json); the fit's write step fills them into
each profile's ``notes`` (the segment ``NOTES_TEMPLATE`` describes; every other word of the notes
stays) and its ``matrix_tflops.fp16`` source (``FP16_SOURCE_TEMPLATE``). tests/bench/
test_hexagon_notes.py checks that the committed profiles quote the committed records.

Figures (MAPE and bias in %, as the records hold them, rounded to 0.1 there): ``deploy_us`` half
the fitted W8A8 deployment offset d_int8 (us: qnn-dlc adds it, qnn-tflite subtracts it);
``lomo`` / ``lofo`` the shipped form's leave-one-model-out / leave-one-family-out MAPE on the
``cv_models`` fitted models, ``cv_lo`` / ``cv_hi`` the smaller / larger of the two; ``in_sample``
the fit's MAPE on its rows; ``held_out`` its MAPE on the ``held_out_models`` held-out models, each
row at its deployment's runtime; ``gen3_w8a8`` the held-out 8 Gen 3 W8A8 cell's MAPE;
``bias_lo`` / ``bias_hi`` the smallest / largest held-out bias over the device x precision cells;
``r_fp16`` the fitted fp16 / int8 throughput ratio.
"""

from __future__ import annotations

import json
import os
import re
import string
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROFILE_DIR = os.path.join(ROOT, "hardware_db", "profiles")
FIT_RECORD = os.path.join(ROOT, "bench", "results", "fit_accelerators.json")
TRANSFER_RECORD = os.path.join(ROOT, "bench", "results", "hexagon_transfer.json")
SCRIPT = "bench/fit_accelerators.py"
COMMAND = "PYTHONPATH=$PWD python bench/fit_accelerators.py ../shared/measurements/accelerators"
# the phone AI Hub timed each profile's device on
PHONE = {"hexagon-sd8gen2": "Galaxy S23", "hexagon-sd8gen3": "Galaxy S24"}

NOTES_TEMPLATE = (
    "Checked against measurements: fitted constants (hardware_db/efficiency/{family}.json) on Qualcomm AI Hub "
    "v0.35.0 {phone} NPU rows (both devices' fit, qnn runtime, activations kept on chip up to npu_onchip_mb per "
    "kernel, the rest streamed, one per-kernel cost, one fp16 / W8A8 ratio of the per-inference cost and one W8A8 "
    "per-inference offset between AI Hub's QNN DLC and TFLite deployments for both devices; a depthwise kernel's "
    "compute at a fitted rate per output element whatever its window, the 8 Gen 3's by the devices' fitted "
    "matrix-rate ratio); the qnn runtime predicts the mean of the two deployments, qnn-dlc and qnn-tflite name "
    "one (W8A8: +/- {deploy_us:.1f} us); error to expect on a whole model at batch 1, fp16 or W8A8: about "
    "{cv_lo:.0f}-{cv_hi:.0f} % ({lomo:.1f} / {lofo:.1f} %) (cross-validated MAPE on the {cv_models} fitted models, "
    "leaving one model / one model family out; bench/hexagon_transfer.py; every graph at the input AI Hub's profile "
    "job took), {in_sample:.1f} % in-sample, {held_out:.1f} % on {held_out_models} held-out models, each row at its "
    "deployment's runtime (8 Gen 3 W8A8 {gen3_w8a8:.1f} %; held-out bias {bias_lo:+.0f} to {bias_hi:+.0f} % per "
    "device and precision: {bias_sign}); details in docs/accuracy.md (section 'Hexagon NPU, whole models')")
FP16_SOURCE_TEMPLATE = (
    "fitted: r_fp16 = {r_fp16:.4f} x the int8 figure ({int8:g}), fitted on Qualcomm AI Hub v0.35.0 whole-model NPU "
    "latencies (fp16 vs W8A8 rows of the same models, both Hexagon devices; not a datasheet figure: Qualcomm "
    "publishes none); {script}, command: {command}. Engine: the Hexagon tensor accelerator (matrix engine).")


def fill(template: str, values: dict) -> str:
    """The template with its named fields formatted from ``values``."""
    return template.format(**values)


def pattern(template: str) -> re.Pattern:
    """A regex matching any fill of ``template``: its literal text exactly, each field as the
    shortest run of characters (a named group) that lets the rest match. The template must start
    and end with literal text (a field at either end would have no bound): ValueError otherwise."""
    if template.startswith("{") or template.endswith("}"):
        raise ValueError("a template starts and ends with literal text")
    parts = []
    for literal, field, _spec, _conv in string.Formatter().parse(template):
        parts.append(re.escape(literal))
        if field is not None:
            parts.append(f"(?P<{field}>.+?)")
    return re.compile("".join(parts))


def replace_segment(text: str, template: str, values: dict) -> str:
    """``text`` with its one fill of ``template`` replaced by the fill from ``values``; ValueError
    when the template's words do not occur exactly once (the text's words changed by hand)."""
    found = list(pattern(template).finditer(text))
    if len(found) != 1:
        raise ValueError(f"{len(found)} segments match the template (expected 1)")
    new = fill(template, values)
    return text[:found[0].start()] + new + text[found[0].end():]


def _basic_string_safe(s: str) -> str:
    """``s`` unchanged when it can stand inside a TOML basic string as it is (no quote, backslash
    or control character); ValueError otherwise."""
    if any(c in s for c in '"\\') or any(ord(c) < 0x20 or ord(c) == 0x7F for c in s):
        raise ValueError(f"text needs TOML escapes: {s[:60]!r}")
    return s


def rewrite_line(text: str, key: str, template: str, values: dict) -> str:
    """The TOML ``text`` with the one line ``key = "..."`` (a one-line basic string) rewritten:
    the template's segment of its value refilled from ``values``, every other byte of the file as
    it was; the result must parse (tomllib) to the same document except that value."""
    line_re = re.compile(rf'(?m)^({re.escape(key)} = ")(.*)("\s*)$')
    found = list(line_re.finditer(text))
    if len(found) != 1:
        raise ValueError(f"{len(found)} lines {key} = \"...\" (expected 1)")
    m = found[0]
    new_value = replace_segment(m.group(2), template, values)
    _basic_string_safe(fill(template, values))
    out = text[:m.start(2)] + new_value + text[m.end(2):]
    old_doc, new_doc = tomllib.loads(text), tomllib.loads(out)
    if _without(old_doc, key) != _without(new_doc, key):
        raise ValueError(f"rewriting {key} changed another value")
    return out


def _without(doc: dict, key: str) -> dict:
    """The parsed document without ``key`` (a dotted-free top-level key or a quoted key of a table)."""
    out = {}
    for k, v in doc.items():
        if isinstance(v, dict):
            out[k] = {kk: vv for kk, vv in v.items() if json.dumps(kk) != key}
        elif k != key:
            out[k] = v
    return out


def load(path: str) -> dict:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def note_values(pid: str, profile: dict, fit: dict, transfer: dict) -> dict:
    """``NOTES_TEMPLATE``'s fields for profile ``pid`` (its parsed TOML ``profile``) from the fit
    record and the transfer record (the figures the module docstring names)."""
    line = transfer["lines"][transfer["form_line"]]
    biases = [c["bias"] for c in fit["held_out_cells"].values()]
    lo, hi = min(biases), max(biases)
    return {"family": profile["family"], "phone": PHONE[pid], "deploy_us": fit["d_int8_us"] / 2,
            "cv_lo": min(line["lomo"], line["lofo"]), "cv_hi": max(line["lomo"], line["lofo"]),
            "lomo": line["lomo"], "lofo": line["lofo"], "cv_models": transfer["models"],
            "in_sample": fit["in_sample"]["mape"], "held_out": fit["held_out"]["mape"],
            "held_out_models": len(fit["held_out_models"]),
            "gen3_w8a8": fit["held_out_cells"]["hexagon-sd8gen3 int8"]["mape"],
            "bias_lo": lo, "bias_hi": hi,
            "bias_sign": "predicted slow" if lo > 0 else "predicted fast" if hi < 0 else "both signs"}


def fp16_values(profile: dict, fit: dict) -> dict:
    """``FP16_SOURCE_TEMPLATE``'s fields: the fit's r_fp16 and the profile's int8 figure."""
    return {"r_fp16": fit["r_fp16"], "int8": profile["matrix_tflops"]["int8"], "script": SCRIPT, "command": COMMAND}


def rewrite_profile(pid: str, text: str, fit: dict, transfer: dict) -> str:
    """Profile ``pid``'s TOML text with its notes' figures and its fp16 source from the records."""
    profile = tomllib.loads(text)
    text = rewrite_line(text, "notes", NOTES_TEMPLATE, note_values(pid, profile, fit, transfer))
    return rewrite_line(text, '"matrix_tflops.fp16"', FP16_SOURCE_TEMPLATE, fp16_values(profile, fit))


def write_profiles(fit: dict, transfer: dict | None = None) -> None:
    """Rewrite each Hexagon profile (``PHONE``'s) in place from the fit record ``fit`` and the
    transfer record (``TRANSFER_RECORD`` when not given)."""
    transfer = transfer if transfer is not None else load(TRANSFER_RECORD)
    for pid in PHONE:
        path = os.path.join(PROFILE_DIR, f"{pid}.toml")
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(rewrite_profile(pid, text, fit, transfer))
