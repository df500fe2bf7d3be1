"""ai.onnx.ml models as skl2onnx writes them: no shape inference for the ml ops, no value_info
for intermediates, an unnamed batch dim on the outputs ([None, 1]).  Without output shapes for
these ops (frontends/ml_shapes.py) almost no converted scikit-learn model could be counted.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper

import analyzer

ML = "ai.onnx.ml"
N, F = 4, 6


def _model(nodes, out_name="Y", out_type=TP.FLOAT, out_shape=(None, 1), opset=17, extra_outputs=()):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TP.FLOAT, [None, F])],
                          [helper.make_tensor_value_info(out_name, out_type, list(out_shape)), *extra_outputs])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(ML, 1)])


def _analyze(m):
    return analyzer.analyze(m, inputs={"X": (N, F)})


def test_linear_regressor_with_an_unnamed_batch_dim():
    lin = helper.make_node("LinearRegressor", ["X"], ["Y"], domain=ML, coefficients=[0.5] * F, intercepts=[0.1])
    t = _analyze(_model([lin])).totals
    # 6 coefficients + 1 intercept; 2*N*F*1 = 48 MACs; one intercept add per row
    assert (t.params, t.mac_flops, t.vector_flops) == (7, 48, 4)


def test_scaler_then_regressor_without_value_info():
    sc = helper.make_node("Scaler", ["X"], ["S"], domain=ML, offset=[0.0] * F, scale=[1.0] * F)
    lin = helper.make_node("LinearRegressor", ["S"], ["Y"], domain=ML, coefficients=[0.5] * F, intercepts=[0.1])
    r = _analyze(_model([sc, lin]))
    assert r.node("LinearRegressor_1").in_specs[0].shape == (N, F)
    # params 12 (offset, scale) + 7; vector 2*N*F (scale) + N (intercepts) = 52
    assert (r.totals.params, r.totals.mac_flops, r.totals.vector_flops) == (19, 48, 52)


def test_svm_regressor_rbf():
    svr = helper.make_node("SVMRegressor", ["X"], ["Y"], domain=ML, kernel_type="RBF",
                           kernel_params=[0.1, 0.0, 3.0], support_vectors=[0.0] * (2 * F),
                           coefficients=[1.0, -1.0], rho=[0.0], n_supports=2)
    t = _analyze(_model([svr])).totals
    # params 12 + 2 + 1; decision 2*N*2 = 16 MACs; RBF per (row, SV): 3F + 1, + a rho add per row
    assert (t.params, t.mac_flops, t.vector_flops, t.transcendentals) == (15, 16, 4 * 2 * (3 * F + 1) + 4, 8)


@pytest.mark.parametrize("opset", [9, 17])
def test_tree_classifier_outputs_at_old_and_new_opsets(opset):
    # one tree, one split on feature 0, two leaves; label [N] int64 and probabilities [N, 2]
    tree = helper.make_node(
        "TreeEnsembleClassifier", ["X"], ["label", "probabilities"], domain=ML, name="trees",
        nodes_treeids=[0, 0, 0], nodes_nodeids=[0, 1, 2], nodes_featureids=[0, 0, 0],
        nodes_values=[0.5, 0.0, 0.0], nodes_modes=["BRANCH_LEQ", "LEAF", "LEAF"],
        nodes_truenodeids=[1, 0, 0], nodes_falsenodeids=[2, 0, 0],
        class_treeids=[0, 0], class_nodeids=[1, 2], class_ids=[0, 1], class_weights=[1.0, 1.0],
        classlabels_int64s=[0, 1])
    m = _model([tree], "label", TP.INT64, (None,), opset=opset,
               extra_outputs=[helper.make_tensor_value_info("probabilities", TP.FLOAT, [None, 2])])
    r = _analyze(m)
    assert [str(s) for s in r.node("trees").out_specs] == ["int64[4]", "float32[4,2]"]
    assert r.totals.params == 1 + 2  # one threshold, two leaf weights


def test_array_feature_extractor_of_class_labels():
    # skl2onnx maps argmax indices [N, 1] to class labels [3]: a 1-D input gives [1, N]
    nodes = [helper.make_node("ArgMax", ["X"], ["am"], axis=1),
             helper.make_node("ArrayFeatureExtractor", ["classes", "am"], ["Y"], domain=ML, name="afe")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TP.FLOAT, [None, F])],
                          [helper.make_tensor_value_info("Y", TP.INT32, None)],
                          [helper.make_tensor("classes", TP.INT32, [3], [0, 1, 2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid(ML, 1)])
    assert str(_analyze(m).node("afe").out_specs[0]) == "int32[1,4]"


def test_a_constant_handed_to_a_scan_is_counted_as_params():
    # skl2onnx's KNN scans the training set [200, F] (a constant) against the input
    body = helper.make_graph(
        [helper.make_node("Identity", ["s_in"], ["s_out"]),
         helper.make_node("Sub", ["s_in", "row"], ["d"]),
         helper.make_node("ReduceSumSquare", ["d"], ["dist"], axes=[1], keepdims=0)],
        "body", [helper.make_tensor_value_info("s_in", TP.FLOAT, [N, F]),
                 helper.make_tensor_value_info("row", TP.FLOAT, [F])],
        [helper.make_tensor_value_info("s_out", TP.FLOAT, [N, F]),
         helper.make_tensor_value_info("dist", TP.FLOAT, [N])])
    scan = helper.make_node("Scan", ["X", "train"], ["Xo", "dists"], num_scan_inputs=1, body=body, name="scan")
    g = helper.make_graph([scan], "g", [helper.make_tensor_value_info("X", TP.FLOAT, [N, F])],
                          [helper.make_tensor_value_info("dists", TP.FLOAT, None)],
                          [helper.make_tensor("train", TP.FLOAT, [200, F], np.zeros(200 * F, np.float32))])
    r = analyzer.analyze(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]))
    assert r.node("scan").cost.params == 200 * F == 1200
    assert r.totals.params == 1200
