"""One backward kernel (``BwdKernel``: what it is, the op whose class prices it, its specs,
counts and bytes) and the view of a forward node the rules build kernels from (``Ctx``)."""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from analyzer.ir.graph import DTYPE_BITS, TensorSpec

ONNX_DOMAINS = ("", "ai.onnx")   # a node of these domains is a standard ONNX op the rules know


@dataclass(frozen=True)
class BwdKernel:
    """One backward kernel: which forward node it belongs to, what it is, the op whose class
    prices it, the specs that give its class and GEMM view, its counts and bytes."""

    node: int                     # index of the forward node in report.nodes (-1: none)
    name: str
    kind: str                     # dX, dW, dbias, grad, reduce, zero, copy, accumulate, ...
    op: str                       # the ONNX op whose class prices it
    in_specs: tuple
    out_specs: tuple
    mac_flops: int = 0
    vector_flops: int = 0
    transcendentals: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    gemm: tuple[int, int, int, int] | None = None   # (M, N, K, batch): K the reduction
    # a BatchNorm's backward as PyTorch's native bf16/fp16 kernel runs it (``bn_backward``):
    # (blocks, serial steps of one pass: ``bn_stats.loop``) and the bytes its second pass reads
    # again (x and dY); (0, 0) and 0 for every other kernel
    bn_loop: tuple[int, int] = (0, 0)
    bn_reread: int = 0

    @property
    def bytes(self) -> int:
        return self.bytes_read + self.bytes_written

    def to_dict(self) -> dict:
        d = {"node": self.node, "name": self.name, "kind": self.kind, "op": self.op,
             "mac_flops": self.mac_flops, "vector_flops": self.vector_flops,
             "transcendentals": self.transcendentals, "bytes_read": self.bytes_read,
             "bytes_written": self.bytes_written}
        if self.gemm is not None:
            d["gemm"] = dict(zip(("m", "n", "k", "batch"), self.gemm))
        if self.bn_reread:
            d["bn_native"] = {"blocks": self.bn_loop[0], "steps_per_pass": self.bn_loop[1],
                              "reread_bytes": self.bn_reread}
        return d


class Ctx:
    """One forward node as the rules read it: ``i`` its index, ``n`` the NodeCost, ``needs``
    one bool per input (its gradient is needed)."""

    def __init__(self, i: int, n, needs):
        self.i, self.n, self.needs = i, n, tuple(needs)
        out = next((s for s in n.out_specs if s is not None), None)
        self.dtype = out.dtype if out is not None else "float32"
        self.bits = DTYPE_BITS.get(self.dtype, 32)

    def dims(self, spec) -> tuple[int, ...] | None:
        if spec is None or not spec.is_static:
            return None
        return tuple(spec.shape)

    def ins(self, k: int):
        return self.dims(self.n.in_specs[k]) if k < len(self.n.in_specs) else None

    def out(self, k: int = 0):
        return self.dims(self.n.out_specs[k]) if k < len(self.n.out_specs) else None

    def nb(self, numel: int) -> int:
        return (numel * self.bits + 7) // 8

    def spec(self, dims) -> TensorSpec:
        return TensorSpec(tuple(dims), self.dtype)

    def k(self, kind: str, op: str, ins, outs, *, read: int, written: int, mac: int = 0,
          vec: int = 0, trans: int = 0, gemm=None, suffix: str = "") -> BwdKernel:
        """A kernel of this node: ``ins``/``outs`` dims tuples; ``read``/``written`` elements."""
        return BwdKernel(self.i, f"{self.n.name}/{kind}{suffix}", kind, op,
                         tuple(self.spec(d) for d in ins), tuple(self.spec(d) for d in outs),
                         mac, vec, trans, self.nb(read), self.nb(written), gemm)

    def elementwise(self, kind: str, dims, reads: int = 2, *, trans: int = 0, op: str = "Mul",
                    suffix: str = "") -> BwdKernel:
        """An elementwise kernel over ``dims``: ``reads`` tensors of that size read, one written."""
        n = prod(dims)
        return self.k(kind, op, [dims] * reads, [dims], read=reads * n, written=n, vec=n,
                      trans=trans, suffix=suffix)

    def reduce_to(self, kind: str, full, small, suffix: str = "") -> BwdKernel:
        """``sum_to_size``: dY of ``full`` summed into ``small`` (a reduction kernel)."""
        n, m = prod(full), prod(small)
        return self.k(kind, "ReduceSum", [full], [small], read=n, written=m, vec=n, suffix=suffix)


def sums(x, full) -> bool:
    """Whether ``sum_to_size`` of a gradient of dims ``full`` into dims ``x`` launches a
    reduction: aten's ``sum_to`` sums the leading dims ``x`` lacks (even of size 1) and the dims
    it broadcast; a gradient of the same shape is returned as is."""
    return len(x) < len(full) or prod(x) != prod(full)


def broadcast(x, y):
    """The numpy broadcast of shapes ``x`` and ``y``."""
    n = max(len(x), len(y))
    x, y = (1,) * (n - len(x)) + tuple(x), (1,) * (n - len(y)) + tuple(y)
    return tuple(max(p, q) for p, q in zip(x, y))
