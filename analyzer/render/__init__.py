"""Formatting only: a ``Report`` -> table, json, csv or markdown text.  Computes nothing."""

from analyzer.render.formats import human_time, render, render_sweep  # noqa: F401
