"""Every ONNX file the ``silero-vad`` package ships (6.2.3, MIT; tests/fixtures/speech/silero/)
analyses with no uncosted node and exact counts, its ``If``s chosen by ``values={"sr": 16000}``
where the file has an ``sr`` input.  Three of them hold the LSTM behind an ``If`` inside an
``If`` (rank tests: ``Unsqueeze`` when the input has rank 2, ``Squeeze`` when a dim is 1) whose
branches ONNX inference merges into an unknown rank: the taken branch decides it.

One 16 kHz chunk: 512 samples plus the 64 of context the package's wrapper prepends = 576.

MACs (x2 = FLOPs):
  STFT Conv, basis [258, 1, 256], stride 128, reflect pad 64 right: 640 samples,
      (640 - 256) / 128 + 1 = 4 frames                 2 * 258 * 4 * 256   = 528384
  encoder Conv k3 p1: 129 -> 128 at 4                  2 * 128 * 4 * 129*3 = 396288
                      128 -> 64, stride 2, at 2        2 * 64 * 2 * 128*3  =  98304
                       64 -> 64, stride 2, at 1        2 * 64 * 1 * 64*3   =  24576
                       64 -> 128 at 1                  2 * 128 * 1 * 64*3  =  49152
  LSTM, 1 step, batch 1, I = H = 128, 4 gates          2 * 2 * 512 * 128   = 262144
  decoder Conv 128 -> 1, k1                            2 * 128             =    256
                                                                     total  1359104
vector: |X|^2 Add 129*4 = 516; Conv biases 128*4 + 64*2 + 64 + 128 + 1 = 833; five Relus
  128*4 + 64*2 + 64 + 128 + 128 = 960; LSTM 128 units x (14 cell + 2*4 biases) = 2816;
  Sigmoid 2; ReduceMean over one frame 1                                       = 5128
transcendentals: two Pows and a Sqrt over [1, 129, 4] 3 * 516; LSTM 128 x 5; Sigmoid 1 = 2189
"""

from __future__ import annotations

import os

import onnx
import pytest

import analyzer

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "speech", "silero")

MAC = 528384 + 396288 + 98304 + 24576 + 49152 + 262144 + 256
assert MAC == 1359104
VECTOR = 516 + 833 + 960 + 128 * 22 + 2 + 1
TRANSC = 3 * 129 * 4 + 128 * 5 + 1
ONE = {"dims": {"batch": 1, "sequence": 576}}

# file -> (options, mac_flops, vector_flops, transcendentals)
CASES = {
    # spox export: the whole model is one If on sr (If inside If inside If around the LSTM);
    # its inputs have unknown dims without names, so their shapes are given
    "silero_vad.onnx": ({"inputs": {"input": [1, 576], "state": [2, 1, 128]}}, MAC, VECTOR, TRANSC),
    # torch 2.3 exports with the decoder's If_1 (state batch test) around rnn/If (rank test);
    # op15 adds the state Add ([2, 1, 128]: 256) at the top level
    "silero_vad_16k_op15.onnx": (ONE, MAC, VECTOR + 256, TRANSC),
    "silero_vad_half.onnx": (ONE, MAC, VECTOR, TRANSC),
    "silero_vad_op18_ifless.onnx": (ONE, MAC, VECTOR, TRANSC),
    "silero_vad_openvino_16k.onnx": ({}, MAC, VECTOR, TRANSC),
    # [sequence_length, 576] frames at once, reflect pad 128 on both sides: 832 samples ->
    # (832 - 256) / 128 + 1 = 5 frames (a Slice keeps 4 for the encoder); no ReduceMean
    "silero_vad_16k_sequence.onnx": ({"dims": {"sequence_length": 1}},
                                     MAC + 2 * 258 * 256, VECTOR - 1, TRANSC),
}


def test_the_fixtures_are_every_onnx_file_the_package_ships():
    assert sorted(f for f in os.listdir(HERE) if f.endswith(".onnx")) == sorted(CASES)


def _has_sr(path: str) -> bool:
    return any(i.name == "sr" for i in onnx.load(path, load_external_data=False).graph.input)


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_silero_file_analyses_exactly(name):
    path = os.path.join(HERE, name)
    options, mac, vector, transc = CASES[name]
    values = {"values": {"sr": 16000}} if _has_sr(path) else {}
    r = analyzer.analyze(path, **options, **values)
    assert r.coverage.uncosted == () and r.coverage.estimates == ()
    assert (r.totals.mac_flops, r.totals.vector_flops, r.totals.transcendentals) == (mac, vector, transc)
    lstm = [n for n in r.nodes if n.op == "LSTM"]   # (op18_ifless writes its cell as MatMuls)
    assert len(lstm) == (name != "silero_vad_op18_ifless.onnx")
    assert all(n.mac_flops == 262144 and n.outputs[0] == "float32[1,1,1,128]" for n in lstm)


def test_the_if_in_if_variant_runs_from_the_command_line(run_cli):
    res = run_cli(os.path.join(HERE, "silero_vad.onnx"), "--input", "input=1x576",
                  "--input", "state=2x1x128", "--value", "sr=16000", "--strict", "--format", "json")
    assert res.exit_code == 0, res.output
    import json

    doc = json.loads(res.stdout)
    assert doc["coverage"]["uncosted"] == [] and doc["totals"]["mac_flops"] == MAC


def test_the_8k_branch_of_the_if_in_if_variant_is_costed_too():
    # 8 kHz: 256 samples + 32 of context = 288; basis [130, 1, 128], stride 64, reflect pad 32
    # right: 320 samples, (320 - 128) / 64 + 1 = 4 frames; the first encoder Conv reads 65 bins
    r = analyzer.analyze(os.path.join(HERE, "silero_vad.onnx"),
                         inputs={"input": [1, 288], "state": [2, 1, 128]}, values={"sr": 8000})
    assert r.coverage.uncosted == () and r.coverage.estimates == ()
    convs = [n for n in r.nodes if n.op == "Conv"]
    assert convs[0].mac_flops == 2 * 130 * 4 * 128
    assert convs[1].mac_flops == 2 * 128 * 4 * 65 * 3
    assert r.totals.mac_flops == MAC - 528384 - 396288 + 2 * 130 * 4 * 128 + 2 * 128 * 4 * 65 * 3
    assert all("/If_0_else_branch__" in n.name for n in r.nodes if n.op in ("Conv", "LSTM"))


def test_a_bare_run_of_the_if_in_if_variant_asks_for_its_input_shapes():
    # its inputs are float32[?, ?] and [2, ?, 128] (dims without a name or a value): the
    # error raised inside the If's branch names the model's inputs, never 'every input dim
    # is fixed'
    from analyzer.errors import UnboundDimError

    with pytest.raises(UnboundDimError) as e:
        analyzer.analyze(os.path.join(HERE, "silero_vad.onnx"))
    assert "every input dim is fixed" not in str(e.value)
    assert [h.value for h in e.value.hints if h.option == "inputs"] == [
        {"input": "DIMS", "state": "DIMS"}]
    assert "--input input=DIMS --input state=DIMS" in e.value.format("cli")


def test_without_the_sample_rate_the_branch_that_runs_at_these_shapes_is_costed():
    # sr is a run-time value: the 8 kHz branch given a 16 kHz chunk (576 samples) hands its
    # LSTM a rank-5 input and cannot run; the 16 kHz branch is costed, as an estimate, and
    # the If's note says why and which input decides
    r = analyzer.analyze(os.path.join(HERE, "silero_vad.onnx"),
                         inputs={"input": [1, 576], "state": [2, 1, 128]})
    assert r.coverage.uncosted == () and r.coverage.estimates == ("If_0",)
    assert r.totals.mac_flops == MAC
    note = r.node("If_0").note
    assert "costed 'then_branch', the branch that runs at these shapes" in note
    assert "'else_branch' fails at these shapes" in note and "graph input 'sr'" in note


@pytest.mark.parametrize("name, options", [
    ("silero_vad.onnx", {"inputs": {"input": [8, 576], "state": [2, 8, 128]}}),
    ("silero_vad_16k_op15.onnx", {"dims": {"batch": 8, "sequence": 576}}),
    ("silero_vad_half.onnx", {"dims": {"batch": 8, "sequence": 576}}),
])
def test_a_batch_of_8_chunks_costs_8_times_the_macs(name, options):
    # the exporters' batch tests (If_1 on the state's batch, squeezes when a dim is 1) and
    # the branches' traced batch-1 declarations follow the bound batch
    path = os.path.join(HERE, name)
    values = {"values": {"sr": 16000}} if _has_sr(path) else {}
    r = analyzer.analyze(path, **options, **values)
    assert r.coverage.uncosted == () and r.coverage.estimates == ()
    assert r.totals.mac_flops == 8 * MAC
