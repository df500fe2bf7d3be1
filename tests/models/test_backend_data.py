"""Every model of the installed onnx wheel's backend test data analyses (issue 4).

1. Each ``onnx/backend/test/data/**/model.onnx`` and ``light/*.onnx`` analyses, with no
   uncosted node.  A model whose inputs have symbolic dims gets them bound from its own
   ``test_data_set_0`` inputs (the data the model runs on), as a user would with ``--dim``.
2. Each node test case of ``onnx.backend.test.case.node.collect_testcases()`` either analyses
   with no uncosted node (ImageDecoder excepted: decoding work depends on the compressed
   bytes; a function op whose size is a graph input stays uncosted: ``SIZE_IS_DATA``) or raises an ``AnalyzerError`` whose message is the one listed for it in
   ``DATA_DEPENDENT`` (shapes or trip counts that only a run-time value decides).  Never
   another exception.
"""

from __future__ import annotations

import glob
import os
import warnings

import onnx
import pytest

import analyzer
from analyzer.errors import AnalyzerError

# Function ops decomposed through their body (frontends/functions.py) stay uncosted, visibly,
# when a size their body needs is a graph input: the decomposition is undone rather than
# guessed.  Case name -> the op left uncosted (its size input).
SIZE_IS_DATA = {
    **{f"test_{w.lower()}{k}": w for w in ("BlackmanWindow", "HammingWindow", "HannWindow")
       for k in ("", "_symmetric")},                                               # 'x' (length)
    **{f"test_center_crop_pad_{k}": "CenterCropPad" for k in (
        "crop", "pad", "crop_and_pad", "crop_axes_hwc", "crop_negative_axes_hwc",
        "crop_axes_chw")},                                                         # 'shape'
}
# Inside a body, a shape decided by the iteration number or a carried value cannot be bound by
# any option: those nodes are reported uncosted and the rest of the model is counted.
# Case name -> the ops left uncosted in the body.
BODY_RUN_TIME = {
    # trip count 5 comes from the declared scan output, but the body slices x[i:i+1] with the
    # iteration number: the slice length is data as far as shapes go
    "test_loop11": ["Add", "Slice"],
}
NEVER_COSTED = frozenset({"ImageDecoder"})  # rules/onnx/uncosted.py: work depends on the bytes

_ROOT = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
_MODELS = sorted(glob.glob(os.path.join(_ROOT, "**", "model.onnx"), recursive=True)) + sorted(
    glob.glob(os.path.join(_ROOT, "light", "*.onnx")))


def _dims_from_test_data(path: str) -> dict[str, int]:
    """Symbolic input dims bound from the model's first test data set (its real inputs)."""
    m = onnx.load(path, load_external_data=False)
    dims: dict[str, int] = {}
    data = os.path.join(os.path.dirname(path), "test_data_set_0")
    inits = {t.name for t in m.graph.initializer}
    real = [vi for vi in m.graph.input if vi.name not in inits]
    for i, vi in enumerate(real):
        params = [d.dim_param for d in vi.type.tensor_type.shape.dim]
        if not any(params):
            continue
        t = onnx.TensorProto()
        with open(os.path.join(data, f"input_{i}.pb"), "rb") as f:
            t.ParseFromString(f.read())
        dims.update({p: int(v) for p, v in zip(params, t.dims) if p})
    return dims


def test_the_wheel_has_backend_data():
    assert len(_MODELS) > 100


@pytest.mark.parametrize("path", _MODELS, ids=lambda p: os.path.relpath(p, _ROOT))
def test_wheel_model_analyses_with_every_node_costed(path):
    r = analyzer.analyze(path, dims=_dims_from_test_data(path) or None)
    assert not r.coverage.uncosted, r.coverage.uncosted


# ----------------------------------------------------------------------------- node cases

_AXES = "its output shape depends on the value of graph input 'axes'"
_SIZE_X = "(computed at run time from graph input 'x'), known only when the model runs"
_CROP = "depends on the value of '~pads' (computed at run time from graph input 'shape')"
_SEQ = "the number of elements of sequence '{}' (a graph input) is only known at run time"
_SEQ_LOOP = "the Loop's trip count M = '~SequenceMap_input_sequence_seqlen' (computed at run time from graph input '{}')"

# Cases whose counts need a value only known when the model runs; the message must say which
# value and where it comes from (no --dim can bind it).  '~' stands for the function-expansion
# prefix ('ReduceL2_test_reduce_l2_..._function_') of the node test's tensor names.
DATA_DEPENDENT: dict[str, str] = {
    # reduce axes fed by a graph input: the reduced shape (even its rank) is data
    **{f"test_reduce_l2_{k}_expanded": _AXES for k in (
        "default_axes_keepdims_example", "default_axes_keepdims_random", "do_not_keepdims_example",
        "do_not_keepdims_random", "empty_set", "keep_dims_example", "keep_dims_random",
        "negative_axes_keep_dims_example", "negative_axes_keep_dims_random")},
    **{f"test_reduce_log_sum_{k}_expanded": _AXES for k in (
        "asc_axes", "default", "desc_axes", "empty_set", "negative_axes")},
    **{f"test_reduce_log_sum_exp_{k}_expanded": _AXES for k in (
        "default_axes_keepdims_example", "default_axes_keepdims_random", "do_not_keepdims_example",
        "do_not_keepdims_random", "empty_set", "keepdims_example", "keepdims_random",
        "negative_axes_keepdims_example", "negative_axes_keepdims_random")},
    # window length = the value of graph input x (a Range limit)
    **{f"test_{w}window{s}_expanded": _SIZE_X
       for w in ("blackman", "hamming", "hann") for s in ("", "_symmetric")},
    # crop/pad target shape = the value of graph input 'shape'
    **{f"test_center_crop_pad_{k}_expanded": _CROP for k in (
        "crop", "pad", "crop_and_pad", "crop_axes_hwc", "crop_negative_axes_hwc", "crop_axes_chw")},
    # output grid size = the value of graph input 'size' (2-D: read inside an If branch)
    "test_affine_grid_2d_expanded": "depends on the value of '~constant_D_H_W_shape' (computed at run time from graph input 'size')",
    "test_affine_grid_2d_align_corners_expanded": "depends on the value of '~constant_D_H_W_shape' (computed at run time from graph input 'size')",
    "test_affine_grid_3d_expanded": "depends on the value of '~constant_D_H_W_shape' (computed at run time from graph input 'size')",
    "test_affine_grid_3d_align_corners_expanded": "depends on the value of '~constant_D_H_W_shape' (computed at run time from graph input 'size')",
    # Loop trip count is a graph input and no scan output fixes it
    "test_loop13_seq": "the Loop's trip count M = 'trip_count' (a graph input) is not a constant",
    "test_loop16_seq_none": "the Loop's trip count M = 'trip_count' (a graph input) is not a constant",
    # Range as a Loop: the count is ceil((limit - start) / delta) of graph inputs (the float and
    # int32 variants get it from their declared scan output instead; these Cast it first)
    "test_range_bfloat16_type_positive_delta_expanded": "(computed at run time from graph inputs 'delta', 'limit', 'start') is not a constant",
    "test_range_float16_type_positive_delta_expanded": "(computed at run time from graph inputs 'delta', 'limit', 'start') is not a constant",
    # SequenceMap over a sequence graph input: its length is data
    **{f"test_sequence_map_{k}": _SEQ.format(s) for k, s in (
        ("identity_1_sequence", "x"), ("identity_2_sequences", "x0"),
        ("identity_1_sequence_1_tensor", "x0"), ("add_2_sequences", "x0"),
        ("add_1_sequence_1_tensor", "x0"), ("extract_shapes", "in_seq"))},
    **{f"test_sequence_map_{k}_expanded": _SEQ_LOOP.format(s) for k, s in (
        ("identity_1_sequence", "x"), ("identity_2_sequences", "x0"),
        ("identity_1_sequence_1_tensor", "x0"), ("add_2_sequences", "x0"),
        ("add_1_sequence_1_tensor", "x0"), ("extract_shapes", "in_seq"))},
}


@pytest.fixture(scope="module")
def node_cases():
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the reference implementations divide by zero on purpose
        return collect_testcases()


def _tilde(message: str, name: str) -> str:
    import re

    return re.sub(r"[A-Za-z]+_" + re.escape(name) + r"_function_", "~", message)


def test_every_node_case_analyses_or_names_its_run_time_value(node_cases):
    assert len(node_cases) > 1000
    problems = []
    errors = set()
    for case in node_cases:
        try:
            r = analyzer.analyze(case.model)
        except AnalyzerError as e:
            errors.add(case.name)
            want = DATA_DEPENDENT.get(case.name)
            got = _tilde(str(e), case.name)
            if want is None or want not in got:
                problems.append(f"{case.name}: {got[:300]}")
            continue
        except Exception as e:  # a crash, never acceptable
            problems.append(f"{case.name}: CRASH {type(e).__name__}: {e}")
            continue
        bad = sorted({n.op for n in r.nodes if n.status == "uncosted"} - NEVER_COSTED)
        expected = [SIZE_IS_DATA[case.name]] if case.name in SIZE_IS_DATA else BODY_RUN_TIME.get(case.name, [])
        if bad != expected:
            problems.append(f"{case.name}: uncosted {bad}")
    assert problems == []
    # the allowlist holds no stale entry: each of its cases still fails as described
    assert sorted(set(DATA_DEPENDENT) - errors) == []
