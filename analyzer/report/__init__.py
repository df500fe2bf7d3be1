"""Results: the immutable ``Report`` (counts, totals, coverage, predictions) and baselines.

``counts``: ``Report`` and ``Coverage``; ``baseline``: save/compare for CI regression gates.
"""
