#!/usr/bin/env python3
"""Export the silero-VAD-style fixture tests/fixtures/speech/vad_if.onnx (TorchScript, opset 16).

The model is scripted (``torch.jit.script``), so ``if sr == 16000`` becomes an ONNX ``If`` on the
``sr`` input choosing between two paths, as in silero-vad's exports: a 16 kHz path (STFT as a
reflect ``Pad`` + strided ``Conv`` over a 256-point basis, hop 128) and an 8 kHz one (128-point,
hop 64), each followed by an encoder Conv, a mean over time, an ``LSTMCell`` (exported as an LSTM
fed through ``Unsqueeze``) and a Conv + Sigmoid decoder.  Inside the branches ONNX shape
inference loses the ranks (the pads are computed from shapes by a Slice/Transpose/Reshape
chain), which is what the fixture tests.

How to run (from the repository root; torch is not a dependency of opcost)::

    python -m pip install torch onnx        # made with torch 2.13.0 (CPU), onnx 1.23
    python samples/speech/export_vad.py --out tests/fixtures/speech

Weights above ``fixture_io.EXTERNAL_THRESHOLD`` bytes are stored as external data whose
file is deleted (opcost never reads weight bytes).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from fixture_io import save_fixture

import onnx


class STFT(nn.Module):
    """Magnitude STFT as silero writes it: reflect pad, Conv1d with a [n_fft+2, 1, n_fft] basis."""

    def __init__(self, n_fft: int, hop: int):
        super().__init__()
        self.n_fft, self.hop = n_fft, hop
        self.register_buffer("basis", torch.randn(n_fft + 2, 1, n_fft))

    def forward(self, x):
        x = F.pad(x.unsqueeze(1), (self.n_fft // 4, self.n_fft // 4), mode="reflect")
        y = F.conv1d(x, self.basis, stride=self.hop)
        c = self.n_fft // 2 + 1
        return torch.sqrt(y[:, :c] ** 2 + y[:, c:] ** 2)


class Path_(nn.Module):
    def __init__(self, n_fft: int, hop: int, hidden: int = 16):
        super().__init__()
        self.stft = STFT(n_fft, hop)
        self.enc = nn.Conv1d(n_fft // 2 + 1, hidden, 3, padding=1)
        self.lstm = nn.LSTMCell(hidden, hidden)
        self.dec = nn.Conv1d(hidden, 1, 1)

    def forward(self, x, h, c):
        z = torch.relu(self.enc(self.stft(x))).mean(-1)
        h2, c2 = self.lstm(z, (h, c))
        out = torch.sigmoid(self.dec(torch.relu(h2).unsqueeze(-1))).squeeze(-1)
        return out, h2, c2


class VAD(nn.Module):
    def __init__(self):
        super().__init__()
        self.p16 = Path_(256, 128)
        self.p8 = Path_(128, 64)

    def forward(self, x, sr: int, h, c):
        if sr == 16000:
            return self.p16(x, h, c)
        else:
            return self.p8(x, h, c)


def main() -> int:
    a = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    a.add_argument("--out", type=Path, default=Path("tests/fixtures/speech"))
    out = a.parse_args().out
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    m = torch.jit.script(VAD().eval())
    args = (torch.randn(1, 512), 16000, torch.zeros(1, 16), torch.zeros(1, 16))
    tmp = out / "vad_if.tmp.onnx"
    torch.onnx.export(m, args, str(tmp), dynamo=False, opset_version=16,
                      input_names=["input", "sr", "h", "c"], output_names=["out", "hn", "cn"],
                      dynamic_axes={"input": {0: "batch", 1: "samples"}, "h": {0: "batch"},
                                    "c": {0: "batch"}})
    model = onnx.load(str(tmp))
    tmp.unlink()
    print(save_fixture(model, out, "vad_if"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
