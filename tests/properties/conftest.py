"""Hypothesis settings of the property suite: derandomized (the same examples every run, so CI
is stable), no per-example deadline (the first example of a test pays jax/onnx warm-up), and
few enough examples that the whole suite stays under ~60 s."""

from __future__ import annotations

from hypothesis import HealthCheck, settings

settings.register_profile(
    "opcost-ci", derandomize=True, deadline=None, max_examples=40, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
