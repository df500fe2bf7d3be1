#!/usr/bin/env python3
"""Export the small CPU accuracy models (OCR, audio, UNet-ish, depthwise-separable) to ONNX.

    pip install torch==2.13.0   # only to run this script; torch is no runtime or CI dependency
    PYTHONPATH=$PWD python samples/cpu_models/export.py

Hand-written, randomly initialised (accuracy of the *latency* prediction does not depend on the
weights' values), batch 1, fp32, opset 17, each file < 5 MB. None of them is ever calibrated on.
"""

from __future__ import annotations

import os

import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))


class CRNN(nn.Module):
    """OCR text-line recogniser: conv stack -> bidirectional LSTM/GRU -> linear over 97 symbols."""

    def __init__(self, rnn: str = "lstm"):
        super().__init__()

        def blk(i, o, pool):
            return [nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU(), nn.MaxPool2d(pool)]
        self.cnn = nn.Sequential(*blk(1, 32, 2), *blk(32, 64, 2), *blk(64, 128, (2, 1)),
                                 *blk(128, 128, (2, 1)))
        cls = nn.LSTM if rnn == "lstm" else nn.GRU
        self.rnn = cls(128 * 2, 128, bidirectional=True, batch_first=False)
        self.fc = nn.Linear(256, 97)

    def forward(self, x):                       # x: 1 x 1 x 32 x 128
        f = self.cnn(x)                          # 1 x 128 x 2 x 32
        f = f.flatten(1, 2).permute(2, 0, 1)     # 32 x 1 x 256
        y, _ = self.rnn(f)
        return self.fc(y).log_softmax(-1)


class Audio1D(nn.Module):
    """Keyword-spotting style 1-D conv net over 16 000 samples."""

    def __init__(self):
        super().__init__()
        layers, c = [nn.Conv1d(1, 32, 80, stride=16), nn.BatchNorm1d(32), nn.ReLU(), nn.MaxPool1d(4)], 32
        for o in (32, 64, 64):
            layers += [nn.Conv1d(c, o, 3, padding=1), nn.BatchNorm1d(o), nn.ReLU(), nn.MaxPool1d(4)]
            c = o
        self.net = nn.Sequential(*layers)
        self.fc = nn.Linear(64, 35)

    def forward(self, x):                       # 1 x 1 x 16000
        return self.fc(self.net(x).mean(-1))


class TinyUNet(nn.Module):
    def __init__(self, c=16):
        super().__init__()

        def dbl(i, o):
            return nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.ReLU(), nn.Conv2d(o, o, 3, padding=1), nn.ReLU())
        self.d1, self.d2, self.d3 = dbl(3, c), dbl(c, 2 * c), dbl(2 * c, 4 * c)
        self.u2 = nn.ConvTranspose2d(4 * c, 2 * c, 2, stride=2)
        self.c2 = dbl(4 * c, 2 * c)
        self.u1 = nn.ConvTranspose2d(2 * c, c, 2, stride=2)
        self.c1 = dbl(2 * c, c)
        self.out = nn.Conv2d(c, 2, 1)

    def forward(self, x):                       # 1 x 3 x 128 x 128
        a = self.d1(x)
        b = self.d2(nn.functional.max_pool2d(a, 2))
        m = self.d3(nn.functional.max_pool2d(b, 2))
        b = self.c2(torch.cat([self.u2(m), b], 1))
        return self.out(self.c1(torch.cat([self.u1(b), a], 1)))


class DWSeparable(nn.Module):
    """MobileNet-v1 style depthwise-separable CNN (width 0.5) at 160 x 160."""

    def __init__(self):
        super().__init__()
        cfg = [(32, 64, 1), (64, 128, 2), (128, 128, 1), (128, 256, 2), (256, 256, 1), (256, 512, 2),
               (512, 512, 1), (512, 512, 1), (512, 1024, 2)]
        layers = [nn.Conv2d(3, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.ReLU6()]
        for i, o, s in cfg:
            i, o = i // 2, o // 2
            layers += [nn.Conv2d(i, i, 3, s, 1, groups=i), nn.BatchNorm2d(i), nn.ReLU6(),
                       nn.Conv2d(i, o, 1), nn.BatchNorm2d(o), nn.ReLU6()]
        self.net = nn.Sequential(*layers)
        self.fc = nn.Linear(512, 100)

    def forward(self, x):                       # 1 x 3 x 160 x 160
        return self.fc(self.net(x).mean((2, 3)))


MODELS = {
    "crnn_lstm": (lambda: CRNN("lstm"), (1, 1, 32, 128)),
    "crnn_gru": (lambda: CRNN("gru"), (1, 1, 32, 128)),
    "audio_conv1d": (Audio1D, (1, 1, 16000)),
    "unet_tiny": (TinyUNet, (1, 3, 128, 128)),
    "dw_separable": (DWSeparable, (1, 3, 160, 160)),
}


def main():
    torch.manual_seed(0)
    for name, (make, shape) in MODELS.items():
        m = make().eval()
        path = os.path.join(HERE, f"{name}.onnx")
        torch.onnx.export(m, (torch.randn(*shape),), path, opset_version=17, dynamo=False,
                          input_names=["x"], output_names=["y"])
        print(f"{name}: {os.path.getsize(path) / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
