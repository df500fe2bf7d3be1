"""Tensor layouts as eager PyTorch holds them, for the eager kernel plan (``eager_plan``).

``Walk`` keeps, per tensor of a graph an eager PyTorch module exported, its element strides
(contiguous unless a view made it otherwise) and, per node, whether it launches a kernel, is a
view (launches nothing) or must copy: the layout rules of ``eager_rules.RULES`` (``view``,
``reshape-copy``, ``bmm``, ``mm-fold``, ``elementwise``).  ``view_op`` applies the view rules,
``matmul_copies`` the copies torch.matmul makes of its operands, ``follow_layout`` the dimension
order an elementwise kernel's output takes.  ``eager_plan`` adds the joined patterns (Linear,
GELU, SiLU, biases) and assembles the ``fusion.FusionPlan``.
"""

from __future__ import annotations

from math import prod

from analyzer.counting import kernel_words
from analyzer.prediction import fusion
from analyzer.prediction import strides as st_

COPY_OP = "Transpose"   # the op whose class (movement) a copy kernel is charged as
_ALIAS_OPS = frozenset({"Identity", "Dropout"})
RESHAPE_OPS = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze"})
_FOLLOWS_LAYOUT = frozenset({"elementwise", "activation", "swish"})
ONNX_DOMAINS = ("", "ai.onnx")


def dims_of(spec):
    if spec is None or spec.shape is None or not all(type(d) is int for d in spec.shape):
        return None
    return tuple(spec.shape)


class Walk:
    """The strides of every tensor as eager PyTorch holds it, and what each node launches."""

    def __init__(self, nodes, fnodes, nbytes):
        self.nodes, self.fnodes, self.nbytes = nodes, fnodes, nbytes
        self.strides: dict[tuple[str, str], tuple[int, ...]] = {}
        self.producer, self.consumers = fusion.tensor_index(fnodes)
        n = len(nodes)
        self.launch = [fn.launches for fn in fnodes]
        self.view = [False] * n        # a view: launches nothing unless it is copied
        self.added = [0] * n           # bytes a copy kernel moves beyond the node's count
        # launches of node i's kernel beyond its own: (op whose class it is charged as, bytes)
        self.extra: list[list[tuple[str, int]]] = [[] for _ in range(n)]
        # (node, position in its extra) -> (blocks, serial steps) of a per-channel block loop
        # (``bn_stats``: a training BatchNorm's statistics kernel; ``FusionPlan.extra_loops``)
        self.loops: dict[tuple[int, int], tuple[int, int]] = {}
        self.copies = 0

    def layout(self, i: int, pos: int):
        """(dims, strides) of input ``pos`` of node ``i`` (None where a dim is unknown)."""
        fn = self.fnodes[i]
        dims = dims_of(self.nodes[i].in_specs[pos]) if pos < len(self.nodes[i].in_specs) else None
        if dims is None:
            return None, None
        return dims, self.strides.get((fn.level, fn.inputs[pos]), st_.contiguous(dims))

    def set_out(self, i: int, pos: int, strides) -> None:
        fn = self.fnodes[i]
        if pos < len(fn.outputs) and fn.outputs[pos] and strides is not None:
            self.strides[(fn.level, fn.outputs[pos])] = tuple(strides)

    def copy_input(self, i: int, pos: int) -> None:
        """Node ``i`` needs input ``pos`` contiguous and it is not: the view that made it is
        copied (its own kernel), or else node ``i`` launches a copy first."""
        fn = self.fnodes[i]
        key = (fn.level, fn.inputs[pos])
        nbytes = fn.input_bytes[pos]
        p = self.producer.get(key)
        self.copies += 1
        if p is not None and self.view[p] and not self.launch[p]:
            self.view[p] = False
            self.launch[p] = True
            self.added[p] = int(2 * nbytes - self.nbytes[p])   # the kernel moves 2 x the tensor
        else:
            self.extra[i].append((COPY_OP, 2 * nbytes))
        dims = dims_of(self.nodes[i].in_specs[pos])
        if dims is not None:
            self.strides[key] = st_.contiguous(dims)

    def need_contiguous(self, i: int, pos: int) -> None:
        dims, st = self.layout(i, pos)
        if dims is not None and not st_.is_contiguous(dims, st):
            self.copy_input(i, pos)

    def no_kernel(self, i: int) -> None:
        self.view[i] = True
        self.launch[i] = False


def view_op(w: Walk, i: int) -> bool:
    """Views (rule ``view``) and reshapes that must copy (``reshape-copy``); True when node
    ``i`` was one of them."""
    nd, fn = w.nodes[i], w.fnodes[i]
    op = nd.op
    if nd.domain not in ONNX_DOMAINS:
        return False
    out = dims_of(nd.out_specs[0]) if nd.out_specs else None
    dims, st = w.layout(i, 0) if nd.in_specs else (None, None)
    if op == "Cast" and nd.in_specs and nd.out_specs and nd.in_specs[0] is not None \
            and nd.out_specs[0] is not None and nd.in_specs[0].dtype == nd.out_specs[0].dtype:
        op = "Identity"   # Tensor.to(its own dtype) returns self
    if op in _ALIAS_OPS:
        w.no_kernel(i)
        if dims is not None:
            w.set_out(i, 0, st)
        return True
    if dims is None or out is None:
        return False
    if op in RESHAPE_OPS:
        new = st_.view_strides(dims, st, out)
        if new is None:      # no view: aten::reshape clones (its own copy kernel)
            w.view[i], w.launch[i] = False, True
            w.added[i] = int(w.fnodes[i].input_bytes[0] + sum(fn.output_bytes) - w.nbytes[i])
            w.copies += 1
            w.set_out(i, 0, st_.contiguous(out))
        else:
            w.no_kernel(i)
            w.set_out(i, 0, new)
        return True
    if op == "Transpose" and len(dims) == len(out):
        p = st_.transpose_perm(nd, len(dims))
        w.no_kernel(i)
        w.set_out(i, 0, tuple(st[a] for a in p))
        return True
    if op == "Split" and all(dims_of(o) is not None and len(o.shape) == len(dims) for o in nd.out_specs if o):
        w.no_kernel(i)
        for k in range(len(fn.outputs)):
            w.set_out(i, k, st)
        return True
    if op == "Gather" and 1 in fn.constant_inputs and len(nd.in_specs) > 1 and \
            dims_of(nd.in_specs[1]) == () and len(out) == len(dims) - 1:
        axis = next((a for a in range(len(dims)) if dims[:a] + dims[a + 1:] == out), None)
        if axis is None:
            return False
        w.no_kernel(i)      # x[..., c, ...]: aten::select, a view
        w.set_out(i, 0, st[:axis] + st[axis + 1:])
        return True
    if op == "Slice" and len(out) == len(dims) and kernel_words.value(nd.kernel, "steps") is not None:
        steps = list(kernel_words.ints(nd.kernel, "steps"))
        if len(steps) != len(dims) or min(steps) < 1:
            return False        # a negative step: torch.flip's copy kernel
        w.no_kernel(i)          # x[a:b:s]: aten::slice, a view with strides x s
        w.set_out(i, 0, tuple(x * k for x, k in zip(st, steps)))
        return True
    if op == "Expand" and len(out) >= len(dims):
        w.no_kernel(i)
        w.set_out(i, 0, st_.broadcast_strides(dims, st, out))
        return True
    return False


def matmul_copies(w: Walk, i: int) -> None:
    """torch.matmul's operands (rules ``bmm``, ``mm-fold``): the copies it makes first."""
    a, sa = w.layout(i, 0)
    b, sb = w.layout(i, 1)
    if a is None or b is None:
        return
    if len(a) >= 3 and len(b) <= 2:          # folded: x.reshape(-1, K) @ W
        flat = st_.view_strides(a, sa, (prod(a[:-1]), a[-1]))
        if flat is None or not st_.matrix_ok(prod(a[:-1]), a[-1], *flat):
            w.copy_input(i, 0)
        if len(b) == 2 and not st_.matrix_ok(b[0], b[1], *sb):
            w.copy_input(i, 1)
        return
    if len(a) >= 3 or len(b) >= 3:           # batched: expand + reshape to [batch, m, k], bmm
        batch = broadcast_shape(a[:-2], b[:-2])
        for pos, (d, s) in enumerate(((a, sa), (b, sb))):
            full = tuple(batch) + tuple(d[-2:]) if len(d) >= 2 else None
            if full is None:
                continue
            ex = st_.broadcast_strides(d, s, full)
            m3 = st_.view_strides(full, ex, (prod(batch), full[-2], full[-1]))
            if m3 is None or not st_.matrix_ok(full[-2], full[-1], m3[1], m3[2]):
                w.copy_input(i, pos)
        return
    for pos, (d, s) in enumerate(((a, sa), (b, sb))):
        if len(d) == 2 and not st_.matrix_ok(d[0], d[1], *s):
            w.copy_input(i, pos)


def broadcast_shape(x, y):
    n = max(len(x), len(y))
    x, y = (1,) * (n - len(x)) + tuple(x), (1,) * (n - len(y)) + tuple(y)
    return tuple(max(p, q) for p, q in zip(x, y))


def follow_layout(w: Walk, i: int) -> None:
    """An elementwise kernel's output takes its first full-size input's dimension order
    (rule ``elementwise``); other kernels write contiguous outputs (the default)."""
    nd, fn = w.nodes[i], w.fnodes[i]
    out = dims_of(nd.out_specs[0]) if nd.out_specs else None
    if out is None or fn.op_class not in _FOLLOWS_LAYOUT:
        return
    for pos in range(len(nd.in_specs)):
        d, s = w.layout(i, pos)
        if d is not None and tuple(d) == tuple(out):
            if not st_.is_contiguous(d, s):
                w.set_out(i, 0, st_.dense_like(d, s))
            return
