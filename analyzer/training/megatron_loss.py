"""Megatron-LM's vocab-parallel layers' own kernels as core_r0.5.0 runs them under Hugging Face
accelerate 1.0.0: its GPT loss in place of the graph's ``SoftmaxCrossEntropyLoss`` (priced as
``F.cross_entropy``: a log_softmax and an nll_loss kernel; backward a zero fill, a scatter and
the log_softmax backward), and the vocab-parallel embedding's masking under tensor parallel.

Megatron's legacy GPT always computes its loss with the vocab-parallel cross entropy
(``megatron/model/gpt_model.py`` ``post_language_model_processing``:
``tensor_parallel.vocab_parallel_cross_entropy(output.float(), labels)``, at every
tensor-parallel degree, 1 included; ``.float()`` of an fp32 tensor is no copy). With ``r`` rows
(sequence x batch of one micro-batch), ``w`` = the vocabulary columns one device holds
(``ceil(V / t)``) and fp32 logits (4 B; targets int64, 8 B; masks bool, 1 B),
``megatron/core/tensor_parallel/cross_entropy.py`` ``_VocabParallelCrossEntropy`` runs:

forward, over the shard (5 kernels, 32 r w bytes):
  ``torch.max(logits, -1)`` reads 4 r w, writes the values 4 r and indices 8 r;
  ``logits - logits_max.unsqueeze(-1)`` (out of place in r0.5) reads 4 r w + 4 r, writes 4 r w;
  ``torch.exp(x, out=x)`` reads and writes 4 r w (r w transcendentals);
  ``x.sum(-1)`` reads 4 r w, writes 4 r; ``x.div_(sum.unsqueeze(-1))`` reads 4 r w + 4 r,
  writes 4 r w;
forward, per row (14 kernels): the target mask ``(target < start) | (target >= end)`` (3),
  ``target.clone() - start`` (2), ``masked_target[mask] = 0`` (a boolean index: ``nonzero`` and
  ``index_put_``, 2), ``arange`` (1), ``logits_2d[arange, masked_target]`` (1),
  ``.clone()`` (1), ``predicted[mask] = 0.0`` (2), ``torch.log(sum)`` (1), ``- predicted`` (1);
backward, over the shard (1 kernel, 8 r w bytes): ``grad_input.mul_(grad_output.unsqueeze(-1))``;
backward, per row (6 kernels): ``target_mask.float()``, ``1.0 - x``, ``arange``,
  ``grad_2d[arange, masked_target] -= update`` (index, subtract, ``index_put_``).

The three all-reduces of r words over the tensor group are ``analyzer.scaling.tensor``'s. A
boolean index writes the rows it selects: with t > 1 every row on a rank whose vocabulary range
holds none of the targets (each of t - 1 ranks when all targets fall in one range), priced as
every row (the slowest rank); with t = 1 none (every target is in range).

Around it (per micro-batch, each a kernel of at most r elements): the legacy model's
``labels.transpose(0, 1).contiguous()`` (int64) and ``loss.transpose(0, 1).contiguous()``;
accelerate's ``GPTTrainStep.loss_func``: ``losses.view(-1) * loss_mask``, ``torch.sum``,
``loss_mask.sum()``, the divide, ``loss.isnan()`` (``--check-for-nan-in-loss-and-grad``,
Megatron's default), ``average_losses_across_data_parallel_group`` (``clone``, ``cat``, an
all-reduce of one fp32 word over the data-parallel group: ``analyzer.scaling.data_parallel``,
the divide by its size); Megatron's ``forward_step`` ``loss / num_microbatches`` and
``backward_step`` ``grad_scale_func`` (``FP32Optimizer.scale_loss``: ``_scale * loss``);
autograd's seed (a ones fill) and the backward of the scale, the two divides and the mask
multiply (5 kernels, the last of r elements). 12 forward and 5 backward kernels around the
loss's 25: ``KERNELS``.

The embedding (``layers.py`` ``VocabParallelEmbedding.forward``, t > 1 only; r = the index
elements, h = hidden): ``input_mask = (input < start) | (input >= end)`` (3 kernels),
``input.clone() - start`` (2), ``masked_input[input_mask] = 0`` (``nonzero``, ``index_put_``),
then after the lookup (the graph's Gather) ``output_parallel[input_mask, :] = 0.0``
(``nonzero``, ``index_put_`` writing 4 h B per selected row): 9 forward kernels; its backward
(``IndexPutBackward``: ``grad.clone()`` of r h, ``nonzero``, ``index_put_`` of zeros): 3. Every
row selected (as the loss's boolean indexes). The lookup and its all-reduce are the graph's and
``analyzer.scaling.tensor``'s.
"""

from __future__ import annotations

from analyzer.ir.graph import TensorSpec
from analyzer.training.grad_kernel import BwdKernel

F32, I64, B1 = 4, 8, 1
LOSSES = frozenset({"SoftmaxCrossEntropyLoss"})


def sites(nodes) -> list[tuple[int, int, int]]:
    """(node index, rows, vocabulary) of each SoftmaxCrossEntropyLoss over 2-D float scores
    ``[rows, V]`` reduced to a scalar (``mean`` or ``sum``)."""
    out = []
    for i, n in enumerate(nodes):
        if n.op not in LOSSES or not n.in_specs or n.in_specs[0] is None:
            continue
        x = n.in_specs[0]
        o = n.out_specs[0] if n.out_specs else None
        if (x.shape is None or len(x.shape) != 2 or not all(isinstance(d, int) for d in x.shape)
                or not str(x.dtype).startswith("float") or o is None or o.shape != ()):
            continue
        out.append((i, x.shape[0], x.shape[1]))
    return out


def _k(node: int, name: str, op: str, shape, read: int, written: int, vec: int = 0,
       trans: int = 0, dtype: str = "float32") -> BwdKernel:
    spec = TensorSpec(tuple(shape), dtype)
    return BwdKernel(node, name, "loss", op, (spec,), (spec,), vector_flops=vec,
                     transcendentals=trans, bytes_read=read, bytes_written=written)


def _shard_forward(i: int, name: str, r: int, w: int) -> list[BwdKernel]:
    n, s = r * w, (r, w)
    return [_k(i, f"{name}/max", "ReduceMax", s, F32 * n, F32 * r + I64 * r, vec=n),
            _k(i, f"{name}/sub_max", "Sub", s, F32 * (n + r), F32 * n, vec=n),
            _k(i, f"{name}/exp", "Exp", s, F32 * n, F32 * n, trans=n),
            _k(i, f"{name}/sum_exp", "ReduceSum", s, F32 * n, F32 * r, vec=n),
            _k(i, f"{name}/div_sum", "Div", s, F32 * (n + r), F32 * n, vec=n)]


def _row_forward(i: int, name: str, r: int, masked: int) -> list[BwdKernel]:
    """The 14 row kernels of the forward (module docstring); ``masked`` rows selected."""
    v = (r,)
    ks = [("lt_start", "Less", I64 * r, B1 * r), ("ge_end", "GreaterOrEqual", I64 * r, B1 * r),
          ("or", "Or", 2 * B1 * r, B1 * r), ("clone_target", "Identity", I64 * r, I64 * r),
          ("sub_start", "Sub", I64 * r, I64 * r),
          ("nonzero_target", "NonZero", B1 * r, I64 * masked),
          ("index_put_target", "ScatterND", 2 * I64 * masked, I64 * masked),
          ("arange", "Range", 0, I64 * r),
          ("pick", "GatherND", 2 * I64 * r + F32 * r, F32 * r),
          ("clone_pick", "Identity", F32 * r, F32 * r),
          ("nonzero_pick", "NonZero", B1 * r, I64 * masked),
          ("index_put_pick", "ScatterND", I64 * masked, F32 * masked),
          ("log", "Log", F32 * r, F32 * r), ("sub_pick", "Sub", 2 * F32 * r, F32 * r)]
    return [_k(i, f"{name}/{a}", op, v, rd, wr, vec=r, trans=r if op == "Log" else 0)
            for a, op, rd, wr in ks]


def _around_forward(i: int, name: str, r: int) -> list[BwdKernel]:
    """The 12 kernels around the loss in forward: 2 transposes, loss_func's 5, the average's 3,
    the micro-batch divide and the loss scale (module docstring)."""
    v, one = (r,), (1,)
    ks = [("labels_transpose", "Transpose", v, I64 * r, I64 * r),
          ("loss_transpose", "Transpose", v, F32 * r, F32 * r),
          ("mask_mul", "Mul", v, 2 * F32 * r, F32 * r), ("loss_sum", "ReduceSum", v, F32 * r, F32),
          ("mask_sum", "ReduceSum", v, F32 * r, F32), ("loss_div", "Div", one, 2 * F32, F32),
          ("isnan", "IsNaN", one, F32, B1), ("avg_clone", "Identity", one, F32, F32),
          ("avg_cat", "Concat", one, F32, F32), ("avg_div", "Div", one, F32, F32),
          ("microbatch_div", "Div", one, F32, F32), ("loss_scale", "Mul", one, 2 * F32, F32)]
    return [_k(i, f"{name}/{a}", op, s, rd, wr, vec=1) for a, op, s, rd, wr in ks]


def _backward(i: int, name: str, r: int, w: int) -> list[BwdKernel]:
    """The backward: autograd's seed and the 3 scalar and 1 row kernels before the loss, its 6
    row kernels and the shard's multiply (module docstring)."""
    v, one, n = (r,), (1,), r * w
    ks = [("seed", "ConstantOfShape", one, 0, F32), ("scale_grad", "Mul", one, 2 * F32, F32),
          ("microbatch_grad", "Div", one, F32, F32), ("loss_div_grad", "Div", one, 2 * F32, F32),
          ("mask_mul_grad", "Mul", v, F32 + F32 * r, F32 * r),
          ("mask_float", "Cast", v, B1 * r, F32 * r), ("one_minus", "Sub", v, F32 * r, F32 * r),
          ("arange", "Range", v, 0, I64 * r),
          ("pick_grad", "GatherND", v, 2 * I64 * r + F32 * r, F32 * r),
          ("sub_update", "Sub", v, 2 * F32 * r, F32 * r),
          ("index_put_grad", "ScatterND", v, 2 * I64 * r + F32 * r, F32 * r)]
    out = [_k(i, f"{name}/{a}", op, s, rd, wr, vec=s[0]) for a, op, s, rd, wr in ks]
    return out + [_k(i, f"{name}/mul_grad_output", "Mul", (r, w), F32 * (n + r), F32 * n, vec=n)]


def kernels(i: int, name: str, r: int, w: int, t: int) -> tuple[list, list]:
    """(forward, backward) kernels of Megatron's loss over ``r`` rows and a shard of ``w``
    vocabulary columns at tensor-parallel degree ``t`` (module docstring)."""
    masked = r if t > 1 else 0
    fwd = _shard_forward(i, name, r, w) + _row_forward(i, name, r, masked) \
        + _around_forward(i, name, r)
    return fwd, _backward(i, name, r, w)


def embedding_kernels(i: int, name: str, r: int, h: int) -> tuple[list, list]:
    """(forward, backward) masking kernels of the vocab-parallel embedding over ``r`` indices of
    hidden ``h`` (module docstring), every row selected."""
    v, rh = (r,), r * h
    fk = [("lt_start", "Less", v, I64 * r, B1 * r), ("ge_end", "GreaterOrEqual", v, I64 * r, B1 * r),
          ("or", "Or", v, 2 * B1 * r, B1 * r), ("clone_input", "Identity", v, I64 * r, I64 * r),
          ("sub_start", "Sub", v, I64 * r, I64 * r), ("nonzero_input", "NonZero", v, B1 * r, I64 * r),
          ("index_put_input", "ScatterND", v, 2 * I64 * r, I64 * r),
          ("nonzero_rows", "NonZero", v, B1 * r, I64 * r),
          ("index_put_rows", "ScatterND", (r, h), I64 * r, F32 * rh)]
    bk = [("clone_grad", "Identity", (r, h), F32 * rh, F32 * rh),
          ("nonzero_grad", "NonZero", v, B1 * r, I64 * r),
          ("index_put_grad", "ScatterND", (r, h), I64 * r, F32 * rh)]
    return tuple([_k(i, f"{name}/{a}", op, s, rd, wr) for a, op, s, rd, wr in ks]
                 for ks in (fk, bk))


def embedding_deltas(report, pred, profile, split, t: int, *, div: int = 1,
                     m: int = 1) -> tuple[dict, dict]:
    """Per vocab-parallel embedding (a Gather whose table is in ``split``, the tensor plan's
    split tensors), the (forward, backward) seconds of its masking kernels (t > 1; none else),
    at ``indices / (div m)`` per micro-batch, ``m`` times."""
    from analyzer.training.backward_time import each_seconds

    fwd, bwd = {}, {}
    if t <= 1:
        return fwd, bwd
    for i, n in enumerate(report.nodes):
        if n.op != "Gather" or not n.in_names or n.in_names[0] not in split:
            continue
        idx, table = n.in_specs[1], n.in_specs[0]
        if idx is None or idx.shape is None or table is None or not table.shape:
            continue
        r = max(1, _prod(idx.shape) // (div * m))
        f_k, b_k = embedding_kernels(i, n.name, r, int(table.shape[-1]))
        fwd[i] = m * sum(each_seconds(f_k, pred, profile))
        bwd[i] = m * sum(each_seconds(b_k, pred, profile))
    return fwd, bwd


def _prod(shape) -> int:
    out = 1
    for d in shape:
        out *= int(d)
    return out


KERNELS = {"forward_shard": 5, "forward_rows": 14, "forward_around": 12, "backward_around": 5,
           "backward_rows": 6, "backward_shard": 1}


def graph_backward(node, i: int, needs, rows: int, width: int) -> list[BwdKernel]:
    """The graph's own backward kernels of loss node ``node`` (``backward_loss.cross_entropy``)
    at ``rows`` x ``width`` scores: what the step charged before Megatron's replace them."""
    from dataclasses import replace

    from analyzer.training.backward_loss import cross_entropy
    from analyzer.training.grad_kernel import Ctx

    x, tgt = node.in_specs[0], node.in_specs[1]
    specs = (TensorSpec((rows, width), x.dtype), TensorSpec((rows,), tgt.dtype)) \
        + tuple(node.in_specs[2:])
    return cross_entropy(Ctx(i, replace(node, in_specs=specs), needs)) or []


def deltas(report, pred, profile, rows_s: dict, *, factors=None, div: int = 1, t: int = 1,
           m: int = 1) -> tuple[dict, dict]:
    """Per loss node (``sites``), (forward, backward) seconds of Megatron's loss on one device
    minus the graph's: its forward rows' ``rows_s`` (a node index -> seconds map, bodies already
    times the node's factor / ``div``) and its backward kernels at the device's shard (the whole
    vocabulary where the plan left the node unsplit: factor 1); Megatron's
    at ``rows / (div m)`` rows per micro-batch, ``m`` times; the shard ``ceil(V / t)``."""
    from analyzer.training.backward_time import each_seconds
    from analyzer.training.step import gradient_plan

    fwd, bwd = {}, {}
    found = sites(report.nodes)
    plan = gradient_plan(report.nodes) if found else []
    for i, r, v in found:
        w = -(-v // t)
        rm = max(1, r // (div * m))
        f_k, b_k = kernels(i, report.nodes[i].name, rm, w, t)
        f = factors[i] if factors else 1.0
        g = graph_backward(report.nodes[i], i, plan[i].needs, max(1, r // div), w if f < 1 else v)
        mine_f = m * sum(each_seconds(f_k, pred, profile))
        mine_b = m * sum(each_seconds(b_k, pred, profile))
        fwd[i] = mine_f - rows_s.get(i, 0.0)
        bwd[i] = mine_b - sum(each_seconds(g, pred, profile))
    return fwd, bwd
