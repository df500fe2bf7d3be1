"""Recurrent layers: RNN, GRU, LSTM.

Per step, direction, batch row and hidden unit (default activations): the input and recurrent
products are mac_flops (``2*I*G*H`` and ``2*H*G*H`` per row, G gates); adding the two products 1
per gate, biases 2 per gate; sigmoid 2 + 1 exp, tanh 1 transcendental.  RNN: 1 vector + 1 T; GRU:
12 vector + 3 T (z, r sigmoids; r*(.), tanh; the (1-z)*h + z*H blend (4)); LSTM: 14 vector + 5 T
(i, f, o sigmoids; tanh(c); C = f*C + i*c (3); o*tanh(C)), peepholes 6.
"""

from __future__ import annotations

from analyzer.counting.cost import Work, register
from analyzer.counting.rules.onnx.common import present

_GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
# per (step, direction, batch row, hidden unit): (vector, transcendental) with default activations
_CELL = {"RNN": (1, 1), "GRU": (12, 3), "LSTM": (14, 5)}
# the functions of those transcendentals with default activations: (logistic, tanh) per unit
_CELL_FUNCTIONS = {"RNN": (0, 1), "GRU": (2, 1), "LSTM": (3, 2)}


def _recurrent(op: str):
    gates = _GATES[op]
    cell_v, cell_t = _CELL[op]

    def rule(ins, outs, ctx, *, layout=0):
        x, w = ins[0], ins[1]
        seq, batch = (x.dim(0), x.dim(1)) if layout == 0 else (x.dim(1), x.dim(0))
        inp = x.dim(2)
        dirs = w.dim(0)
        h = w.dim(1) // gates
        rows = seq * dirs * batch
        mac = 2 * rows * inp * gates * h + 2 * rows * h * gates * h
        v = cell_v + (2 * gates if present(ins, 3) else 0)
        if op == "LSTM" and present(ins, 7):
            v += 6  # peepholes: multiply-add on i, f, o
        sig, tanh = _CELL_FUNCTIONS[op]
        return Work(mac_flops=mac, vector_flops=rows * h * v, transcendentals=rows * h * cell_t,
                    functions=(("logistic", rows * h * sig), ("tanh", rows * h * tanh)))

    rule.__name__ = f"recurrent_{op}"
    return rule


rnn_rule, gru_rule, lstm_rule = (register(op)(_recurrent(op)) for op in ("RNN", "GRU", "LSTM"))
