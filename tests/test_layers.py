"""The import graph keeps the stages one way (ARCHITECTURE.md): a module imports only modules of
its own stage or an earlier one, lazy imports inside functions included; no module-level cycle;
``analyzer/prediction/`` holds only what a prediction reaches. Read from the source with ``ast``:
nothing is imported."""

from __future__ import annotations

import ast
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# analyzer's stages, earliest first; a stage may import the stages before it
STAGES = ("errors", "version", "userfiles", "ir", "frontends", "counting", "options", "report",
          "prediction", "training", "api", "sweep", "scaling", "search", "measure", "render")
# the entry points of a prediction: ``predict`` and the onnxruntime record the API hands it
PREDICTION_ENTRIES = ("analyzer.prediction.predict", "analyzer.prediction.onnxruntime.record",
                      "analyzer.prediction.runtimes")


def _modules() -> dict[str, str]:
    out = {}
    for dp, _dirs, files in os.walk(os.path.join(ROOT, "analyzer")):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(dp, f)
                mod = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
                out[mod.removesuffix(".__init__")] = path
    return out


def _imports(path: str, mods: dict[str, str]) -> set[str]:
    """The analyzer modules ``path`` imports (``from pkg import mod`` counts as ``pkg.mod``)."""
    out = set()
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                full = f"{node.module}.{a.name}"
                out.add(full if full in mods else node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return {m for m in out if m == "analyzer" or m.startswith("analyzer.")}


def _stage(mod: str) -> str | None:
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 else None


def test_no_stage_imports_a_later_stage():
    mods = _modules()
    wrong = []
    for mod, path in mods.items():
        src = _stage(mod)
        if src is None:      # the package root re-exports the entry points
            continue
        assert src in STAGES, f"{mod}: stage {src!r} is not in STAGES (add it in data-flow order)"
        for dep in _imports(path, mods):
            dst = _stage(dep)
            if dst is None:
                wrong.append(f"{mod} imports the package root (import the stage's module instead)")
            elif STAGES.index(dst) > STAGES.index(src):
                wrong.append(f"{mod} ({src}) imports {dep} ({dst}), a later stage")
    assert not wrong, "\n".join(wrong)


def test_no_import_cycle():
    mods = _modules()
    graph = {m: {d for d in _imports(p, mods) if d in mods} for m, p in mods.items()}
    state: dict[str, int] = {}       # 1 on the path, 2 done

    def visit(m: str, path: list[str]) -> list[str] | None:
        state[m] = 1
        for d in sorted(graph[m]):
            if state.get(d) == 1:
                return path + [m, d]
            if d not in state:
                found = visit(d, path + [m])
                if found:
                    return found
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state:
            cycle = visit(m, [])
            assert cycle is None, " -> ".join(cycle)


def test_prediction_holds_only_what_a_prediction_reaches():
    mods = _modules()
    graph = {m: {d for d in _imports(p, mods) if d in mods} for m, p in mods.items()}
    seen, stack = set(), list(PREDICTION_ENTRIES)
    while stack:
        m = stack.pop()
        if m not in seen:
            seen.add(m)
            stack.extend(graph[m])
    unused = [m for m in mods if m.startswith("analyzer.prediction.") and m not in seen
              and os.path.basename(mods[m]) != "__init__.py"]
    assert not unused, f"not reached from {PREDICTION_ENTRIES}: {unused} (measurement belongs in analyzer.measure)"


def test_the_check_sees_a_backward_import(tmp_path):
    # the checker itself: a prediction module importing the API is reported
    path = tmp_path / "m.py"
    path.write_text("def f():\n    from analyzer.api import analyze\n")
    assert _imports(str(path), {"analyzer.api": ""}) == {"analyzer.api"}
    assert STAGES.index(_stage("analyzer.api")) > STAGES.index(_stage("analyzer.prediction.x"))
