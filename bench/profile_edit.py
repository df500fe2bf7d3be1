"""Writing a fitted ``[power] sustained_clock_ghz`` into a shipped profile's TOML, with its source
line, in place (the fit scripts ``fit_neusight.py`` and ``fit_sustained_gemm.py`` use it)."""

from __future__ import annotations

import os
import re


def set_sustained_clock(profile_id: str, share: float, source: str, profiles_dir: str) -> float:
    """``sustained_clock_ghz`` = round(boost ``clock_ghz`` x ``share``, 3) GHz after the profile's
    ``clock_ghz`` line, and ``"power.sustained_clock_ghz" = "fitted (not a datasheet figure):
    {share} x the boost clock, {source}"`` in its sources, replacing any earlier pair; returns
    the GHz written."""
    import hardware_db

    prof = hardware_db.get(profile_id)
    path = os.path.join(profiles_dir, f"{prof.id}.toml")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    text = re.sub(r"\nsustained_clock_ghz = [^\n]*", "", text)
    text = re.sub(r'\n"power.sustained_clock_ghz" = [^\n]*', "", text)
    ghz = round(prof.clock_ghz * share, 3)
    text = re.sub(r"(\nclock_ghz = [^\n]*)", rf"\1\nsustained_clock_ghz = {ghz}", text, count=1)
    text = text.rstrip("\n") + (f'\n"power.sustained_clock_ghz" = "fitted (not a datasheet figure): '
                                f'{share:.3f} x the boost clock, {source}"\n')
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return ghz


def set_datapath_factor(profile_id: str, factor: float, source: str, profiles_dir: str) -> float:
    """``[compute] fp32_datapath_factor`` = round(``factor``, 3) after the profile's ``units`` line,
    and ``"compute.fp32_datapath_factor" = "fitted (not a datasheet figure): {source}"`` in its
    sources, replacing any earlier pair; returns the figure written."""
    import hardware_db

    prof = hardware_db.get(profile_id)
    path = os.path.join(profiles_dir, f"{prof.id}.toml")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    text = re.sub(r"\nfp32_datapath_factor = [^\n]*", "", text)
    text = re.sub(r'\n"compute.fp32_datapath_factor" = [^\n]*', "", text)
    value = round(factor, 3)
    if not re.search(r"\nunits = [^\n]*", text):
        raise ValueError(f"{prof.id}: no [compute] units line to write fp32_datapath_factor after")
    text = re.sub(r"(\nunits = [^\n]*)", rf"\1\nfp32_datapath_factor = {value}", text, count=1)
    text = text.rstrip("\n") + f'\n"compute.fp32_datapath_factor" = "fitted (not a datasheet figure): {source}"\n'
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return value
