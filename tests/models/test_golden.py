"""The analysis of each sample against its checked-in golden report (tests/golden/*.json).

Goldens are regenerated with ``python tests/update_goldens.py`` when a change is intended.
"""

from __future__ import annotations

import json

import pytest

from update_goldens import GOLDEN_SAMPLES, closed_form, current, golden_path

HINT = "if this change is intended, run `python tests/update_goldens.py` and review the diff"


def first_difference(golden: dict, now: dict) -> str | None:
    """A sentence naming the first differing node and field (or section), or None if equal."""
    for key in dict.fromkeys([*golden, *now]):
        if key == "nodes":
            continue
        if golden.get(key) != now.get(key):
            g, n = golden.get(key), now.get(key)
            if isinstance(g, dict) and isinstance(n, dict):
                for k in dict.fromkeys([*g, *n]):
                    if g.get(k, "<absent>") != n.get(k, "<absent>"):
                        return f"{key}.{k}: golden {g.get(k, '<absent>')!r}, now {n.get(k, '<absent>')!r}"
            return f"{key}: golden {g!r}, now {n!r}"
    gn, nn = golden.get("nodes", []), now.get("nodes", [])
    for i, (g, n) in enumerate(zip(gn, nn)):
        if g.get("name") != n.get("name"):
            return f"node #{i}: golden is '{g.get('name')}', now '{n.get('name')}'"
        for k in dict.fromkeys([*g, *n]):
            if g.get(k, "<absent>") != n.get(k, "<absent>"):
                return (f"node '{g['name']}' ({g.get('op')}) field '{k}': "
                        f"golden {g.get(k, '<absent>')!r}, now {n.get(k, '<absent>')!r}")
    if len(gn) != len(nn):
        return f"node count: golden {len(gn)}, now {len(nn)}"
    return None


@pytest.mark.parametrize("name", sorted(GOLDEN_SAMPLES))
def test_matches_golden(name):
    path = golden_path(name)
    assert path.exists(), f"{path} is missing; {HINT}"
    golden = json.loads(path.read_text(encoding="utf-8"))
    now = current(name)
    diff = first_difference(golden, now)
    assert diff is None, f"{name}: {diff}; {HINT}"
    assert golden == now  # belt and braces: exact equality of the whole report


@pytest.mark.parametrize("name", sorted(GOLDEN_SAMPLES))
def test_golden_agrees_with_closed_form(name):
    # a golden can only have been blessed if it matched samples/make_samples.py EXPECTED
    golden = json.loads(golden_path(name).read_text(encoding="utf-8"))
    params, mac = closed_form(name)
    assert (golden["totals"]["params"], golden["totals"]["mac_flops"]) == (params, mac)
    assert "path" not in golden["model"]


def test_dynamic_batch_golden_is_at_batch_2():
    golden = json.loads(golden_path("dynamic_batch").read_text(encoding="utf-8"))
    assert golden["model"]["dims"] == {"batch": 2}
    assert golden["totals"]["mac_flops"] == 2 * 469504  # 2 * EXPECTED per-element = 939008


def test_first_difference_names_node_and_field():
    g = {"schema_version": 1, "totals": {"mac_flops": 1},
         "nodes": [{"name": "a", "op": "Relu", "vector_flops": 4}, {"name": "b", "op": "Add", "vector_flops": 2}]}
    n = json.loads(json.dumps(g))
    assert first_difference(g, n) is None
    n["nodes"][1]["vector_flops"] = 3
    assert first_difference(g, n) == "node 'b' (Add) field 'vector_flops': golden 2, now 3"
    n["totals"]["mac_flops"] = 5
    assert first_difference(g, n) == "totals.mac_flops: golden 1, now 5"
