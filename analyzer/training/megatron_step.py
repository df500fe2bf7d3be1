"""Megatron-LM's own kernels in a training step that the graph's PyTorch plan does not show, as
Megatron-LM core_r0.5.0 runs them under Hugging Face accelerate (its ``MegatronLMPlugin`` passes
no fusion or accumulation flag, so Megatron's argument defaults stand), per node, priced like
the backward plan's kernels (``backward_time``).

Main-grad accumulation (``accumulate``, backward). Megatron's DistributedDataParallel
(megatron/core/distributed/distributed_data_parallel.py) gives every parameter a hook on its
gradient accumulator: ``param.main_grad.add_(param.grad.data)`` (``main_grad`` a view of the
contiguous fp32 gradient buffer), then ``param.grad = None``, once per micro-batch. One
elementwise kernel per parameter tensor of n elements, w bytes each: reads the gradient and
``main_grad`` (2 n w), writes ``main_grad`` (n w), n FLOPs; fp32: 12 B per element. With
``gradient_accumulation_fusion`` (Megatron's default, ``--no-gradient-accumulation-fusion``
turns it off; its ColumnParallelLinear refuses to build without apex's
``fused_weight_gradient_mlp_cuda``, so a run that trains took this path) the weight-gradient
GEMM of each linear layer accumulates into ``main_grad`` itself (``wgrad_gemm_accum_fp32``) and
no add runs for that weight: here the weight (input 1, rank 2, constant) of a MatMul or Gemm.
Its extra read of ``main_grad`` inside the GEMM is not priced. A tied LM head's weight gradient
goes in by that GEMM; the embedding lookup's dense gradient still takes the hook's add. Rank-0
constants (a mask's fill value) are not parameters. The kernel belongs to the node that first
consumes the tensor (as ``cost.params``), the backward of which produces the gradient.

Fused kernels (``fused``, forward seconds removed, <= 0). Megatron's legacy GPT (the model
accelerate builds) in training, at its defaults ``--bias-gelu-fusion`` and
``--bias-dropout-fusion``:

- bias + GELU (``bias_gelu_impl``): the bias Add feeding a Gelu (an Add of a MatMul / Gemm
  output and a rank-1 constant) runs inside the GELU's kernel, which reads the bias vector too:
  the Add's forward kernel is gone. Backward (``bias_gelu_back``: one kernel of the GELU
  backward's bytes; the bias gradient's reduction stays) is unchanged;
- bias + dropout + residual add (``bias_dropout_add_fused_train``): at a ``residual`` dropout
  placement (``training.dropout``) on a bias Add, the bias Add's and the residual Add's forward
  kernels are gone and the dropout kernel reads the residual (n w) and the bias vector too:
  priced as that kernel minus the plain dropout kernel. Backward unchanged.

Both are ``torch.jit.script`` functions; Megatron's ``set_jit_fusion_options`` turns on
TorchScript's nvFuser (the NNC and legacy fusers off), which runs each as one kernel. That
assumes PyTorch < 2.2 (NeuSight states 2.1.0); from 2.2 TorchScript has no nvFuser and the
functions would run op by op. The scaled masked softmax kernel needs fp16 / bf16 input
(``FusedScaleMaskSoftmax.is_kernel_available``): in fp32 the graph's mask fill and softmax run,
unchanged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from analyzer.ir.graph import DTYPE_BITS, TensorSpec
from analyzer.prediction.fusion import readers_by_name
from analyzer.training.grad_kernel import BwdKernel

GEMMS = frozenset({"MatMul", "Gemm"})


@dataclass(frozen=True)
class Terms:
    """Per node index: forward seconds the fused kernels change (<= 0 at the node whose kernels
    they absorb), backward seconds of the main-grad adds of the gradients it produces, and the
    forward and backward seconds Megatron's vocab-parallel kernels (``training.megatron_loss``:
    its loss over the graph's at a loss node, the embedding's masking at the lookup under
    tensor parallel) add (empty: none)."""

    fused: tuple[float, ...]
    accumulate: tuple[float, ...]
    vocab_forward: tuple[float, ...] = ()
    vocab_backward: tuple[float, ...] = ()

    def forward(self) -> list[float]:
        """Per node, the forward seconds of the terms (fused + loss)."""
        return [a + b for a, b in zip(self.fused, self.vocab_forward or [0.0] * len(self.fused))]

    def backward(self) -> list[float]:
        """Per node, the backward seconds of the terms (adds + loss)."""
        return [a + b for a, b in zip(self.accumulate,
                                      self.vocab_backward or [0.0] * len(self.accumulate))]


def _floating(spec) -> bool:
    return spec is not None and str(spec.dtype).startswith(("float", "bfloat"))


def _numel(spec) -> int:
    return math.prod(int(d) for d in spec.shape) if spec.shape else 1


def hook_tensors(nodes, fusion: bool = True, split=frozenset(), t: int = 1) -> list[list[int]]:
    """Per node, the elements on one device of each parameter tensor whose gradient the hook
    adds into ``main_grad`` (module docstring): constant floating inputs of rank >= 1 the node
    is the first to read, a node counting parameters (``cost.params``); with ``fusion`` not a
    MatMul / Gemm weight. Tensors named in ``split`` (a tensor plan's) hold ``ceil(n / t)``."""
    seen: set[str] = set()
    out: list[list[int]] = []
    for n in nodes:
        mine: list[int] = []
        for k in n.constant_inputs:
            name = n.in_names[k] if k < len(n.in_names) else ""
            spec = n.in_specs[k] if k < len(n.in_specs) else None
            if not name or name in seen:
                continue
            seen.add(name)
            if not n.cost.params or not _floating(spec) or not spec.shape:
                continue
            if fusion and n.op in GEMMS and k == 1 and len(spec.shape) == 2:
                continue
            e = _numel(spec)
            mine.append(-(-e // t) if name in split else e)
        out.append(mine)
    return out


def hook_kernel(node: int, name: str, n: int, elem_bytes: int) -> BwdKernel:
    """``main_grad.add_(grad)`` over n elements: reads 2 n w, writes n w bytes, n FLOPs."""
    dt = {2: "float16", 8: "float64"}.get(elem_bytes, "float32")
    spec = TensorSpec((n,), dt)
    return BwdKernel(node, f"{name}/main_grad.add_", "accumulate", "Add", (spec, spec), (spec,),
                     vector_flops=n, bytes_read=2 * n * elem_bytes, bytes_written=n * elem_bytes)


def _bias_add(nodes, i: int, made: dict[str, int]) -> bool:
    """Node i adds a rank-1 constant to a MatMul / Gemm output (a linear layer's bias)."""
    n = nodes[i]
    if n.op != "Add" or len(n.in_names) != 2 or len(n.constant_inputs) != 1:
        return False
    c = n.constant_inputs[0]
    spec = n.in_specs[c]
    src = made.get(n.in_names[1 - c])
    return (spec is not None and spec.shape is not None and len(spec.shape) == 1
            and src is not None and nodes[src].op in GEMMS)


def fused_sites(nodes, dropout_p) -> list[tuple[str, tuple[int, ...], object]]:
    """(kind, node indices whose forward kernels the fusion absorbs, the dropout placement or
    None) of each bias-GELU and bias-dropout-add (module docstring); ``dropout_p`` the step's
    dropout probability (None or 0: no bias-dropout-add)."""
    from analyzer.training import dropout as D

    made = {x: i for i, n in enumerate(nodes) for x in n.out_names if x}
    readers = readers_by_name(nodes, lambda n: n.in_names)
    out = []
    for i, n in enumerate(nodes):
        if n.op == "Gelu" and n.in_names and n.in_names[0] in made:
            a = made[n.in_names[0]]
            if _bias_add(nodes, a, made) and readers.get(nodes[a].out_names[0]) == [i]:
                out.append(("bias_gelu", (a,), None))
    for pl in D.placements(nodes, dropout_p) if dropout_p else ():
        b = pl.index
        if pl.where != "residual" or not _bias_add(nodes, b, made):
            continue
        r = readers.get(nodes[b].out_names[0], [])
        if len(r) == 1 and nodes[r[0]].op == "Add":
            out.append(("bias_dropout_add", (b, r[0]), pl))
    return out


def _fused_kernel(pl, bias: int) -> BwdKernel:
    """Dropout(x + bias) + residual in one kernel: reads x, the residual and the bias, writes y
    and the 1-byte mask."""
    spec = TensorSpec(pl.shape, pl.dtype)
    w = DTYPE_BITS.get(str(pl.dtype), 32) // 8
    return BwdKernel(pl.index, "bias_dropout_add", "dropout", "Dropout", (spec, spec),
                     (spec, TensorSpec(pl.shape, "bool")), vector_flops=3 * pl.numel,
                     bytes_read=2 * pl.nbytes() + bias * w,
                     bytes_written=pl.nbytes() + pl.numel)


def _row_seconds(pred, factors, div: int) -> dict[int, float]:
    """Node index -> its forward rows' seconds, bodies times the node's factor / ``div``."""
    out: dict[int, float] = {}
    for r in pred.nodes:
        f = factors[r.index] if factors else 1.0
        out[r.index] = out.get(r.index, 0.0) + r.overhead_s + (r.time_s - r.overhead_s) * f / div
    return out


def terms(report, pred, profile, *, factors=None, div: int = 1, fusion: bool = True,
          split=frozenset(), t: int = 1, m: int = 1) -> Terms:
    """The ``Terms`` of one prediction (module docstring) on one device: bodies times the
    tensor-parallel ``factors`` / ``div`` (the linear rescale of data parallel), the hook's
    tensors split by ``split`` / ``t`` (``hook_tensors``), Megatron's loss at ``m``
    micro-batches per step and the embedding's masking (``megatron_loss``)."""
    from analyzer.ir.graph import PRECISION_BITS
    from analyzer.training import dropout as D
    from analyzer.training.backward_time import each_seconds

    nodes = report.nodes
    eb = PRECISION_BITS.get(pred.precision, 32) // 8
    ks = [hook_kernel(i, nodes[i].name, e, eb)
          for i, sizes in enumerate(hook_tensors(nodes, fusion, split, t)) for e in sizes]
    acc = [0.0] * len(nodes)
    for k, sec in zip(ks, each_seconds(ks, pred, profile)):
        acc[k.node] += sec
    fused = [0.0] * len(nodes)
    drop = (report.training.dropout or {}).get("p") if report.training is not None else None
    rows = _row_seconds(pred, factors, div)
    pairs = []   # (node, body factor, the fused kernel, the dropout kernel it replaces)
    for _kind, absorbed, pl in fused_sites(nodes, drop):
        at = absorbed[0]
        fused[at] -= sum(rows.get(j, 0.0) for j in absorbed)
        if pl is not None:
            bias = _numel(nodes[at].in_specs[nodes[at].constant_inputs[0]])
            pairs.append((at, (factors[at] if factors else 1.0) / div, _fused_kernel(pl, bias),
                          D.forward_kernel(pl, nodes[at].name)))
    one = each_seconds([x[2] for x in pairs], pred, profile)
    two = each_seconds([x[3] for x in pairs], pred, profile)
    for (at, f, _a, _b), s1, s2 in zip(pairs, one, two):
        fused[at] += f * (s1 - s2)
    from analyzer.training import megatron_loss as ML

    lf, lb = ML.deltas(report, pred, profile, rows, factors=factors, div=div, t=t, m=m)
    ef, eb_ = ML.embedding_deltas(report, pred, profile, split, t, div=div, m=m)
    for d, e in ((lf, ef), (lb, eb_)):
        for i, x in e.items():
            d[i] = d.get(i, 0.0) + x
    return Terms(tuple(fused), tuple(acc), tuple(lf.get(i, 0.0) for i in range(len(nodes))),
                 tuple(lb.get(i, 0.0) for i in range(len(nodes))))
