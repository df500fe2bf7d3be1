"""Writing a fitted ``[power] sustained_clock_ghz`` into a shipped profile's TOML, with its source
line, in place (the fit scripts ``fit_neusight.py`` and ``fit_sustained_gemm.py`` use it)."""

from __future__ import annotations

import os
import re


def _write_fitted(profile_id: str, key: str, section: str, after: str, value: float,
                  note: str, profiles_dir: str) -> None:
    """``key = value`` on the line after the profile's first ``after = ...`` line and
    ``"{section}.{key}" = "fitted (not a datasheet figure): {note}"`` at the end of its sources,
    replacing any earlier pair."""
    import hardware_db

    prof = hardware_db.get(profile_id)
    path = os.path.join(profiles_dir, f"{prof.id}.toml")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    text = re.sub(rf"\n{key} = [^\n]*", "", text)
    text = re.sub(rf'\n"{section}.{key}" = [^\n]*', "", text)
    if not re.search(rf"\n{after} = [^\n]*", text):
        raise ValueError(f"{prof.id}: no {after} line to write {key} after")
    text = re.sub(rf"(\n{after} = [^\n]*)", rf"\1\n{key} = {value}", text, count=1)
    text = text.rstrip("\n") + f'\n"{section}.{key}" = "fitted (not a datasheet figure): {note}"\n'
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def set_sustained_clock(profile_id: str, share: float, source: str, profiles_dir: str) -> float:
    """``[power] sustained_clock_ghz`` = round(boost ``clock_ghz`` x ``share``, 3) GHz after the
    profile's ``clock_ghz`` line, its source ``{share} x the boost clock, {source}``; returns the
    GHz written."""
    import hardware_db

    ghz = round(hardware_db.get(profile_id).clock_ghz * share, 3)
    _write_fitted(profile_id, "sustained_clock_ghz", "power", "clock_ghz", ghz,
                  f"{share:.3f} x the boost clock, {source}", profiles_dir)
    return ghz


def set_datapath_factor(profile_id: str, factor: float, source: str, profiles_dir: str) -> float:
    """``[compute] fp32_datapath_factor`` = round(``factor``, 3) after the profile's ``units``
    line, its source ``source``; returns the figure written."""
    value = round(factor, 3)
    _write_fitted(profile_id, "fp32_datapath_factor", "compute", "units", value, source,
                  profiles_dir)
    return value
