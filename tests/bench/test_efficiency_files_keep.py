"""bench/fit_efficiency.py's ``write_files`` keeps what other scripts own in a family file: the
FMA-unit GEMM sets bench/family_simt.py writes (and the note it appends to the description) and
the softmax sets bench/ampere_softmax.py writes."""

from __future__ import annotations

import json

import efficiency_files as ef


def _set(v):
    return ({"e_compute": v}, {"kind": "fitted", "source": f"test {v}"})


def test_a_refit_keeps_the_fma_unit_and_softmax_sets_and_their_note(tmp_path):
    note = " FMA-unit GEMM sets (bench/family_simt.py, rule: ...): gemm_simt the family's own."
    old = {"schema_version": 1, "family": "nvidia-ampere", "description": "old text." + note,
           "sets": {"gemm": {"constants": {"e_compute": 0.1}, "provenance": {}},
                    "gemm_simt": {"constants": {"e_compute": 0.7}, "provenance": {"kind": "fitted"}},
                    "bgemm_simt": {"constants": {"e_compute": 0.6}, "provenance": {"kind": "fitted"}},
                    "softmax": {"constants": {"e_compute": 0.5}, "provenance": {"kind": "fitted"}}}}
    path = tmp_path / "nvidia-ampere.json"
    path.write_text(json.dumps(old))
    ef.write_files({"nvidia-ampere": {"gemm": _set(0.9)}}, str(tmp_path))
    doc = json.loads(path.read_text())
    assert doc["sets"]["gemm"]["constants"] == {"e_compute": 0.9}          # refitted
    assert doc["sets"]["gemm_simt"]["constants"] == {"e_compute": 0.7}     # family_simt's, kept
    assert doc["sets"]["bgemm_simt"]["constants"] == {"e_compute": 0.6}
    assert doc["sets"]["softmax"]["constants"] == {"e_compute": 0.5}       # ampere_softmax's, kept
    assert doc["description"] == ef.DESCRIPTIONS["nvidia-ampere"] + note   # the new text, the note once
    ef.write_files({"nvidia-ampere": {"gemm": _set(0.8)}}, str(tmp_path))  # a second write: no double note
    assert json.loads(path.read_text())["description"] == ef.DESCRIPTIONS["nvidia-ampere"] + note


def test_kept_note_is_empty_without_a_marker():
    assert ef.kept_note("plain description.") == ""
    ga = " gemm_simt, bgemm_simt: nvidia-ampere's, inherited (bench/family_simt.py)."
    assert ef.kept_note("A40 text." + ga) == ga


def test_replace_note_keeps_the_notes_other_scripts_appended():
    simt = " FMA-unit convolution sets fitted on this repository's H200 fp32 (bench/hopper_conv_simt.py): old."
    tc = " Tensor-core convolution sets fitted on this repository's H200 TF32 and fp16 (bench/hopper_conv_tc.py): x."
    desc = "Base." + simt + tc
    new_simt = " FMA-unit convolution sets fitted on this repository's H200 fp32 (bench/hopper_conv_simt.py): new."
    assert ef.replace_note(desc, (simt[:60],), new_simt) == "Base." + tc + new_simt
    assert ef.replace_note("Base.", (simt[:60],), new_simt) == "Base." + new_simt     # none to take out
    assert ef.replace_note(desc, (tc[:60],), "") == "Base." + simt                     # the last one, to the end
