"""The ``w8a16`` precision (int8 weights, int16 activations): bytes in closed form, the rate a
device without an int8 x int16 figure takes (its 16-bit matrix rate, said in the notes), the
Hexagon families' fitted rate on the ``qnn`` runtime, and the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from onnx import TensorProto, helper, numpy_helper

import analyzer
import hardware_db
from analyzer.prediction import kernel_rows as kr
from analyzer.prediction.efficiency.constants import load_constants
from analyzer.prediction.predict import predict
from cli.main import main

F = TensorProto.FLOAT


def _model(node, x_shape, w_shape, y_shape) -> bytes:
    w = numpy_helper.from_array(np.full(w_shape, 0.1, dtype=np.float32), "w")
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", F, list(x_shape))],
                          [helper.make_tensor_value_info("y", F, list(y_shape))], initializer=[w])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def _matmul() -> bytes:
    return _model(helper.make_node("MatMul", ["x", "w"], ["y"], name="mm"), (64, 128), (128, 256), (64, 256))


def _conv() -> bytes:
    return _model(helper.make_node("Conv", ["x", "w"], ["y"], name="conv", pads=[1, 1, 1, 1]),
                  (1, 8, 16, 16), (16, 8, 3, 3), (1, 16, 16, 16))


def test_matmul_bytes_in_closed_form():
    """X [64, 128] and Y [64, 256] at 2 B (int16), W [128, 256] at 1 B (int8)."""
    (n,) = analyzer.analyze(_matmul()).nodes
    act = (64 * 128 + 64 * 256) * 2
    weights = 128 * 256 * 1
    assert kr.node_bytes(n, "w8a16") == act + weights
    assert kr.weight_part(n, kr.node_bytes(n, "w8a16"), "w8a16") == weights
    assert kr.node_bytes(n, "fp16") == (64 * 128 + 64 * 256 + 128 * 256) * 2   # unchanged: all at 2 B


def test_conv_bytes_in_closed_form():
    """X [1, 8, 16, 16] and Y [1, 16, 16, 16] at 2 B, W [16, 8, 3, 3] at 1 B."""
    (n,) = analyzer.analyze(_conv()).nodes
    act = (8 * 16 * 16 + 16 * 16 * 16) * 2
    weights = 16 * 8 * 3 * 3 * 1
    assert kr.node_bytes(n, "w8a16") == act + weights
    assert kr.weight_part(n, kr.node_bytes(n, "w8a16"), "w8a16") == weights
    assert kr.node_bytes(n, "int8") == act / 2 + weights   # W8A8: everything at 1 B


def _pred(model, pid, precision, runtime=None):
    (p,) = predict(analyzer.analyze(model), [hardware_db.get(pid)], precision=precision, runtime=runtime)
    return p


@pytest.mark.parametrize("pid", ["a100-80gb-sxm", "epyc-9654", "ane-a17pro"])
def test_a_device_without_a_w8a16_figure_runs_it_at_its_16_bit_rate(pid):
    """The documented behaviour (docs/cli.md): priced, not refused: the fp16 rate, 1-byte weights,
    stated in the notes."""
    p, half = _pred(_matmul(), pid, "w8a16"), _pred(_matmul(), pid, "fp16")
    kt, kh = p.kernel_table, half.kernel_table
    np.testing.assert_array_equal(kt.matrix_peak, kh.matrix_peak)
    assert kt.nbytes[0] == (64 * 128 + 64 * 256) * 2 + 128 * 256
    assert p.precision == "w8a16"
    assert any(n.startswith("precision w8a16: weights read at 1 B") and pid in n for n in p.notes)


def test_a_tpu_takes_its_bf16_rate_with_a_warning():
    p = _pred(_matmul(), "tpu-v5e", "w8a16")
    assert p.kernel_table.matrix_peak[0] == hardware_db.get("tpu-v5e").peak_flops("matrix", "bf16")
    assert any("no fp16 throughput figure" in w for w in p.warnings)


@pytest.mark.parametrize("pid", ["hexagon-sd8gen2", "hexagon-sd8gen3"])
def test_hexagon_w8a16_at_the_family_share_of_int8(pid):
    """qnn: every w8a16 kernel at qnn_w8a16_share x the int8 peak (one share for both families),
    and the fp16 graph's per-inference cost."""
    prof = hardware_db.get(pid)
    arrays = load_constants(prof.family).arrays
    share = arrays["qnn_w8a16_share"]
    assert 0 < share <= 1
    p = _pred(_conv(), pid, "w8a16", "qnn")
    assert p.kernel_table.matrix_peak[0] == pytest.approx(share * prof.peak_flops("matrix", "int8"), rel=1e-12)
    assert any(n.startswith("qnn: w8a16 kernels at") for n in p.notes)
    kernels = float(np.sum(p.kernel_table.time))
    assert p.latency_s == pytest.approx(kernels + arrays["run_fixed_s"], rel=1e-9)


def test_both_hexagon_families_share_one_w8a16_rate():
    shares = {load_constants(hardware_db.get(pid).family).arrays["qnn_w8a16_share"]
              for pid in ("hexagon-sd8gen2", "hexagon-sd8gen3")}
    assert len(shares) == 1


def test_cli_accepts_w8a16(tmp_path):
    path = tmp_path / "mm.onnx"
    path.write_bytes(_matmul())
    runner = CliRunner()
    for hw in ("a100-80gb-sxm", "hexagon-sd8gen3"):
        out = runner.invoke(main, [str(path), "--hw", hw, "--precision", "w8a16", "--format", "json"])
        assert out.exit_code == 0, out.output
        p = json.loads(out.output)["predictions"][0]
        assert p["precision"] == "w8a16"
    assert "w8a16" in runner.invoke(main, ["--help"]).output
