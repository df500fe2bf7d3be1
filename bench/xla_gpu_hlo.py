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
in text form (``TARGET_CONFIG``: an A100-SXM4-80GB), and ``jax.jit(f).lower(*args).compile()``
runs XLA's GPU compiler for it; the after-optimizations HLO gives the kernels: every fusion (its
kind, its Triton backend kind and tiling, the JAX ops inside, by ``op_name`` metadata), every
custom call (cuBLAS, cuDNN, with a convolution's layouts) and every other instruction that
launches, in the entry computation and, descending into control flow, in a while loop's condition
and body (kernels per trip, ``known_trip_count`` trips), a conditional's branches (one runs) and
a called computation.  Programs (``PROGRAMS``): samples/jax_models.py's MLP, CNN, transformer
block and scan RNN, inference at batch 1, 8 and 32 and train steps at batch 8 (the 16 programs
bench/accuracy_xla_cpu.py runs); the inference programs close over their weights (compile-time
constants: XLA folds an inference batch norm into the filter), or with ``--params-arg`` take them
as jit arguments (``net(params, x)``, the plan's ``params_argnums=0``: runtime inputs, as a user's
program passes them; written to bench/results/xla_gpu_hlo_params_arg.md).  Per program: XLA's kernel count beside the
plan's, and the differences classified (``differences``): the ops XLA fuses into a GEMM kernel as
an operand prologue or an epilogue (by operand edges from the product, ``gemm_roles``), split-K
reductions, Triton softmax / layer-norm fusions, cuDNN convolution calls and their layouts, the
slices, copies, pads and transposes XLA adds, and a loop's control kernels.

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
The cuDNN version (9.8) is an assumption; it matters to cuDNN fusions (none here) and may
matter to which fused convolution calls the compiler emits (the CNN's are
``__cudnn$convBiasActivationForward``).
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
RESULT_PARAMS_ARG = os.path.join(ROOT, "bench", "results", "xla_gpu_hlo_params_arg.md")
COMMAND = "PYTHONPATH=$PWD python bench/xla_gpu_hlo.py"
PLUGIN_PYTHON = "/tmp/xlagpu-venv/bin/python"
# (label, samples/jax_models.py function, network of ``example_inputs``, batch): every network's
# inference and train step at the batches bench/accuracy_xla_cpu.py runs
PROGRAMS = tuple((f"{net}_infer b{b}", f"{net}_infer", net, b) for net in ("mlp", "cnn", "transformer", "rnn")
                 for b in (1, 8, 32)) + tuple((f"{net}_train_step b8", f"{net}_train_step", net, 8)
                                              for net in ("mlp", "cnn", "transformer", "rnn"))

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


def program(fn: str, net: str, params_arg: bool) -> tuple[str, tuple]:
    """(samples/jax_models.py function, argument positions that are weights) that program
    ``fn`` compiles: with ``params_arg`` an ``*_infer`` program is its network's function
    ``net(params, x)`` with the weights as jit arguments (position 0), else ``fn`` itself."""
    return (net, (0,)) if params_arg and fn.endswith("_infer") else (fn, ())


def program_args(fn: str, net: str, batch: int, params_arg: bool = False) -> tuple:
    """The ShapeDtypeStruct arguments of program ``fn``: x for ``*_infer`` (weights closed over:
    compile-time constants), (params, x) for it with ``params_arg`` (weights as arguments:
    runtime inputs), (params, x, labels) for a train step."""
    import jax_models
    params, x, labels = jax_models.example_inputs(net, batch)
    if fn.endswith("_infer"):
        return (params, x) if params_arg else (x,)
    return params, x, labels


def compile_programs(params_arg: bool = False) -> dict[str, str]:
    """{label: after-optimizations HLO text} of PROGRAMS (``program``) compiled for
    TARGET_CONFIG's GPU (run inside the plugin's venv)."""
    import jax
    import jax_models
    from jax.experimental import topologies

    topo = topologies.get_topology_desc(platform="cuda", topology_name="a100", target_config=TARGET_CONFIG,
                                        topology="1x1x1")
    sharding = jax.sharding.SingleDeviceSharding(topo.devices[0])
    out = {}
    for label, fn, net, batch in PROGRAMS:
        args = jax.tree_util.tree_map(lambda t: jax.ShapeDtypeStruct(t.shape, t.dtype, sharding=sharding),
                                      program_args(fn, net, batch, params_arg))
        out[label] = jax.jit(getattr(jax_models, program(fn, net, params_arg)[0])).lower(*args).compile().as_text()
    return out


def _computations(hlo: str) -> dict[str, list[str]]:
    """{computation name: its instruction lines} of an HLO module's text (ENTRY under 'ENTRY')."""
    out = {}
    for m in re.finditer(r"^(ENTRY )?%(\S+) \([^\n]*\{\n(.*?)^\}", hlo, re.S | re.M):
        out["ENTRY" if m.group(1) else m.group(2)] = m.group(3).splitlines()
    return out


INST = re.compile(r"\s*(?:ROOT )?%(\S+) = .*?\s([a-z][\w-]*)\(")
# an op name of a matrix product: a dot's, and that of the multiply-reduce XLA rewrites an M = 1
# dot into; a slice of a merged dot's result and the reduction of a split-K GEMM's partial sums
# carry it too, so a product is a ``dot`` instruction or a ``reduce`` of this name of a
# multiply of this name
DOT = re.compile(r"(^|/)dot_general$")


def _own_ops(line: str) -> list[str]:
    """The JAX op names of one instruction's ``op_name`` metadata (``;``-joined names split),
    less their ``jit(program)/`` prefix, with a scan body's ``while/body/closed_call/`` read as
    the ``scan/`` the plan names it."""
    op = re.search(r'op_name="([^"]+)"', line)
    names = [n for n in op.group(1).split(";") if n.startswith("jit(")] if op else []
    return [re.sub(r"/while/body/closed_call/", "/scan/", re.sub(r"^jit\([^)]*\)/", "", n)) for n in names]


def _op_names(lines: list[str], comps: dict[str, list[str]]) -> list[str]:
    """The JAX op names of the launching instructions of ``lines`` and of the fused computations
    they call (``calls=``; a reduction's ``to_apply`` combiner is shared between reductions and
    carries another op's name), in order, once each."""
    names: list[str] = []
    for line in lines:
        m = INST.match(line)
        if not m or m.group(2) in FREE:
            continue
        own = _own_ops(line) if m.group(2) != "fusion" else []
        for callee in re.findall(r"calls=%([\w.\-]+)", line):
            own += _op_names(comps.get(callee, []), comps)
        names += [n for n in own if n not in names]
    return names


def gemm_roles(lines: list[str], comps: dict[str, list[str]]) -> tuple[bool, dict[str, str], bool]:
    """(whether ``lines`` hold a matrix product (``DOT``), {op name: "prologue" | "epilogue"} of
    the other ops, whether they reduce a split-K GEMM's partial sums: a ``reduce`` of a ``DOT``
    name that is no product): an op downstream of a product (by operand edges, through nested
    fusions) is its epilogue, any other its prologue (an operand's producer fused into the GEMM)."""
    down: set[str] = set()
    dot_named: set[str] = set()
    roles: dict[str, str] = {}
    has_dot = split = False
    for line in lines:
        m = INST.match(line)
        if not m or m.group(2) in FREE - {"bitcast", "get-tuple-element", "tuple"}:
            continue
        operands = re.findall(r"%([\w.\-]+)", line[m.end():line.find(")", m.end())])
        after = any(o in down for o in operands)
        own = _own_ops(line) if m.group(2) not in FREE | {"fusion", "dot"} else []
        sub_dot = False
        for callee in re.findall(r"calls=%([\w.\-]+)", line):
            d, r, k = gemm_roles(comps.get(callee, []), comps)
            sub_dot, split = sub_dot or d, split or k
            own += list(r) if not d else []
            for o, role in (r.items() if d else ()):
                roles.setdefault(o, role)
        is_dot = sub_dot or m.group(2) == "dot" or (m.group(2) == "reduce" and any(DOT.search(o) for o in own)
                                                     and any(o in dot_named for o in operands))
        split = split or (m.group(2) == "reduce" and any(DOT.search(o) for o in own) and not is_dot)
        if any(DOT.search(o) for o in own) or (m.group(2) in FREE and any(o in dot_named for o in operands)):
            dot_named.add(m.group(1))
        for o in own:
            if not DOT.search(o):
                roles.setdefault(o, "epilogue" if after else "prologue")
        if is_dot or after:
            down.add(m.group(1))
        has_dot = has_dot or is_dot
    return has_dot, roles, split


def _kind(line: str, opcode: str) -> str:
    """A fusion's ``kLoop``/``kInput``/``kCustom`` with its backend kind, output tile and warps;
    a custom call's target (and a convolution's ``dim_labels``: input, kernel -> output layout);
    else the opcode."""
    if opcode == "fusion":
        kind = re.search(r"kind=(\w+)", line).group(1)
        backend = re.search(r'"fusion_backend_config":\{"kind":"([^"]+)"', line)
        tile = re.search(r'"num_warps":"(\d+)","output_tiles":\[\{"sizes":\[([^\]]*)\]', line)
        kind += f" {backend.group(1)}" if backend else ""
        return kind + (f" tile [{tile.group(2).replace(chr(34), '')}] warps {tile.group(1)}" if tile else "")
    if opcode == "custom-call":
        labels = re.search(r"dim_labels=([\w>-]+)", line)
        return (opcode + " " + re.search(r'custom_call_target="([^"]+)"', line).group(1)
                + (f" {labels.group(1)}" if labels else ""))
    return opcode


def _nested(line: str, opcode: str, inst: str, scope: str) -> list[tuple[str, str]]:
    """[(called computation, scope of its kernels)] of a control-flow instruction: a while loop's
    condition and body (kernels per trip, ``known_trip_count`` trips), a conditional's branches
    (one runs per execution), a call's computation (runs once)."""
    at = f"{scope}{inst}"
    if opcode == "while":
        trips = re.search(r'"known_trip_count":\{"n":"(\d+)"', line)
        per = f"per trip, {trips.group(1) if trips else 'unknown'} trips"
        return [(re.search(r"condition=%([\w.\-]+)", line).group(1), f"{at} condition, {per}; "),
                (re.search(r"body=%([\w.\-]+)", line).group(1), f"{at} body, {per}; ")]
    if opcode == "conditional":
        listed = re.search(r"branch_computations=\{([^}]*)\}", line)
        names = (list(enumerate(re.findall(r"%([\w.\-]+)", listed.group(1)))) if listed else
                 re.findall(r"(true|false)_computation=%([\w.\-]+)", line))
        return [(c, f"{at} branch {b} (one branch runs); ") for b, c in names]
    return [(c, scope) for c in re.findall(r"to_apply=%([\w.\-]+)", line)] if opcode == "call" else []


def _launches(lines: list[str], comps: dict[str, list[str]], scope: str) -> list[tuple]:
    """``kernels``' rows of the instructions ``lines`` of one computation that runs in ``scope``."""
    out = []
    for line in lines:
        m = INST.match(line)
        if not m or m.group(2) in FREE:
            continue
        inst, opcode = m.group(1), m.group(2)
        if opcode in ("while", "conditional", "call"):
            for comp, sub in _nested(line, opcode, inst, scope):
                out += _launches(comps.get(comp, []), comps, sub)
            continue
        out.append((inst, _kind(line, opcode), _op_names([line], comps), scope.rstrip("; ")))
    return out


def kernels(hlo: str) -> list[tuple[str, str, list[str], str]]:
    """[(instruction, kind, JAX op names inside, scope)] per launching instruction of the entry
    computation and, descending into control flow, of the computations it runs: scope is "" for
    a kernel that runs once, else where it runs (``while.5 body, per trip, 12 trips``; a
    conditional's branch).  kind: ``_kind``."""
    comps = _computations(hlo)
    return _launches(comps["ENTRY"], comps, "")


def kernel_roles(hlo: str) -> dict[str, tuple[str, dict[str, str]]]:
    """{instruction: ("gemm" | "split-k", {op: "prologue" | "epilogue"})} of every kernel
    (``kernels``) that holds a matrix product or reduces a split-K GEMM's partial sums
    (``gemm_roles`` of the instruction's line; a split-K reduction's ops all follow its GEMM, in
    another kernel, so none gets a role there)."""
    comps = _computations(hlo)
    line_of = {m.group(1): line for lines in comps.values() for line in lines if (m := INST.match(line))}
    out = {}
    for inst, *_ in kernels(hlo):
        has_dot, roles, split = gemm_roles([line_of[inst]], comps)
        if has_dot or split:
            out[inst] = ("gemm", roles) if has_dot else ("split-k", {})
    return out


def _base(name: str) -> str:
    """A plan node's name less its repeat suffix (``ln1/div#2`` -> ``ln1/div``): the ``op_name``
    XLA keeps."""
    return re.sub(r"#\d+$", "", name)


def _count(scopes: list[str]) -> str:
    """'N kernels', + 'M per trip of LOOP (T trips)' per loop, + 'M in branch B of COND' per branch,
    of the kernels' scopes (``kernels``: "" runs once; the outermost loop or conditional counts)."""
    nested: dict[str, int] = {}
    for sc in scopes:
        m = re.match(r"(\S+)(?: body| condition)?, per trip, (\S+) trips", sc)
        b = re.match(r"(\S+) branch (\S+)", sc)
        key = f"per trip of {m.group(1)} ({m.group(2)} trips)" if m else f"in branch {b.group(2)} of {b.group(1)}" if b else ""
        if key:
            nested[key] = nested.get(key, 0) + 1
    return f"{scopes.count('')} kernels" + "".join(f" + {n} {k}" for k, n in nested.items())


def inserted_scopes(rows, plan_scoped) -> list[str]:
    """The scope of each launch the plan inserted (a scan's loop control, ``xla_gpu_loops``): its
    carrier kernel's."""
    return [sc for (*_, extra), (_, sc) in zip(rows, plan_scoped) for _ in extra]


def held_by(ops: list[str], plan_of: dict[str, list[str]]) -> str:
    """Markdown of the plan kernels holding ``ops`` (``plan_of``: {op name less its repeat suffix:
    [plan kernels with such a member]}); XLA's ``op_name`` has no repeat suffix, so an op name
    that more than 3 plan kernels hold is given as its count."""
    from analyzer.render.safe import md_code
    held = dict.fromkeys(k for o in ops if len(plan_of.get(o, ())) <= 3 for k in plan_of.get(o, ()))
    many = [f"{md_code(o, table=True)} in {len(plan_of[o])}" for o in dict.fromkeys(ops) if len(plan_of.get(o, ())) > 3]
    return ", ".join([md_code(k, table=True) for k in held] + many) or "-"


def differences(xk: list[tuple], roles: dict[str, tuple], plan_of: dict[str, list[str]]) -> list[str]:
    """The classified differences of XLA's kernels ``xk`` (``kernels``) from the plan (``roles``:
    ``kernel_roles``; ``plan_of``: ``held_by``'s): ops fused into GEMM kernels as prologue or
    epilogue, split-K reductions, Triton softmax and layer-norm fusions, cuDNN convolution calls,
    the slices/copies/pads/transposes XLA adds, loop control."""
    from analyzer.render.safe import md_code

    def ops(names):
        return ", ".join(md_code(o) for o in names)
    gemm, split, norm, conv, added, loop = [], [], [], [], [], []
    for inst, kind, names, _ in xk:
        role, r = roles.get(inst, ("", {}))
        pro = [o for o, v in r.items() if v == "prologue" and "/while/" not in o]
        epi = [o for o, v in r.items() if v == "epilogue" and "/while/" not in o]
        if role == "gemm" and (pro or epi):
            gemm.append(md_code(inst) + (f" prologue {ops(pro)}" if pro else "") + (f" epilogue {ops(epi)}" if epi else ""))
        if role == "split-k":
            split.append(f"{md_code(inst)} ({ops(names)})")
        if kind.startswith("kCustom __triton ") and not role:
            norm.append(f"{md_code(inst)} ({len(names)} ops; plan kernels {held_by(names, plan_of)})")
        if "__cudnn$conv" in kind:
            conv.append(f"{md_code(inst)} {kind.split(' ', 1)[1]} (op_name {ops(names)})")
        elif role != "gemm" and (kind == "copy" or re.search(r"slice|copy|pad|transpose", inst)) and \
                not (names and all("/while/" in o for o in names)):
            added.append(f"{md_code(inst)} ({ops(names) or 'no op name'})")
        loop += [o for o in names if "/while/" in o and o not in loop]
    return [f"- {title}: {'; '.join(items) if items else 'none'}" for title, items in (
        ("ops XLA fuses into GEMM kernels as operand prologue / epilogue (the plan kernels holding them: the table's last column)", gemm),
        ("split-K reductions (a GEMM's partial sums, with the ops fused after them)", split),
        ("Triton softmax / layer-norm fusions (`kCustom __triton`)", norm),
        ("cuDNN convolution custom calls (a custom call names one op: its root's)", conv),
        ("slices, copies, pads and transposes XLA adds or keeps as kernels", added),
        ("loop control XLA adds (counter, condition, the scan's slice of xs)", [md_code(o) for o in loop]))]


def program_lines(label: str, fn: str, net: str, batch: int, hlo: str, hw: str,
                  params_arg: bool = False) -> tuple[str, list[str]]:
    """(summary table row, markdown section) of one program: kernel counts, classified differences, XLA's kernels (with the
    plan kernels holding their ops), then the plan's kernels.  A plan kernel of a scan body
    (a member under ``/scan/``; the scan named by the path before it) runs per trip, as many
    trips as the compiled module's first loop."""
    import jax_models
    import xla_gpu_plan
    from analyzer.render.safe import md_code
    xk = kernels(hlo)
    name, weights = program(fn, net, params_arg)
    total, rows, _ = xla_gpu_plan.program_plan(getattr(jax_models, name), program_args(fn, net, batch, params_arg),
                                               hw, params_argnums=weights)
    plan_of: dict[str, list[str]] = {}
    for k, members, *_ in rows:
        for m in members:
            if k not in plan_of.setdefault(_base(m), []):
                plan_of[_base(m)].append(k)
    trips = re.search(r'"known_trip_count":\{"n":"(\d+)"', hlo)
    scan = [next((m.split("/scan/")[0] + "/scan" for m in members if "/scan/" in m), "") for _, members, *_ in rows]
    plan_scoped = [(k, f"{sc}, per trip, {trips.group(1) if trips else '?'} trips" if sc else "")
                   for (k, *_), sc in zip(rows, scan)]
    counts = (_count([k[3] for k in xk]), _count([sc for _, sc in plan_scoped] + inserted_scopes(rows, plan_scoped)))
    lines = [f"## {fn}, batch {batch}: XLA {counts[0]}, the `xla` plan {counts[1]}", ""]
    lines += differences(xk, kernel_roles(hlo), plan_of)
    lines += ["", "| XLA kernel | kind | runs | JAX ops inside | plan kernels holding them |", "|---|---|---|---|---|"]
    for inst, kind, ops, scope in xk:
        lines.append(f"| {md_code(inst, table=True)} | {kind} | {scope or 'once'} | "
                     f"{', '.join(md_code(o, table=True) for o in ops)} | "
                     f"{held_by(ops, plan_of)} |")
    lines += ["", f"The `xla` plan ({total:.1f} us predicted): " + "; ".join(
        f"{md_code(k)} ({c}: {', '.join(md_code(m) for m in members)}"
        f"{'; launches it carries: ' + ', '.join(md_code(o) for o in extra) if extra else ''})"
        for k, members, c, _, _, extra in rows), ""]
    return f"| `{fn}` | {batch} | {counts[0]} | {counts[1]} |", lines


def _compile_in_plugin(python: str, params_arg: bool) -> dict[str, str]:
    env = dict(os.environ, JAX_PLATFORMS="cpu", JAX_SKIP_CUDA_CONSTRAINTS_CHECK="1", PYTHONPATH="")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "hlo.json")
        subprocess.run([python, os.path.abspath(__file__), "--compile", path] + ["--params-arg"] * params_arg,
                       env=env, check=True)
        with open(path) as f:
            return json.load(f)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plugin-python", default=PLUGIN_PYTHON)
    ap.add_argument("--hw", default="a100-80gb-sxm")
    ap.add_argument("--compile", metavar="JSON", help="(inside the plugin venv) write the HLO texts")
    ap.add_argument("--params-arg", action="store_true",
                    help="compile the inference programs with the weights as jit arguments (runtime inputs)")
    ap.add_argument("--out", help=f"default {RESULT}, or {RESULT_PARAMS_ARG} with --params-arg")
    a = ap.parse_args(argv)
    if a.compile:
        with open(a.compile, "w") as f:
            json.dump(compile_programs(a.params_arg), f)
        return 0
    from report_lines import emit
    hlo = _compile_in_plugin(a.plugin_python, a.params_arg)
    weights = ("the inference programs take their weights as jit arguments (`net(params, x)`, the plan's "
               "`params_argnums=0`): runtime inputs XLA cannot fold" if a.params_arg else
               "the inference programs close over their weights: compile-time constants XLA folds")
    lines = [f"# XLA GPU's kernels (deviceless compile, A100-SXM4-80GB) beside the `xla` plan on `{a.hw}`", "",
             f"`{COMMAND}{' --params-arg' * a.params_arg}` (install: the script's docstring); {weights}. "
             "Compiler output without autotuning (no device), "
             "so GEMM tiles are the compiler's deviceless defaults; kernels only, nothing timed. Kernels "
             "inside a loop are counted per trip.", "",
             "| program | batch | XLA kernels | `xla` plan kernels |", "|---|---:|---|---|"]
    sections = []
    for label, fn, net, batch in PROGRAMS:
        row, section = program_lines(label, fn, net, batch, hlo[label], a.hw, a.params_arg)
        lines.append(row)
        sections += section
    lines += [""] + sections
    emit(a.out or (RESULT_PARAMS_ARG if a.params_arg else RESULT), lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
