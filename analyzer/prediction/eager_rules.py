"""The eager kernel plan's rules as data: for each pattern of an exported PyTorch graph, what
the export holds, the kernels eager PyTorch launches for it, and the source of the rule
(``eager_plan`` applies them; docs/model.md lists them).  Structural rules read from PyTorch's
source and its exporter's; nothing here is fitted.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    """One pattern: what the export holds, what eager PyTorch launches for it, and the source."""

    name: str
    onnx: str
    eager: str
    source: str


RULES: tuple[Rule, ...] = (
    Rule("view", "Reshape, Flatten, Squeeze, Unsqueeze whose input's strides allow a view; "
         "Transpose; Split; Expand; Identity; Cast to the input's own dtype",
         "no kernel: a tensor of new sizes and strides over the same storage",
         "aten::reshape returns a view when at::detail::computeStride finds strides for the new "
         "sizes (aten/src/ATen/native/TensorShape.cpp, aten/src/ATen/TensorUtils.cpp), "
         "permute/transpose/split/expand are views (native_functions.yaml), Tensor.to of the "
         "same dtype returns self"),
    Rule("slice", "Slice of constant positive steps (x[:, a:b], x[..., ::2]; rank kept)",
         "no kernel: aten::slice is a view whose strides are the input's times the steps",
         "the exporters write aten::slice as Slice; slice is a view (native_functions.yaml); "
         "a negative step (torch.flip's export) copies"),
    Rule("select", "Gather of a constant scalar index (x[:, 0], a pooler's first token)",
         "no kernel: aten::select is a view; its consumer reads it strided",
         "the TorchScript exporter writes aten::select as Gather with a scalar index; select "
         "is a view (native_functions.yaml)"),
    Rule("host-only", "every node of rules view, slice and select that is not copied, but an ONNX "
         "Identity and shape arithmetic (Shape/Size and the nodes computing on their values only)",
         "no kernel, but one aten op on the host: Python, the C++ binding, the dispatcher "
         "(and autograd's view bookkeeping with grad): a host-only step of the stream, "
         "runtimes.HOST_ONLY_RATIO x the runtime's dispatch figure of a small elementwise op",
         "bench/eager_host_ops.py (CPU PyTorch: a view's host time over torch.add's, same run); "
         "eager PyTorch computes sizes in Python ints (x.size(1)) and the exporter's Identity "
         "aliases a tensor, neither an aten op"),
    Rule("reshape-copy", "Reshape/Flatten/Squeeze/Unsqueeze of a tensor whose strides allow "
         "no view (the permuted attention context reshaped to [B, S, H*D])",
         "one copy kernel (aten::clone, contiguous): the tensor read and written",
         "aten::reshape falls back to clone + _unsafe_view when computeStride fails "
         "(TensorShape.cpp _reshape_copy/reshape); the ONNX export drops the model's own "
         ".contiguous() there, which launches the same copy"),
    Rule("linear", "MatMul(x, W[K, N] constant) + Add(constant bias [N]) (nn.Linear of a 3-D "
         "input) and Gemm with a 1-D bias (nn.Linear / addmm of a 2-D input)",
         "one GEMM with the bias in its epilogue (cuBLASLt CUBLASLT_EPILOGUE_BIAS) when x is "
         "contiguous, N > 1 and K > 1 (fp64/fp32/fp16/bf16); else the GEMM and a separate "
         "bias kernel: the bias add_ after matmul (x not contiguous), or the bias broadcast-"
         "copied into the output before a beta=1 GEMM (Gemm with N = 1, K = 1 or a 2-D C)",
         "at::linear (aten/src/ATen/native/Linear.cpp): 2-D input -> addmm, contiguous n-D "
         "input with bias -> _flatten_nd_linear -> addmm, else matmul + add_; "
         "addmm_out_cuda_impl (aten/src/ATen/native/cuda/Blas.cpp) takes cuBLASLt's bias "
         "epilogue when beta == 1, the bias is 1-D contiguous of N, the result contiguous, "
         "mat2 sizes > 1 and the dtype is double/float/half/bfloat16, else copy_(result, "
         "bias) and a GEMM with beta = 1; NeuSight's PyTorch 2.1 kernel lists "
         "(shared/measurements/gpu/neusight_ops.csv.gz, kernels_launched): every fp32 "
         "nn.Linear launches one GEMM kernel, except N = 1, which launches "
         "direct_copy_kernel + the GEMM"),
    Rule("bmm", "MatMul of two operands of rank >= 3 (attention's Q.K^T and P.V)",
         "one batched GEMM over batch = the product of the leading dims (B x heads); an "
         "operand whose leading dims cannot be merged by a view, or whose last two strides "
         "cuBLAS cannot take as a (transposed) matrix, is first copied contiguous: K^T of "
         "a [B, S, H, D] projection is a transposed operand, no copy",
         "torch.matmul (aten/src/ATen/native/LinearAlgebra.cpp _matmul_impl): operands of "
         "rank >= 3 are expanded and reshaped to [batch, m, k] (a copy where no view exists) "
         "and passed to bmm; prepare_batch_matrix_for_cublas (cuda/Blas.cpp) takes an operand "
         "whose stride of one of the last two dims is 1 and the other's at least its size, "
         "and clones any other contiguous"),
    Rule("mm-fold", "MatMul(x of rank >= 3, W rank 2) with no bias Add",
         "x reshaped to [-1, K] (a copy where no view exists), one GEMM",
         "torch.matmul folds a rank >= 3 first operand into a matrix when the second is a "
         "matrix (LinearAlgebra.cpp _matmul_impl, should_fold)"),
    Rule("contiguous-input", "Softmax, LogSoftmax, LayerNormalization, GroupNormalization, "
         "InstanceNormalization, BatchNormalization, Conv of a non-contiguous tensor",
         "a copy kernel (input.contiguous()) before the op's own one kernel",
         "host_softmax (aten/src/ATen/native/cuda/SoftMax.cu) and layer_norm_cuda "
         "(cuda/layer_norm_kernel.cu) call input.contiguous(); cudnn_convolution takes its "
         "input contiguous in the suggested memory format"),
    Rule("conv-bias", "Conv with a bias input",
         "the convolution kernel and a second kernel over its output: the BatchNorm eager runs "
         "unfolded (a bias the exporter made: initializer 'onnx::Conv_<n>'), or cuDNN's bias "
         "add_ (the module's own bias; none for a depthwise convolution, whose native kernel "
         "takes the bias)",
         "the TorchScript exporter folds an eval BatchNorm into the preceding Conv and names the "
         "new weight and bias 'onnx::Conv_<n>' (torchvision's convolutions before a BatchNorm "
         "have no bias of their own); at::_convolution (aten/src/ATen/native/Convolution.cpp): "
         "ConvBackend::Cudnn runs cudnn_convolution then output.add_(reshape_bias(...)), "
         "ConvBackend::CudaDepthwise2d passes the bias to conv_depthwise2d"),
    Rule("conv-layout", "Conv of a channels-last (NHWC-strided) tensor, e.g. after a "
         "Transpose to NHWC and back",
         "no copy: cuDNN runs the channels-last tensor and writes a channels-last output; any "
         "other non-contiguous input is copied first",
         "at::_convolution takes input.contiguous(backend_memory_format) with the format "
         "cudnn_conv_suggest_memory_format gives (channels_last when the input is), and the "
         "output takes that format (Convolution.cpp, ConvUtils.h)"),
    Rule("cudnn-fp32", "an fp32 Conv of the Winograd shape (ungrouped, 2-D, 3x3, stride 1)",
         "cuDNN's launches inside the call besides the main kernel (cudnn_conv.fp32_launches), no host "
         "dispatch of their own, each its copy-class floor and no bytes (the main kernel's fitted class "
         "keeps the call's work): the non-fused Winograd F(4x4,3x3)'s three transforms where "
         "min(C_in, C_out) >= 96 and T = N ceil(H_out/4) ceil(W_out/4) >= 100 (their bytes, "
         "cudnn_conv.winograd_bytes, made the leave-one-GPU-out fit worse and are not charged), else "
         "one helper (generateWinogradTilesKernel or computeOffsetsKernel); other shapes: the main "
         "kernel only (no kernel list of them); on Hopper (cudnn_conv.NO_WINOGRAD_FAMILIES) none: cuDNN 9 "
         "runs every fp32 convolution as one FFMA implicit GEMM (the H200's names: docs/accuracy.md, "
         "Whole models on the H200)",
         "NeuSight's PyTorch 2.1 / cuDNN 8.9 nn.Conv2d rows (shared/measurements/gpu/neusight_ops.csv.gz, "
         "kernels_launched; every row 3x3 stride 1, fp32, TF32 off; tabulated by "
         "bench/cudnn_kernels.py): the non-fused Winograd's 4 kernels on 40 % of the rows, a "
         "helper and the main kernel on 56 %; the rule's count matches 75.5 % of the rows (74.1 % "
         "with its thresholds chosen leaving each GPU out), the plan before it (1 kernel) 1.0 %"),
    Rule("cudnn-nhwc", "an fp16/bf16 Conv (not depthwise) of an NCHW 2-D input, and an fp32 one "
         "under precision tf32 or, without a precision, PyTorch's TF32 default (engines.default_tf32_convs)",
         "conversions inside the call besides the main kernel, no host dispatch of their own, each "
         "reading and writing its tensor (2 x its bytes) at the copy class's rate "
         "(cudnn_conv.tensor_core_launches): nchwToNhwcKernel of the input and of the filter and "
         "nhwcToNchwKernel of the output; none where C_in or C_out x the element size is not a "
         "multiple of 16 B (no tensor-core kernel: implicit_convolve_sgemm on NCHW) or for a 1x1 "
         "stride-1 convolution (one cuBLAS GEMM on the NCHW tensors); the input and the output "
         "only for a strided 1x1; under TF32 the input and the filter (the kernel writes NCHW), "
         "none for a strided 1x1 (an NCHW FMA-unit kernel), and no cudnn-fp32 helper; an input "
         "already channels last: none",
         "NVIDIA cuDNN developer guide (tensor-core convolutions take NHWC; NCHW tensors are "
         "transposed) and NVIDIA Deep Learning Performance guide, 'Tensor Layouts In Memory: NCHW vs "
         "NHWC' and 'Channels In And Out' (Tensor Core convolutions want NHWC and channels in "
         "multiples of 8 fp16 / 4 tf32 elements); the kernel names of this repository's H200 run "
         "(docs/accuracy.md, Whole models on the H200; torch 2.11 / cuDNN 9: ResNet-50 bf16 "
         "batch 1, 35 nchwToNhwc + 19 nhwcToNchw, the count this rule gives; TF32 34 + 2 against "
         "its 32 + 0); the counts are the rule's, nothing fitted"),
    Rule("bn-eval-fp16", "a BatchNorm the exporter folded into a Conv (bias 'onnx::Conv_<n>'), "
         "fp16/bf16",
         "besides the transform kernel, two per-channel launches inside the aten call (no host "
         "dispatch of their own): a copy and batch_norm_calc_invstd, each reading a vector of C "
         "and writing it as fp32 (cudnn_conv.bn_fp16_launches); fp32: cuDNN's one "
         "bn_fw_inf_1C11_kernel_NCHW (the conv-bias rule's one kernel)",
         "the H200 run's kernel names (docs/accuracy.md, Whole models on the H200): every eval "
         "BatchNorm of ResNet-50 and MobileNetV2 in bf16 launches direct_copy_kernel, "
         "batch_norm_calc_invstd and batch_norm_transform_input_kernel (53 x 3 and 52 x 3; the "
         "copy's time does not grow with the batch: 114 µs at batch 1, 119 µs at 8, for 53), in "
         "fp32 and TF32 one cudnn::bn_fw_inf_1C11_kernel_NCHW"),
    Rule("bn-train", "in the forward of a training step (Runtime.train_forward): a BatchNorm the "
         "exporter folded into a Conv, or a BatchNormalization node",
         "training mode (bn_train.launches): fp16/bf16 four launches, the counter add "
         "(num_batches_tracked += 1, its own dispatch), batch_norm_collect_statistics (reads x: "
         "class reduce), batch_norm_update_stats_and_invert (per channel: elementwise) and "
         "batch_norm_transform_input (reads x, writes y: norm), the last two inside the call; "
         "fp32/TF32 cuDNN's one bn_fw_tr_1C11 kernel (reads x, writes y: norm) and the counter add; "
         "a BatchNormalization node's own kernel is the transform; replaces rule bn-eval-fp16",
         "the H200 run's kernel names (docs/accuracy.md, Whole models on the H200; the training rows): "
         "ResNet-50 and MobileNetV2 bf16 forwards launch collect_statistics, "
         "unrolled_elementwise_kernel_for_multi_outputs (update_stats_and_invert), "
         "transform_input and vectorized_elementwise_kernel<CUDAFunctorOnSelf_add<long>> per "
         "BatchNorm (53 x 4, 52 x 4), fp32 and TF32 bn_fw_tr_1C11_singleread (or _kernel_NCHW) and "
         "the add (53 x 2, 52 x 2); torch.nn.modules.batchnorm._BatchNorm.forward; counts, nothing fitted"),
    Rule("cross-entropy", "SoftmaxCrossEntropyLoss (F.cross_entropy / nn.CrossEntropyLoss with "
         "class-index targets)",
         "two kernels: log_softmax over the classes (the scores read, the log-probabilities "
         "written whole) and nll_loss (one log-probability and one weight picked per target, "
         "the targets read, the loss written); nll_loss is dispatched from C++ (its own "
         "launch and dispatch, no Python call)",
         "at::cross_entropy_loss (aten/src/ATen/native/LossNLL.cpp): class-index targets "
         "without label smoothing -> at::nll_loss_nd_symint(at::log_softmax(self, class_dim, ...), "
         "...), nll_loss of 1-D/2-D scores, nll_loss2d of others; "
         "the TorchScript exporter writes aten::cross_entropy_loss as SoftmaxCrossEntropyLoss "
         "(torch/onnx symbolic_opset12.cross_entropy_loss)"),
    Rule("silu", "the exporter's aten::silu (opset < 14 has no op): Sigmoid(x), Mul(x, that)",
         "one kernel (silu)",
         "torch.onnx symbolic_opset9.silu writes x * sigmoid(x); a Mul of a Sigmoid of another "
         "tensor (a squeeze-excitation scale) stays two kernels"),
    Rule("gelu-erf", "the exporter's aten::gelu (opset < 20): Div(x, sqrt 2), Erf, Add 1, "
         "Mul x, Mul 0.5",
         "one kernel (GeluCUDAKernelImpl)",
         "torch.onnx symbolic_opset9.gelu, approximate='none' (checked: torch 2.14's "
         "TorchScript exporter at opset 17 writes Div, Erf, Add, Mul, Mul for F.gelu)"),
    Rule("gelu-tanh", "the exporter's aten::gelu(approximate='tanh'): Mul x.x, Mul x.x^2, "
         "Mul kappa, Add x, Mul beta, Tanh, Add 1, Mul x, Mul 0.5 (nine nodes, no Pow)",
         "one kernel (GeluCUDAKernelImpl, tanh form)",
         "torch.onnx symbolic_opset9.gelu, approximate='tanh' (checked: torch 2.14 at opset 17 "
         "writes Mul, Mul, Mul, Add, Mul, Tanh, Add, Mul, Mul); a GELU written in Python "
         "(GPT-2's NewGELUActivation: pow, mul, add, mul, tanh, add, mul, mul) is eight eager "
         "ops and exports with a Pow: one kernel per node"),
    Rule("folded-recomputed", "a node the exporter folded into a constant whose value reaches a "
         "running node through data inputs, that is neither a view (rule view; Slice of a "
         "buffer too), shape arithmetic, Python-number arithmetic (every input and output a "
         "scalar) nor a Constant; and an integer Constant of more than one element read as data "
         "by a node that runs",
         "one kernel per folded node (GatherElements, the position and token-type embedding "
         "lookups, the mask's ge/le, bitwise_and, new_ones); two for an integer Constant "
         "(torch.arange(n) + offset); no kernel for the rest (eager_folded)",
         "aten-op logs of eager PyTorch on the CPU (bench/eager_kernel_counts.py, its ops listing; "
         "TorchDispatchMode, transformers 5.24): bert runs gather, embedding x2 (token type, "
         "position), new_ones, ge, bitwise_and and arange x4 + add x2 for folded nodes "
         "(GatherElements, Gather x2, ConstantOfShape, GreaterOrEqual, And; the mask's q/kv index "
         "Constants), gpt2 embedding (wpe), new_ones, le, bitwise_and, arange x5 + add x3 (the "
         "position ids and the mask's index Constants); vit's folded nodes (cls token Expand, "
         "the Where/Equal/ConstantOfShape of expand(-1), Shape/Slice/Concat) log no op, nor "
         "do the TorchScript exporter's Where/Equal/Mul shape chains in bert and gpt2.  Not "
         "in the graph at all (Python control flow and literals): bert's attention_mask.all(), "
         "an unused head-index arange, torch.tensor(0.0) and the 1-element batch arange read "
         "through shape arithmetic; BERT's position_ids is a registered buffer sliced (no "
         "kernel) but folds to the same Constant as an arange: counted"),
    Rule("elementwise", "every other node that does work (Add, Mul, Softmax, LayerNormalization, "
         "Gather, ...)",
         "one kernel; an elementwise kernel reads strided inputs in place and writes its "
         "output in its first full-size input's dimension order",
         "TensorIterator (aten/src/ATen/TensorIterator.cpp compute_strides/reorder_dimensions) "
         "permutes the iteration to the inputs' strides and allocates the output to match"),
)
