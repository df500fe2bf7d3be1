"""bench/fit_neusight.py's ``fit_dispatch``: a host's dispatch is the median of latency - kernel
over its rows at the floor, the kernel predicted with the fit's sets or, where ``arrays`` names the
device, with the constants the product predicts that device's rows with (the product check)."""

from __future__ import annotations

import fit_neusight as fns
import numpy as np
import pandas as pd
import pytest

from analyzer.prediction.efficiency import constants as fc

DEV = "a100_pcie_40gb"


def _rows():
    # three fp32 LayerNorm rows of [rows x 1024] at the floor (bytes: read and write 4 B an element)
    n = np.array([64.0, 128.0, 256.0])
    df = pd.DataFrame({"device_system": DEV, "cls": "norm", "at_floor": True, "mac": 0.0,
                       "vec": 8.0 * n * 1024, "trans": n, "bytes": 2 * 4.0 * n * 1024, "m": 0.0, "n": 0.0,
                       "k": 0.0, "batch": 1.0})
    for j in range(fns.CUDNN_LAUNCHES):
        df[f"cudnn_b{j}"] = np.nan
    return df


def test_the_dispatch_is_net_of_the_arrays_given_for_the_device():
    df = _rows()
    amp = fc.load_constants("nvidia-ampere").arrays
    # measured = the Ampere set's kernel + 30 us exactly: fitted net of that set, the dispatch is 30 us
    df["t"] = fns.kernel_s(df, DEV, amp) + 30e-6
    fit = fns.Fit({})                                         # the shipped generic sets
    got = fns.fit_dispatch(df, fit, {DEV: amp})[(DEV, "norm")]
    assert got == pytest.approx(30e-6, rel=1e-9)
    # without the device's arrays it is net of the fit's own sets: another figure
    other = fns.fit_dispatch(df, fit)[(DEV, "norm")]
    assert abs(other - 30e-6) > 1e-7
