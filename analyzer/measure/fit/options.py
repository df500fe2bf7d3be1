"""How ``calibrate`` fits one op class's rows and what of the fit goes into its table: one place
for the calibration itself and for refits of saved rows (``bench/cpu_refit.py``)."""

from __future__ import annotations

from typing import Any

from analyzer.measure.fit import class_fit as cpu_model
from analyzer.prediction.efficiency.kernel_time import CPU_FIXED_KEYS

# classes whose rows carry their matrix view (``cpu_model.node_features``) into the fit
WITH_VIEW = (cpu_model.TILED_CLASSES + cpu_model.PIECE_CLASSES + cpu_model.IM2COL_CLASSES
             + cpu_model.LAYOUT_FREE_IM2COL + cpu_model.SERIAL_CLASSES)


def fit_job(cls: str, F, B, t, view, peak: float, bw: float, l2_bytes: float, threads: int,
            layout: bool) -> tuple[tuple, dict[str, Any]]:
    """(args, kwargs) of ``cpu_model.fit_class`` for class ``cls``'s rows measured at ``threads``
    threads, ``layout``: at a session level with onnxruntime's NCHWc layout."""
    args = (F, B, t, peak, bw, l2_bytes, view if cls in WITH_VIEW else None,
            cpu_model.TILE_CANDIDATES if cls in cpu_model.TILED_CLASSES else ())
    kwargs = {"parallel": threads > 1,
              "im2col": cls in cpu_model.IM2COL_CLASSES or (cls in cpu_model.LAYOUT_FREE_IM2COL and not layout),
              "k_blocks": cpu_model.K_BLOCKS if cls in cpu_model.K_BLOCK_CLASSES and layout else ()}
    return args, kwargs


def table_of(fit: dict[str, float]) -> dict[str, float]:
    """A class's ``[calibration.tables]`` entry from its ``fit_class`` result (the optional terms
    only where the fit kept them)."""
    table = {"floor_us": fit["floor_s"] * 1e6, "e_c": fit["e_c"], "e_bw": fit["e_bw"],
             "b_half_bytes": fit["b_half"], "l2_gain": fit["l2_gain"], "rows": fit["rows"],
             "fit_mape": fit["fit_mape"]}
    if fit.get("tile_n"):
        table.update({"tile_n": fit["tile_n"], "n_half": fit["n_half"]})
        if fit.get("k_block"):
            table["k_block"] = fit["k_block"]
    if fit.get("par_s"):
        table.update({"par_us": fit["par_s"] * 1e6, "b_par_bytes": fit["b_par"]})
    for name, key, unit in CPU_FIXED_KEYS:
        if fit.get(name):   # the optional fixed terms a class's fit kept
            table[key] = fit[name] / unit
    return table
