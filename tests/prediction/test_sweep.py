"""--dim sweeps: one model at several values of a symbolic dim (issue 4, item 6)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper

import analyzer

D, H, DH = 64, 4, 16  # d_model, heads, head dim


def attention_model():
    """One self-attention block over x[1, seq, 64] with a symbolic seq.

    Per seq length S: projections q, k, v, out = 4 * 2*S*64*64 = 32768*S mac_flops;
    Q.K^T and P.V = 2 * 2*H*S*S*DH = 2 * 2*4*16*S^2 = 256*S^2 mac_flops.
    """
    inits = [numpy_helper.from_array(np.zeros((D, D), np.float32), n) for n in "qkvo"]
    inits += [numpy_helper.from_array(np.array([0, -1, H, DH], np.int64), "split"),
              numpy_helper.from_array(np.array([0, -1, D], np.int64), "merge")]
    n = [h.make_node("MatMul", ["x", w], [f"{w}p"], name=f"proj_{w}") for w in "qkv"]
    n += [h.make_node("Reshape", [f"{w}p", "split"], [f"{w}r"], name=f"split_{w}") for w in "qkv"]
    n += [h.make_node("Transpose", ["qr"], ["qt"], perm=[0, 2, 1, 3], name="tq"),
          h.make_node("Transpose", ["kr"], ["kt"], perm=[0, 2, 3, 1], name="tk"),
          h.make_node("Transpose", ["vr"], ["vt"], perm=[0, 2, 1, 3], name="tv"),
          h.make_node("MatMul", ["qt", "kt"], ["s"], name="qk"),
          h.make_node("Softmax", ["s"], ["p"], axis=-1, name="softmax"),
          h.make_node("MatMul", ["p", "vt"], ["a"], name="pv"),
          h.make_node("Transpose", ["a"], ["at"], perm=[0, 2, 1, 3], name="ta"),
          h.make_node("Reshape", ["at", "merge"], ["am"], name="merge_heads"),
          h.make_node("MatMul", ["am", "o"], ["y"], name="proj_o")]
    g = h.make_graph(n, "attn", [h.make_tensor_value_info("x", TP.FLOAT, [1, "seq", D])],
                     [h.make_tensor_value_info("y", TP.FLOAT, [1, "seq", D])], inits)
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)], ir_version=8)


def _attention_mac(r):
    return r.node("qk").mac_flops + r.node("pv").mac_flops


def test_attention_share_grows_quadratically_with_seq():
    sw = analyzer.sweep(attention_model(), {"seq": [128, 512, 2048]})
    assert sw.dims == ("seq",)
    for (bound, r) in sw.points:
        s = bound["seq"]
        assert _attention_mac(r) == 256 * s * s          # 2 * 2*4*16*S^2
        assert r.totals.mac_flops == 256 * s * s + 32768 * s
    a = [_attention_mac(r) for _, r in sw.points]
    assert a[1] == 16 * a[0] and a[2] == 16 * a[1]        # 4x seq -> 16x attention
    # attention share = 256 S^2 / (256 S^2 + 32768 S) = S / (S + 128): 1/2, 4/5, 16/17
    shares = [(_attention_mac(r), r.totals.mac_flops) for _, r in sw.points]
    assert [x * (s + 128) == t * s for (x, t), s in zip(shares, (128, 512, 2048))] == [True] * 3


def test_cli_sweep_prints_one_row_per_value(tmp_path, run_cli):
    import onnx

    path = tmp_path / "attn.onnx"
    onnx.save(attention_model(), path)
    res = run_cli(str(path), "--dim", "seq=128,512", "--format", "csv")
    assert res.exit_code == 0, res.stderr
    lines = res.stdout.strip().splitlines()
    assert lines[0].startswith("seq,params,MAC FLOPs")
    assert [ln.split(",")[0] for ln in lines[1:]] == ["128", "512"]
    assert int(lines[2].split(",")[2]) == 256 * 512 * 512 + 32768 * 512  # 83,886,080
    res = run_cli(str(path), "--dim", "seq=128,512", "--hw", "a100", "--format", "json")
    doc = json.loads(res.stdout)
    assert [p["dims"]["seq"] for p in doc["points"]] == [128, 512]
    assert doc["points"][1]["latency_s"]["a100-80gb-sxm"] > doc["points"][0]["latency_s"]["a100-80gb-sxm"]


@pytest.mark.parametrize("cols", [80, 200])
def test_cli_sweep_table_fits_the_terminal(tmp_path, run_cli, monkeypatch, cols):
    import onnx

    path = tmp_path / "attn.onnx"
    onnx.save(attention_model(), path)
    monkeypatch.setenv("COLUMNS", str(cols))
    res = run_cli(str(path), "--dim", "seq=128,512", "--hw", "a100,h100,t4")
    assert res.exit_code == 0, res.stderr
    lines = res.stdout.splitlines()
    assert all(len(x) <= cols for x in lines), max(lines, key=len)
    head = next(x for x in lines if "seq" in x and "params" in x)
    # every profile's latency column is headed by its whole id; 80 columns drop the FLOP split
    assert all(h in head for h in ("a100-80gb-sxm", "h100-sxm", "t4"))
    assert ("vector" in head) == (cols == 200)
