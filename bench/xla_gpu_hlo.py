"""XLA GPU's kernels of small JAX programs, read from a deviceless A100 compile (no GPU needed),
beside the ``xla`` runtime's plan of the same programs (bench/xla_gpu_plan.py).

    python3 -m venv /tmp/xlagpu-venv
    /tmp/xlagpu-venv/bin/pip install jax==0.10.2 jaxlib==0.10.2 jax-cuda12-plugin==0.10.2 \\
        jax-cuda12-pjrt==0.10.2            # XLA's GPU compiler as a PJRT plugin (about 250 MB)
    PYTHONPATH=$PWD python bench/xla_gpu_hlo.py [--plugin-python /tmp/xlagpu-venv/bin/python]

The plugin lives in its own venv (never a runtime or test dependency of opcost); this script runs
itself there with ``--compile`` (environment ``JAX_PLATFORMS=cpu``, so no CUDA device is opened, and
``JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1``, so the plugin loads without the CUDA runtime libraries).
There ``jax.experimental.topologies.get_topology_desc(platform="cuda", target_config=TEXT,
topology="1x1x1")`` builds an abstract one-GPU topology from a ``stream_executor.GpuTargetConfigProto``
in text form (``TARGET_CONFIG``: an A100-SXM4-80GB), and ``jax.jit(f).lower(x).compile()`` runs
XLA's GPU compiler for it; the after-optimizations HLO's entry computation gives the kernels: every
fusion (its kind, its Triton backend kind and tiling, the JAX ops inside, by ``op_name``
metadata), every custom call (cuBLAS, cuDNN) and every other instruction that launches.

Without a device XLA cannot autotune: no GEMM is timed, so neither the cuBLAS-or-Triton choice nor
the tile of a Triton GEMM is measured; the compiler keeps its Triton GEMM fusions with the tiling
its deviceless heuristic gives (``output_tiles``/``num_warps`` in the listing), where a device's
autotuner may pick other tiles or a cuBLAS call.  Which ops share a kernel (fusion, dot merging,
matrix-vector rewriting) does not depend on the autotuner.  Predictions and kernels only: nothing
here is timed or compared with a timing.  Writes bench/results/xla_gpu_hlo.md.

TARGET_CONFIG's figures: 108 SMs, 1.41 GHz boost clock, 2039 GB/s, 40 MiB L2, 80 GiB
(hardware_db/profiles/a100-80gb-sxm.toml and its sources); per-SM limits of compute capability
8.0 (2048 threads, 65536 registers, 164 KiB shared memory per SM, 163 KiB per block opt-in, 48 KiB
per block default, 64 FP32 lanes per SM): NVIDIA CUDA C++ Programming Guide, "Technical
Specifications per Compute Capability" and NVIDIA A100 Tensor Core GPU Architecture whitepaper.
The cuDNN version (9.8) is an assumption; it matters only to cuDNN fusions, which none of these
programs gets.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "samples"))

RESULT = os.path.join(ROOT, "bench", "results", "xla_gpu_hlo.md")
COMMAND = "PYTHONPATH=$PWD python bench/xla_gpu_hlo.py"
PLUGIN_PYTHON = "/tmp/xlagpu-venv/bin/python"
PROGRAMS = (("mlp_infer", (1, 784)), ("transformer_infer", (1, 16, 64)))

TARGET_CONFIG = """gpu_device_info {
  threads_per_block_limit: 1024
  threads_per_warp: 32
  shared_memory_per_block: 49152
  shared_memory_per_core: 167936
  threads_per_core_limit: 2048
  core_count: 108
  fpus_per_core: 64
  block_dim_limit_x: 2147483647
  block_dim_limit_y: 65535
  block_dim_limit_z: 65535
  memory_bandwidth: 2039000000000
  l2_cache_size: 41943040
  clock_rate_ghz: 1.41
  device_memory_size: 85899345920
  shared_memory_per_block_optin: 166912
  cuda_compute_capability { major: 8 minor: 0 }
  registers_per_core_limit: 65536
  registers_per_block_limit: 65536
}
platform_name: "CUDA"
dnn_version_info { major: 9 minor: 8 }
device_description_str: "NVIDIA A100-SXM4-80GB"
"""

# entry instructions that launch nothing
FREE = {"parameter", "constant", "bitcast", "get-tuple-element", "tuple", "after-all"}


def compile_programs() -> dict[str, str]:
    """{program: after-optimizations HLO text} of PROGRAMS compiled for TARGET_CONFIG's GPU (run
    inside the plugin's venv)."""
    import jax
    import jax.numpy as jnp
    import jax_models
    from jax.experimental import topologies

    topo = topologies.get_topology_desc(platform="cuda", topology_name="a100", target_config=TARGET_CONFIG,
                                        topology="1x1x1")
    sharding = jax.sharding.SingleDeviceSharding(topo.devices[0])
    return {name: jax.jit(getattr(jax_models, name)).lower(
        jax.ShapeDtypeStruct(shape, jnp.float32, sharding=sharding)).compile().as_text()
        for name, shape in PROGRAMS}


def _computations(hlo: str) -> dict[str, list[str]]:
    """{computation name: its instruction lines} of an HLO module's text (ENTRY under 'ENTRY')."""
    out = {}
    for m in re.finditer(r"^(ENTRY )?%(\S+) \([^\n]*\{\n(.*?)^\}", hlo, re.S | re.M):
        out["ENTRY" if m.group(1) else m.group(2)] = m.group(3).splitlines()
    return out


def _op_names(lines: list[str], comps: dict[str, list[str]]) -> list[str]:
    """The JAX op names (``op_name`` metadata less its ``jit(program)/`` prefix) of the launching
    instructions of ``lines`` and of the fused computations they call (``calls=``; a reduction's
    ``to_apply`` combiner is shared between reductions and carries another op's name), in order,
    once each."""
    names: list[str] = []
    for line in lines:
        m = re.match(r"\s*(?:ROOT )?%\S+ = .*?\s([a-z][\w-]*)\(", line)
        if not m or m.group(1) in FREE:
            continue
        op = re.search(r'op_name="jit\([^)]*\)/([^"]+)"', line)
        if op and m.group(1) != "fusion" and op.group(1) not in names:
            names.append(op.group(1))
        for callee in re.findall(r"calls=%([\w.\-]+)", line):
            names += [n for n in _op_names(comps.get(callee, []), comps) if n not in names]
    return names


def kernels(hlo: str) -> list[tuple[str, str, list[str]]]:
    """[(instruction, kind, JAX op names inside)] per launching instruction of the entry
    computation.  kind: a fusion's ``kLoop``/``kInput``/``kCustom`` with its backend kind (e.g.
    ``__triton_nested_gemm_fusion``), output tile and warps; a custom call's target."""
    comps = _computations(hlo)
    out = []
    for line in comps["ENTRY"]:
        m = re.match(r"\s*(?:ROOT )?%(\S+) = .*?\s([a-z][\w-]*)\(", line)
        if not m or m.group(2) in FREE:
            continue
        kind = m.group(2)
        if kind == "fusion":
            kind = re.search(r"kind=(\w+)", line).group(1)
            backend = re.search(r'"fusion_backend_config":\{"kind":"([^"]+)"', line)
            tile = re.search(r'"num_warps":"(\d+)","output_tiles":\[\{"sizes":\[([^\]]*)\]', line)
            kind += f" {backend.group(1)}" if backend else ""
            kind += f" tile [{tile.group(2).replace(chr(34), '')}] warps {tile.group(1)}" if tile else ""
        elif kind == "custom-call":
            kind += " " + re.search(r'custom_call_target="([^"]+)"', line).group(1)
        out.append((m.group(1), kind, _op_names([line], comps)))
    return out


def _base(name: str) -> str:
    """A plan node's name less its repeat suffix (``ln1/div#2`` -> ``ln1/div``): the ``op_name``
    XLA keeps."""
    return re.sub(r"#\d+$", "", name)


def program_lines(name: str, shape: tuple, hlo: str, hw: str) -> list[str]:
    """Markdown of one program: XLA's kernels (with the plan kernels holding their ops), then the
    plan's kernels."""
    import xla_gpu_plan
    from analyzer.render.safe import md_code
    xk = kernels(hlo)
    total, rows, _ = xla_gpu_plan.plan(name, shape, hw)
    plan_of = {_base(m): k for k, members, *_ in rows for m in members}
    lines = [f"## {name} {list(shape)}: XLA {len(xk)} kernels, the `xla` plan {len(rows)} kernels", "",
             "| XLA kernel | kind | JAX ops inside | plan kernels holding them |", "|---|---|---|---|"]
    for inst, kind, ops in xk:
        held = dict.fromkeys(plan_of[o] for o in ops if o in plan_of)
        lines.append(f"| {md_code(inst, table=True)} | {kind} | {', '.join(md_code(o, table=True) for o in ops)} | "
                     f"{', '.join(md_code(k, table=True) for k in held) or '-'} |")
    lines += ["", f"The `xla` plan ({total:.1f} us predicted): " + "; ".join(
        f"{md_code(k)} ({c}: {', '.join(md_code(m) for m in members)})" for k, members, c, *_ in rows), ""]
    return lines


def _compile_in_plugin(python: str) -> dict[str, str]:
    env = dict(os.environ, JAX_PLATFORMS="cpu", JAX_SKIP_CUDA_CONSTRAINTS_CHECK="1", PYTHONPATH="")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "hlo.json")
        subprocess.run([python, os.path.abspath(__file__), "--compile", path], env=env, check=True)
        with open(path) as f:
            return json.load(f)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plugin-python", default=PLUGIN_PYTHON)
    ap.add_argument("--hw", default="a100-80gb-sxm")
    ap.add_argument("--compile", metavar="JSON", help="(inside the plugin venv) write the HLO texts")
    ap.add_argument("--out", default=RESULT)
    a = ap.parse_args(argv)
    if a.compile:
        with open(a.compile, "w") as f:
            json.dump(compile_programs(), f)
        return 0
    from report_lines import emit
    hlo = _compile_in_plugin(a.plugin_python)
    lines = [f"# XLA GPU's kernels (deviceless compile, A100-SXM4-80GB) beside the `xla` plan on `{a.hw}`", "",
             f"`{COMMAND}` (install: the script's docstring). Kernels only, nothing timed; no autotuning "
             "without a device, so GEMM tiles are the compiler's deviceless defaults.", ""]
    for name, shape in PROGRAMS:
        lines += program_lines(name, shape, hlo[name], a.hw)
    emit(a.out, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
