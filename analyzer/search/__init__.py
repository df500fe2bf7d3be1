"""Model search: latency of many candidates at search speed (``analyzer.CostModel``).

Every latency a ``CostModel`` returns equals ``analyze(candidate, hw, ...)``'s prediction for
the same candidate.  Two ways get there:

- the pipeline itself: ``candidate_counts`` runs the real frontend and engine on a candidate
  (no ``Report``, nothing rendered) and ``CostModel.lower`` the real ``lowering.lower``;
- ``fastpath/``: a cache of that pipeline (frontend + engine + lowering) for ONNX candidates
  given as bytes or a ``ModelProto``, filled only from what the real pipeline computed on
  earlier candidates and checked against it (``fastpath/__init__.py`` says which checks run and
  what happens on a mismatch).  Anything the cache cannot vouch for takes the real pipeline;
  ``CostModel.stats()["slow"]`` counts, per reason, the candidates that did.

Modules: ``cost_model`` (the ``CostModel``: ``score``, ``score_dims``, ``table``,
``latency_fn``, ``sensitivity``, ``stats``), ``candidate_counts`` (a candidate -> its per-node
counts through the real frontend + engine), ``fastpath/`` (the checked cache above), ``batch``
(lowered candidates stacked into padded batches; one jitted call vmapped over candidates and
profiles, sharded over the local devices), ``dims/`` (one graph at many dim assignments:
``polynomial`` fits exact count polynomials, ``evaluation`` evaluates them in jitted chunks),
``table`` (latency tables of choice-based spaces), ``grad`` (a differentiable latency function
and sensitivities), ``whatif`` (``analyzer.sensitivity(report)``), ``distributed`` (a sweep
spread over a Dask cluster).
"""

from analyzer.search.cost_model import CostModel

__all__ = ["CostModel"]
