"""The layout transposes XLA's GPU compiler runs around a cuDNN convolution, which the ``xla`` plan
on a GPU profile adds as launches with no node of their own (``fusion.plan`` with
``fold_transposes``; ``FusionPlan.extra_ops`` / ``extra_bytes``, priced by ``lowering``'s
``lf.add_at``, shown by ``--explain`` and in the kernel count).

**Which layout cuDNN gets** (openxla/xla ``xla/service/gpu/transforms/layout_assignment.cc``,
``HeuristicLayoutAssignment``, read at commit 080da28; ``GpuLayoutAssignment::
AddBackendConstraintsToDnnConvCustomCall`` sets it on the input, filter and output of every
cuDNN convolution custom call, forward or backward): channels last (input and output NHWC, filter
OHWI: ``b01f_o01i->b01f``) for integer and FP8 convolutions on any GPU and for every type but f64
on compute capability 9.0 and later (Hopper, Blackwell: ``HOPPER_ON``); on Volta to Ada
(``VOLTA_TO_ADA``) only for f16 / bf16 convolutions of two spatial dims; else channels first
(NCHW / OIHW; f32 on an A100, every float convolution on older GPUs and on ROCm, where NHWC
needs ``TF_USE_ROCM_NHWC``).  The element type is the convolution input's, or the prediction's
``--precision`` where it is fp16, bf16, fp8 or int8 (tf32 keeps f32).

**Where a transpose runs** (layout assignment fixes the entry parameters' and the result's
layouts to the program's row-major order and inserts a copy where a constraint differs;
``LayoutNormalization`` makes each copy a ``transpose``; the fusion passes fuse a transpose into
a loop fusion like any elementwise op, and one left alone is a ``wrapped_transpose`` kernel;
read from the H200's compiled HLO and its kernel names, the XLA single-op run of
``bench/gpu/measure_xla.py``).  For each convolution operand (input,
filter) and its result whose dimension numbers (``dn=`` in the JAX rule's kernel word; an ONNX
Conv is NCHW / OIHW / NCHW) differ from cuDNN's order, unless the transpose moves only dims of
size 1 (a bitcast: a 1x1 filter to OHWI, one channel to NHWC):

1. an operand that is a program input (a jit argument: the batch, or the weights passed as
   arguments) is a transpose kernel of its own, once per call per tensor (the same tensor read
   by several convolutions is transposed once); the weights' transposes run on every call;
2. an operand that is a constant of the compiled program (a closed-over weight, an ONNX
   initializer) is transposed at compile time: none;
3. an operand written by a loop fusion (an elementwise chain, a batch norm) is written in
   cuDNN's order by that fusion (layout assignment propagates the constraint to the producer,
   and elementwise ops and reductions take any layout): none, unless the tensor is also a
   program output (then a copy of its own); an operand written by another convolution is
   already in cuDNN's order: none; by any other kernel (a dot): a transpose;
4. the result (what leaves the convolution's kernel, its cuDNN epilogue included): a transpose
   kernel where it is a program output or a matrix kernel other than a convolution reads it;
   loop fusions and reductions read it in cuDNN's order (the CNN's batch norm, max pool and
   mean run NHWC on the H200), and one that makes a program output transposes as it writes.

Each transpose reads and writes its tensor: ``2 x bytes``, at the movement class's rate and
floor (op ``transpose``), carried by the convolution's kernel.  On the H200 (jax 0.11.2): a
single NCHW convolution of two arguments is 4 kernels (input, filter, convolution, result: all
9 ``conv|f32|...`` cases of ``bench/gpu/xla_cases.py``); the sample CNN with
weights as arguments 6 transposes (the batch and 5 filters), with closed-over weights 1.  Not
planned: backward convolutions' own layouts (a train step's ``jax.grad`` convolutions follow
the same rule on their jaxpr dimension numbers, not checked on a compile), a reshape of a
convolution's result that is no bitcast in cuDNN's order (a flatten before a dot: rule 4 counts
the dot's transpose only where the dot reads the result through views).
"""

from __future__ import annotations

from analyzer.counting import kernel_words
from analyzer.prediction import fusion_xla, xla_gpu_joins

OP = "transpose"          # the inserted launches' op (class movement)
# profile families whose XLA gives every non-f64 convolution NHWC (compute capability >= 9.0)
HOPPER_ON = frozenset({"nvidia-hopper", "nvidia-blackwell"})
# Volta (7.0) to Ada (8.9): NHWC for f16 / bf16 two-dimensional convolutions only
VOLTA_TO_ADA = frozenset({"nvidia-volta", "nvidia-turing", "nvidia-ampere", "nvidia-ampere-ga10x", "nvidia-ada"})
HALF = frozenset({"float16", "bfloat16"})
# a precision's element type where it changes the convolution's (``--precision``)
PRECISION_DTYPE = {"fp16": "float16", "bf16": "bfloat16", "fp8": "float8e4m3fn", "int8": "int8"}
CONVS = (("jax", "conv_general_dilated"), ("", "Conv"))


def generation(profiles) -> str:
    """The rule's GPU generation of ``profiles`` (``hopper``, ``volta``, else ``other``), '' where
    they differ (a lowering plans one layout: ``targets.groups`` lowers them apart)."""
    gens = {_gen(getattr(p, "family", None)) for p in profiles}
    return gens.pop() if len(gens) == 1 else ""


def _gen(family) -> str:
    return "hopper" if family in HOPPER_ON else "volta" if family in VOLTA_TO_ADA else "other"


def channels_last(gen: str, dtype: str, spatial: int) -> bool:
    """Whether XLA gives cuDNN NHWC / OHWI for a convolution of input ``dtype`` with ``spatial``
    spatial dims on generation ``gen`` (the module docstring)."""
    if dtype.startswith(("int", "uint", "float8")):
        return True
    if gen == "hopper":
        return dtype != "float64"
    return gen == "volta" and dtype in HALF and spatial == 2


def node_layout(n, precision: str | None) -> tuple:
    """(element type, spatial dims, positions transposed for channels last, for channels first)
    of a convolution ``n`` (a ``NodeCost``) of static shapes; () for any other node.  Positions:
    0 input, 1 filter, 2 result, each listed where the transpose to that order is no bitcast."""
    if (n.domain, n.op) not in CONVS or len(n.in_specs) < 2 or not n.out_specs:
        return ()
    specs = (n.in_specs[0], n.in_specs[1], n.out_specs[0])
    if not all(s is not None and s.is_static for s in specs):
        return ()
    rank = len(specs[0].shape)
    dn = kernel_words.ints(n.kernel, "dn") or tuple(range(rank)) * 3
    dims = [dn[rank * j:rank * (j + 1)] for j in range(3)]
    last = [(d[0], *d[2:], d[1]) for d in dims]
    dtype = specs[0].dtype
    if precision in PRECISION_DTYPE and dtype.startswith(("float", "bfloat")):
        dtype = PRECISION_DTYPE[precision]
    return (dtype, rank - 2, tuple(j for j in range(3) if not _bitcast(specs[j].shape, last[j])),
            tuple(j for j in range(3) if not _bitcast(specs[j].shape, dims[j])))


def _bitcast(shape, order) -> bool:
    """Whether holding ``shape`` in dim ``order`` (outermost first) moves no element: the dims
    of size > 1 keep their row-major order (XLA's ``ShapeUtil::TransposeIsBitcast``)."""
    kept = [d for d in order if shape[d] != 1]
    return kept == sorted(kept)


def launches(nodes, p, producer, consumers, graph_outputs, fusible, gen: str) -> list[tuple[int, str, int]]:
    """[(kernel, ``OP``, bytes it moves)] of the transposes around every convolution (rules 1-4
    of the module docstring), each on the convolution's kernel of plan ``p`` (a
    ``fusion.FusionPlan``); ``fusible[i]``: node ``i`` is in a loop fusion."""
    kernel_of = p.kernel_of
    out: list[tuple[int, str, int]] = []
    seen: set = set()
    for c, nd in enumerate(nodes):
        lay = getattr(nd, "conv_layout", ())
        if not lay or kernel_of[c] < 0 or not gen:
            continue
        dtype, spatial, last, first = lay
        copies = last if channels_last(gen, dtype, spatial) else first
        for pos in (j for j in copies if j < 2):
            key = _operand(nodes, c, pos, producer, consumers, graph_outputs, fusible)
            if key is not None and key not in seen:
                seen.add(key)
                out.append((kernel_of[c], OP, 2 * nd.input_bytes[pos]))
        if 2 in copies:
            out.extend((kernel_of[c], OP, 2 * b) for b in results(nodes, p, c, consumers, graph_outputs, fusible))
    return out


def _operand(nodes, c: int, pos: int, producer, consumers, graph_outputs, fusible):
    """The key of the transpose operand ``pos`` of convolution ``c`` takes (rules 1-3: its tensor
    and position), None where it takes none."""
    nd = nodes[c]
    level, t = nd.level, nd.inputs[pos] if pos < len(nd.inputs) else ""
    const = pos in xla_gpu_joins.compiled_constants(nd)
    i = producer.get((level, t)) if t else None
    while i is not None and not nodes[i].launches:   # views and folded nodes launch nothing
        v = nodes[i]
        if not v.inputs or not v.inputs[0]:
            return None
        const, t = 0 in xla_gpu_joins.compiled_constants(v), v.inputs[0]
        i = producer.get((level, t))
    if not t or const:
        return None
    key = (level, t, pos)
    if i is None or not (fusible[i] or getattr(nodes[i], "conv_layout", ())):
        return key
    if fusible[i]:
        _, is_out = fusion_xla.view_readers(nodes, consumers, [(level, o) for o in nodes[i].outputs if o],
                                            graph_outputs)
        return key if is_out else None
    return None


def results(nodes, p, c: int, consumers, graph_outputs, fusible) -> list[int]:
    """The bytes of each tensor leaving convolution ``c``'s kernel (plan ``p``) that is transposed
    back (rule 4): a program output, or read by a matrix kernel other than a convolution
    (``fusible[i]``: node ``i`` reads any layout; XLA's CPU plan takes this rule too)."""
    kernel_of = p.kernel_of
    k = kernel_of[c]
    out = []
    for u in p.members[k]:
        v = nodes[u]
        for t, b in zip(v.outputs, v.output_bytes):
            if not t:
                continue
            rs, is_out = fusion_xla.view_readers(nodes, consumers, [(v.level, t)], graph_outputs)
            outside = [r for r in rs if kernel_of[r] != k and kernel_of[r] >= 0]
            if is_out or any(not fusible[r] and not getattr(nodes[r], "conv_layout", ()) for r in outside):
                out.append(b)
    return out
