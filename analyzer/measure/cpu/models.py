"""The synthetic single-op models ``analyze hw calibrate`` runs (never a user's model).

Each op class is a set of single-node models of different sizes, built with ``onnx.helper``:
inputs are graph inputs (nothing constant-folds) and each output feeds a 1-element Slice so it
lives in onnxruntime's arena (a graph output is allocated fresh each run, and its page faults
made a 64 MB Add run at a third of its in-graph bandwidth).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from analyzer.measure.onnx_build import Builder, sizes


def calibration_models(scale: float = 1.0) -> dict[str, Any]:
    """``{op class: onnx.ModelProto}``, each a set of independent single-op nodes.

    The shapes span the regimes of common networks (stems, 1x1 and 3x3 convs at 7-112 pixels,
    depthwise 3/5/7, GEMV to square GEMMs) but none is a layer of a model bench/accuracy_cpu.py
    evaluates (same op, input and weight shapes, strides, group): test_calibration_holdout checks it."""
    return {
        "gemm": _gemm(),
        "conv": _conv(),
        "conv_dw": _conv_dw(),
        "conv_1x1": _conv_1x1(),
        "elementwise": _elementwise(scale),
        "activation": _activation(scale),
        "swish": _swish(scale),
        "norm": _norm(),
        "norm_fused": _norm_fused(),
        "attention": _attention(),
        "softmax": _softmax(),
        "reduce": _reduce(),
        "gather": _gather(),
        "pooling": _pooling(),
        "conv1d": _conv1d(),
        "pool1d": _pool1d(),
        "movement": _movement(),
        "view": _view(),
        "rnn": _rnn(),
    }


def _gemm():
    b = Builder(1)
    for m, k, n in [(1, 256, 256), (1, 768, 768), (1, 1024, 4096), (1, 4096, 1024), (4, 512, 512),
                    (8, 768, 768), (16, 256, 1024), (32, 128, 128), (32, 768, 3072), (64, 64, 64),
                    (64, 512, 512), (128, 768, 768), (128, 3072, 768), (197, 384, 1152),
                    (256, 256, 256), (256, 1024, 1024), (512, 512, 2048), (1024, 256, 256),
                    (784, 96, 384), (3136, 64, 64), (50, 512, 10), (16, 32, 32),
                    # GEMVs whose weights (0.4-1.3 MB) straddle a core's 1 MB L2: without them
                    # the cache gain was poorly identified (two calibrations: MLP 12.1, 13.9 us)
                    (1, 320, 320), (1, 512, 384), (1, 448, 576), (1, 640, 512),
                    # few and odd output columns: what identifies the tile of output columns a
                    # kernel pads to, and its narrow-tile factor (cpu_model.fit_class)
                    (256, 512, 8), (128, 256, 24), (64, 384, 40), (512, 128, 48), (200, 320, 4)]:
        b.add("MatMul", [(1, m, k)], weights=[(k, n)])
    for m, k, n in [(1, 512, 960), (32, 256, 256), (128, 512, 512)]:
        b.add("Gemm", [(m, k)], weights=[(n, k), (n,)], attrs={"transB": 1})
    # batched: many small matrices identify the cost per matrix (cpu_model.PIECE_CLASSES)
    for h, s, d in [(4, 32, 64), (12, 128, 64), (8, 256, 32), (2, 16, 16), (32, 16, 16), (16, 32, 8),
                    (48, 8, 64), (6, 64, 16)]:
        b.add("MatMul", [(1, h, s, d), (1, h, d, s)])
    # onnxruntime's fused matrix ops (its default level): FusedMatMul (attention scores, the
    # transpose and scale folded in), Gemm with bias on small M
    for h, s, d in [(2, 8, 32), (4, 32, 64), (12, 128, 64), (24, 16, 32)]:
        b.add("FusedMatMul", [(1, h, s, d), (1, h, s, d)], attrs={"alpha": 0.125, "transB": 1},
              domain="com.microsoft")
    for m, k, n in [(8, 64, 64), (8, 256, 1024), (16, 768, 768)]:
        b.add("Gemm", [(m, k)], weights=[(n, k), (n,)], attrs={"transB": 1})
    return b.model()


def _conv():
    b = Builder(2)
    for c_in, c_out, hw, k, s in [(3, 32, 208, 3, 2), (16, 16, 56, 3, 1), (32, 32, 56, 3, 1),
                                  (64, 64, 52, 3, 1), (128, 128, 30, 3, 1), (256, 256, 16, 3, 1),
                                  (512, 512, 8, 3, 1), (64, 128, 60, 3, 2), (8, 8, 32, 3, 1),
                                  (3, 64, 208, 7, 2), (96, 96, 28, 5, 1),
                                  # few and odd output channels (the tile they pad to)
                                  (32, 8, 48, 3, 1), (32, 24, 48, 3, 1), (48, 40, 24, 3, 1),
                                  (24, 4, 96, 3, 1)]:
        b.add("Conv", [(1, c_in, hw, hw)], weights=[(c_out, c_in, k, k), (c_out,)],
              attrs={"pads": [k // 2] * 4, "strides": [s, s]})
    # FusedConv (Conv + Relu: what onnxruntime runs for a conv followed by its activation)
    for c_in, c_out, hw, k, s in [(16, 32, 56, 3, 1), (64, 64, 28, 3, 1), (3, 16, 64, 3, 2)]:
        b.add("FusedConv", [(1, c_in, hw, hw)], weights=[(c_out, c_in, k, k), (c_out,)],
              attrs={"pads": [k // 2] * 4, "strides": [s, s], "activation": "Relu"},
              domain="com.microsoft")
    return b.model()


def _conv_dw():
    b = Builder(3)
    for c, hw, k, s in [(32, 104, 3, 1), (96, 104, 3, 2), (144, 52, 3, 1), (192, 30, 3, 1),
                        (384, 16, 3, 1), (960, 8, 3, 1), (96, 52, 7, 1), (768, 8, 7, 1),
                        (240, 30, 5, 1), (16, 16, 3, 1),
                        # many channels at 7-14 pixels (the late stages of mobile networks)
                        (512, 14, 3, 1), (256, 14, 3, 1), (1024, 7, 3, 1), (600, 12, 5, 1),
                        (128, 28, 3, 1), (48, 96, 3, 1)]:
        b.add("Conv", [(1, c, hw, hw)], weights=[(c, 1, k, k), (c,)],
              attrs={"pads": [k // 2] * 4, "strides": [s, s], "group": c})
    for c, hw, k, s in [(32, 56, 3, 1), (144, 28, 3, 2), (64, 16, 3, 1)]:
        b.add("FusedConv", [(1, c, hw, hw)], weights=[(c, 1, k, k), (c,)],
              attrs={"pads": [k // 2] * 4, "strides": [s, s], "group": c, "activation": "Relu"},
              domain="com.microsoft")
    return b.model()


def _conv_1x1():
    b = Builder(4)
    for c_in, c_out, hw in [(32, 16, 104), (16, 96, 104), (24, 144, 52), (144, 24, 52),
                            (64, 256, 56), (256, 64, 56), (128, 512, 28), (512, 128, 28),
                            (320, 1280, 8), (960, 160, 8), (8, 8, 16),
                            # expansions and projections of mobile networks' middle stages
                            (24, 128, 56), (128, 24, 56), (48, 288, 28), (288, 48, 28),
                            (96, 576, 14), (576, 96, 14),
                            # few and odd output channels (the tile they pad to)
                            (64, 8, 48), (96, 40, 28), (32, 4, 64), (128, 24, 24)]:
        b.add("Conv", [(1, c_in, hw, hw)], weights=[(c_out, c_in, 1, 1), (c_out,)])
    for c_in, c_out, hw in [(32, 64, 56), (96, 24, 28), (16, 16, 16)]:
        b.add("FusedConv", [(1, c_in, hw, hw)], weights=[(c_out, c_in, 1, 1), (c_out,)],
              attrs={"activation": "Relu"}, domain="com.microsoft")
    return b.model()


def _elementwise(scale: float):
    # elementwise / bandwidth: 4 KB .. 64 MB per tensor (x scale)
    elems = sizes(1024, 16 * 1024 * 1024 * scale, 13)
    b = Builder(5)
    for e in elems:
        b.add("Add", [(e,), (e,)])
    for e in elems[::2]:
        b.add("Mul", [(e,)], weights=[(1,)])
        b.add("Relu", [(e,)])
    return b.model()


def _activation(scale: float):
    b = Builder(6)
    for e in sizes(1024, 4 * 1024 * 1024 * scale, 6):
        b.add("Sigmoid", [(e,)])
        b.add("Tanh", [(e,)])
        b.add("Erf", [(e,)])
        b.add("Gelu", [(e,)], domain="com.microsoft")
    # onnxruntime's fused GELUs (bias add + GELU) on [rows, width] tensors
    for r, h in [(8, 256), (16, 3072), (128, 3072), (512, 4096)]:
        b.add("BiasGelu", [(1, r, h)], weights=[(h,)], domain="com.microsoft")
        b.add("FastGelu", [(1, r, h)], weights=[(h,)], domain="com.microsoft")
    return b.model()


def _swish(scale: float):
    # QuickGelu at alpha = 1: the SiLU x * sigmoid(x) onnxruntime fuses (op_classes: swish; 2.5x
    # faster than at alpha 1.702, which earlier rows used: EfficientNet's SiLUs were 2.5x over)
    b = Builder(17)
    for e in sizes(1024, 4 * 1024 * 1024 * scale, 6):
        b.add("QuickGelu", [(e,)], attrs={"alpha": 1.0}, domain="com.microsoft")
    for c, hw in [(24, 96), (64, 48), (160, 20), (8, 1)]:
        b.add("QuickGelu", [(1, c, hw, hw)], attrs={"alpha": 1.0}, domain="com.microsoft")
    return b.model()


def _norm():
    b = Builder(7)
    for r, h in [(1, 64), (16, 128), (32, 768), (128, 768), (197, 384), (512, 1024), (3136, 96),
                 (8, 2048), (1024, 256),
                 # few rows: where a multi-threaded runtime starts to split the kernel over its
                 # threads (cpu_model.fit_class's thread-split step)
                 (2, 32), (4, 96), (8, 48), (24, 64), (48, 128)]:
        b.add("LayerNormalization", [(1, r, h)], weights=[(h,), (h,)], attrs={"axis": -1})
    return b.model()


def _norm_fused():
    # onnxruntime's SkipLayerNormalization (residual add + bias + LayerNorm in one contrib
    # kernel): its own class (on a 2-core EPYC with onnxruntime 1.32 it took 8-12x
    # LayerNormalization's time at the same size; its RMS variant did not, and stays in norm)
    b = Builder(15)
    for r, h in [(1, 64), (8, 64), (8, 768), (32, 256), (128, 768), (197, 384), (512, 1024),
                 (16, 128)]:
        b.add("SkipLayerNormalization", [(1, r, h), (1, r, h)], weights=[(h,), (h,), (h,)],
              attrs={"epsilon": 1e-5}, domain="com.microsoft")
    return b.model()


def _attention():
    # onnxruntime's fused Attention (QKV projection + scaled dot-product + softmax per head)
    b = Builder(16)
    for bs, s_, h, heads in [(1, 8, 64, 2), (1, 16, 128, 4), (1, 32, 256, 4), (1, 64, 384, 6),
                             (1, 128, 768, 12), (1, 8, 768, 12), (2, 16, 128, 4), (4, 32, 64, 4),
                             (3, 8, 256, 8)]:   # (batch > 1: its cost per item x head)
        b.add("Attention", [(bs, s_, h)], weights=[(h, 3 * h), (3 * h,)],
              attrs={"num_heads": heads}, domain="com.microsoft")
    # with a mask_index (int32 [batch]: what onnxruntime's fusion of a BERT with an attention
    # mask makes): the kernel first builds a [batch, S, S] mask, 2.5-4 us more at S = 16 here
    for bs, s_, h, heads in [(2, 32, 128, 4), (1, 32, 256, 4), (4, 8, 128, 2), (1, 128, 768, 12)]:
        b.add("Attention", [(bs, s_, h), (bs,)], weights=[(h, 3 * h), (3 * h,)],
              attrs={"num_heads": heads}, domain="com.microsoft", int_inputs=(1,))
        node = b.nodes[-1]
        x, mask, w, bias = list(node.input)
        node.input[:] = [x, w, bias, mask]
        next(v for v in b.inputs if v.name == mask).type.tensor_type.elem_type = 6  # int32
    return b.model()


def _softmax():
    b = Builder(8)
    for h, s in [(1, 16), (2, 32), (4, 64), (12, 128), (12, 256), (8, 512), (16, 1024), (1, 4096),
                 (2, 8), (3, 16), (6, 24)]:   # (the last three: few rows, as norm's)
        b.add("Softmax", [(1, h, s, s)], attrs={"axis": -1})
    b.add("Softmax", [(1, 12)], attrs={"axis": -1})   # one short row (a classifier's head)
    return b.model()


def _reduce():
    b = Builder(9)
    for r, c in [(1, 64), (16, 256), (128, 768), (512, 1024), (1024, 4096), (64, 3136)]:
        b.add("ReduceMean", [(1, r, c)], weights=[(np.int64, (1,))], attrs={"keepdims": 1})
        b.add("ReduceSum", [(1, r, c)], weights=[(np.int64, (1,))], attrs={"keepdims": 1})
    for nd in b.inits:
        nd.raw_data = np.array([-1], dtype=np.int64).tobytes()
    return b.model(opset=18)


def _gather():
    b = Builder(10)
    for v, d, s in [(1000, 64, 16), (30522, 768, 128), (50257, 768, 32), (8000, 256, 512),
                    (512, 768, 128), (100, 32, 4)]:
        b.add("Gather", [(1, s)], weights=[(v, d)], int_inputs=(0,), attrs={"axis": 0})
        # data first: reorder inputs (Gather(data, indices))
        n = b.nodes[-1]
        ins = list(n.input)
        n.input[:] = [ins[1], ins[0]]
    return b.model()


def _pooling():
    b = Builder(11)
    for c, hw in [(64, 104), (32, 56), (256, 28), (16, 16), (512, 14)]:
        b.add("MaxPool", [(1, c, hw, hw)], attrs={"kernel_shape": [3, 3], "strides": [2, 2],
                                                  "pads": [1, 1, 1, 1]})
        b.add("AveragePool", [(1, c, hw, hw)], attrs={"kernel_shape": [2, 2], "strides": [2, 2]})
        b.add("GlobalAveragePool", [(1, c, hw, hw)])
    return b.model()


def _conv1d():
    # one spatial dim (audio front ends): im2col + GEMM and the generic pool, never NCHWc
    b = Builder(15)
    for c_in, c_out, n, k, s in [(1, 64, 8000, 10, 5), (1, 16, 4000, 64, 8), (8, 16, 2000, 5, 1),
                                 (16, 32, 1000, 5, 2), (32, 32, 500, 3, 1), (48, 64, 300, 3, 1),
                                 (64, 128, 128, 3, 1), (128, 128, 100, 5, 1), (256, 256, 50, 3, 1),
                                 (512, 512, 40, 3, 2), (128, 256, 64, 1, 1), (8, 8, 32, 3, 1),
                                 (32, 64, 2000, 3, 2), (32, 64, 1001, 3, 1)]:   # (same im2col, strided or not)
        b.add("Conv", [(1, c_in, n)], weights=[(c_out, c_in, k), (c_out,)],
              attrs={"pads": [k // 2] * 2, "strides": [s]})
    for c_in, c_out, n, k, s in [(32, 64, 400, 3, 1), (1, 32, 3200, 20, 8)]:
        b.add("FusedConv", [(1, c_in, n)], weights=[(c_out, c_in, k), (c_out,)], domain="com.microsoft",
              attrs={"pads": [k // 2] * 2, "strides": [s], "activation": "Relu"})
    return b.model()


def _pool1d():
    b = Builder(16)
    for c, n, k in [(16, 4000, 4), (32, 2000, 2), (64, 500, 4), (128, 100, 3), (8, 64, 2)]:
        b.add("MaxPool", [(1, c, n)], attrs={"kernel_shape": [k], "strides": [k]})
    for c, n, k in [(64, 400, 2), (32, 1000, 4)]:
        b.add("AveragePool", [(1, c, n)], attrs={"kernel_shape": [k], "strides": [k]})
    for c, n in [(256, 40), (128, 300)]:
        b.add("GlobalAveragePool", [(1, c, n)])
    return b.model()


def _movement():
    b = Builder(12)
    for a, s, d in [(1, 16, 16), (4, 64, 32), (12, 128, 64), (16, 256, 64), (8, 1024, 64),
                    (64, 56, 56)]:
        b.add("Transpose", [(1, s, a, d)], attrs={"perm": [0, 2, 1, 3]})
        b.add("Concat", [(1, a, s, d), (1, a, s, d)], attrs={"axis": 1})
    return b.model()


def _view():
    b = Builder(13)
    for e in (16, 256, 4096, 65536):
        b.add("Reshape", [(e,)], weights=[(np.int64, (2,))])
        b.add("Unsqueeze", [(e,)], weights=[(np.int64, (1,))])
    for t in b.inits:
        vals = [1, -1] if list(t.dims) == [2] else [0]
        t.raw_data = np.array(vals, dtype=np.int64).tobytes()
    return b.model()


def _rnn():
    b = Builder(14)
    for op, gates in (("LSTM", 4), ("GRU", 3)):   # (input- and recurrence-heavy, both directions)
        for t, i, h, d in [(8, 64, 64, 1), (32, 128, 128, 1), (64, 256, 256, 1), (16, 512, 256, 1),
                           (96, 32, 128, 1), (24, 192, 96, 2)]:
            b.add(op, [(t, 1, i)], weights=[(d, gates * h, i), (d, gates * h, h)], n_out=1,
                  attrs={"hidden_size": h, "direction": ("forward", "bidirectional")[d - 1]})
    return b.model()


# ---------------------------------------------------------------------------------------------
# measurement

def split_rows(model) -> dict[str, Any]:
    """``{k<i>: one-node model}``: node ``k<i>`` with its sink, inputs and initializers."""
    from onnx import helper

    out = {}
    for n in model.graph.node:
        if not (n.name.startswith("k") and n.name[1:].isdigit()):
            continue
        k = n.name
        pre = k + "_"
        nodes = [x for x in model.graph.node if x.name in (k, f"{k}_flat", f"{k}_sink")]
        inputs = [v for v in model.graph.input if v.name.startswith(pre)]
        inits = [t for t in model.graph.initializer if t.name.startswith(pre)]
        outs = [v for v in model.graph.output if v.name == k or v.name.startswith(pre)]
        g = helper.make_graph(nodes, k, inputs, outs, inits)
        m = helper.make_model(g, opset_imports=list(model.opset_import))
        m.ir_version = model.ir_version
        out[k] = m
    return out


def baseline_model():
    """input -> 1-element Slice sink: what every row model costs besides its node."""
    b = Builder(0)
    b.add("Identity", [(8,)])
    m = b.model()
    sink = [x for x in m.graph.node if x.name.endswith("_sink")][0]
    sink.input[0] = "k0_x0"
    del m.graph.node[0]
    return m
