"""The ``xla`` runtime's kernel plan of small JAX programs on a GPU profile: kernels, members,
floors.  Prediction only, no measurement (nothing here is compared with or chosen on any timing).

For each program of ``samples/jax_models.py`` at a small shape: every planned kernel with its
members (the fused nodes), op class, time and per-launch fixed cost (the class floor), the sum of
the floors against the total, the kernels that lie on a cycle of the kernel graph
(``cyclic_kernels``: none in a runnable plan), and, for comparison (not shipped), the plan of
the union the ``xla`` policy made before it refused cyclic joins (dots merged as shipped) and looked through views
(connected components over direct edges between fusible nodes: ``_components_rule``, patched
into ``fusion_xla.joins`` inside this process only).

Usage: ``PYTHONPATH=$PWD python bench/xla_gpu_plan.py [--hw a100-80gb-sxm]
[--out bench/results/xla_gpu_plan.md]`` (about 10 s).
"""

from __future__ import annotations

import argparse
import os
import sys
from report_lines import emit

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "samples"))

PROGRAMS = (("mlp_infer", (1, 784)), ("transformer_infer", (1, 16, 64)))


def cyclic_kernels(names, kernel_of, edges) -> list[str]:
    """The kernels that lie on a cycle of the kernel graph: nodes ``names`` (node i runs in kernel
    ``kernel_of[i]``, None for a node that launches nothing: a vertex of its own), data edges
    ``edges`` (producer index, consumer index).  A kernel on a cycle both feeds and reads another
    kernel's result, which no executor can run (a plan error)."""
    vertex = [k if k is not None else f"node:{n}" for n, k in zip(names, kernel_of)]
    succ: dict[str, set[str]] = {}
    for i, j in edges:
        if vertex[i] != vertex[j]:
            succ.setdefault(vertex[i], set()).add(vertex[j])

    def back_through_another_kernel(a: str) -> bool:
        # paths from a back to a that pass another kernel (a node that launches nothing, e.g. a
        # view or stop_gradient, is free and does not split a fused kernel)
        seen, stack = {(a, False)}, [(a, False)]
        while stack:
            v, other = stack.pop()
            for nxt in succ.get(v, ()):
                if nxt == a:
                    if other:
                        return True
                    continue
                state = (nxt, other or not nxt.startswith("node:"))
                if state not in seen:
                    seen.add(state)
                    stack.append(state)
        return False
    return sorted(v for v in set(vertex) if not v.startswith("node:") and back_through_another_kernel(v))


def _edges(nodes) -> list[tuple[int, int]]:
    producer = {(nd.level, t): i for i, nd in enumerate(nodes) for t in nd.out_names if t}
    return [(producer[(nd.level, t)], j) for j, nd in enumerate(nodes) for t in nd.in_names
            if t and (nd.level, t) in producer and producer[(nd.level, t)] != j]


def plan(name: str, shape: tuple, hw: str) -> tuple[float, list[tuple], list[str]]:
    """(latency us, [(kernel, members, op class, time us, fixed us)], kernels on a cycle) of one
    program of one input of ``shape``."""
    import jax
    import jax.numpy as jnp
    import jax_models
    return program_plan(getattr(jax_models, name), (jax.ShapeDtypeStruct(shape, jnp.float32),), hw)


def program_plan(fn, args: tuple, hw: str, params_argnums=()) -> tuple[float, list[tuple], list[str]]:
    """``plan`` of JAX function ``fn`` traced at ``args`` under the ``xla`` runtime on ``hw``
    (the arguments at ``params_argnums`` are weights): (latency in us, [(kernel, members, op
    class, time us, fixed us, the launches the plan inserted on it)], cyclic kernels)."""
    from analyzer.api import analyze_jax
    r = analyze_jax(fn, *args, hw=hw, runtime="xla", params_argnums=params_argnums or None)
    p = r.predictions[0]
    kernels: dict[str, list] = {}
    for i, nd in enumerate(r.nodes):
        t = p.explain(i)
        if t is not None:
            kernels.setdefault(t.kernel, [t, []])[1].append(nd.name)
    rows = [(k, m, t.op_class, t.time_s * 1e6, t.fixed_s * t.runs * 1e6, tuple(x[0] for x in t.inserted))
            for k, (t, m) in kernels.items()]
    kernel_of = [p.explain(i).kernel if p.explain(i) is not None else None for i in range(len(r.nodes))]
    return p.latency_s * 1e6, rows, cyclic_kernels([nd.name for nd in r.nodes], kernel_of, _edges(r.nodes))


def folded_transposes(name: str, shape: tuple, hw: str) -> tuple[list[str], list[str]]:
    """('transpose -> product' per transpose the plan of ``plan(name, shape, hw)`` folds,
    'dot + dot + ...' per group of dots it merges into one)."""
    import jax
    import jax.numpy as jnp
    import jax_models
    from analyzer.api import analyze_jax
    from analyzer.render.safe import md_code
    r = analyze_jax(getattr(jax_models, name), jax.ShapeDtypeStruct(shape, jnp.float32), hw=hw, runtime="xla")
    p = r.predictions[0]
    folded = [f"{md_code(r.nodes[i].name)} -> {md_code(r.nodes[j].name)}"
              for i in range(len(r.nodes)) if (j := p.folded_into(i)) is not None]
    groups = {g for i in range(len(r.nodes)) if (g := p.merged_with(i)) is not None}
    return folded, [" + ".join(md_code(r.nodes[i].name) for i in g) for g in sorted(groups)]


def _components_rule(nodes, sets, producer, folded=(), refuses=None) -> None:
    """The union the ``xla`` policy made before it refused cyclic joins (for comparison): every
    direct edge between two fusible nodes, no view looked through, no join refused (a
    ``folded`` transpose joins nothing, as in the shipped plan; ``refuses``, the shipped plan's
    reduction rules, unused)."""
    from analyzer.prediction import fusion_legality, fusion_xla
    ok = [fusion_xla.fusible(nd) and i not in folded for i, nd in enumerate(nodes)]
    for j, nd in enumerate(nodes):
        if ok[j]:
            for t in nd.inputs:
                i = producer.get((nd.level, t)) if t else None
                if i is not None and i != j and ok[i]:
                    fusion_legality.Sets.union(sets, i, j)


def report(hw: str) -> list[str]:
    from analyzer.prediction import fusion_xla
    from analyzer.render.safe import md_code
    lines = [f"# The `xla` runtime's kernel plan of small JAX programs on `{hw}` (prediction only)", "",
             f"`PYTHONPATH=$PWD python bench/xla_gpu_plan.py --hw {hw}`", ""]
    for name, shape in PROGRAMS:
        total, rows, cyc = plan(name, shape, hw)
        floors = sum(r[4] for r in rows)
        lines += [f"## {name} {list(shape)}: {len(rows)} kernels, {total:.1f} us, floors {floors:.1f} us", "",
                  "| kernel | members | class | time us | fixed us |", "|---|---|---|---:|---:|"]
        lines += [f"| {md_code(k, table=True)} | {', '.join(md_code(x, table=True) for x in m)} | {c} | {t:.2f} | {f:.2f} |"
                  for k, m, c, t, f, _ in rows]
        folded, merged = folded_transposes(name, shape, hw)
        lines += ["", "Transposes folded into a matrix product's operand layout, no kernel (XLA's GPU "
                  f"TransposeFolding, `transpose_fold.xla_folded`): {', '.join(folded) or 'none'}.", "",
                  "Dots that share an operand, run as one GEMM of the merged shape (XLA's GPU DotMerger, "
                  f"`dot_merge`): {'; '.join(merged) or 'none'}."]
        original = fusion_xla.joins
        fusion_xla.joins = _components_rule
        try:
            v_total, v_rows, v_cyc = plan(name, shape, hw)
        finally:
            fusion_xla.joins = original
        lines += ["", f"Kernels on a cycle of the kernel graph (a plan no executor can run): "
                  f"{', '.join(md_code(k) for k in cyc) or 'none'}.", "",
                  f"The previous union (connected components over direct edges; for comparison, not shipped): "
                  f"{len(v_rows)} kernels, {v_total:.1f} us; "
                  f"on a cycle: {', '.join(md_code(k) for k in v_cyc) or 'none'}.", ""]
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hw", default="a100-80gb-sxm")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "xla_gpu_plan.md"))
    a = ap.parse_args(argv)
    lines = report(a.hw)
    emit(a.out, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
