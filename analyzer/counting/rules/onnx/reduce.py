"""Reductions over axes: a reduction of N elements into 1 costs N-1 combining ops.

From opset 13 (ReduceSum) and 18 (the rest) ``axes`` is an input: shape-like.
"""

from __future__ import annotations

from analyzer.counting.cost import Work, register

# op: per input element (vector, transc), per output element (vector, transc), in addition
# to the (in - out) combining ops
_REDUCE = {
    "ReduceSum": ((0, 0), (0, 0)),
    "ReduceMax": ((0, 0), (0, 0)),
    "ReduceMin": ((0, 0), (0, 0)),
    "ReduceProd": ((0, 0), (0, 0)),
    "ReduceMean": ((0, 0), (1, 0)),        # divide by count
    "ReduceL1": ((1, 0), (0, 0)),          # abs
    "ReduceL2": ((1, 0), (0, 1)),          # square, then sqrt
    "ReduceSumSquare": ((1, 0), (0, 0)),   # square
    "ReduceLogSum": ((0, 0), (0, 1)),      # log of the sum
    "ReduceLogSumExp": ((0, 1), (0, 1)),   # exp each, log of the sum
    "ArgMax": ((0, 0), (0, 0)),            # compare-and-select
    "ArgMin": ((0, 0), (0, 0)),
}


def _reduce(op: str):
    (iv, it), (ov, ot) = _REDUCE[op]

    def rule(ins, outs, ctx):
        n_in = ins[0].numel()
        n_out = outs[0].numel()
        combine = n_in - n_out
        return Work(vector_flops=combine + iv * n_in + ov * n_out,
                    transcendentals=it * n_in + ot * n_out,
                    functions=(("exp", it * n_in), ("sqrt" if op == "ReduceL2" else "log", ot * n_out)))

    rule.__name__ = f"reduce_{op}"
    return rule


for _op in _REDUCE:
    register(_op)(_reduce(_op))
