"""ai.onnx.ml: classical-ML operators, counted as simple documented vector work.

Their weights live in attributes (coefficients, support vectors, tree nodes), not in tensors; the
rules hand them to the engine as ``Work.held``: params are the learned numbers (coefficients and
intercepts, support vectors, dual coefficients, rho and Platt's prob_a/prob_b, Scaler offsets and
scales, imputed values, the keys and values of lookup tables and encoders' categories, tree
thresholds (one per branch node), leaf weights and base values), counted at every node that holds
them.  weight_bytes add what a run reads of them: every dense array whole (float32 4 bytes, int64
8, a string an 8-byte slot); a lookup table or a tree traversal reads only the entries it visits,
so those add params but no bytes (noted).  The arithmetic is counted from the attributes.  Per
element (vector_flops unless said otherwise):

- Binarizer 1 (compare-select); Scaler 2 (subtract offset, multiply); Imputer 2 (test, select);
  LabelEncoder / CategoryMapper 1 (a table lookup); OneHotEncoder and DictVectorizer 1 per output
  element; ArrayFeatureExtractor reads only the gathered values; FeatureVectorizer, CastMap and
  ZipMap only move bytes (ZipMap writes one value per input element into its maps).
- Normalizer: MAX compare + divide (2), L1 abs + add + divide (3), L2 square + add + divide (3)
  and a sqrt per row.
- LinearClassifier/LinearRegressor: the product with the coefficient matrix is mac_flops
  (2*N*F*E), the intercept add 1 per score, the post transform per score: SOFTMAX 4 + 1 exp,
  SOFTMAX_ZERO 5 + 1 exp, LOGISTIC 2 + 1 exp, PROBIT 3 + 1 (erfinv); the classifier's label is an
  argmax (E-1 compares per row, 1 threshold compare for a single score).
- SVMClassifier/SVMRegressor: a kernel value per (sample, support vector): LINEAR a dot product
  (2F mac), POLY the dot, gamma*dot + coef0 (2) and a pow (1 T), RBF squared distance (3F) +
  gamma (1) + exp (1 T), SIGMOID the dot + 2 + tanh (1 T); the decision functions are mac_flops
  over the kernel values (one-vs-one: every support vector is in K-1 class pairs: 2*(K-1) per
  support vector), one rho add and one vote per pair; a linear SVM without support vectors is a
  LinearClassifier.
- Tree ensembles: per sample and tree, one compare per level of the tree's deepest path (an upper
  bound on the path taken: the depth is computed from the node attributes) and one add per leaf
  weight of the fullest leaf (a gradient-boosted tree's leaves hold one class each; without
  leaf lists, one per output), then the base values (1 per output), an average (1 per output) and the
  post transform.
"""

from __future__ import annotations

from analyzer.counting.cost import Work, register
from analyzer.errors import ShapeError
from analyzer.counting.rules.onnx.common import output

ML = "ai.onnx.ml"

POST_TRANSFORM = {"NONE": (0, 0), "SOFTMAX": (4, 1), "SOFTMAX_ZERO": (5, 1), "LOGISTIC": (2, 1),
                  "PROBIT": (3, 1)}


def _post(name: str, n: int) -> tuple[int, int]:
    v, t = POST_TRANSFORM.get(name or "NONE", (0, 0))
    return v * n, t * n


def _rows_features(x) -> tuple[int, int]:
    shape = x.dims()
    f = shape[-1] if shape else 1
    return (x.numel() // f if f else 0), f


def _values(v) -> list:
    """An attribute that may be a list or a TensorProto, as a flat list."""
    if v is None:
        return []
    if hasattr(v, "dims") and hasattr(v, "data_type"):
        from onnx import numpy_helper

        return numpy_helper.to_array(v).reshape(-1).tolist()
    return list(v)


def _stored(vals: list) -> tuple[str, int]:
    """(dtype, bytes) of an attribute array as a runtime keeps it."""
    v = vals[0]
    if isinstance(v, float):
        return "float32", 4 * len(vals)
    if isinstance(v, (bytes, str)):
        return "string", 8 * len(vals)
    return "int64", 8 * len(vals)


def held(w: Work, *arrays, read: bool = True) -> Work:
    """``w`` with the attribute ``arrays`` as weights the node holds (``Work.held``); ``read``: a
    run reads them whole (dense use) rather than only the entries it visits."""
    params, reads = 0, {}
    for a in arrays:
        vals = _values(a)
        if vals:
            params += len(vals)
            dt, nb = _stored(vals)
            reads[dt] = reads.get(dt, 0) + nb
    if not params:
        return w
    if not read:
        note = "attribute-held weights: counted as params; a run reads only the entries it visits"
        return w._replace(held=(params, ()), note=f"{w.note}; {note}" if w.note else note)
    return w._replace(held=(params, tuple(reads.items())))


def _per_element(ops: int, spec) -> Work:
    return Work(vector_flops=ops * spec.numel())


@register("Binarizer", domain=ML)
def binarizer(ins, outs, ctx):
    return _per_element(1, ins[0])


@register("Scaler", domain=ML)
def scaler(ins, outs, ctx, *, offset=None, scale=None):
    return held(_per_element(2, ins[0]), offset, scale)


@register("Imputer", domain=ML)
def imputer(ins, outs, ctx, *, imputed_value_floats=None, imputed_value_int64s=None):
    return held(_per_element(2, ins[0]), imputed_value_floats, imputed_value_int64s)


@register("LabelEncoder", domain=ML)
def label_encoder(ins, outs, ctx, *, keys_floats=None, keys_int64s=None, keys_strings=None,
                  keys_tensor=None, values_floats=None, values_int64s=None, values_strings=None,
                  values_tensor=None):
    return held(_per_element(1, ins[0]), keys_floats, keys_int64s, keys_strings, keys_tensor,
                values_floats, values_int64s, values_strings, values_tensor, read=False)


@register("CategoryMapper", domain=ML)
def category_mapper(ins, outs, ctx, *, cats_int64s=None, cats_strings=None):
    return held(_per_element(1, ins[0]), cats_int64s, cats_strings, read=False)


@register("OneHotEncoder", domain=ML)
def one_hot_encoder(ins, outs, ctx, *, cats_int64s=None, cats_strings=None):
    return held(_per_element(1, output(outs)), cats_int64s, cats_strings, read=False)


@register("DictVectorizer", domain=ML)
def dict_vectorizer(ins, outs, ctx, *, int64_vocabulary=None, string_vocabulary=None):
    return held(_per_element(1, output(outs)), int64_vocabulary, string_vocabulary, read=False)


@register("CastMap", domain=ML)
def cast_map(ins, outs, ctx):
    return Work(note="the input map has no TensorSpec: only the output is counted")


@register("FeatureVectorizer", domain=ML)
def feature_vectorizer(ins, outs, ctx):
    return Work()  # a concatenation


@register("ArrayFeatureExtractor", domain=ML)
def array_feature_extractor(ins, outs, ctx):
    return Work(reads={0: output(outs).nbytes()})


@register("ZipMap", domain=ML)
def zip_map(ins, outs, ctx):
    return Work(writes=ins[0].nbytes(), note="writes one map value per input element")


@register("Normalizer", domain=ML)
def normalizer(ins, outs, ctx, *, norm="MAX"):
    rows, f = _rows_features(ins[0])
    n = rows * f
    if norm == "MAX":
        return Work(vector_flops=2 * n)
    return Work(vector_flops=3 * n, transcendentals=rows if norm == "L2" else 0)


def _linear(ins, coefficients, post_transform, classifier: bool) -> Work:
    rows, f = _rows_features(ins[0])
    coef = _values(coefficients)
    if not f or len(coef) % f:
        raise ShapeError(f"{len(coef)} coefficients do not divide into rows of {f} features")
    e = len(coef) // f
    scores = rows * e
    pv, pt = _post(post_transform, scores)
    vec = scores + pv  # intercepts + post transform
    if classifier:
        vec += rows * (e - 1 if e > 1 else 1)  # argmax (or a threshold) for the label
    return Work(mac_flops=2 * scores * f, vector_flops=vec, transcendentals=pt)


@register("LinearClassifier", domain=ML)
def linear_classifier(ins, outs, ctx, *, coefficients, intercepts=None, post_transform="NONE"):
    return held(_linear(ins, coefficients, post_transform, True), coefficients, intercepts)


@register("LinearRegressor", domain=ML)
def linear_regressor(ins, outs, ctx, *, coefficients=None, intercepts=None, post_transform="NONE"):
    return held(_linear(ins, coefficients or [], post_transform, False), coefficients, intercepts)


# kernel: (mac per feature, vector per feature, vector per value, transcendental per value)
_KERNEL = {"LINEAR": (2, 0, 0, 0), "POLY": (2, 0, 2, 1), "RBF": (0, 3, 1, 1), "SIGMOID": (2, 0, 2, 1)}


def _kernels(rows: int, f: int, n_sv: int, kernel_type: str) -> tuple[int, int, int]:
    mf, vf, vv, tv = _KERNEL.get(kernel_type or "LINEAR", _KERNEL["LINEAR"])
    values = rows * n_sv
    return values * f * mf, values * (f * vf + vv), values * tv


@register("SVMClassifier", domain=ML)
def svm_classifier(ins, outs, ctx, *, kernel_type="LINEAR", support_vectors=None, coefficients=None,
                   rho=None, prob_a=None, prob_b=None, classlabels_ints=None,
                   classlabels_strings=None, post_transform="NONE"):
    w = _svm_classifier(ins, kernel_type, support_vectors, coefficients, classlabels_ints,
                        classlabels_strings, post_transform)
    return held(w, support_vectors, coefficients, rho, prob_a, prob_b)


def _svm_classifier(ins, kernel_type, support_vectors, coefficients, classlabels_ints,
                    classlabels_strings, post_transform) -> Work:
    rows, f = _rows_features(ins[0])
    sv = _values(support_vectors)
    k = len(_values(classlabels_ints)) or len(_values(classlabels_strings))
    if not sv:  # a linear SVM: one coefficient row per class (or one for two classes)
        return _linear(ins, coefficients or [], post_transform, True)
    n_sv = len(sv) // f
    mac, vec, trans = _kernels(rows, f, n_sv, kernel_type)
    pairs = k * (k - 1) // 2 if k > 2 else 1
    mac += rows * 2 * max(k - 1, 1) * n_sv  # decision functions over the kernel values
    vec += rows * pairs * 2 + rows * max(k - 1, 0)  # rho add + vote per pair, argmax of the votes
    pv, pt = _post(post_transform, rows * max(k, 1))
    return Work(mac_flops=mac, vector_flops=vec + pv, transcendentals=trans + pt)


@register("SVMRegressor", domain=ML)
def svm_regressor(ins, outs, ctx, *, kernel_type="LINEAR", support_vectors=None, coefficients=None,
                  rho=None, n_supports=0, post_transform="NONE"):
    w = _svm_regressor(ins, kernel_type, support_vectors, coefficients, n_supports, post_transform)
    return held(w, support_vectors, coefficients, rho)


def _svm_regressor(ins, kernel_type, support_vectors, coefficients, n_supports,
                   post_transform) -> Work:
    rows, f = _rows_features(ins[0])
    sv = _values(support_vectors)
    if not n_supports or not sv:
        return _linear(ins, coefficients or [], post_transform, False)
    n_sv = len(sv) // f
    mac, vec, trans = _kernels(rows, f, n_sv, kernel_type)
    mac += rows * 2 * n_sv
    pv, pt = _post(post_transform, rows)
    return Work(mac_flops=mac, vector_flops=vec + rows + pv, transcendentals=trans + pt)


# ----------------------------------------------------------------------------- tree ensembles


def _max_depths_v1(treeids, nodeids, modes, true_ids, false_ids) -> list[int]:
    """Deepest path (branch nodes on it) of each tree of the ai.onnx.ml v1-v3 node lists."""
    trees: dict[int, dict[int, tuple[str, int, int]]] = {}
    for t, n, m, a, b in zip(treeids, nodeids, modes, true_ids, false_ids):
        trees.setdefault(t, {})[n] = (m, a, b)
    depths = []
    for nodes in trees.values():
        children = {c for m, a, b in nodes.values() if m != "LEAF" for c in (a, b)}
        roots = [n for n in nodes if n not in children] or [min(nodes)]
        depths.append(max(_depth(nodes, r) for r in roots))
    return depths


def _depth(nodes, root) -> int:
    best, stack = 0, [(root, 0)]
    while stack:
        n, d = stack.pop()
        m, a, b = nodes.get(n, ("LEAF", 0, 0))
        if m == "LEAF":
            best = max(best, d)
            continue
        stack.append((a, d + 1))
        stack.append((b, d + 1))
    return best


def _tree_params(w: Work, thresholds: int, *arrays) -> Work:
    """The learned numbers of a tree ensemble: one threshold per branch node, the leaf weights and
    base values; a traversal reads only its path, so no bytes are added for them."""
    n = thresholds + sum(len(_values(a)) for a in arrays)
    note = "tree thresholds and leaf weights are params; a traversal reads only its path"
    return w._replace(held=(n, ()), note=f"{w.note}; {note}" if w.note else note) if n else w


def _branches(modes) -> int:
    return sum(1 for m in _values(modes) if (m.decode() if isinstance(m, bytes) else m) != "LEAF")


def _leaf_adds(treeids, nodeids) -> int | None:
    """Weight adds per row: per tree, the most weight entries any one leaf holds (the leaf
    reached is data; a gradient-boosted tree holds one class's weight per leaf)."""
    t, n = _values(treeids), _values(nodeids)
    if not t:
        return None
    per_leaf: dict[tuple, int] = {}
    for key in zip(t, n):
        per_leaf[key] = per_leaf.get(key, 0) + 1
    most: dict = {}
    for (tree, _), c in per_leaf.items():
        most[tree] = max(most.get(tree, 0), c)
    return sum(most.values())


def _tree_work(rows: int, depths: list[int], outputs: int, post_transform: str, average: bool,
               leaf_adds: int | None = None) -> Work:
    trees = len(depths)
    adds = trees * outputs if leaf_adds is None else leaf_adds
    vec = rows * (sum(depths) + adds)  # compares down the path, leaf-weight adds
    vec += rows * outputs * (1 + (1 if average else 0))  # base values, average
    pv, pt = _post(post_transform, rows * outputs)
    return Work(vector_flops=vec + pv, transcendentals=pt, estimate=True,
                note="one compare per level of each tree's deepest path (an upper bound)")


@register("TreeEnsembleRegressor", domain=ML)
def tree_ensemble_regressor(ins, outs, ctx, *, nodes_treeids, nodes_nodeids, nodes_modes,
                            nodes_truenodeids, nodes_falsenodeids, n_targets=1,
                            aggregate_function="SUM", post_transform="NONE", target_weights=None,
                            base_values=None, target_treeids=None, target_nodeids=None):
    rows, _f = _rows_features(ins[0])
    depths = _max_depths_v1(nodes_treeids, nodes_nodeids, nodes_modes, nodes_truenodeids, nodes_falsenodeids)
    w = _tree_work(rows, depths, n_targets, post_transform, aggregate_function == "AVERAGE",
                   _leaf_adds(target_treeids, target_nodeids))
    return _tree_params(w, _branches(nodes_modes), target_weights, base_values)


@register("TreeEnsembleClassifier", domain=ML)
def tree_ensemble_classifier(ins, outs, ctx, *, nodes_treeids, nodes_nodeids, nodes_modes,
                             nodes_truenodeids, nodes_falsenodeids, classlabels_int64s=None,
                             classlabels_strings=None, post_transform="NONE", class_weights=None,
                             base_values=None, class_treeids=None, class_nodeids=None):
    rows, _f = _rows_features(ins[0])
    k = len(_values(classlabels_int64s)) or len(_values(classlabels_strings))
    depths = _max_depths_v1(nodes_treeids, nodes_nodeids, nodes_modes, nodes_truenodeids, nodes_falsenodeids)
    w = _tree_work(rows, depths, k, post_transform, False,
                   _leaf_adds(class_treeids, class_nodeids))
    w = w._replace(vector_flops=w.vector_flops + rows * max(k - 1, 1))  # + the argmax label
    return _tree_params(w, _branches(nodes_modes), class_weights, base_values)


@register("TreeEnsemble", domain=ML)
def tree_ensemble(ins, outs, ctx, *, tree_roots, nodes_truenodeids, nodes_trueleafs,
                  nodes_falsenodeids, nodes_falseleafs, n_targets, aggregate_function=1,
                  post_transform=0, nodes_splits=None, leaf_weights=None, membership_values=None):
    rows, _f = _rows_features(ins[0])
    t_ids, t_leaf = _values(nodes_truenodeids), _values(nodes_trueleafs)
    f_ids, f_leaf = _values(nodes_falsenodeids), _values(nodes_falseleafs)
    depths = []
    for root in _values(tree_roots):
        best, stack = 0, [(root, 1)]
        while stack:
            i, d = stack.pop()
            best = max(best, d)
            if not t_leaf[i]:
                stack.append((t_ids[i], d + 1))
            if not f_leaf[i]:
                stack.append((f_ids[i], d + 1))
        depths.append(best)
    names = {0: "NONE", 1: "SOFTMAX", 2: "LOGISTIC", 3: "SOFTMAX_ZERO", 4: "PROBIT"}
    w = _tree_work(rows, depths, n_targets, names.get(post_transform, "NONE"), aggregate_function == 0)
    # every node of the v5 layout is a branch with a split value; membership sets are learned too
    return _tree_params(w, 0, nodes_splits, leaf_weights, membership_values)
