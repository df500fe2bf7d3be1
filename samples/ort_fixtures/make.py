"""Regenerate tests/fixtures/ort/: small float transformers written in plain ONNX ops, and what
onnxruntime's own tools make of them (transformer fusions, 4-bit MatMulNBits, QOperator quantization).

    pip install onnx onnxruntime numpy sympy onnx_ir   # no torch needed (sympy: the optimizer; onnx_ir: MatMulNBitsQuantizer)
    python samples/ort_fixtures/make.py       # writes tests/fixtures/ort/*.onnx + reference.json

CI never runs this; the fixtures it wrote are committed.  Weights are random (seed 0); initializers
above 1 KB are stored as external data and the .data file is deleted (opcost never reads weight
bytes).  reference.json holds numbers computed here, independently of opcost, from the model
dimensions: the float graph's parameter element count and its mac_flops closed form
(2 x multiply-accumulates of every MatMul, including QK^T and PV).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, external_data_helper, helper, numpy_helper

SEED = 0
OPSET = 17
EXTERNAL_THRESHOLD = 1024

# one configuration for every fixture: batch, sequence, hidden, heads, FFN width, layers, vocab
CFG = dict(batch=2, seq=16, hidden=64, heads=4, ffn=256, layers=2, vocab=100, max_pos=32, types=2)


class Builder:
    def __init__(self, seed=SEED):
        self.rng = np.random.RandomState(seed)
        self.nodes, self.inits, self.k = [], [], 0
        self.float_params = 0  # elements of the weight tensors (matrices, biases, norms, embeddings)

    def name(self, p):
        self.k += 1
        return f"{p}_{self.k}"

    def w(self, shape, p="w", scale=0.05):
        n = self.name(p)
        self.inits.append(numpy_helper.from_array((self.rng.randn(*shape) * scale).astype(np.float32), n))
        self.float_params += int(np.prod(shape))
        return n

    def c(self, value, dtype=np.float32, p="c"):
        """A constant that is not a weight: an op's scalar, a shape, position ids, a mask."""
        n = self.name(p)
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), n))
        return n

    def op(self, op, ins, n_out=1, **attrs):
        outs = [self.name(op.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op, ins, outs, name=self.name(op), **attrs))
        return outs[0] if n_out == 1 else outs

    def linear(self, x, d_in, d_out):
        return self.op("Add", [self.op("MatMul", [x, self.w((d_in, d_out), "W")]), self.w((d_out,), "b")])

    def layer_norm(self, x, d):
        return self.op("LayerNormalization", [x, self.w((d,), "gamma", 1.0), self.w((d,), "beta")],
                       axis=-1, epsilon=1e-12)

    def gelu_erf(self, x):  # x * 0.5 * (1 + erf(x / sqrt(2))), as BERT exports it
        e = self.op("Erf", [self.op("Div", [x, self.c(1.4142135381698608)])])
        return self.op("Mul", [self.op("Mul", [x, self.op("Add", [e, self.c(1.0)])]), self.c(0.5)])

    def gelu_tanh(self, x):  # 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))), as GPT-2 exports it
        x3 = self.op("Pow", [x, self.c(3.0)])
        inner = self.op("Mul", [self.op("Add", [x, self.op("Mul", [x3, self.c(0.044715)])]),
                                self.c(0.7978845834732056)])
        t = self.op("Add", [self.op("Tanh", [inner]), self.c(1.0)])
        return self.op("Mul", [self.op("Mul", [x, self.c(0.5)]), t])

    def attention(self, x, mask_add, cfg, causal_bias=None):
        d, h = cfg["hidden"], cfg["heads"]
        hd = d // h
        shape4 = self.c([0, 0, h, hd], np.int64, "shape")

        def heads(t, perm):
            return self.op("Transpose", [self.op("Reshape", [t, shape4])], perm=perm)

        q = heads(self.linear(x, d, d), [0, 2, 1, 3])
        k = heads(self.linear(x, d, d), [0, 2, 3, 1])
        v = heads(self.linear(x, d, d), [0, 2, 1, 3])
        s = self.op("Div", [self.op("MatMul", [q, k]), self.c(float(np.sqrt(hd)))])
        if causal_bias is not None:
            s = self.op("Where", [causal_bias, s, self.c(-10000.0)])
        s = self.op("Add", [s, mask_add])
        p = self.op("Softmax", [s], axis=-1)
        ctx = self.op("Transpose", [self.op("MatMul", [p, v])], perm=[0, 2, 1, 3])
        ctx = self.op("Reshape", [ctx, self.c([0, 0, d], np.int64, "shape")])
        return self.linear(ctx, d, d)

    def mask(self, mask_in):
        # (B, S) int64 -> (B, 1, 1, S) float: (1 - mask) * -10000
        m = self.op("Unsqueeze", [mask_in, self.c([1], np.int64, "axes")])
        m = self.op("Unsqueeze", [m, self.c([2], np.int64, "axes")])
        m = self.op("Cast", [m], to=TensorProto.FLOAT)
        return self.op("Mul", [self.op("Sub", [self.c(1.0), m]), self.c(-10000.0)])

    def model(self, inputs, outputs, name):
        g = helper.make_graph(self.nodes, name, inputs, outputs, initializer=self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=8,
                              producer_name="pytorch")
        onnx.checker.check_model(m)
        return m


def bert(cfg=CFG):
    """Post-LN BERT encoder: embeddings (word + position + token type, LayerNorm), per layer
    self-attention + residual + LayerNorm, FFN (GELU erf) + residual + LayerNorm."""
    b = Builder()
    B, S, D, F = cfg["batch"], cfg["seq"], cfg["hidden"], cfg["ffn"]
    word = b.op("Gather", [b.w((cfg["vocab"], D), "word_embeddings"), "input_ids"])
    pos_ids = b.c(np.arange(S, dtype=np.int64)[None, :], np.int64, "position_ids")
    pos = b.op("Gather", [b.w((cfg["max_pos"], D), "position_embeddings"), pos_ids])
    typ = b.op("Gather", [b.w((cfg["types"], D), "token_type_embeddings"), "token_type_ids"])
    x = b.layer_norm(b.op("Add", [b.op("Add", [word, pos]), typ]), D)
    mask_add = b.mask("attention_mask")
    for _ in range(cfg["layers"]):
        a = b.attention(x, mask_add, cfg)
        x = b.layer_norm(b.op("Add", [a, x]), D)
        f = b.linear(b.gelu_erf(b.linear(x, D, F)), F, D)
        x = b.layer_norm(b.op("Add", [f, x]), D)
    b.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="output"))
    ints = [helper.make_tensor_value_info(n, TensorProto.INT64, [B, S])
            for n in ("input_ids", "token_type_ids", "attention_mask")]
    out = [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [B, S, D])]
    return b.model(ints, out, "bert_tiny"), b.float_params


def gpt2(cfg=CFG):
    """Pre-LN GPT-2 decoder: token + position embeddings, per layer LayerNorm -> causal
    self-attention -> residual, LayerNorm -> FFN (GELU tanh) -> residual; final LayerNorm."""
    b = Builder(SEED + 1)
    B, S, D, F = cfg["batch"], cfg["seq"], cfg["hidden"], cfg["ffn"]
    word = b.op("Gather", [b.w((cfg["vocab"], D), "wte"), "input_ids"])
    pos_ids = b.c(np.arange(S, dtype=np.int64)[None, :], np.int64, "position_ids")
    x = b.op("Add", [word, b.op("Gather", [b.w((cfg["max_pos"], D), "wpe"), pos_ids])])
    mask_add = b.mask("attention_mask")
    causal = b.c(np.tril(np.ones((S, S), dtype=bool))[None, None], bool, "causal")
    for _ in range(cfg["layers"]):
        a = b.attention(b.layer_norm(x, D), mask_add, cfg, causal_bias=causal)
        x = b.op("Add", [x, a])
        f = b.linear(b.gelu_tanh(b.linear(b.layer_norm(x, D), D, F)), F, D)
        x = b.op("Add", [x, f])
    x = b.layer_norm(x, D)
    b.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="output"))
    ints = [helper.make_tensor_value_info(n, TensorProto.INT64, [B, S]) for n in ("input_ids", "attention_mask")]
    out = [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [B, S, D])]
    return b.model(ints, out, "gpt2_tiny"), b.float_params


def closed_form_mac_flops(cfg=CFG) -> int:
    """2 x MACs per layer: Q, K, V, output projections 4 * B*S*D*D; FFN 2 * B*S*D*F; QK^T and PV
    2 * B*H*S*S*(D/H) = 2 * B*S*S*D."""
    B, S, D, F, L = cfg["batch"], cfg["seq"], cfg["hidden"], cfg["ffn"], cfg["layers"]
    return L * 2 * (4 * B * S * D * D + 2 * B * S * D * F + 2 * B * S * S * D)


# --------------------------------------------------------------------------------------- tools


def fuse(path: Path, model_type: str, cfg=CFG):
    from onnxruntime.transformers import optimizer

    opt = optimizer.optimize_model(str(path), model_type=model_type, num_heads=cfg["heads"],
                                   hidden_size=cfg["hidden"], opt_level=0)
    stats = {k: v for k, v in opt.get_fused_operator_statistics().items() if v}
    m = opt.model
    if not any(d.domain == "com.microsoft" for d in m.opset_import):
        m.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return m, stats


def nbits(path: Path, out: Path):
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    q = MatMulNBitsQuantizer(onnx.load(str(path)), block_size=32, is_symmetric=False, bits=4)
    q.process()
    return q.model.model


class Calib:
    def __init__(self, names, cfg=CFG, n=4):
        rng = np.random.RandomState(SEED)
        shape = (cfg["batch"], cfg["seq"])
        self.feeds = [{k: (np.ones(shape, np.int64) if k == "attention_mask" else
                           rng.randint(0, cfg["types"] if k == "token_type_ids" else cfg["vocab"], shape))
                       .astype(np.int64) for k in names} for _ in range(n)]
        self.it = iter(self.feeds)

    def get_next(self):
        return next(self.it, None)

    def rewind(self):
        self.it = iter(self.feeds)


def qoperator(path: Path, out: Path, names):
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

    quantize_static(str(path), str(out), Calib(names), quant_format=QuantFormat.QOperator,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    return onnx.load(str(out))


def qdynamic(path: Path, out: Path):
    from onnxruntime.quantization import quantize_dynamic

    quantize_dynamic(str(path), str(out), op_types_to_quantize=["MatMul", "Attention"], extra_options={"DefaultTensorType": TensorProto.FLOAT})
    return onnx.load(str(out))


def ort_run(path: Path, names, cfg=CFG):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    return s.run(None, Calib(names, cfg, 1).feeds[0])[0]


# inputs that are shapes/axes/settings, not data (DESIGN.md: not parameters)
SHAPE_SLOTS = {"Reshape": {1}, "Unsqueeze": {1}, "Squeeze": {1}, "Slice": {1, 2, 3, 4}, "Expand": {1},
               "Tile": {1}, "ConstantOfShape": {0}}


def data_constants(model: onnx.ModelProto) -> dict[str, int]:
    """{initializer: elements} of every initializer some node consumes as data, each once; a
    MatMulNBits weight counts its K*N unpacked elements (not the packed uint8 bytes). int64 and
    bool initializers (position ids, the causal mask) are buffers, not parameters."""
    structure = (onnx.TensorProto.INT64, onnx.TensorProto.UINT64, onnx.TensorProto.BOOL)
    inits = {t.name: t for t in model.graph.initializer if t.data_type not in structure}
    out: dict[str, int] = {}
    for n in model.graph.node:
        for i, x in enumerate(n.input):
            if x not in inits or i in SHAPE_SLOTS.get(n.op_type, ()):
                continue
            numel = int(np.prod(inits[x].dims))
            if n.op_type == "MatMulNBits" and i == 1:
                a = {a.name: helper.get_attribute_value(a) for a in n.attribute}
                numel = a["K"] * a["N"]
            out[x] = numel
    return out


def nbits_quant_params(cfg=CFG, block=32) -> int:
    """Scales (N x k_blocks) and packed 4-bit zero points (N x ceil(k_blocks / 2)) of every MatMul."""
    D, F, L = cfg["hidden"], cfg["ffn"], cfg["layers"]
    total = 0
    for k, n, count in ((D, D, 4), (D, F, 1), (F, D, 1)):
        kb = -(-k // block)
        total += count * L * (n * kb + n * -(-kb // 2))
    return total


def save(model: onnx.ModelProto, out_dir: Path, name: str) -> dict:
    path, loc = out_dir / f"{name}.onnx", f"{name}.onnx.data"
    m = onnx.ModelProto()
    m.CopyFrom(model)
    external_data_helper.convert_model_to_external_data(m, all_tensors_to_one_file=True, location=loc,
                                                        size_threshold=EXTERNAL_THRESHOLD)
    onnx.save(m, str(path))
    (out_dir / loc).unlink(missing_ok=True)
    ops = {}
    for n in model.graph.node:
        key = f"{n.domain}:{n.op_type}" if n.domain else n.op_type
        ops[key] = ops.get(key, 0) + 1
    return {"file": path.name, "bytes": path.stat().st_size, "ops": dict(sorted(ops.items())),
            "params": sum(data_constants(model).values())}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="tests/fixtures/ort")
    a = ap.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    import onnxruntime

    fixtures = {}
    with tempfile.TemporaryDirectory() as td:
        td = Path(td)
        for name, make, names in (("bert", bert, ["input_ids", "token_type_ids", "attention_mask"]),
                                  ("gpt2", gpt2, ["input_ids", "attention_mask"])):
            model, params = make()
            src = td / f"{name}.onnx"
            onnx.save(model, str(src))
            ref = {"float_weights": params, "mac_flops": closed_form_mac_flops(), "config": CFG}
            fixtures[f"{name}.onnx"] = {**save(model, out, name), **ref, "kind": "float, plain ops"}
            y0 = ort_run(src, names)

            fused, stats = fuse(src, name)
            p = td / f"{name}_fused.onnx"
            onnx.save(fused, str(p))
            diff = float(np.abs(ort_run(p, names) - y0).max())
            fixtures[f"{name}_fused.onnx"] = {**save(fused, out, f"{name}_fused"), **ref,
                                              "kind": f"optimize_model(model_type={name!r}, opset_level=0)",
                                              "fused_operator_statistics": stats, "ort_max_abs_diff": diff}

            q4 = nbits(src, td / f"{name}_int4.onnx")
            p = td / f"{name}_int4.onnx"
            onnx.save(q4, str(p))
            fixtures[f"{name}_int4.onnx"] = {**save(q4, out, f"{name}_int4"), **ref,
                                             "kind": "MatMulNBitsQuantizer(block_size=32, bits=4)",
                                             "nbits_scales_and_zero_points": nbits_quant_params(),
                                             "ort_max_abs_diff": float(np.abs(ort_run(p, names) - y0).max())}

            if name == "bert":
                qop = qoperator(src, td / "bert_qop.onnx", names)
                fixtures["bert_qop.onnx"] = {**save(qop, out, "bert_qop"), **ref,
                                             "kind": "quantize_static(QOperator, U8 activations, S8 weights)"}
                qatt = qdynamic(td / "bert_fused.onnx", td / "bert_fused_qdyn.onnx")
                fixtures["bert_fused_qdyn.onnx"] = {**save(qatt, out, "bert_fused_qdyn"), **ref,
                                                    "kind": "quantize_dynamic of bert_fused (QAttention)"}
    ref = {"generated_by": "samples/ort_fixtures/make.py", "seed": SEED,
           "versions": {"onnx": onnx.__version__, "onnxruntime": onnxruntime.__version__,
                        "numpy": np.__version__},
           "external_data": f"initializers above {EXTERNAL_THRESHOLD} bytes are external; the .data file is "
                            "deleted", "fixtures": fixtures}
    (out / "reference.json").write_text(json.dumps(ref, indent=1) + "\n")
    for k, v in fixtures.items():
        print(k, v["bytes"], v["params"], v.get("fused_operator_statistics", ""), {o: c for o, c in v["ops"].items() if ":" in o})
    return 0


if __name__ == "__main__":
    sys.exit(main())
