#!/usr/bin/env python3
"""Robustness audit: export small HF transformers of every family both ways and analyse each.

    PYTHONPATH=$PWD /work/main/.venv/bin/python bench/hf_exports.py \
        [--only bert,gpt2] [--exporters ts,dynamo] [--attn eager,sdpa|first] [--seq 32] \
        [--shapes fixed,dynamic,fixed1] [--keep DIR] [--out bench/results/hf_exports_DATE.md]
    PYTHONPATH=OTHER_CHECKOUT python bench/hf_exports.py --rebatch-check DIR

Needs torch, transformers and onnxscript (a scratch environment: never an opcost dependency).
For each family of bench/hf_models.py, each attention implementation it has (eager, sdpa) and
each exporter (TorchScript ``dynamo=False`` opset 17; dynamo ``dynamo=True``), an export with
fixed shapes at batch 2 (``fixed``) and at batch 1 (``fixed1``), seq 32 (ViT: 64x64 images),
and one with dynamic batch and sequence axes named ``batch`` and ``seq`` (``dynamic``) is
written to a temporary folder (``--keep``: DIR), then analysed as a user would:

- library: ``analyzer.analyze(path, hw=[a100, h100, l4, t4], runtime=r, train=t, dims=...)``
  for runtime eager and kernel, inference and ``train=True``; a fixed export also at
  ``batch=4`` (its batch rewritten);
- CLI: ``analyze PATH --hw a100`` (``--dim batch=2,seq=32`` for a dynamic export) must exit 0;
  a dynamic export without ``--dim`` must exit 2 (an unbound dim is the user's to bind) with a
  one-line message that names the flag.

Each failure (exception type and message, exit code) is a row of the table; the FLOP check
compares the report's matrix FLOPs with the closed form of bench/hf_models.py at the
export's batch (and at batch 4 after ``batch=4``), and lists every op with no cost rule.
``--rebatch-check DIR`` analyses the fixed exports kept in DIR at batch 4 (A100, eager):
run it with two checkouts on PYTHONPATH to compare opcost versions.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import traceback
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import hf_models as H

B, S = 2, 32
HW = ["a100", "h100", "l4", "t4"]


def export(family: str, attn: str, exporter: str, dynamic: bool, path: str,
           batch: int = B) -> None:
    import torch

    model = H.build(family, attn)
    kw = H.example(family, batch, _seq(family))
    kind = H.FAMILIES[family][2]

    class Wrap(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, *args):
            extra = {} if kind == "img" else {"use_cache": False}
            return self.m(**dict(zip(names, args)), **extra, return_dict=False)[0]

    names = list(kw)
    args = tuple(kw.values())
    axes = H.dynamic_axes(family) if dynamic else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if exporter == "ts":
            torch.onnx.export(Wrap(model), args, path, input_names=names, output_names=["out"],
                              dynamic_axes=axes, opset_version=17, dynamo=False)
        else:
            shapes = None
            if dynamic:
                # named dims: the exporter writes them into the file (expressions included)
                shapes = (tuple(dict(axes[n]) for n in names),)
            prog = torch.onnx.export(Wrap(model), args, input_names=names,
                                     output_names=["out"], dynamic_shapes=shapes, dynamo=True,
                                     verbose=False)
            prog.save(path)


def _seq(family: str) -> int:
    return S if H.FAMILIES[family][2] != "img" else 2 * S


def _fmt_exc(e: BaseException) -> str:
    tb = traceback.extract_tb(e.__traceback__)
    where = f"{os.path.basename(tb[-1].filename)}:{tb[-1].lineno}" if tb else ""
    msg = " ".join(str(e).split())[:300]
    return f"{type(e).__name__}: {msg} [{where}]"


def library_checks(path: str, dynamic: bool, rows: list, tag: str, batch: int = B):
    """(the report at the export's batch, the report at batch 4 of a fixed export)."""
    import analyzer

    dims = _dims(path, batch) if dynamic else None
    first = rebatched = None
    cases = [(r, t, None) for r in ("eager", "kernel") for t in (False, True)]
    if not dynamic:
        cases.append(("eager", True, 4))
    for runtime, train, batch in cases:
        label = f"lib runtime={runtime} train={train}" + (f" batch={batch}" if batch else "")
        try:
            kw = {"dims": dims} if dims else {}
            if batch:
                kw["batch"] = batch
            rep = analyzer.analyze(path, hw=HW, runtime=runtime, train=train, **kw)
            if first is None and not batch:
                first = rep
            if batch:
                rebatched = rep
        except Exception as e:  # noqa: BLE001 (the audit records every failure)
            rows.append((tag, label, "FAIL", _fmt_exc(e)))
    return first, rebatched


def _dims(path: str, batch: int) -> dict:
    """batch and seq, for the ones the export's inputs name (an image model: batch only)."""
    import onnx

    m = onnx.load(path, load_external_data=False)
    names = {d.dim_param for i in m.graph.input for d in i.type.tensor_type.shape.dim}
    return {k: v for k, v in {"batch": batch, "seq": S}.items() if k in names}


def cli_checks(path: str, dynamic: bool, rows: list, tag: str) -> None:
    exe = [sys.executable, "-m", "cli.main"]
    dims = ",".join(f"{k}={v}" for k, v in _dims(path, B).items())
    cmd = exe + [path, "--hw", "a100"] + (["--dim", dims] if dynamic else [])
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        rows.append((tag, "cli " + " ".join(cmd[3:]).replace(path, "M"), f"exit {p.returncode}",
                     " ".join(p.stderr.split())[-300:]))
    if dynamic:
        cmd = exe + [path, "--hw", "a100"]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        wide = max((len(x) for x in p.stderr.splitlines()), default=0)
        ok = (p.returncode == 2 and "--dim" in p.stderr and "Traceback" not in p.stderr
              and len(p.stderr.splitlines()) == 1)
        if not ok:
            rows.append((tag, "cli M --hw a100 (dims unbound)", f"exit {p.returncode}",
                         f"widest line {wide}: " + " ".join(p.stderr.split())[-300:]))


def flop_check(rep, rebatched, family: str, attn: str, flops_rows: list, tag: str,
               batch: int) -> None:
    model = H.build(family, attn)
    want = H.matmul_flops(model, family, batch, _seq(family))
    got = rep.totals.mac_flops
    four = "-"
    if rebatched is not None:
        four = f"{rebatched.totals.mac_flops / H.matmul_flops(model, family, 4, _seq(family)) - 1:+.2%}"
    cov = rep.coverage
    zero = sorted({n.op for n in rep.nodes if n.status == "costed" and n.flops == 0
                   and n.op in ("MatMul", "Gemm", "Conv", "Einsum")})
    flops_rows.append((tag, got, want, got / want - 1, four,
                       ", ".join(f"{k} x{v}" for k, v in sorted(cov.uncosted_ops.items())) or "-",
                       ", ".join(zero) or "-"))


def rebatch_check(folder: str) -> None:
    """Each fixed export of ``folder`` (kept exports of a run) at ``batch=4`` on an A100
    under eager, inference: mac_flops and latency, or the error; one markdown row each. Run
    with another checkout first on PYTHONPATH to compare opcost versions."""
    import glob

    import analyzer

    print("| export | batch=4 mac_flops | a100 eager latency (ms) | error |")
    print("|---|---:|---:|---|")
    for p in sorted(glob.glob(os.path.join(folder, "*_fixed*.onnx"))):
        try:
            r = analyzer.analyze(p, hw="a100", runtime="eager", batch=4)
            row = f"{r.totals.mac_flops} | {r.predictions[0].latency_s * 1e3:.4f} | -"
        except Exception as e:  # noqa: BLE001 (the check records every failure)
            row = f"- | - | {_esc(_fmt_exc(e)[:160])}"
        print(f"| {os.path.basename(p)} | {row} |", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rebatch-check", metavar="DIR",
                    help="only analyse the fixed exports kept in DIR at batch=4 (a table)")
    ap.add_argument("--keep", metavar="DIR", help="write the exports to DIR (else a temp dir)")
    ap.add_argument("--only", default="")
    ap.add_argument("--exporters", default="ts,dynamo")
    ap.add_argument("--attn", default="eager,sdpa",
                    help="attention implementations, or 'first': sdpa where the family has it")
    ap.add_argument("--shapes", default="fixed,dynamic,fixed1",
                    help="fixed: traced at batch 2; fixed1: at batch 1; dynamic: batch, seq")
    ap.add_argument("--seq", type=int, default=32,
                    help="sequence length (ViT: the image side is 2x it); above 64 the causal "
                         "mask (seq^2) is past the 4,096 elements constant folding computes")
    ap.add_argument("--no-cli", action="store_true")
    ap.add_argument("--out", default="bench/results/hf_exports_2026-12-02.md")
    a = ap.parse_args(argv)
    if a.rebatch_check:
        rebatch_check(a.rebatch_check)
        return 0
    global S
    S = a.seq
    fams = [f for f in H.FAMILIES if not a.only or f in a.only.split(",")]
    rows, flops_rows, done = [], [], []
    tmp = a.keep or tempfile.mkdtemp(prefix="hfexp_")
    os.makedirs(tmp, exist_ok=True)
    # each family's first attention implementation (sdpa where it has it) before the others
    items = []
    for fam in fams:
        attns = [x for x in H.FAMILIES[fam][3] if x in a.attn.split(",")]
        if a.attn == "first":
            attns = ["sdpa" if "sdpa" in H.FAMILIES[fam][3] else "eager"]
        attns.sort(key=lambda x: x != "sdpa")
        items += [(k, fam, attn) for k, attn in enumerate(attns)]
    for _, fam, attn in sorted(items, key=lambda t: t[0]):
        for exporter in a.exporters.split(","):
            for shape in a.shapes.split(","):
                dynamic = shape == "dynamic"
                batch = 1 if shape == "fixed1" else B
                tag = f"{fam}/{attn}/{exporter}/{shape}"
                path = os.path.join(tmp, tag.replace("/", "_") + ".onnx")
                t0 = time.time()
                try:
                    export(fam, attn, exporter, dynamic, path, batch)
                except Exception as e:  # noqa: BLE001
                    rows.append((tag, "export", "SKIP", _fmt_exc(e)))
                    print(tag, "export failed", _fmt_exc(e), flush=True)
                    continue
                n_before = len(rows)
                rep, rebatched = library_checks(path, dynamic, rows, tag, batch)
                if not a.no_cli:
                    cli_checks(path, dynamic, rows, tag)
                if rep is not None:
                    flop_check(rep, rebatched, fam, attn, flops_rows, tag, batch)
                done.append(tag)
                print(tag, f"{time.time() - t0:.0f}s", "failures:", len(rows) - n_before,
                      flush=True)
                for r in rows[n_before:]:
                    print("   ", r, flush=True)
                write(a.out, done, rows, flops_rows,
                      argv if argv is not None else sys.argv[1:])
    write(a.out, done, rows, flops_rows, argv if argv is not None else sys.argv[1:])
    return 0


def _esc(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def write(out: str, done, rows, flops_rows, argv) -> None:
    lines = ["# HF transformers exports: does every one predict?", "",
             "Generated by `PYTHONPATH=$PWD python bench/hf_exports.py "
             + " ".join(argv) + "` (bench/hf_models.py: the configs).", "",
             f"Exports analysed: {len(done)}; failures: {len(rows)}.", "",
             "## Failures", "", "| export | check | result | error |", "|---|---|---|---|"]
    lines += [f"| {_esc(t)} | {_esc(c)} | {_esc(r)} | {_esc(m)} |" for t, c, r, m in rows]
    if not rows:
        lines.append("| - | - | - | none |")
    lines += ["", f"## Matrix FLOPs at the export's batch (2; fixed1: 1), seq {S} "
              "(ViT: images of side 2 x seq)", "",
              "want: 2 x Linear/Conv1D weights x tokens + 4 x B x S^2 x d_attn per attention "
              "block (bench/hf_models.py); batch=4: the same difference for a fixed "
              "export analysed with `batch=4` (its batch rewritten)", "",
              "| export | mac_flops | want | diff | batch=4 diff | no cost rule "
              "| matmul counted zero |",
              "|---|---:|---:|---:|---:|---|---|"]
    lines += [f"| {_esc(t)} | {g} | {w} | {d:+.2%} | {f} | {_esc(u)} | {_esc(z)} |"
              for t, g, w, d, f, u, z in flops_rows]
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
