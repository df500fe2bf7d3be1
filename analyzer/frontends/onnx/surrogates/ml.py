"""Output shapes of ai.onnx.ml ops that ONNX shape inference leaves unknown.

ONNX has no inference for LinearRegressor/Classifier, SVM*, TreeEnsemble*, Scaler,
Normalizer, Imputer, ArrayFeatureExtractor or FeatureVectorizer, and converters such as
skl2onnx write no value_info for intermediates and an unnamed batch dim on the outputs: without
these surrogates almost no converted scikit-learn model could be counted.  They work like the
onnxruntime contrib surrogates (``contrib_shapes``): standard ops with the same output names and
shapes, in a private copy used only for inference.  Shapes follow the ai.onnx.ml operator
definitions as onnxruntime runs them (checked against it):

- Scaler, Normalizer, Imputer, Binarizer: the input's shape (Scaler and Normalizer give float);
- LinearRegressor [N, targets]; SVMRegressor [N, 1]; TreeEnsembleRegressor / TreeEnsemble
  [N, n_targets];
- classifiers (Linear, SVM, TreeEnsemble): label [N] (int64 or string, from the class labels)
  and scores [N, K], K the number of class labels (also for a binary model with one
  coefficient row);
- ArrayFeatureExtractor: the input with its last axis replaced by the selected indices ([1, k]
  for a 1-D input); FeatureVectorizer: [N, sum(inputdimensions)]; CategoryMapper: the input's
  shape, string <-> int64.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from onnx import TensorProto

from analyzer.frontends.onnx.surrogates.emit import F32, I64, input_dtype, Emit

ML = "ai.onnx.ml"
STR = TensorProto.STRING


def _static_rows(e: Emit) -> list[int] | None:
    shape = e.info.shapes.get(e.inp(0))
    if shape is None or any(d is None for d in shape[:-1]):
        return None
    return list(shape[:-1]) if len(shape) > 1 else [1]


def _fill(e: Emit, out: str | None, *tail: int, dtype: int = F32) -> None:
    """``out`` := [rows..., *tail] of ``dtype``, declared statically when the rows are static."""
    if not out:
        return
    rows = _static_rows(e)
    e.fill(out, _rows(e), *tail, dtype=dtype)
    if rows is not None:
        e.declared[out] = (*rows, *tail)


def _rows(e: Emit) -> str:
    """The input's shape without its feature axis ([N] for [N, F]; [1] for a 1-D input)."""
    x = e.inp(0)
    shape = e.info.shapes.get(x)
    if shape is None:
        raise ValueError("input rank unknown")
    if len(shape) < 2:
        return e.const([1])
    if all(d is not None for d in shape[:-1]):  # static: constants (old opsets cannot
        return e.const(list(shape[:-1]))         # propagate Shape -> Slice values)
    return e.dims(x, 0, -1)


def _same(dtype=None):
    def make(e: Emit):
        e.like(e.out(0), e.inp(0))
        return [dtype or input_dtype(e, 0)]
    return make


def _labels(e: Emit, ints: str, strings: str) -> tuple[int, int]:
    k = len(e.attr(ints) or ()) or len(e.attr(strings) or ())
    return k, (I64 if e.attr(ints) else STR)


def _classifier(ints: str, strings: str):
    def make(e: Emit):
        k, label_type = _labels(e, ints, strings)
        if not k:
            return None
        _fill(e, e.out(0), dtype=label_type)
        _fill(e, e.out(1), k)
        return [label_type, F32]
    return make


def _regressor(width: Callable[[Emit], int]):
    def make(e: Emit):
        _fill(e, e.out(0), width(e))
        return [F32]
    return make


def _array_feature_extractor(e: Emit):
    x, idx = e.inp(0), e.inp(1)
    if e.info.rank(x) == 1:  # a 1-D input gives [1, number of indices]
        shape = e.info.shapes.get(idx)
        if shape is not None and all(d is not None for d in shape):
            e.fill(e.out(0), e.const([1, int(np.prod(shape))]))
            e.declared[e.out(0)] = (1, int(np.prod(shape)))
        else:
            e.fill(e.out(0), 1, e.op("Reshape", [e.op("Size", [idx]), e.const([1])]))
    else:
        flat = e.op("Reshape", [idx, e.const([-1])])
        e.op("Gather", [x, flat], e.out(0), axis=-1)
    return [input_dtype(e, 0)]


def _feature_vectorizer(e: Emit):
    _fill(e, e.out(0), sum(e.attr("inputdimensions") or ()))
    return [F32]


def _category_mapper(e: Emit):
    e.like(e.out(0), e.inp(0))
    return [I64 if input_dtype(e, 0) == STR else STR]


SURROGATES: dict[str, Callable] = {
    "Scaler": _same(F32), "Normalizer": _same(F32), "Imputer": _same(), "Binarizer": _same(),
    "LinearRegressor": _regressor(lambda e: e.attr("targets", 1)),
    "SVMRegressor": _regressor(lambda e: 1),
    "TreeEnsembleRegressor": _regressor(lambda e: e.attr("n_targets", 1)),
    "TreeEnsemble": _regressor(lambda e: e.attr("n_targets", 1)),
    "LinearClassifier": _classifier("classlabels_ints", "classlabels_strings"),
    "SVMClassifier": _classifier("classlabels_ints", "classlabels_strings"),
    "TreeEnsembleClassifier": _classifier("classlabels_int64s", "classlabels_strings"),
    "ArrayFeatureExtractor": _array_feature_extractor,
    "FeatureVectorizer": _feature_vectorizer,
    "CategoryMapper": _category_mapper,
}
