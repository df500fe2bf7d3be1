"""XLA's TPU fusions of the public rows' programs, read from a deviceless TPU compile (no TPU needed).

    pip install libtpu==0.0.42.1      # the TPU compiler, a PyPI package (about 680 MB; jax 0.10.2's)
    PYTHONPATH=$PWD python bench/tpu_fusion_hlo.py [--topologies v5e:2x2,v6e:2x2,tpu7x:2x2x1]

For each TPU topology (``jax.experimental.topologies.get_topology_desc``: an abstract slice, no
device attached) and each program, ``jax.jit(f).lower(args).compile()`` runs XLA's TPU compiler
and the after-optimizations HLO's entry computation is listed: one line per instruction (its name,
opcode and, for a fusion, its kind), and the instructions inside each fusion.  The programs are the
ones bench/tpu_public.py rebuilds for its rows (the f32-accumulated einsum with a bf16 result; the
``dot_general`` of bf16, f32 and int8 operands) and two more a TPU plan meets: a product with a bias
and a ReLU, a product of a transposed operand.  What the kernels are is the compiler's; what they
cost is not measured here.  Writes bench/results/tpu_fusion_hlo.md.
"""

from __future__ import annotations

import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULT = os.path.join(ROOT, "bench", "results", "tpu_fusion_hlo.md")
COMMAND = "PYTHONPATH=$PWD python bench/tpu_fusion_hlo.py"


def programs():
    """[(name, function, operand dtype, vector operand?)] of the programs compiled."""
    import jax
    import jax.numpy as jnp

    def dot(acc):
        return lambda a, b: jax.lax.dot_general(a, b, (((1,), (0,)), ((), ())), preferred_element_type=acc)

    return [("einsum f32 acc, astype bf16 (aih-gemm)",
             lambda a, b: jnp.einsum("ij,jk->ik", a, b, preferred_element_type=jnp.float32).astype(jnp.bfloat16),
             jnp.bfloat16, False),
            ("dot_general bf16 (yw)", dot(jnp.bfloat16), jnp.bfloat16, False),
            ("dot_general f32 (yw)", dot(jnp.float32), jnp.float32, False),
            ("dot_general int8 -> int32 (yw)", dot(jnp.int32), jnp.int8, False),
            ("relu(a @ b + bias)", lambda a, b, c: jax.nn.relu(a @ b + c), jnp.bfloat16, True),
            ("a.T @ b", lambda a, b: a.T @ b, jnp.bfloat16, False)]


def entry_lines(hlo: str) -> list[str]:
    """The entry computation's instructions as 'name = opcode [kind]', then each fusion's body
    as '  inside: opcode, opcode, ...' (bitcasts and parameters left out)."""
    bodies = {}
    for m in re.finditer(r"^%(\S+) \([^\n]*\{\n(.*?)^\}", hlo, re.S | re.M):
        bodies[m.group(1)] = [op for op in re.findall(r"= \S+ (\S+?)\(", m.group(2)) if op not in ("parameter", "bitcast")]
    entry = hlo[hlo.index("\nENTRY"):].splitlines()[1:]
    out = []
    for line in entry:
        m = re.match(r"\s*(?:ROOT )?%(\S+) = .*?\s([a-z][\w-]*)\(", line)
        if not m or m.group(2) == "parameter":
            continue
        kind = re.search(r"kind=(\w+), calls=%(\S+?),", line)
        out.append(f"{m.group(1)} = {m.group(2)}" + (f" {kind.group(1)}" if kind else ""))
        if kind:
            out.append("  inside: " + ", ".join(bodies.get(kind.group(2), [])))
    return out


def compile_lines(topology: str, n: int) -> list[str]:
    """Markdown lines of every program at ``n`` x ``n`` operands on one device of ``topology``."""
    import jax
    from jax.experimental import topologies

    dev = topologies.get_topology_desc(topology_name=topology, platform="tpu").devices[0]
    sharding = jax.sharding.SingleDeviceSharding(dev)
    out = [f"## {topology} ({dev.device_kind}), n = {n}", ""]
    for name, f, dt, vec in programs():
        args = [jax.ShapeDtypeStruct((n, n), dt, sharding=sharding)] * 2
        if vec:
            args.append(jax.ShapeDtypeStruct((n,), dt, sharding=sharding))
        hlo = jax.jit(f).lower(*args).compile().as_text()
        out += [f"- {name}:", "", "```", *entry_lines(hlo), "```", ""]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--topologies", default="v5e:2x2,v6e:2x2,tpu7x:2x2x1")
    ap.add_argument("--sizes", default="128,4096")
    ap.add_argument("--out", default=RESULT)
    a = ap.parse_args()
    os.environ.setdefault("TPU_SKIP_MDS_QUERY", "1")   # (no cloud metadata server to ask)
    import jax

    lines = ["# XLA's TPU fusions of the public rows' programs (deviceless compile)", "", f"Command: `{COMMAND}`", "",
             f"jax {jax.__version__}, libtpu {_libtpu_version()}; one device of each topology.", ""]
    for topo in a.topologies.split(","):
        for n in map(int, a.sizes.split(",")):
            lines += compile_lines(topo, n)
    with open(a.out, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def _libtpu_version() -> str:
    from importlib.metadata import version

    return version("libtpu")


if __name__ == "__main__":
    sys.exit(main())
