"""Reference numbers for the ``light_*.onnx`` models shipped inside the onnx wheel.

Everything here is computed without the analyzer and without any cost rule of opcost: weight counts
by walking the ``TensorProto``s of the file, ResNet-50 MAC FLOPs from the published architecture (and,
as a cross-check, from the Conv/Gemm weight shapes and onnx shape inference).

What the light models look like (onnx 1.23 wheel, ``onnx/backend/test/data/light/``):

* All nine are Caffe2 exports (``onnx-caffe2``), IR version 3, default-domain opset 9, no functions,
  no subgraphs, no Constant nodes, fixed input ``[1,3,224,224]``.
* The big weights are not stored: each is ``ConstantOfShape(<name>__SHAPE)`` where ``<name>__SHAPE`` is
  an int64 initializer holding the weight's shape and the node's ``value`` is float32 ``0.02``. Some
  small float tensors (mostly BatchNormalization scale/bias/mean/var, a few conv biases) are kept as
  real float initializers.
* IR 3 style: every initializer (float weights and the int64 ``__SHAPE`` tensors alike) is also listed
  in ``graph.input``. They are constants here, not user inputs.
* ``light_resnet50`` and ``light_zfnet512`` carry one extra float initializer
  ``gpu_0/imagenet1k_blobs_queue_*_0`` of shape ``[1,1]`` that no node consumes (a Caffe2 leftover).
  It is not a weight "consumed as data", so :func:`float_weight_elements` leaves it out by default.
* ``light_densenet121`` and ``light_inception_v2`` apply a second per-channel affine after each
  BatchNormalization as ``Mul(Unsqueeze(bn_w))`` / ``Add(Unsqueeze(bn_b))``: the Unsqueeze outputs
  are tensors computed from constants; the source tensor is the weight and is counted once.
* ``light_inception_v1`` feeds its FC weight through ``Reshape(ConstantOfShape(...))`` before the
  Gemm: again the ConstantOfShape output is the one weight tensor.
* ``light_squeezenet`` is SqueezeNet **1.1** (conv1 3x3 3->64), despite the plain name.
* ``light_resnet50`` is ResNet-50 **v1.5** (the stride-2 sits on the 3x3 conv of each first
  bottleneck, not on the 1x1), convs without bias, BN with 4 tensors, and a final Gemm 2048->1000.
"""

from __future__ import annotations

import glob
import os

import onnx
from onnx import TensorProto, helper, numpy_helper, shape_inference

LIGHT_DIR = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")

_FLOAT_TYPES = {
    TensorProto.FLOAT,
    TensorProto.FLOAT16,
    TensorProto.DOUBLE,
    TensorProto.BFLOAT16,
}
for _n in ("FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "FLOAT4E2M1", "FLOAT8E8M0"):
    if hasattr(TensorProto, _n):
        _FLOAT_TYPES.add(getattr(TensorProto, _n))


def light_model_paths() -> list[str]:
    """Sorted paths of every ``light_*.onnx`` in the installed onnx wheel."""
    return sorted(glob.glob(os.path.join(LIGHT_DIR, "light_*.onnx")))


def light_model_path(name: str) -> str:
    """Path of ``light_<name>.onnx`` (e.g. ``resnet50``)."""
    return os.path.join(LIGHT_DIR, f"light_{name}.onnx")


def _load(model) -> onnx.ModelProto:
    return model if isinstance(model, onnx.ModelProto) else onnx.load(model)


def _prod(dims) -> int:
    n = 1
    for d in dims:
        n *= int(d)
    return n


def _subgraphs(node: onnx.NodeProto):
    for a in node.attribute:
        if a.type == onnx.AttributeProto.GRAPH:
            yield a.g
        elif a.type == onnx.AttributeProto.GRAPHS:
            yield from a.graphs


def _walk_graphs(graph: onnx.GraphProto):
    yield graph
    for node in graph.node:
        for sub in _subgraphs(node):
            yield from _walk_graphs(sub)


def _consumed_names(graph: onnx.GraphProto) -> set[str]:
    """Names read by any node (in any subgraph) or returned as a graph output."""
    used: set[str] = set()
    for g in _walk_graphs(graph):
        for node in g.node:
            used.update(i for i in node.input if i)
        used.update(o.name for o in g.output)
    return used


def _constant_tensor(node: onnx.NodeProto):
    """(data_type, element count) of a Constant node's value, or None if it has no tensor value."""
    for a in node.attribute:
        if a.name == "value":
            return a.t.data_type, _prod(a.t.dims)
        if a.name == "sparse_value":
            return a.sparse_value.values.data_type, _prod(a.sparse_value.dims)
        if a.name == "value_float":
            return TensorProto.FLOAT, 1
        if a.name == "value_floats":
            return TensorProto.FLOAT, len(a.floats)
        if a.name in ("value_int", "value_string"):
            return TensorProto.INT64 if a.name == "value_int" else TensorProto.STRING, 1
        if a.name in ("value_ints", "value_strings"):
            n = len(a.ints) if a.name == "value_ints" else len(a.strings)
            return (TensorProto.INT64 if a.name == "value_ints" else TensorProto.STRING), n
    return None


def float_weight_tensors(model, *, include_unused: bool = False) -> dict[str, int]:
    """Map name -> element count of every float weight tensor of ``model``, each name once.

    Float weights are: float initializers (and sparse initializers), outputs of Constant nodes with
    float data, and outputs of ConstantOfShape nodes with a float ``value`` (float32 0 when the
    attribute is absent) whose shape input is itself a constant (an initializer or a Constant node);
    the output's element count is the product of that shape tensor's values. Unless
    ``include_unused``, a tensor that no node reads and no graph output returns is left out.
    """
    model = _load(model)
    consumed = _consumed_names(model.graph)
    found: dict[str, int] = {}
    for g in _walk_graphs(model.graph):
        consts: dict[str, onnx.TensorProto] = {t.name: t for t in g.initializer}
        for node in g.node:
            if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
                for a in node.attribute:
                    if a.name == "value":
                        consts[node.output[0]] = a.t
        for t in g.initializer:
            if t.data_type in _FLOAT_TYPES:
                found[t.name] = _prod(t.dims)
        for st in g.sparse_initializer:
            if st.values.data_type in _FLOAT_TYPES:
                found[st.values.name] = _prod(st.dims)
        for node in g.node:
            if node.domain not in ("", "ai.onnx"):
                continue
            if node.op_type == "Constant":
                info = _constant_tensor(node)
                if info is not None and info[0] in _FLOAT_TYPES:
                    found[node.output[0]] = info[1]
            elif node.op_type == "ConstantOfShape":
                dtype = TensorProto.FLOAT
                for a in node.attribute:
                    if a.name == "value":
                        dtype = a.t.data_type
                shape_t = consts.get(node.input[0])
                if shape_t is None or dtype not in _FLOAT_TYPES:
                    continue  # shape computed at run time: not a constant weight
                found[node.output[0]] = _prod(numpy_helper.to_array(shape_t).reshape(-1).tolist())
    if not include_unused:
        found = {k: v for k, v in found.items() if k in consumed}
    return found


def float_weight_elements(model, *, include_unused: bool = False) -> int:
    """Exact element count of all float weight tensors of ``model`` (see :func:`float_weight_tensors`)."""
    return sum(float_weight_tensors(model, include_unused=include_unused).values())


# --------------------------------------------------------------------------------------------------
# ResNet-50 (the light_resnet50 file is v1.5: stride 2 on the 3x3 conv; projection 1x1 with stride).
# Input 1x3x224x224. MACs per conv = C_out * C_in * k*k * H_out * W_out; FLOPs = 2 * MACs.
# --------------------------------------------------------------------------------------------------

_RESNET50_STAGES = (
    # (name, bottleneck width w, blocks, first-block stride); output channels 4*w
    ("conv2_x", 64, 3, 1),
    ("conv3_x", 128, 4, 2),
    ("conv4_x", 256, 6, 2),
    ("conv5_x", 512, 3, 2),
)


def resnet50_mac_flops() -> int:
    """2 x multiply-accumulates of ResNet-50 v1.5 at batch 1, 224x224, with the 2048->1000 FC.

    Written from the architecture; the per-stage arithmetic below is checked in ``__main__``.
    """
    # Stem: conv 7x7/2, 3->64, 224 -> 112:      64*3*7*7*112*112              = 118,013,952 MAC
    macs = 64 * 3 * 7 * 7 * 112 * 112
    # maxpool 3x3/2: 112 -> 56 (no MACs)
    c_in, hw = 64, 56
    for _name, w, blocks, stride in _RESNET50_STAGES:
        ho = hw // stride
        # first block: 1x1 c_in->w at hw (v1.5: no stride here), 3x3 w->w stride s, 1x1 w->4w,
        #              projection 1x1 c_in->4w stride s
        first = c_in * w * hw * hw + 9 * w * w * ho * ho + w * 4 * w * ho * ho + c_in * 4 * w * ho * ho
        # other blocks: 1x1 4w->w, 3x3 w->w, 1x1 w->4w, all at ho: (4 + 9 + 4) * w*w*ho*ho
        rest = (blocks - 1) * 17 * w * w * ho * ho
        macs += first + rest
        c_in, hw = 4 * w, ho
    # conv2_x (w=64, 56x56, s=1):  first = 64*64*3136 + 9*64*64*3136 + 64*256*3136 + 64*256*3136
    #                                    = 12,845,056 + 115,605,504 + 51,380,224 + 51,380,224 = 231,211,008
    #                              rest  = 2 * 17*64*64*3136 = 2 * 218,365,952               = 436,731,904
    #                              stage                                                      = 667,942,912
    # conv3_x (w=128, 56->28, s=2): first = 256*128*3136 + 9*128*128*784 + 128*512*784 + 256*512*784
    #                                    = 102,760,448 + 115,605,504 + 51,380,224 + 102,760,448 = 372,506,624
    #                              rest  = 3 * 17*128*128*784 = 3 * 218,365,952              = 655,097,856
    #                              stage                                                      = 1,027,604,480
    # conv4_x (w=256, 28->14, s=2): first = 512*256*784 + 9*256*256*196 + 256*1024*196 + 512*1024*196
    #                                    = 102,760,448 + 115,605,504 + 51,380,224 + 102,760,448 = 372,506,624
    #                              rest  = 5 * 17*256*256*196 = 5 * 218,365,952              = 1,091,829,760
    #                              stage                                                      = 1,464,336,384
    # conv5_x (w=512, 14->7, s=2):  first = 1024*512*196 + 9*512*512*49 + 512*2048*49 + 1024*2048*49
    #                                    = 102,760,448 + 115,605,504 + 51,380,224 + 102,760,448 = 372,506,624
    #                              rest  = 2 * 17*512*512*49 = 2 * 218,365,952               = 436,731,904
    #                              stage                                                      = 809,238,528
    # avgpool 7x7 -> 2048; FC Gemm 2048 -> 1000:  2048*1000                     = 2,048,000 MAC
    macs += 2048 * 1000
    # total MACs = 118,013,952 + 667,942,912 + 1,027,604,480 + 1,464,336,384 + 809,238,528 + 2,048,000
    #            = 4,089,184,256  ->  FLOPs = 2 * 4,089,184,256 = 8,178,368,512
    return 2 * macs


RESNET50_MAC_FLOPS = 8_178_368_512


def resnet50_params() -> int:
    """Float weight elements of the light ResNet-50 file, from the architecture.

    Convs have no bias; every BN has 4 tensors (scale, bias, mean, var) of C elements; FC has W and b.
    """
    n = 64 * 3 * 7 * 7 + 4 * 64  # stem conv + BN: 9,408 + 256
    c_in = 64
    for _name, w, blocks, _stride in _RESNET50_STAGES:
        for i in range(blocks):
            cin_i = c_in if i == 0 else 4 * w
            n += cin_i * w + 4 * w  # 1x1 reduce + BN
            n += 9 * w * w + 4 * w  # 3x3 + BN
            n += w * 4 * w + 4 * 4 * w  # 1x1 expand + BN
            if i == 0:
                n += c_in * 4 * w + 4 * 4 * w  # projection + BN
        c_in = 4 * w
    n += 2048 * 1000 + 1000  # FC
    # = torchvision's 25,557,032 (which counts BN scale+bias) + 2 * 26,560 BN channels (mean+var)
    return n


def _static_shapes(model: onnx.ModelProto) -> dict[str, list[int]]:
    inferred = shape_inference.infer_shapes(model, strict_mode=True)
    g = inferred.graph
    shapes: dict[str, list[int]] = {}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        dims = vi.type.tensor_type.shape.dim
        if all(d.HasField("dim_value") for d in dims):
            shapes[vi.name] = [d.dim_value for d in dims]
    for t in g.initializer:
        shapes[t.name] = list(t.dims)
    return shapes


def walked_linear_mac_flops(model) -> int:
    """2 x MACs of every Conv and Gemm of ``model``, from weight shapes and inferred output shapes.

    Conv: prod(W.shape) * N * prod(output spatial) (W is [M, C/group, k...], so grouping is in W).
    Gemm: M * N * K from the inferred shapes of A (honouring transA) and Y.
    """
    model = _load(model)
    shapes = _static_shapes(model)
    macs = 0
    for node in model.graph.node:
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        if node.op_type == "Conv":
            w = shapes[node.input[1]]
            y = shapes[node.output[0]]
            macs += _prod(w) * y[0] * _prod(y[2:])
        elif node.op_type == "Gemm":
            a = shapes[node.input[0]]
            y = shapes[node.output[0]]
            k = a[0] if attrs.get("transA", 0) else a[1]
            macs += y[0] * y[1] * k
        elif node.op_type in ("MatMul", "ConvTranspose", "Einsum", "QLinearConv", "MatMulInteger"):
            raise NotImplementedError(f"walked_linear_mac_flops: {node.op_type} not handled")
    return 2 * macs


def _self_check() -> None:
    # ResNet-50: closed form == literal == walk over the file's Conv/Gemm nodes.
    closed = resnet50_mac_flops()
    walked = walked_linear_mac_flops(light_model_path("resnet50"))
    assert closed == RESNET50_MAC_FLOPS, closed
    assert walked == closed, (walked, closed)
    n_conv = sum(n.op_type == "Conv" for n in onnx.load(light_model_path("resnet50")).graph.node)
    assert n_conv == 1 + 3 * (3 + 4 + 6 + 3) + 4, n_conv  # stem + 16 bottlenecks * 3 + 4 projections = 53
    print(f"resnet50 mac_flops: closed form {closed:,} == walked {walked:,}")

    # ResNet-50 weights: architecture closed form == TensorProto walk.
    rn = onnx.load(light_model_path("resnet50"))
    assert resnet50_params() == float_weight_elements(rn) == 25_557_032 + 2 * 26_560, (
        resnet50_params(), float_weight_elements(rn))
    assert float_weight_elements(rn, include_unused=True) == float_weight_elements(rn) + 1  # [1,1] leftover

    for path in light_model_paths():
        m = onnx.load(path)
        onnx.checker.check_model(m)
        tensors = float_weight_tensors(m)
        print(f"{os.path.basename(path):28s} float weight elements {sum(tensors.values()):>12,} "
              f"in {len(tensors):4d} tensors (incl. unused: {float_weight_elements(m, include_unused=True):,})")

    # Literature cross-checks for the plain nets (conv/fc weights + biases, no BN):
    #   VGG-19: 143,667,240; BVLC AlexNet (grouped conv2/4/5): 60,965,224; SqueezeNet 1.1 (the light
    #   file's conv1 is 3x3x3->64, i.e. v1.1, not v1.0's 7x7->96): 1,235,496.
    assert float_weight_elements(light_model_path("vgg19")) == 143_667_240
    assert float_weight_elements(light_model_path("bvlc_alexnet")) == 60_965_224
    assert float_weight_elements(light_model_path("squeezenet")) == 1_235_496
    print("self-check passed")


if __name__ == "__main__":
    _self_check()
