"""Model search: latency of many candidates at search speed (``analyzer.CostModel``).

``model`` (the ``CostModel``), ``front`` (candidate -> per-node counts, nothing a search does
not need), ``fast`` (counts from node signatures earlier candidates taught; ``lean`` reads the
structure it needs, ``wire`` the bytes without weights), ``batch`` (lowered candidates stacked into padded batches; one jitted call vmapped
over candidates and profiles, sharded over the local devices), ``dims`` (one graph at many dim
assignments through exact polynomial counts), ``table`` (latency tables of choice-based
spaces), ``grad`` (a differentiable latency function and sensitivities), ``distributed`` (a
sweep spread over a Dask cluster).
"""

from analyzer.search.model import CostModel

__all__ = ["CostModel"]
