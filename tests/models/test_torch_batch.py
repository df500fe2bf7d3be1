"""--batch / batch= on the static (batch 1) PyTorch exports of tests/fixtures/torch.

Every MAC of these models is per sample (convolutions, linear layers, attention products), so
at batch B the MAC FLOPs are exactly B x PyTorch's FlopCounterMode total at batch 1
(reference.json, computed by samples/torch_fixtures/export.py without opcost), in total and
node by node.  ViT needs its class token's Expand given the batch (the Concat beside the
patches), BERT and GPT-2 their Reshape head splits, the CNNs nothing but the input.
"""

from __future__ import annotations

import csv
import io
import json
import os

import pytest

import analyzer

HERE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures", "torch")
with open(os.path.join(HERE, "reference.json")) as f:
    REF = json.load(f)["fixtures"]
STATIC = ["resnet18.onnx", "mobilenet_v2.onnx", "bert.onnx", "vit.onnx", "gpt2.onnx",
          "efficientnet_b0.onnx", "convnext_tiny.onnx"]
# onnxruntime-optimized and quantized exports of the same models (same MACs at batch 1)
DERIVED = {"bert_opt.onnx": "bert.onnx", "gpt2_opt.onnx": "gpt2.onnx",
           "bert_qdq.onnx": "bert.onnx", "gpt2_qdyn.onnx": "gpt2.onnx",
           "resnet18_qdq.onnx": "resnet18.onnx"}


def _torch_macs(name: str) -> int:
    return REF[name]["torch_flop_counter"]["total"]


@pytest.fixture(scope="module")
def at_one():
    return {f: analyzer.analyze(os.path.join(HERE, f)) for f in [*STATIC, *DERIVED]}


@pytest.mark.parametrize("name", STATIC)
def test_batch_64_is_64_times_batch_1_in_total_and_per_node(at_one, name):
    r = analyzer.analyze(os.path.join(HERE, name), batch=64)
    assert r.totals.mac_flops == 64 * _torch_macs(name)        # PyTorch's count at batch 1, x64
    one = at_one[name]
    assert [n.name for n in r.nodes] == [n.name for n in one.nodes]
    for a, b in zip(one.nodes, r.nodes):
        assert b.mac_flops == 64 * a.mac_flops, a.name
    assert r.model["batch"]["value"] == 64 and r.model["batch"]["was"] == 1
    assert all(dims[0] == 64 for dims in r.model["inputs"].values())
    assert r.coverage.uncosted == ()


@pytest.mark.parametrize("name", sorted(DERIVED))
def test_optimized_and_quantized_exports_take_the_batch_too(at_one, name):
    r = analyzer.analyze(os.path.join(HERE, name), batch=64)
    assert r.totals.mac_flops == 64 * _torch_macs(DERIVED[name])
    for a, b in zip(at_one[name].nodes, r.nodes):
        assert b.mac_flops == 64 * a.mac_flops, a.name


def test_vit_class_token_expand_is_given_the_batch():
    r = analyzer.analyze(os.path.join(HERE, "vit.onnx"), batch=64)
    rewritten = r.model["batch"]["rewritten_nodes"]
    assert rewritten[0] == "/model/embeddings/Expand"
    # the patches: 32x32 image / 8x8 patches = 16 tokens, + the class token = 17, d_model 128
    concat = r.node("/model/embeddings/Concat")
    assert [s.shape for s in concat.in_specs] == [(64, 1, 128), (64, 16, 128)]
    assert concat.out_specs[0].shape == (64, 17, 128)
    # 2 layers x 4 attention Reshapes [1, 17, -1, 64] / [1, 17, -1] led by the export's batch
    assert len(rewritten) == 1 + 8


@pytest.mark.parametrize("name", STATIC)
def test_batch_sweep_one_point_per_value(name):
    sw = analyzer.sweep(os.path.join(HERE, name), batch=[1, 8])
    assert sw.dims == ("batch",)
    assert [(b, r.totals.mac_flops) for b, r in sw.points] == [
        ({"batch": 1}, _torch_macs(name)), ({"batch": 8}, 8 * _torch_macs(name))]


def test_cli_batch_64_and_sweep_rows(run_cli, tmp_path):
    vit = os.path.join(HERE, "vit.onnx")
    res = run_cli(vit, "--batch", "64", "--format", "json")
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["totals"]["mac_flops"] == 64 * 14484480 == 927006720
    assert d["model"]["batch"]["value"] == 64
    res = run_cli(vit, "--batch", "64")
    assert res.exit_code == 0, res.output
    assert "batch: 64, set from the export's 1; shape constants of 9 nodes rewritten" in res.stdout
    res = run_cli(vit, "--batch", "1,8,64", "--format", "csv")
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader(io.StringIO(res.stdout)))
    assert [(r["batch"], int(r["MAC FLOPs"])) for r in rows] == [
        ("1", 14484480), ("8", 8 * 14484480), ("64", 64 * 14484480)]
    res = run_cli(vit, "--batch", "1,8", "--format", "json")
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["sweep"] == ["batch"] and [p["dims"] for p in d["points"]] == [{"batch": 1},
                                                                           {"batch": 8}]


def test_cli_batch_sweep_with_a_dim_sweep_is_their_product(run_cli):
    # bert_dynamic: inputs [batch, seq]; --batch sweeps the leading dim, --dim seq the other
    res = run_cli(os.path.join(HERE, "bert_dynamic.onnx"), "--batch", "1,2", "--dim", "seq=16,32",
                  "--format", "csv")
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader(io.StringIO(res.stdout)))
    assert [(r["batch"], r["seq"]) for r in rows] == [("1", "16"), ("1", "32"), ("2", "16"),
                                                       ("2", "32")]
    macs = {(r["batch"], r["seq"]): int(r["MAC FLOPs"]) for r in rows}
    assert macs[("2", "16")] == 2 * macs[("1", "16")] and macs[("2", "32")] == 2 * macs[("1", "32")]


def test_cli_batch_contradicting_input_is_a_usage_error(run_cli):
    res = run_cli(os.path.join(HERE, "bert.onnx"), "--batch", "8", "--input", "input_ids=4x32")
    assert res.exit_code == 2
    assert ("--batch 8 sets dim 0 of every graph input, but --input gives input 'input_ids' "
            "the leading dim 4") in res.output
    # the same batch both ways is no contradiction
    res = run_cli(os.path.join(HERE, "bert.onnx"), "--batch", "8", "--input", "input_ids=8x32",
                  "--format", "json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["totals"]["mac_flops"] == 8 * _torch_macs("bert.onnx")


def test_batch_binds_a_symbolic_batch_dim():
    r = analyzer.analyze(os.path.join(HERE, "bert_dynamic.onnx"), batch=4, dims={"seq": 32})
    assert r.model["dims"] == {"batch": 4, "seq": 32}
    assert r.model["batch"] == {"value": 4, "was": None, "rewritten_nodes": []}
    same = analyzer.analyze(os.path.join(HERE, "bert_dynamic.onnx"), dims={"batch": 4, "seq": 32})
    assert r.totals == same.totals
    # the same value both ways is no contradiction
    both = analyzer.analyze(os.path.join(HERE, "bert_dynamic.onnx"), batch=4,
                            dims={"batch": 4, "seq": 32})
    assert both.totals == same.totals


def test_batch_contradicting_dims_raises_in_python():
    from analyzer.errors import InputSpecError

    with pytest.raises(InputSpecError, match="batch=64 sets the inputs' leading dim 'batch', "
                                             "but dims binds it to 8"):
        analyzer.analyze(os.path.join(HERE, "bert_dynamic.onnx"), batch=64,
                         dims={"batch": 8, "seq": 32})
    with pytest.raises(InputSpecError, match="inputs gives input 'input_ids' the leading dim 4"):
        analyzer.analyze(os.path.join(HERE, "bert.onnx"), batch=8, inputs={"input_ids": "4x32"})


def test_static_export_errors_suggest_batch(run_cli):
    from analyzer.errors import InputSpecError, ShapeError

    bert = os.path.join(HERE, "bert.onnx")
    res = run_cli(bert, "--dim", "batch=32")
    assert res.exit_code == 2
    assert "static export at batch 1): set the batch with --batch 32" in res.output
    with pytest.raises(InputSpecError, match="set the batch with batch=32") as e:
        analyzer.analyze(bert, dims={"batch": 32})
    assert "--batch 32" in e.value.format("cli")
    # a new dim 0 through --input: the shape error that follows names --batch
    res = run_cli(bert, "--input", "input_ids=32x32", "--input", "attention_mask=32x32")
    assert res.exit_code == 2
    assert "to run it at batch 32, pass --batch 32" in res.output
    res = run_cli(os.path.join(HERE, "vit.onnx"), "--input", "pixel_values=32x3x32x32")
    assert res.exit_code == 2 and "pass --batch 32" in res.output
    with pytest.raises(ShapeError, match="pass batch=32"):
        analyzer.analyze(os.path.join(HERE, "vit.onnx"), inputs={"pixel_values": (32, 3, 32, 32)})
    # a dim that is not the batch gets no such advice
    res = run_cli(bert, "--dim", "seq=64")
    assert res.exit_code == 2 and "--batch" not in res.output


def test_cli_batch_help_sits_beside_dim(run_cli):
    out = run_cli("--help").stdout
    assert out.index("--dim NAME") < out.index("--batch B[,B...]") < out.index("--value")
    assert "--batch 1,8,64" in out


@pytest.mark.parametrize("args, words", [
    (["--batch", "0"], "--batch '0': expected B or B1,B2,..."),
    (["--batch", "1,x"], "--batch '1,x': expected B or B1,B2,..."),
    (["--batch", "1,2", "--train"], "does not combine with"),
    (["--batch", "1,2", "--top", "3"], "does not combine with"),
])
def test_cli_batch_usage_errors(run_cli, args, words):
    res = run_cli(os.path.join(HERE, "resnet18.onnx"), *args)
    assert res.exit_code == 2 and words in res.output


ORT = os.path.join(os.path.dirname(HERE), "ort")


@pytest.mark.parametrize("name", sorted(f for f in os.listdir(ORT) if f.endswith(".onnx")))
def test_an_export_at_batch_2_goes_to_batch_8(name):
    """tests/fixtures/ort: onnxruntime-optimized BERT / GPT-2 exports traced at batch 2
    ([2, 16] inputs): at batch 8 every node's MACs are 4x."""
    path = os.path.join(ORT, name)
    two, eight = analyzer.analyze(path), analyzer.analyze(path, batch=8)
    assert eight.model["batch"]["was"] == 2
    assert eight.totals.mac_flops == 4 * two.totals.mac_flops > 0
    for a, b in zip(two.nodes, eight.nodes):
        assert b.mac_flops == 4 * a.mac_flops, a.name


@pytest.mark.parametrize("name, rewritten", [("light_resnet50.onnx", ["n173"]),
                                             ("light_shufflenet.onnx", 33)])
def test_model_zoo_exports_at_batch_64(name, rewritten):
    """The ONNX model zoo's batch-1 ResNet-50 (its classifier's Reshape [1, 2048]) and
    ShuffleNet (channel-shuffle Reshapes led by 1), shipped with the onnx package."""
    import onnx

    path = os.path.join(os.path.dirname(onnx.__file__), "backend/test/data/light", name)
    one, r = analyzer.analyze(path), analyzer.analyze(path, batch=64)
    assert r.totals.mac_flops == 64 * one.totals.mac_flops > 0
    for a, b in zip(one.nodes, r.nodes):
        assert b.mac_flops == 64 * a.mac_flops, a.name
    got = r.model["batch"]["rewritten_nodes"]
    assert got == rewritten if isinstance(rewritten, list) else len(got) == rewritten
