"""The backward kernels of the ops that index, move or reduce data (``backward_rules``' table
continued; the same conventions: PyTorch's derivative formulas, every ATen op of a formula one
kernel, ``dY`` the output gradient, ``numel`` counting elements).

==========================  ===================================================================
forward node                backward kernels (derivative formula it comes from)
==========================  ===================================================================
Gather of a weight          ``embedding_dense_backward_cuda``: with n <= 3072 indices,
(embedding)                 ``at::zeros`` of the [V, D] gradient (writes V*D) and
                            ``embedding_backward_feature_kernel`` (reads the indices and n*D of
                            dY, writes n*D); above 3072, the zeros, seven index launches (arange,
                            the cub radix sort taken as one, segment offsets, partials per
                            segment, their exclusive sum, the partial count, partial offsets;
                            each reads and writes the n indices) and ``compute_grad_weight`` +
                            ``sum_and_scatter`` (n*D read and written each).  A lookup the
                            exporter folded into a constant (position ids): the same kernels,
                            after the gradient of the constant it became (its consumers').
Gather of an activation,    ``select_backward``/``index_select_backward``/``slice_backward``:
Slice                       ``zeros`` of the input's size, then a copy (or ``index_add_``) of dY
                            into it: 2 kernels.
Split                       ``split_backward``: one ``cat`` of the pieces' gradients.
Concat                      no kernel: each input's gradient is a narrow view of dY.
Expand                      ``sum_to_size`` where it broadcast (a reduction), else no kernel.
ReduceSum / ReduceMean,     sum: ``grad.expand`` (a view, no kernel); mean and
GlobalAveragePool,          global average pool: ``grad.expand / n`` (1 kernel writing the
AveragePool, MaxPool        input); ``avg_pool2d_backward`` / ``max_pool2d_with_indices_backward``:
                            one kernel (reads dY and, for max, the int64 indices; writes dX).
Cast                        to another dtype: one copy kernel; to its own dtype: none.
views (Reshape, Flatten,    no kernel: the gradient of a view is a view (``view``/``permute``/
Squeeze, Unsqueeze,         ``transpose`` of dY); a reshape that copied in forward is a clone,
Transpose, Identity,        whose gradient passes through.  A strided gradient a reshape
Dropout)                    cannot view, or a kernel needs contiguous, is copied first
                            (``grad_strides``).
==========================  ===================================================================
"""

from __future__ import annotations

from math import prod

from analyzer.training.grad_kernel import ONNX_DOMAINS, Ctx, sums

EMBEDDING_SMALL = 3072           # indices up to which embedding_dense_backward takes one kernel
EMBEDDING_INDEX_LAUNCHES = 7     # index launches of the sort path (module docstring)


def gather(c: Ctx):
    data, idx, o = c.ins(0), c.ins(1), c.out()
    if data is None or idx is None or o is None or not c.needs[0]:
        return None if (data is None or idx is None or o is None) else []
    if 0 in c.n.constant_inputs:
        return embedding(c)
    nd, no = prod(data), prod(o)       # select / index_select of an activation: zeros + copy
    return [c.k("zero", "Mul", [], [data], read=0, written=nd),
            c.k("copy", "ScatterND", [o], [data], read=no, written=no, vec=no)]


def embedding(c: Ctx):
    """``embedding_dense_backward_cuda`` of a Gather of weight ``data`` (module docstring)."""
    data, idx, o = c.ins(0), c.ins(1), c.out()
    if data is None or idx is None or o is None:
        return None
    nd, no, n_idx = prod(data), prod(o), prod(idx)
    ib = (n_idx * 64 + c.bits - 1) // c.bits            # int64 indices, in elements of the dtype
    out = [c.k("zero", "Mul", [], [data], read=0, written=nd)]
    if n_idx <= EMBEDDING_SMALL:
        out.append(c.k("dW", "ScatterND", [o], [data], read=no + ib, written=no, vec=no))
        return out
    out += [c.k("index", "Transpose", [idx], [idx], read=ib, written=ib, suffix=f"{k}")
            for k in range(EMBEDDING_INDEX_LAUNCHES)]
    out.append(c.k("partial", "ScatterND", [o], [o], read=no + ib, written=no, vec=no))
    out.append(c.k("dW", "ScatterND", [o], [data], read=no + ib, written=no, vec=no))
    return out


def folded_lookup(i: int, n):
    """The embedding backward of a Gather the exporter folded into a constant (a position or
    token-type lookup with constant ids: its output is a constant the graph reads), or None
    where ``n`` is not a Gather of a floating weight of rank 2."""
    if n.op != "Gather" or n.domain not in ONNX_DOMAINS or len(n.in_specs) < 2:
        return None
    w = n.in_specs[0]
    if w is None or w.shape is None or len(w.shape) != 2 or not str(w.dtype).startswith(("float", "bfloat")):
        return None
    return embedding(Ctx(i, n, (True, False)))


def slice_(c: Ctx):
    x, o = c.ins(0), c.out()
    if x is None or o is None:
        return None
    if not c.needs[0]:
        return []
    return [c.k("zero", "Mul", [], [x], read=0, written=prod(x)),
            c.k("copy", "Transpose", [o], [o], read=prod(o), written=prod(o))]


def split(c: Ctx):
    x = c.ins(0)
    outs = [c.out(k) for k in range(len(c.n.out_specs))]
    if x is None or any(o is None for o in outs):
        return None
    return [c.k("cat", "Concat", outs, [x], read=sum(prod(o) for o in outs), written=prod(x))] \
        if c.needs[0] else []


def expand(c: Ctx):
    x, o = c.ins(0), c.out()
    if x is None or o is None:
        return None
    return [c.reduce_to("reduce", o, x)] if c.needs[0] and sums(x, o) else []


def reduce_mean(c: Ctx):
    """Mean-like reductions and pools: one kernel writing the input's gradient; ReduceSum's
    gradient is ``grad.expand`` (a view)."""
    x, o = c.ins(0), c.out()
    if x is None or o is None:
        return None
    if not c.needs[0] or c.n.op == "ReduceSum":
        return []
    reads = prod(o) * (2 if c.n.op == "MaxPool" else 1)   # (max: the int64 indices too)
    op = "Div" if c.n.op.startswith(("Reduce", "Global")) else c.n.op   # expand / n: elementwise
    return [c.k("grad", op, [o], [x], read=reads, written=prod(x), vec=prod(x))]


def cast(c: Ctx):
    x = c.ins(0)
    if x is None:
        return None
    same = c.n.in_specs[0].dtype == c.n.out_specs[0].dtype if c.n.out_specs[0] is not None else True
    return [] if same or not c.needs[0] else [c.elementwise("copy", x, 1, op="Cast")]


def view(c: Ctx):
    return []


VIEW_OPS = ("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Identity", "Dropout", "Concat")
