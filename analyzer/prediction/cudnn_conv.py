"""The kernels cuDNN launches inside one eager convolution besides its main kernel (rules
``cudnn-fp32`` and ``cudnn-nhwc`` of ``eager_rules.RULES``), with closed-form bytes.

An eager ``nn.Conv2d`` is one aten call (``cudnn_convolution``) but cuDNN runs several kernels
in it.  They are launches inside the library call: each pays its kernel floor and moves its
bytes at the copy class's rate (op ``Transpose``: class ``movement``), but no host dispatch of
its own (the call's dispatch figure is the whole call's); their op names carry ``INSIDE``.

fp32 on the FMA units (``fp32_launches``), for the Winograd shape (an ungrouped 2-D 3x3 stride-1
convolution, ``engines.winograd_shape``) only, the shape of every convolution row of NeuSight's
PyTorch 2.1 / cuDNN 8.9 data (``shared/measurements/gpu/neusight_ops.csv.gz``, ``kernels_launched``;
bench/cudnn_kernels.py tabulates them): cuDNN ran the non-fused Winograd F(4x4,3x3) (4 kernels:
``winogradForwardData4x4``, ``winogradForwardFilter4x4``, an sgemm, ``winogradForwardOutput4x4``)
on 40 % of the rows, and a main kernel with one helper (fused Winograd after
``generateWinogradTilesKernel``, an implicit GEMM after ``computeOffsetsKernel``) on 56 %.  The rule:
non-fused where ``min(C_in, C_out) >= NONFUSED_MIN_CHANNELS`` and the 4x4 output tiles
``T = N ceil(H_out/4) ceil(W_out/4) >= NONFUSED_MIN_TILES`` (3 launches besides the main kernel),
else one helper.  Each pays its floor only: the main kernel's fitted class (``conv3_simt``, its
Winograd multiply share) keeps the whole call's work, as fitted before the rule.  Charging the
transforms' bytes (``winograd_bytes``) too was worse on NeuSight's conv rows left out one GPU at a
time (MAPE 32.1 % against 31.1 %; bench/cudnn_kernels.py): not charged.  Other shapes (1x1,
strided, grouped): no kernel list in the data; the main kernel only.

fp16/bf16 (``nhwc_launches``): NVIDIA's cuDNN developer guide and Deep Learning Performance guide
("Tensor Layouts In Memory: NCHW vs NHWC") say Tensor Core convolutions run NHWC and that cuDNN
transposes NCHW tensors to NHWC and back: for a cuDNN convolution (not depthwise, which runs
PyTorch's own kernel) of an NCHW input, three conversions (nchwToNhwcKernel of the input and of
the filter, nhwcToNchwKernel of the output), each reading and writing its tensor once:
``2 x bytes(x)``, ``2 x bytes(w)``, ``2 x bytes(y)``.  An input already channels last: none.
Which convolutions convert (``tensor_core_launches``), from the kernel names of this repository's
H200 run (torch 2.11, cuDNN 9; docs/accuracy.md, Whole models on the H200): none where the
channels are not aligned to 16 bytes (NVIDIA's "Channels In And Out": multiples of 8 fp16 or 4
TF32 elements), none for a 1x1 stride-1 convolution (one cuBLAS GEMM), the input and the output
for a strided 1x1; under precision ``tf32`` an fp32 convolution takes the tensor-core rule (the
input and the filter; the kernel writes NCHW) and no Winograd helper.  Per GPU generation
(``winograd_helpers``): on Hopper (profile family ``NO_WINOGRAD_FAMILIES``) the same names show
every fp32 (TF32 off) convolution as one cuDNN 9 ``sm80_xmma_fprop_implicit_gemm ... ffma`` kernel
and no Winograd or helper kernel (ResNet-50 fp32: 53 main kernels, no Winograd name): no
``fp32_launches`` there; older generations keep the cuDNN 8.9 rule read off their kernels, and
Blackwell too (no kernel names of it on record).  Without a precision, an fp32 convolution on a
profile where PyTorch's default runs it in TF32 (``engines.default_tf32_convs``, the kernel times'
condition) takes the TF32 rule, as under ``--precision tf32`` (``lowering._plan_precision``); an
explicit ``fp32`` the fp32 rule; int8 and other element sizes: the main kernel only.  An eval BatchNorm in fp16/bf16 adds two per-channel launches (``bn_fp16_launches``,
prefix ``ATEN``: inside the aten call, no dispatch of their own).
"""

from __future__ import annotations

from math import ceil

INSIDE = "cudnn:"        # op-name prefix of a launch inside the library call (no host dispatch)
ATEN = "aten:"           # op-name prefix of a launch inside one aten op's C++ (no Python dispatch)
ALIGN_BYTES = 16         # a tensor-core convolution's channel alignment: C x element size % 16
COPY = "Transpose"       # the op whose class (movement) these kernels are charged as
NONFUSED_MIN_CHANNELS = 96
NONFUSED_MIN_TILES = 100
# profile families whose fp32 convolutions run no Winograd helper (the H200's cuDNN 9 names)
NO_WINOGRAD_FAMILIES = frozenset({"nvidia-hopper"})
SOURCE = ("NeuSight's PyTorch 2.1 / cuDNN 8.9 nn.Conv2d rows (shared/measurements/gpu/neusight_ops.csv.gz, "
          "kernels_launched; bench/cudnn_kernels.py); NVIDIA cuDNN developer guide and Deep Learning "
          "Performance guide, 'Tensor Layouts In Memory: NCHW vs NHWC'")


def op_of(op: str) -> str:
    """The op an extra launch's name charges its class as (``INSIDE`` or ``ATEN`` stripped)."""
    for pre in (INSIDE, ATEN):
        if op.startswith(pre):
            return op[len(pre):]
    return op


def inside(op: str) -> bool:
    """Whether an extra launch runs inside its kernel's library or aten call (no host dispatch of
    its own)."""
    return op.startswith((INSIDE, ATEN))


def tiles(n: int, ho: int, wo: int) -> int:
    """4x4 output tiles of F(4x4,3x3): ``N ceil(H_out/4) ceil(W_out/4)``."""
    return n * ceil(ho / 4) * ceil(wo / 4)


def nonfused(n: int, ci: int, co: int, ho: int, wo: int) -> bool:
    """The rule's choice of cuDNN's non-fused Winograd for a Winograd-shape fp32 convolution."""
    return min(ci, co) >= NONFUSED_MIN_CHANNELS and tiles(n, ho, wo) >= NONFUSED_MIN_TILES


def winograd_helpers(profiles) -> bool:
    """Whether the plan gives a Winograd-shape fp32 convolution cuDNN 8.9's helper launches
    (``fp32_launches``): unless every profile lowered together is of ``NO_WINOGRAD_FAMILIES``."""
    return not profiles or not all(getattr(p, "family", None) in NO_WINOGRAD_FAMILIES for p in profiles)


def fp32_launches(x: tuple, co: int, out: tuple) -> list[tuple[str, int]]:
    """(op, bytes) of the helper launches of a Winograd-shape fp32 convolution of input ``x``
    [N, C_in, H, W] to ``out`` [N, C_out, H_out, W_out]: floors only (no bytes charged)."""
    n, ci = x[0], x[1]
    return [(INSIDE + COPY, 0)] * (3 if nonfused(n, ci, co, out[2], out[3]) else 1)


def winograd_bytes(x: tuple, co: int, out: tuple, e: int) -> tuple[int, int, int]:
    """Bytes of the non-fused Winograd F(4x4,3x3)'s three transforms (element size ``e``; 6x6
    input tiles per 4x4 output tile, 3x3 filter -> 6x6; T = ``tiles``), not charged by the plan
    (see the module's docstring; bench/cudnn_kernels.py's variant):

    - data: reads the input, writes 36 values per tile and input channel: ``e (N C_in H W + 36 C_in T)``
    - filter: reads 3x3, writes 6x6 per filter: ``e 45 C_in C_out``
    - output: reads 36 values per tile and output channel, writes the output:
      ``e (36 C_out T + N C_out H_out W_out)``"""
    n, ci, h, w = x
    ho, wo = out[2], out[3]
    t = tiles(n, ho, wo)
    return e * (n * ci * h * w + 36 * ci * t), e * 45 * ci * co, e * (36 * co * t + n * co * ho * wo)


def nhwc_launches(x_bytes: int, w_bytes: int, y_bytes: int) -> list[tuple[str, int]]:
    """(op, bytes) of cuDNN's NCHW <-> NHWC conversions around a tensor-core convolution."""
    return [(INSIDE + COPY, 2 * x_bytes), (INSIDE + COPY, 2 * w_bytes), (INSIDE + COPY, 2 * y_bytes)]


def tensor_core_launches(x: tuple, wt: tuple, out: tuple, e: int, io_bytes: tuple[int, int, int],
                         tf32: bool = False) -> list[tuple[str, int]]:
    """(op, bytes) of the conversions around a tensor-core convolution of NCHW input ``x`` with
    filter ``wt`` [C_out, C_in/g, kh, kw] to ``out``, element size ``e``, ``io_bytes`` = (input,
    filter, output) bytes; ``tf32``: an fp32 convolution on the tensor cores (rule ``cudnn-nhwc``,
    as the H200's kernel names show it, torch 2.11 / cuDNN 9):

    - C_in or C_out x ``e`` not a multiple of ``ALIGN_BYTES``: no tensor-core kernel (the
      3-channel stem runs ``implicit_convolve_sgemm`` on NCHW): none;
    - a 1x1 stride-1 unpadded ungrouped convolution is one GEMM per image on the NCHW tensors
      (cuBLAS's nvjet / cutlass GEMM): none;
    - a strided 1x1: the input and the output converted (a 1x1 filter is already K-R-S-C); under
      TF32 an NCHW FMA-unit kernel: none;
    - else the input, the filter and the output (``nhwc_launches``); under TF32 the kernel writes
      NCHW itself (``..._nhwckrsc_nchw``): the input and the filter."""
    xb, wb, yb = io_bytes
    if (x[1] * e) % ALIGN_BYTES or (wt[0] * e) % ALIGN_BYTES:
        return []
    if all(k == 1 for k in wt[2:]) and wt[1] == x[1]:
        if tuple(out[2:]) == tuple(x[2:]) or tf32:
            return []
        return [(INSIDE + COPY, 2 * xb), (INSIDE + COPY, 2 * yb)]
    if tf32:
        return nhwc_launches(xb, wb, yb)[:2]
    return nhwc_launches(xb, wb, yb)


def bn_fp16_launches(channels: int, e: int) -> list[tuple[str, int]]:
    """(op, bytes) of the launches besides ``batch_norm_transform_input`` of an eval BatchNorm of
    ``channels`` channels in fp16/bf16 (element size ``e``): eager PyTorch's native batch norm (the
    H200's names: ``direct_copy_kernel`` and ``batch_norm_calc_invstd`` before each transform, a
    per-channel copy whose time does not grow with the batch), each reading a per-channel vector
    and writing it as fp32: ``channels x (e + 4)`` bytes.  fp32 runs cuDNN's one
    ``bn_fw_inf_1C11_kernel_NCHW``: none."""
    return [(ATEN + COPY, channels * (e + 4)), (ATEN + "Add", channels * (e + 4))]
