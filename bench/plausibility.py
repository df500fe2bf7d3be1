"""Plausibility across NVIDIA GPUs: a bigger GPU is never predicted slower.

Predicts whole models at batch 1 and 64, fp16 and fp32 (``analyzer.analyze(path, hw, batch=B,
precision=P)``, the default ``kernel`` runtime; also without a precision: the fp32 graphs
under PyTorch's defaults, convolutions in TF32) on B200, H100 SXM, A100 SXM, L4 and T4, prints
a table and checks the orderings of issue 32's acceptance: ``b200 <= h100 <= a100 <= t4`` and
``h100 <= l4``, each within ``TOLERANCE`` (5 %). Exit 1 on a violation.

Models: ResNet-50 (``light_resnet50.onnx`` from the onnx wheel's backend test data: the ONNX
model zoo's graph without weights), MobileNetV2 (``tests/fixtures/torch/mobilenet_v2.onnx``),
BERT-base and ViT-B/16 as built here (``bert_base``, ``vit_b16``: the encoder's ops as
PyTorch's TorchScript exporter writes them, hidden 768, 12 layers, 12 heads, MLP 3072; BERT at
sequence length 128, ViT at 224 x 224 in 16 x 16 patches; weights declared as external data
that is never read), and the repository's tiny BERT / ViT fixtures.

    PYTHONPATH=$PWD python bench/plausibility.py [--out FILE.md]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

HW = ("b200-hgx", "h100-sxm", "a100-80gb-sxm", "l4", "t4")
# (faster, slower): the faster one must not be predicted more than TOLERANCE slower
ORDER = (("b200-hgx", "h100-sxm"), ("h100-sxm", "a100-80gb-sxm"), ("a100-80gb-sxm", "t4"),
         ("h100-sxm", "l4"))
TOLERANCE = 0.05
BATCHES = (1, 64)
# the models of the acceptance (a violation exits 1); the tiny fixtures are shown beside them: their
# kernels are floor-bound, and a floor is cycles of the device clock (T4 1.59 GHz, A100 1.41 GHz)
ACCEPTANCE = ("resnet50 (zoo)", "mobilenet_v2", "bert-base s128", "vit-b/16")
# None: the model's own fp32 dtypes under PyTorch's defaults (convolutions in TF32 on the tensor
# cores); "fp32": every product on the FMA units (cudnn.allow_tf32 off)
PRECISIONS = (None, "fp32", "fp16")


def _init(name, dims):
    """A float initializer declared as external data that does not exist (never read)."""
    from onnx import TensorProto

    t = TensorProto()
    t.name, t.data_type = name, TensorProto.FLOAT
    t.dims.extend(dims)
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "absent.data"), ("offset", "0"), ("length", str(4 * _prod(dims)))):
        e = t.external_data.add()
        e.key, e.value = k, v
    return t


def _prod(dims):
    out = 1
    for d in dims:
        out *= d
    return out


def _encoder(prefix: str, x: str, seq: int, hidden: int, heads: int, mlp: int, layers: int, nodes, inits,
             consts):
    """``layers`` post-norm (BERT) encoder blocks over ``x`` [batch, seq, hidden]."""
    from onnx import helper

    def node(op, ins, outs=None, **attrs):
        outs = outs or [f"{prefix}{len(nodes)}_{op}"]
        nodes.append(helper.make_node(op, ins, outs, **attrs))
        return outs[0]

    def linear(h, k, n, name):
        inits.extend([_init(f"{name}.w", [k, n]), _init(f"{name}.b", [n])])
        return node("Add", [node("MatMul", [h, f"{name}.w"]), f"{name}.b"])

    def norm(h, name):
        inits.extend([_init(f"{name}.g", [hidden]), _init(f"{name}.beta", [hidden])])
        return node("LayerNormalization", [h, f"{name}.g", f"{name}.beta"], axis=-1, epsilon=1e-12)

    dh = hidden // heads
    for i in range(layers):
        p = f"{prefix}l{i}"

        def split(h):
            return node("Transpose", [node("Reshape", [h, "shape_heads"])], perm=[0, 2, 1, 3])

        q, k, v = (split(linear(x, hidden, hidden, f"{p}.{n}")) for n in "qkv")
        kt = node("Transpose", [k], perm=[0, 1, 3, 2])
        scores = node("Div", [node("MatMul", [q, kt]), "scale"])
        ctx = node("MatMul", [node("Softmax", [scores], axis=-1), v])
        ctx = node("Reshape", [node("Transpose", [ctx], perm=[0, 2, 1, 3]), "shape_hidden"])
        x = norm(node("Add", [linear(ctx, hidden, hidden, f"{p}.o"), x]), f"{p}.ln1")
        h = linear(x, hidden, mlp, f"{p}.fc1")
        gelu = node("Mul", [node("Mul", [h, node("Add", [node("Erf", [node("Div", [h, "sqrt2"])]), "one"])]),
                            "half"])
        x = norm(node("Add", [linear(gelu, mlp, hidden, f"{p}.fc2"), x]), f"{p}.ln2")
    del dh
    return x


def _consts(seq, hidden, heads):
    import numpy as np
    from onnx import numpy_helper

    dh = hidden // heads
    return [numpy_helper.from_array(np.array([-1, seq, heads, dh], np.int64), "shape_heads"),
            numpy_helper.from_array(np.array([-1, seq, hidden], np.int64), "shape_hidden"),
            numpy_helper.from_array(np.array(np.sqrt(dh), np.float32), "scale"),
            numpy_helper.from_array(np.array(np.sqrt(2.0), np.float32), "sqrt2"),
            numpy_helper.from_array(np.array(1.0, np.float32), "one"),
            numpy_helper.from_array(np.array(0.5, np.float32), "half")]


def bert_base(path: str, seq: int = 128) -> str:
    """BERT-base (hidden 768, 12 layers, 12 heads, MLP 3072, vocabulary 30522) at ``seq`` tokens,
    input ``input_ids`` [batch, seq] with a symbolic batch."""
    from onnx import TensorProto, helper

    hidden, heads = 768, 12
    nodes, inits = [], _consts(seq, hidden, heads)
    inits += [_init("word", [30522, hidden]), _init("pos", [seq, hidden]), _init("emb.g", [hidden]),
              _init("emb.b", [hidden])]
    nodes.append(helper.make_node("Gather", ["word", "input_ids"], ["tok"]))
    nodes.append(helper.make_node("Add", ["tok", "pos"], ["emb"]))
    nodes.append(helper.make_node("LayerNormalization", ["emb", "emb.g", "emb.b"], ["x0"], axis=-1))
    out = _encoder("bert", "x0", seq, hidden, heads, 3072, 12, nodes, inits, None)
    nodes.append(helper.make_node("Identity", [out], ["last_hidden_state"]))
    g = helper.make_graph(nodes, "bert_base", [helper.make_tensor_value_info("input_ids", TensorProto.INT64,
                                                                               ["batch", seq])],
                          [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, None)], inits)
    return _save(g, path)


def vit_b16(path: str) -> str:
    """ViT-B/16 (hidden 768, 12 layers, 12 heads, MLP 3072) at 224 x 224: a 16 x 16 stride-16
    patch convolution, 197 tokens (a class token), input ``pixel_values`` [batch, 3, 224, 224]."""
    from onnx import TensorProto, helper

    hidden, heads, seq = 768, 12, 197
    nodes, inits = [], _consts(seq, hidden, heads)
    import numpy as np
    from onnx import numpy_helper

    inits += [_init("patch.w", [hidden, 3, 16, 16]), _init("patch.b", [hidden]), _init("cls", [1, 1, hidden]),
              _init("pos", [1, seq, hidden]),
              numpy_helper.from_array(np.array([0, hidden, 196], np.int64), "shape_patches")]
    nodes += [helper.make_node("Conv", ["pixel_values", "patch.w", "patch.b"], ["p"], strides=[16, 16],
                               kernel_shape=[16, 16]),
              helper.make_node("Reshape", ["p", "shape_patches"], ["p2"]),
              helper.make_node("Transpose", ["p2"], ["p3"], perm=[0, 2, 1]),
              helper.make_node("Shape", ["p3"], ["p3s"], start=0, end=1),
              helper.make_node("Concat", ["p3s", "one_one_h"], ["cls_shape"], axis=0),
              helper.make_node("Expand", ["cls", "cls_shape"], ["clsb"]),
              helper.make_node("Concat", ["clsb", "p3"], ["tokens"], axis=1),
              helper.make_node("Add", ["tokens", "pos"], ["x0"])]
    inits.append(numpy_helper.from_array(np.array([1, hidden], np.int64), "one_one_h"))
    out = _encoder("vit", "x0", seq, hidden, heads, 3072, 12, nodes, inits, None)
    nodes.append(helper.make_node("Identity", [out], ["last_hidden_state"]))
    g = helper.make_graph(nodes, "vit_b16", [helper.make_tensor_value_info("pixel_values", TensorProto.FLOAT,
                                                                             ["batch", 3, 224, 224])],
                          [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, None)], inits)
    return _save(g, path)


def _save(graph, path: str) -> str:
    import onnx
    from onnx import helper

    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def models(tmp: str) -> dict[str, str]:
    """name -> ONNX path of every model checked."""
    import glob

    import onnx

    light = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
    out = {}
    zoo = glob.glob(os.path.join(light, "light_resnet50.onnx"))
    if zoo:
        out["resnet50 (zoo)"] = zoo[0]
    fx = os.path.join(ROOT, "tests", "fixtures", "torch")
    out["mobilenet_v2"] = os.path.join(fx, "mobilenet_v2.onnx")
    out["bert-base s128"] = bert_base(os.path.join(tmp, "bert_base.onnx"))
    out["vit-b/16"] = vit_b16(os.path.join(tmp, "vit_b16.onnx"))
    out["resnet18"] = os.path.join(fx, "resnet18.onnx")
    out["bert tiny"] = os.path.join(fx, "bert.onnx")
    out["vit tiny"] = os.path.join(fx, "vit.onnx")
    return out


def check(paths: dict[str, str]) -> tuple[list[dict], list[str]]:
    """Rows (model, batch, precision, ms per profile) and the violations (one line each)."""
    import analyzer

    rows, bad = [], []
    for name, path in paths.items():
        for b in BATCHES:
            for prec in PRECISIONS:
                r = analyzer.analyze(path, hw=list(HW), batch=b, precision=prec)
                ms = {p.hardware: p.latency_s * 1e3 for p in r.predictions}
                worst = []
                for fast, slow in ORDER:
                    ratio = ms[fast] / ms[slow]
                    worst.append(ratio)
                    if ratio > 1.0 + TOLERANCE and name in ACCEPTANCE:
                        bad.append(f"{name} batch {b} {prec}: {fast} {ms[fast]:.3f} ms > {slow} {ms[slow]:.3f} ms "
                                   f"(x{ratio:.3f})")
                rows.append({"model": name, "batch": b, "precision": prec or "fp32 (TF32 convs)", "ms": ms, "worst": max(worst)})
    return rows, bad


def table(rows: list[dict]) -> str:
    head = "| model | batch | precision | " + " | ".join(f"{h} ms" for h in HW) + " | worst faster/slower |"
    out = [head, "|" + "---|" * (len(HW) + 4)]
    for r in rows:
        out.append(f"| {r['model']} | {r['batch']} | {r['precision']} | "
                   + " | ".join(f"{r['ms'][h]:.3f}" for h in HW) + f" | {r['worst']:.3f} |")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="also write the table (markdown) here")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        rows, bad = check(models(tmp))
    text = (f"orderings checked: {', '.join(f'{a} <= {b}' for a, b in ORDER)} (within {TOLERANCE:.0%}); "
            f"kernel runtime\n\n{table(rows)}\n\n"
            + ("\n".join(f"VIOLATION {x}" for x in bad) if bad else
               f"no violation in the acceptance models ({', '.join(ACCEPTANCE)})") + "\n")
    print(text, end="")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(f"# Plausibility across NVIDIA GPUs\n\nCommand: `PYTHONPATH=$PWD python bench/plausibility.py "
                    f"--out {args.out}`\n\n{text}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
