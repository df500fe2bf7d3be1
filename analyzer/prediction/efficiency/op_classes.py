"""Op classes: which kernel shape an ONNX op or a JAX primitive runs as, for the efficiency model.

``OP_CLASSES`` index the per-class constants (``efficiency.py``); ``op_class_of`` maps an op to its
class; ``CLASS_FALLBACK`` / ``class_chain`` say which measured class stands in for a class a
constants set lacks; ``gemm_view`` gives the (m, n, k, batch) of a matrix product.
"""

from __future__ import annotations

import re

import numpy as np

OP_CLASSES = ("gemm", "bgemm", "conv", "attention", "elementwise", "activation", "norm", "softmax",
              "reduce", "gather", "movement", "other",
              # classes a CPU calibration measures separately (``calibrate``); a constants file or
              # a calibration that lacks one uses its ``CLASS_FALLBACK`` class
              "conv_dw", "conv_1x1", "pooling", "view", "rnn", "norm_fused", "swish", "reorder",
              "conv1d", "pool1d",
              # classes an XLA calibration measures separately (``calibrate_xla``)
              "pool_grad", "conv_grouped", "conv_batch_grouped", "gemm_tn",
              # a GPU family's quantize kernels (QuantizeLinear / DequantizeLinear: a per-tensor
              # scale and a narrow-type conversion, vendor kernels measured apart from PyTorch's
              # elementwise kernels: bench/fit_aic_elementwise.py)
              "quantize",
              # fp32 matrix kernels on a GPU's FMA units (SIMT sgemm / cuDNN, no tensor cores):
              # ``engines.simt_classes`` picks them; a 3x3 stride-1 convolution apart (conv3_simt:
              # cuDNN's Winograd/FFT algorithms do fewer multiplies than the direct count)
              "gemm_simt", "bgemm_simt", "conv_simt", "conv3_simt",
              # a softmax over rows longer than SOFTMAX_WARP_ROW: the block-per-row kernel
              # (``node_shapes.node_op_class``), not the warp-per-row one of shorter rows
              "softmax_block",
              # PyTorch's row kernels where the row term is on (``ROW_CLASS``, ``row_kernels.row_class``)
              "norm_row", "softmax_row", "softmax_block_row",
              # XLA's own GPU kernels under the ``xla`` runtime (``XLA_CLASS``, ``xla_gpu_classes``):
              # loop fusions (elementwise, activations), reduction fusions (reductions and norms),
              # Triton softmax fusions, dots (Triton GEMM fusions or cuBLAS) and batched dots
              "xla_loop", "xla_act", "xla_reduce", "xla_softmax", "xla_softmax_block", "xla_gemm", "xla_bgemm",
              # an fp32 image-stem convolution (fewer than 4 input channels) cuDNN runs on the FMA
              # units, TF32 allowed or not, on the families ``stem_conv`` names: its FMA-unit set
              "conv_stem")
CLASS_CODE = {c: i for i, c in enumerate(OP_CLASSES)}
MATRIX_CLASSES = ("gemm", "bgemm", "conv", "attention", "conv_dw", "conv_1x1", "conv1d", "conv_grouped",
                  "conv_batch_grouped", "gemm_tn", "gemm_simt", "bgemm_simt", "conv_simt", "conv3_simt",
                  "xla_gemm", "xla_bgemm", "conv_stem")

# A class a constants set (family file, generic.json, a calibration's tables) lacks takes the
# constants of its fallback class, looked up in the same set first (so a GPU family file keeps
# predicting a depthwise conv with its own conv constants, exactly as before the class existed):
#   conv_dw  (grouped conv with one input channel per group) -> conv
#   conv_1x1 (pointwise conv: a GEMM over the pixels)        -> conv
#   pooling  (MaxPool, AveragePool, GlobalAveragePool, ...)   -> reduce (their class before)
#   view     (Reshape, Flatten, Squeeze, Unsqueeze, Identity) -> movement (their class before)
#   rnn      (LSTM, GRU, RNN)                                 -> other (their class before)
#   norm_fused (onnxruntime's SkipLayerNormalization: residual add + norm in one contrib
#              kernel; on CPU 8-12x LayerNormalization's time at the same size here) -> norm
#   swish    (onnxruntime's QuickGelu, x * sigmoid(alpha x): the kernel its QuickGeluFusion makes
#              of the SiLU/Swish x * sigmoid(x) of EfficientNets and LLM MLPs)      -> activation
#   reorder  (onnxruntime's NCHWc ReorderInput/ReorderOutput: a layout copy, calibrated from the
#              profiled reorders around the blocked convolution rows)               -> movement
#   conv1d   (a convolution over one spatial dim, [N, C, L]: audio front ends; onnxruntime's
#              CPU provider runs it by im2col + GEMM, never in its blocked NCHWc layout: the
#              M5-like stem conv of samples/cpu_models/audio_conv1d.onnx ran at half the 2-D
#              conv class's rate)                                                   -> conv
#   pool1d   (MaxPool/AveragePool over [N, C, L]: the generic pool kernel, not the NCHWc one;
#              5-6x the 2-D pooling class's time per byte there)                   -> pooling
#   conv_grouped (groups of more than one input channel, fewer than all: an ONNX Conv's shapes
#              say so, a JAX one's rule (Work.kernel); XLA's CPU backend ran one at 17.8 GFLOP/s
#              against 162 for an ungrouped 3x3 conv, 2-core EPYC, bench/xla_diagnose.py
#              conv-grads)                                                         -> conv
#   conv_batch_grouped (a JAX convolution with batch_group_count > 1: a grouped convolution's
#              weight gradient; 0.7 GFLOP/s there)                                 -> conv_grouped
#   pool_grad (JAX's select_and_scatter_add / select_and_gather_add: a max pool's gradient; 8x
#              the pool's own time on XLA's CPU backend there, a scratch timing)   -> pooling
#   gemm_tn  (a JAX dot_general without batch dims whose lhs is contracted over leading dims,
#              x^T g: its rule's Work.kernel "lhs_transposed"; XLA's CPU backend (jaxlib 0.10.2)
#              compiles it to an Eigen dot where the lhs-last forms are YNNPACK fusions, a
#              library of other speeds: 0.79-1.53x the nn form's time over 9 shapes on a 2-core
#              AVX2 EPYC, `bench/xla_diagnose.py dot-forms`)                    -> gemm
CLASS_FALLBACK = {"quantize": "elementwise", "gemm_tn": "gemm", "conv_dw": "conv", "conv_1x1": "conv", "pooling": "reduce",
                  "view": "movement", "rnn": "other", "norm_fused": "norm", "swish": "activation",
                  "reorder": "movement", "conv1d": "conv", "pool1d": "pooling",
                  "pool_grad": "pooling", "conv_grouped": "conv", "conv_batch_grouped": "conv_grouped",
                  # classes without measurements on a family take a measured class of the same
                  # kernel shape: batched GEMMs and convolutions (implicit GEMM) run GEMM kernels;
                  # softmax and reductions are row reductions like norms; data movement and
                  # unknown ops stream like elementwise ops
                  "bgemm": "gemm", "conv": "gemm", "softmax": "norm", "reduce": "norm",
                  "movement": "elementwise", "other": "elementwise",
                  # a GPU family's gather is PyTorch's vectorized gather kernel (the embedding
                  # lookup since the 2025 rewrite, pytorch/pytorch PRs 151490 and 151753: 16-byte
                  # loads of whole rows): a row copy that streams like an elementwise kernel. The
                  # older index_select kernel's per-element rate, fitted on the 2024 measurements,
                  # is kept in the families' "-pytorch2.3" variants (bench/fit_efficiency.py)
                  "gather": "elementwise",
                  # the FMA-unit (SIMT) matrix kernels: a set without them predicts them with
                  # its tensor-core class's constants, as before the classes existed
                  "gemm_simt": "gemm", "bgemm_simt": "bgemm", "conv_simt": "conv",
                  "conv3_simt": "conv_simt",
                  # an image stem on the FMA units (``stem_conv``): the FMA-unit convolution set
                  "conv_stem": "conv_simt",
                  # a set without the long-row softmax kernel predicts it as its softmax
                  "softmax_block": "softmax",
                  # a set without a row class (today every one) predicts the kernel as its class
                  "norm_row": "norm", "softmax_row": "softmax", "softmax_block_row": "softmax_block",
                  # a family without XLA's own kernel sets predicts XLA's kernels with the classes
                  # they had before these existed (on every GPU family file, each XLA class's
                  # sources resolve to the same set through this fallback: movement, other and
                  # view to elementwise, pooling and norm to reduce's norm, gemm_tn to gemm)
                  "xla_loop": "elementwise", "xla_act": "activation", "xla_reduce": "reduce",
                  "xla_softmax": "softmax", "xla_softmax_block": "softmax_block", "xla_gemm": "gemm",
                  "xla_bgemm": "bgemm"}
# PyTorch's LayerNorm / RMS norm and softmax kernels (``row_kernels``: one block or warp walks a row)
# take the row class of their class where a profile of the lowering has their kind's row term: a
# family's set fitted with that term (its own floor, ``floor_own``) then reaches those kernels only,
# never the class's other ops (BatchNormalization, GroupNormalization, SoftmaxCrossEntropyLoss ...)
# nor the classes that fall back to it (reduce, pooling -> norm)
ROW_CLASS = {"norm": "norm_row", "softmax": "softmax_row", "softmax_block": "softmax_block_row"}
# XLA's GPU kernels (``xla_gpu_classes``): under the ``xla`` runtime on GPU profiles, a kernel of
# these classes is one of XLA's own (a loop fusion, a reduction or row fusion, a Triton or cuBLAS
# dot), timed by its family's XLA sets where it has them (fitted on XLA's single-op kernels,
# bench/xla_sets.py), else by the class it falls back to (``CLASS_FALLBACK``).  Convolutions
# (cuDNN), gathers and attention keep their classes.
XLA_CLASS = {"elementwise": "xla_loop", "movement": "xla_loop", "other": "xla_loop", "view": "xla_loop",
             "activation": "xla_act", "swish": "xla_act", "reduce": "xla_reduce", "pooling": "xla_reduce",
             "norm": "xla_reduce", "softmax": "xla_softmax", "softmax_block": "xla_softmax_block",
             "gemm": "xla_gemm", "gemm_tn": "xla_gemm", "bgemm": "xla_bgemm"}
# the longest softmax row (elements) the warp-per-row kernel takes: PyTorch's CUDA softmax
# (aten/src/ATen/native/cuda/SoftMax.cu: dim_size <= 1024 and dim_size * sizeof(scalar) <= 4096,
# so 1024 for fp32/fp16/bf16, 512 for fp64: not distinguished here) keeps a row in one warp's
# registers (one read, one write); a longer row runs cunn_SoftMaxForward, one block per row in
# passes. NeuSight's fp32 rows show the switch in their kernel names at 1024: the block kernel
# reached 924-949 GB/s on the A100 PCIe where the warp kernel reached 1,399
# (bench/transformer_ops.py's report)
SOFTMAX_WARP_ROW = 1024

# classes fitted pooled over GPUs as physical constants (an efficiency of the FMA peak, a floor in
# cycles, a multiply share): generic.json's own set of such a class precedes a family's fallback
# class (a family's tensor-core gemm set says nothing of its SIMT sgemm)
POOLED_CLASSES = ("gemm_simt", "bgemm_simt", "conv_simt", "conv3_simt", "conv_stem")
# a matrix class -> its FMA-unit (SIMT) class, for an fp32 kernel on a GPU without an fp32
# matrix-engine figure (``engines.simt_classes``)
SIMT_CLASS = {"gemm": "gemm_simt", "gemm_tn": "gemm_simt", "bgemm": "bgemm_simt", "conv": "conv_simt",
              "conv_1x1": "conv_simt", "conv1d": "conv_simt"}


# classes that are a finer view of another class's kernel (same kernel, a shape the CPU
# calibration measures apart): a kernel whose heaviest node is of the finer class keeps it when
# the runtime records the coarser op (a FusedConv over a depthwise Conv stays conv_dw)
REFINES = {"gemm_tn": "gemm", "bgemm": "gemm", "conv_dw": "conv", "conv_1x1": "conv", "conv1d": "conv",
           "pool1d": "pooling", "conv_grouped": "conv", "conv_batch_grouped": "conv"}


def class_chain(cls: str) -> tuple[str, ...]:
    """``cls`` and its fallbacks, in lookup order."""
    out = [cls]
    while out[-1] in CLASS_FALLBACK:
        out.append(CLASS_FALLBACK[out[-1]])
    return tuple(out)


_GEMM = {"MatMul", "Gemm", "FusedMatMul", "FusedGemm", "TransposeMatMul", "MatMulInteger",
         "MatMulInteger16", "MatMulIntegerToFloat", "QLinearMatMul", "QGemm", "MatMulNBits",
         "MatMulBnb4", "DynamicQuantizeMatMul", "FusedMatMulActivation", "GemmFastGelu", "Einsum",
         "dot_general"}
_CONV = {"Conv", "ConvTranspose", "ConvInteger", "QLinearConv", "FusedConv", "NhwcConv", "NhwcFusedConv",
         "DeformConv", "CausalConvWithState", "conv_general_dilated"}
_ATTENTION = {"Attention", "MultiHeadAttention", "GroupQueryAttention", "DecoderMaskedMultiHeadAttention",
              "QAttention", "LinearAttention", "pallas_call"}
ATTENTION_OPS = frozenset(_ATTENTION)   # (node_shapes: an attention's GEMM view)
# convolutions whose output is channels-first (N, C, spatial...): a GEMM view of rows = N x
# spatial, columns = C (node_shapes); the NHWC ones take the generic last-dim view
CHANNELS_FIRST_CONV_OPS = frozenset(_CONV - {"NhwcConv", "NhwcFusedConv"})
_NORM = {"LayerNormalization", "SimplifiedLayerNormalization", "SkipSimplifiedLayerNormalization",
         "RMSNormalization", "BatchNormalization",
         "GroupNormalization", "InstanceNormalization", "GroupNorm", "SkipGroupNorm", "LpNormalization",
         "LRN", "EmbedLayerNormalization", "QEmbedLayerNormalization", "MeanVarianceNormalization"}
_NORM_FUSED = {"SkipLayerNormalization"}
# onnxruntime's QuickGelu at alpha = 1 (the SiLU its QuickGeluFusion makes of x * sigmoid(x)) runs
# MLAS's vectorised SiLU (or logistic + multiply); at alpha != 1 its CPU kernel first scales x in
# a scalar loop (onnxruntime contrib_ops/cpu/activations): 2.5x apart on a 2-core EPYC. A class
# of its own, calibrated at alpha = 1 (``calibration_models``); alpha is not seen by the class

_SWISH = {"QuickGelu"}
_REORDER = {"ReorderInput", "ReorderOutput"}
# SoftmaxCrossEntropyLoss: its log_softmax over the scores is its work and bytes (the loss
# picks one element per row); eager PyTorch's nll_loss kernel after it: eager_plan's rule
_SOFTMAX = {"Softmax", "LogSoftmax", "BiasSoftmax", "QLinearSoftmax", "Hardmax", "SoftmaxCrossEntropyLoss"}
_ACTIVATION = {"Gelu", "FastGelu", "BiasGelu", "BiasSplitGelu", "Erf", "Tanh", "Sigmoid",
               "Exp", "Log", "Softplus", "Softsign", "Mish", "Swish", "SwiGLU", "Elu", "Selu", "Celu",
               "HardSigmoid", "HardSwish", "Sqrt", "Reciprocal", "Pow", "Sin", "Cos", "Tan", "Asin",
               "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "QLinearSigmoid",
               # jax primitives
               "erf", "erfc", "erf_inv", "tanh", "logistic", "exp", "exp2", "expm1", "log", "log1p",
               "sqrt", "rsqrt", "cbrt", "pow", "sin", "cos", "tan", "asin", "acos", "atan", "atan2",
               "sinh", "cosh", "asinh", "acosh", "atanh", "lgamma", "digamma", "igamma", "igammac",
               "igamma_grad_a", "bessel_i0e", "bessel_i1e", "polygamma", "zeta", "random_gamma_grad",
               "regularized_incomplete_beta"}
_ELEMENTWISE = {"Add", "Sub", "Mul", "Div", "Relu", "LeakyRelu", "PRelu", "ThresholdedRelu", "Clip",
                "Abs", "Neg", "Sign", "Floor", "Ceil", "Round", "Max", "Min", "Sum", "Mean", "Mod",
                "Where", "Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual", "And", "Or", "Xor",
                "Not", "IsInf", "IsNaN", "BitShift", "BitwiseAnd", "BitwiseNot", "BitwiseOr", "BitwiseXor",
                "Shrink", "Dropout", "BiasAdd", "BiasDropout", "BitmaskBiasDropout", "QLinearAdd",
                "QLinearMul", "QLinearLeakyRelu", "QLinearWhere",
                "DynamicQuantizeLinear", "RotaryEmbedding", "MRotaryEmbedding", "Trilu", "CumSum",
                "CumProd",
                # jax primitives
                "add", "add_any", "sub", "mul", "div", "rem", "max", "min", "neg", "abs", "sign",
                "floor", "ceil", "round", "clamp", "select_n", "eq", "ne", "lt", "le", "gt", "ge",
                "eq_to", "le_to", "lt_to", "and", "or", "not", "xor", "shift_left",
                "shift_right_arithmetic", "shift_right_logical", "integer_pow", "square", "is_finite",
                "nextafter", "population_count", "clz", "mulhi", "conj", "real", "imag", "complex",
                "reduce_precision", "cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"}
_REDUCE = {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
           "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare", "ArgMax", "ArgMin", "TopK",
           "QLinearReduceMean", "MaxRoiPool", "RoiAlign",
           # picks one score per target and reduces the picks (PyTorch's nll_loss kernels)
           "NegativeLogLikelihoodLoss",
           "reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or",
           "reduce_xor", "reduce", "argmax", "argmin", "top_k", "approx_top_k"}
_GATHER = {"Gather", "GatherElements", "GatherND", "GatherBlockQuantized", "Embedding", "Compress",
           "OneHot", "ArrayFeatureExtractor", "Scatter", "ScatterElements", "ScatterND", "TensorScatter",
           "gather", "scatter", "scatter-add", "scatter_add", "scatter-mul", "scatter_mul", "scatter-min",
           "scatter_min", "scatter-max", "scatter_max", "scatter-sub", "scatter_sub", "dynamic_slice",
           "dynamic_update_slice"}
_POOLING = {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool", "AveragePool", "MaxPool", "LpPool",
            "QLinearGlobalAveragePool", "QLinearAveragePool", "NhwcMaxPool", "MaxpoolWithMask",
            # jax primitives
            "reduce_window", "reduce_window_sum", "reduce_window_max", "reduce_window_min"}
# a max pool's gradient (jax)
_POOL_GRAD = {"select_and_scatter_add", "select_and_gather_add", "select_and_scatter"}
_VIEW = {"Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze"}
_RNN = {"LSTM", "GRU", "RNN", "DynamicQuantizeLSTM"}
_MOVEMENT = {"Transpose", "Concat", "Slice", "Pad", "Split", "Expand", "Tile", "Cast", "CastLike",
             "DepthToSpace", "SpaceToDepth",
             "ReverseSequence", "Resize", "Upsample", "QLinearConcat", "ExpandDims", "ConcatFromSequence",
             "SplitToSequence", "BitCast", "Col2Im", "GridSample", "AffineGrid",
             "transpose", "concatenate", "slice", "pad", "split", "broadcast_in_dim", "tile",
             "convert_element_type", "bitcast_convert_type", "copy", "copy_p", "reshape", "squeeze",
             "expand_dims", "rev", "stack", "unstack", "iota", "device_put", "sort"}
_QUANTIZE = {"QuantizeLinear", "DequantizeLinear"}
_TABLE = [(_QUANTIZE, "quantize"), (_GEMM, "gemm"), (_CONV, "conv"), (_ATTENTION, "attention"), (_NORM, "norm"),
          (_SOFTMAX, "softmax"), (_ACTIVATION, "activation"), (_ELEMENTWISE, "elementwise"),
          (_REDUCE, "reduce"), (_GATHER, "gather"), (_MOVEMENT, "movement"), (_POOLING, "pooling"),
          (_VIEW, "view"), (_RNN, "rnn"), (_NORM_FUSED, "norm_fused"), (_SWISH, "swish"),
          (_REORDER, "reorder"), (_POOL_GRAD, "pool_grad")]
_OP_CLASS = {op: cls for names, cls in _TABLE for op in names}
_EMBED = re.compile(r"embed", re.I)


def op_class_of(domain: str, op: str, *, batched: bool = False, conv_input=None,
                conv_weight=None) -> str:
    """Op class of an ONNX op type (any domain) or a JAX primitive name; ``"other"`` if unknown.

    ``batched``: the matrix product has batch dims on *both* operands (attention scores, a
    batched matmul of two activations): ``bgemm`` instead of ``gemm``.  A MatMul of a batched
    activation with a 2-D weight folds the batch into M and stays ``gemm``.
    ``conv_input`` / ``conv_weight``: the shapes (sequences of ints; None where unknown) of an
    ONNX convolution's data and weight: a weight with one input channel per group on a
    multi-channel input is ``conv_dw`` (depthwise), an all-ones kernel ``conv_1x1``; a
    convolution or pool over a rank-3 input ``[N, C, L]`` is ``conv1d`` / ``pool1d``."""
    del domain  # op names are unambiguous across the domains opcost registers
    cls = _OP_CLASS.get(op)
    if cls is None and _EMBED.search(op) and "Rotary" not in op:
        cls = "gather"
    if cls is None:
        return "other"
    if cls == "gemm" and batched:
        return "bgemm"
    if cls in ("conv", "pooling") and conv_input is not None and len(conv_input) == 3:
        return "conv1d" if cls == "conv" else "pool1d"   # [N, C, L]: one spatial dim
    if cls == "conv" and conv_weight is not None and len(conv_weight) >= 3:
        w, x = tuple(conv_weight), tuple(conv_input or ())
        if w[1] == 1 and len(x) >= 2 and x[1] not in (1, None):
            return "conv_dw"
        if all(d == 1 for d in w[2:]):
            return "conv_1x1"
    return cls


def gemm_view(a_shape, b_shape) -> tuple[int, int, int, int, bool]:
    """(m, n, k, batch, batched) of ``A @ B`` with numpy-style broadcasting (ONNX MatMul).

    When B is 2-D (a weight) the batch dims of A fold into M (one GEMM); when both carry batch
    dims it is a batched GEMM (``batched=True``)."""
    a, b = list(a_shape), list(b_shape)
    if len(a) == 1:
        a = [1] + a
    if len(b) == 1:
        b = b + [1]
    k, n = b[-2], b[-1]
    if len(b) == 2:
        m = int(np.prod(a[:-1]))
        return m, n, k, 1, False
    batch_a, batch_b = a[:-2], b[:-2]
    nd = max(len(batch_a), len(batch_b))
    batch_a = [1] * (nd - len(batch_a)) + batch_a
    batch_b = [1] * (nd - len(batch_b)) + batch_b
    batch = int(np.prod([max(x, y) for x, y in zip(batch_a, batch_b)]))
    return a[-2], n, k, batch, True
