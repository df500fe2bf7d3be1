"""The --input / ``inputs=`` shape text of an ONNX input: its forms, symbols kept as written,
a dtype checked against the file's, and an error that names the bad part."""

import re
from pathlib import Path

import pytest

from analyzer import analyze
from analyzer.errors import InputSpecError
from analyzer.frontends.onnx.bind import parse_spec_text

MLP = Path(__file__).resolve().parents[2] / "samples" / "mlp.onnx"


@pytest.mark.parametrize("text, want", [
    ("1x3x224x224", (None, (1, 3, 224, 224))),
    ("1X3X224X224", (None, (1, 3, 224, 224))),
    ("batch,3,224,224", (None, ("batch", 3, 224, 224))),
    ("Batch,seq_len", (None, ("Batch", "seq_len"))),     # case kept: ONNX symbols are exact
    ("max_len,8", (None, ("max_len", 8))),               # commas: a symbol may hold an x
    ("[4, 784]", (None, (4, 784))),
    ("F32[4,784]", ("float32", (4, 784))),
    ("bf16[2,batch]", ("bfloat16", (2, "batch"))),
])
def test_forms(text, want):
    assert parse_spec_text(text, "x") == want


@pytest.mark.parametrize("text, says", [
    ("f32[4", "bad dim 'f32[4'"),
    ("q8[4]", "unknown dtype 'q8'"),
    ("4x-1", "negative dim -1"),
    ("4xx8", "expected e.g. 1x3x224x224"),
    ("", "expected e.g. 1x3x224x224"),
])
def test_bad_text_names_the_part(text, says):
    with pytest.raises(InputSpecError, match=re.escape(says)):
        parse_spec_text(text, "x")


def test_a_dtype_is_checked_against_the_files():
    r = analyze(MLP, inputs={"x": "f32[4,784]"})   # samples/mlp.onnx: x is float32[batch, 784]
    assert r.node("fc1").cost.mac_flops == 2 * 4 * 784 * 256   # 2 FLOPs a multiply-add
    with pytest.raises(InputSpecError, match=r"input 'x' is float32 in the model, but .* float16"):
        analyze(MLP, inputs={"x": "f16[4,784]"})
