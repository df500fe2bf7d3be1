"""The names DESIGN.md lists as the Python interface are exported by ``from analyzer import *``."""

import analyzer


def test_every_public_entry_point_is_in_all_and_resolves():
    # DESIGN.md, "Interfaces users rely on": analyze, analyze_jax, CostModel, scale (and sweep,
    # Options, the error hierarchy); a name missing from __all__ is missing from a star import
    for name in ("analyze", "analyze_jax", "CostModel", "scale", "sweep", "Options", "AnalyzerError"):
        assert name in analyzer.__all__, name
    for name in analyzer.__all__:
        assert getattr(analyzer, name) is not None, name
    ns: dict = {}
    exec("from analyzer import *", ns)
    assert callable(ns["scale"])
