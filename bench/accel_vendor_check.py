"""Score opcost as shipped against the vendors' whole-model figures that issue 34 quotes
(ResNet-50 and MobileNetV2 at batch 1 on the Hexagon NPU of the Snapdragon 8 Gen 2 / 8 Gen 3 and
the A17 Pro's Neural Engine).  A held-out check: nothing is fitted, tuned or chosen on these
figures; the script only predicts and compares.

    PYTHONPATH=$PWD python bench/accel_vendor_check.py [--out bench/results/accel_vendor_check.md]

Graphs: tests/fixtures/accel/resnet50.onnx and tests/fixtures/torch/mobilenet_v2.onnx
(torchvision, random init, 1x3x224x224, graph only).  Each row is predicted through
``analyzer.prediction.predict`` with the profile's default runtime (``qnn`` on Hexagon: the mean
of AI Hub's QNN DLC and TFLite deployments; ``coreml`` on the ANE) at the row's precision; the
Hexagon rows are also listed at ``qnn-dlc`` and ``qnn-tflite`` (the issue does not say which
deployment it quotes).  ratio = predicted / published; MAPE = mean |ratio - 1| x 100.

Provenance of the published figures (``PUBLISHED``): the issue's table, which names the vendor
and the phone but no release or page.  ``NEAREST`` lists the closest public record found for each
row, for the reader to judge the quoted figure; it is not scored.
"""

from __future__ import annotations

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from report_lines import emit_text  # noqa: E402

GRAPHS = {"ResNet-50": "tests/fixtures/accel/resnet50.onnx",
          "MobileNetV2": "tests/fixtures/torch/mobilenet_v2.onnx"}

# (model, opcost precision, profile, published ms, opcost ms in the table when filed)
PUBLISHED = [
    ("ResNet-50", "fp16", "hexagon-sd8gen2", 2.27, 43.3),
    ("ResNet-50", "fp16", "hexagon-sd8gen3", 1.62, 3.40),
    ("ResNet-50", "int8", "hexagon-sd8gen2", 0.77, 42.7),
    ("ResNet-50", "int8", "hexagon-sd8gen3", 0.59, 2.31),
    ("ResNet-50", "fp16", "ane-a17pro", 1.38, 22.3),
    ("ResNet-50", "int8", "ane-a17pro", 0.77, 11.7),
    ("MobileNetV2", "fp16", "ane-a17pro", 0.49, 8.5),
]
SOURCE = ("issue 34's table: Qualcomm AI Hub (Galaxy S23 = 8 Gen 2, Galaxy S24 = 8 Gen 3; fp16, W8A8) "
          "and Apple (iPhone 15 Pro = A17 Pro; fp16, int8 = W8A8), batch 1; release and page not stated")

_AIHUB = ("quic/ai-hub-models @052dc1f3753ae177349f16d915ab67017f879b69 (v0.45.0), "
          "qai_hub_models/models/resnet50/perf.yaml, inference_time_milliseconds, TFLite / QNN DLC")
_S23 = "; no Galaxy S23 row at that commit: QCS8550 (Proxy), the S23's silicon,"
_COREML = ("apple/coremltools docs-guides/source/opt-quantization-perf.md @25562dd (the rows apple-ane is "
           "fitted on): iPhone 14 Pro (A16)")
NEAREST = {
    ("ResNet-50", "fp16", "hexagon-sd8gen2"): f"{_AIHUB}{_S23} 2.169 / 2.201 ms",
    ("ResNet-50", "fp16", "hexagon-sd8gen3"): f"{_AIHUB}: Galaxy S24 1.571 / 1.613 ms",
    ("ResNet-50", "int8", "hexagon-sd8gen2"): f"{_AIHUB}{_S23} 0.754 / 0.904 ms",
    ("ResNet-50", "int8", "hexagon-sd8gen3"): f"{_AIHUB}: Galaxy S24 0.593 / 0.664 ms",
    ("ResNet-50", "fp16", "ane-a17pro"): f"no A17 Pro row for this model found; {_COREML} ResNet50 Float16 1.52 ms "
                                         "(1.38 ms is that table's A16 MobileViTv2-1.0 Float16)",
    ("ResNet-50", "int8", "ane-a17pro"): f"no A17 Pro row for this model found; {_COREML} ResNet50 W8A8 0.94 ms "
                                         "(0.77 ms is also the issue's 8 Gen 2 W8A8 figure)",
    ("MobileNetV2", "fp16", "ane-a17pro"): f"no A17 Pro row for this model found; {_COREML} MobileNetv2-1.0 "
                                           "Float16 0.48 ms",
}


_REPORTS: dict = {}


def predicted_ms(model: str, pid: str, precision: str, runtime: str | None = None) -> float:
    """opcost's latency (ms) of ``model`` on ``pid`` at ``precision``; ``runtime`` None = the
    profile's default.  Reports are analyzed once per graph."""
    import analyzer
    from analyzer.prediction.predict import predict

    if model not in _REPORTS:
        _REPORTS[model] = analyzer.analyze(os.path.join(ROOT, GRAPHS[model]))
    (pred,) = predict(_REPORTS[model], [pid], precision=precision, runtime=runtime)
    return pred.latency_s * 1e3


def score() -> list[dict]:
    """One dict per published row: the prediction at the default runtime, its ratio, and on
    Hexagon the two deployments' predictions."""
    rows = []
    for model, prec, pid, ms, at_filing in PUBLISHED:
        r = {"model": model, "precision": prec, "profile": pid, "published_ms": ms, "at_filing_ms": at_filing,
             "pred_ms": predicted_ms(model, pid, prec)}
        r["ratio"] = r["pred_ms"] / ms
        if pid.startswith("hexagon"):
            r["dlc_ms"] = predicted_ms(model, pid, prec, "qnn-dlc")
            r["tflite_ms"] = predicted_ms(model, pid, prec, "qnn-tflite")
        rows.append(r)
    return rows


def mape(rows: list[dict]) -> float:
    return 100 * sum(abs(r["ratio"] - 1) for r in rows) / len(rows)


def gen_ratios(rows: list[dict]) -> list[tuple[str, float, float]]:
    """(precision, measured, predicted) 8 Gen 3 / 8 Gen 2 latency ratio of each ResNet-50 pair."""
    by = {(r["precision"], r["profile"]): r for r in rows if r["profile"].startswith("hexagon")}
    out = []
    for prec in ("fp16", "int8"):
        a, b = by[(prec, "hexagon-sd8gen2")], by[(prec, "hexagon-sd8gen3")]
        out.append((prec, b["published_ms"] / a["published_ms"], b["pred_ms"] / a["pred_ms"]))
    return out


def render(rows: list[dict]) -> list[str]:
    lines = ["# opcost against the vendors' whole-model figures of issue 34 (held-out check)", "",
             "`PYTHONPATH=$PWD python bench/accel_vendor_check.py`. Nothing fitted, tuned or chosen on these figures.",
             f"Published: {SOURCE}.", "",
             "| model | precision | profile | published | opcost when filed | opcost now (default runtime) | ratio | "
             "qnn-dlc / qnn-tflite |", "|---|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        dep = f"{r['dlc_ms']:.2f} / {r['tflite_ms']:.2f} ms" if "dlc_ms" in r else ""
        lines.append(f"| {r['model']} | {r['precision']} | {r['profile']} | {r['published_ms']:.2f} ms | "
                     f"{r['at_filing_ms']:.2f} ms | {r['pred_ms']:.2f} ms | {r['ratio']:.2f} | {dep} |")
    hx = [r for r in rows if r["profile"].startswith("hexagon")]
    ane = [r for r in rows if r["profile"].startswith("ane")]
    lines += ["", f"MAPE: all 7 rows {mape(rows):.1f} %; Hexagon 4 rows {mape(hx):.1f} %; A17 Pro ANE 3 rows "
              f"{mape(ane):.1f} %.", "", "8 Gen 3 / 8 Gen 2 latency ratio (ResNet-50):", ""]
    for prec, meas, pred in gen_ratios(rows):
        lines.append(f"- {prec}: published {meas:.3f}, predicted {pred:.3f} ({(pred / meas - 1) * 100:+.1f} %)")
    lines += ["", "Nearest public record of each published figure (not scored):", ""]
    for model, prec, pid, _, _ in PUBLISHED:
        lines.append(f"- {model} {prec} {pid}: {NEAREST[(model, prec, pid)]}")
    return lines + [""]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "accel_vendor_check.md"))
    args = ap.parse_args()
    emit_text(args.out, "\n".join(render(score())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
