"""bench/fit_efficiency.py can fit a set with its floor held (``hold``), as its ``--floor`` modes
other than "own" do to fit each family at the pooled floor analyze applies: the held constants
come back as given and the free ones are fitted around them."""

from __future__ import annotations

import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("scipy")

import efficiency_class_fit as fe  # noqa: E402

# the gather test's closed-form rows: t = floor + max(bytes / mem_bw, bytes / (units x clock x bpc))
from test_gather_form import A100, BPC, FLOOR_CYCLES, rows  # noqa: E402


def test_a_held_floor_is_kept_and_the_rate_is_fitted_around_it():
    data = [(rows(A100), A100)]
    right = FLOOR_CYCLES / A100["clock_hz"]
    consts, err = fe.fit_memory_class("gather", data, per_element=True, hold={"floor_s": right})
    assert consts["floor_s"] == right and consts["bpc"] == pytest.approx(BPC, rel=1e-3) and err["mape"] < 0.1
    # a floor 30 % too high is held all the same: the fit cannot undo it, the small rows are over-predicted
    high, _ = fe.fit_memory_class("gather", data, per_element=True, hold={"floor_s": 1.3 * right})
    assert high["floor_s"] == 1.3 * right
    assert fe._loss("gather", high, data) > fe._loss("gather", consts, data)

