"""The global batch of an ONNX model for training and scaling: ``set_batch(model, B)``.

The rewrite itself is the ONNX frontend's (``analyzer.frontends.onnx.batch``): dim 0 of every
graph input becomes B, and the constants an export baked its batch into (Reshape targets,
Expand / Tile / ConstantOfShape shapes of constants a Concat joins with the batch) follow.
"""

from __future__ import annotations

from typing import Any

from analyzer.frontends.onnx import batch as onnx_batch


def set_batch(model: Any, batch: int):
    """(ModelProto with batch ``batch``, [rewritten node names], old batch, path or None)."""
    r = onnx_batch.set_batch(model, batch)
    return r.model, r.rewritten, r.old, r.path
