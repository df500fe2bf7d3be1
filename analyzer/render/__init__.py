"""Formatting only: a ``Report`` -> table, json, csv or markdown text.  Computes nothing.

``render``, ``render_sweep`` and ``human_time`` are loaded on first use, so that the CLI's
start-up (which needs only ``analyzer.render.safe`` for its error lines) imports no renderer."""


def __getattr__(name):
    if name in ("human_time", "render", "render_sweep"):
        from analyzer.render import formats

        return getattr(formats, name)
    raise AttributeError(f"module 'analyzer.render' has no attribute '{name}'")
