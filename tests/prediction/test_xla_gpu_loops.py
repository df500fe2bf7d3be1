"""The launches XLA's GPU compiler adds to a scan (``xla_gpu_loops``) in the ``xla`` plan on a GPU
profile: per trip the counter's ``add`` (the condition does not run: the trip count is known), a
``dynamic_slice`` per scanned input a GEMM reads (moving the slice twice), a
``dynamic_update_slice`` per stacked output; once a loop the loop state's copy.  The TPU's plan
is unchanged.

Program (f32, weights closed over): an RNN cell h' = tanh(x_t @ Wx + h @ Wh + b), x_t [B, 16],
h [B, 32], 5 trips, the final h returned (no stacked output) or every h stacked (one).  The body's
kernels: the two dots and the bias + add + tanh loop fusion, 3; beside them the broadcast of h's
zero start, 1 kernel at the top level.

- B = 8: the body's first kernel carries ``dynamic_slice`` (2 x 8 x 16 x 4 = 1,024 B) and
  ``add``; the top-level kernel ``copy``: launches per run 1 + 1 + 5 x (3 + 2) = 27.
- B = 1: x_t @ Wx has M = 1 (a reduction fusion takes the slice in): no ``dynamic_slice``;
  1 + 1 + 5 x (3 + 1) = 22.
- B = 8, hs stacked: one ``dynamic_update_slice`` more per trip (0 B: its slice is the body
  result's bytes, counted there): 27 + 5 = 32.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import analyzer

GPU, TPU = "a100", "tpu-v5e"
F32 = jnp.float32
T, D, H = 5, 16, 32
RNG = np.random.default_rng(0)
WX, WH = RNG.standard_normal((D, H)).astype(np.float32), RNG.standard_normal((H, H)).astype(np.float32)
BIAS = RNG.standard_normal(H).astype(np.float32)


def _rnn(stack: bool):
    def fn(xs):
        def cell(h, x):
            h = jnp.tanh(x @ WX + h @ WH + BIAS)
            return h, (h if stack else None)
        h, hs = jax.lax.scan(cell, jnp.zeros((xs.shape[1], H), F32), xs)
        return hs if stack else h
    return fn


def _inserted(batch: int, stack: bool = False, hw: str = GPU):
    """([(op, bytes)] carried by body kernels, [(op, bytes)] carried by top-level kernels,
    launches per run) of the scan RNN's ``xla`` plan on ``hw``."""
    rep = analyzer.analyze_jax(_rnn(stack), jax.ShapeDtypeStruct((T, batch, D), F32), hw=hw, runtime="xla")
    p = rep.predictions[0]
    seen, body, top, launches = set(), [], [], 0.0
    for i in range(len(rep.nodes)):
        t = p.explain(i)
        if t is None or t.kernel in seen:
            continue
        seen.add(t.kernel)
        (body if t.runs > 1 else top).extend(t.inserted)
        launches += t.runs * (1 + len(t.inserted))
    return body, top, launches


@pytest.mark.parametrize("batch, slices", [(8, [("dynamic_slice", 2 * 8 * D * 4)]), (1, [])])
def test_each_trip_launches_the_counter_and_a_gemm_operands_slice(batch, slices):
    body, top, launches = _inserted(batch)
    assert sorted(body) == sorted(slices + [("add", 0)])
    assert top == [("copy", 0)]
    assert launches == 1 + 1 + T * (3 + 1 + len(slices))


def test_a_stacked_output_adds_an_update_per_trip():
    body, _, launches = _inserted(8, stack=True)
    assert ("dynamic_update_slice", 0) in body
    assert launches == 27 + T


def test_the_tpu_plan_adds_no_launches():
    body, top, _ = _inserted(8, hw=TPU)
    assert body == [] and top == []
