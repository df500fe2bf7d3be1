"""bench/hexagon_notes.py: the Hexagon profiles' notes and fp16 source quote the recorded fit
(bench/results/fit_accelerators.json) and cross-validation (bench/results/hexagon_transfer.json)
figures, and the template fill rewrites one segment of one line and nothing else.

The drift guard refills each committed profile from the committed records and requires the file
unchanged byte for byte: a figure typed by hand that differs from the records, or a record not
followed by its profiles, fails it."""

from __future__ import annotations

import json
import os
import tomllib

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import hexagon_notes as N  # noqa: E402

# a template starts and ends with literal words (a field at either end would have no bound)
SMALL = "model {name} took {ms:.1f} ms ({bias:+.0f} %)"
TOML = ('# a profile\nid = "x"\nnotes = "Before. model A took 12.3 ms (+5 %); after \u2020."\n'
        '[matrix_tflops]\nint8 = 1.5\n[sources]\n"matrix_tflops.int8" = "a source."\n')


def test_fill_formats_the_named_fields():
    # 12.34 -> "12.3" (.1f), 4.6 -> "+5" (+.0f)
    assert N.fill(SMALL, {"name": "A", "ms": 12.34, "bias": 4.6}) == "model A took 12.3 ms (+5 %)"


def test_pattern_reads_a_fill_back():
    m = N.pattern(SMALL).fullmatch("model A took 12.3 ms (+5 %)")
    assert m.groupdict() == {"name": "A", "ms": "12.3", "bias": "+5"}


def test_replace_segment_keeps_the_words_around_it():
    text = "Before. model A took 12.3 ms (+5 %); after."
    out = N.replace_segment(text, SMALL, {"name": "A", "ms": 9.96, "bias": -11.2})
    assert out == "Before. model A took 10.0 ms (-11 %); after."


def test_replace_segment_refuses_text_whose_words_changed():
    with pytest.raises(ValueError):
        N.replace_segment("model A needed 12.3 ms (+5 %)", SMALL, {"name": "A", "ms": 1.0, "bias": 0.0})


def test_rewrite_line_changes_only_that_line():
    out = N.rewrite_line(TOML, "notes", SMALL, {"name": "A", "ms": 7.0, "bias": 20.04})
    assert out == TOML.replace("12.3 ms (+5 %)", "7.0 ms (+20 %)")
    assert tomllib.loads(out)["notes"] == "Before. model A took 7.0 ms (+20 %); after \u2020."


def test_rewrite_line_of_a_quoted_source_key():
    out = N.rewrite_line(TOML, '"matrix_tflops.int8"', "a {w}.", {"w": "figure"})
    assert out == TOML.replace('"a source."', '"a figure."')


def test_a_template_must_start_and_end_with_words():
    for bad in ("{w} took", "took {w}"):
        with pytest.raises(ValueError):
            N.pattern(bad)


def test_rewrite_line_refuses_a_value_that_needs_escapes():
    with pytest.raises(ValueError):
        N.rewrite_line(TOML, "notes", SMALL, {"name": 'A "x"', "ms": 7.0, "bias": 0.0})


def _records() -> tuple[dict, dict]:
    return N.load(N.FIT_RECORD), N.load(N.TRANSFER_RECORD)


@pytest.mark.parametrize("pid", sorted(N.PHONE))
def test_committed_profile_quotes_the_records(pid):
    fit, transfer = _records()
    path = os.path.join(N.PROFILE_DIR, f"{pid}.toml")
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    assert N.rewrite_profile(pid, text, fit, transfer) == text


def test_drift_guard_sees_a_changed_figure():
    fit, transfer = _records()
    with open(os.path.join(N.PROFILE_DIR, "hexagon-sd8gen2.toml"), encoding="utf-8") as fh:
        text = fh.read()
    moved = json.loads(json.dumps(fit))
    moved["held_out"]["mape"] += 0.1
    assert N.rewrite_profile("hexagon-sd8gen2", text, moved, transfer) != text


def test_records_agree_with_the_shipped_constants_and_each_other():
    fit, transfer = _records()
    for pid, fam in (("hexagon-sd8gen2", "qualcomm-hexagon-v73"), ("hexagon-sd8gen3", "qualcomm-hexagon-v75")):
        with open(os.path.join(ROOT, "hardware_db", "efficiency", f"{fam}.json"), encoding="utf-8") as fh:
            eff = json.load(fh)
        # the record holds d_int8 to 0.01 us and r_fp16 to 4 decimals (bench/fit_accelerators.fit_record)
        assert round(eff["scalars"]["qnn_deploy_int8_s"] * 1e6, 2) == fit["d_int8_us"]
        assert all(s["provenance"]["r_fp16"] == fit["r_fp16"] for s in eff["sets"].values())
        with open(os.path.join(N.PROFILE_DIR, f"{pid}.toml"), "rb") as fh:
            prof = tomllib.load(fh)
        # fp16 = round(r_fp16 x int8, 2) with the unrounded r_fp16: within 0.01 of the record's
        assert abs(prof["matrix_tflops"]["fp16"] - fit["r_fp16"] * prof["matrix_tflops"]["int8"]) <= 0.01
    # the cross-validation was run on the fit's rows
    assert transfer["fitted_rows"] == fit["fitted_rows"] and transfer["models"] == len(fit["fitted_models"])
