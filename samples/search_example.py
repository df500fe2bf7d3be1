"""Evolutionary model search under a latency budget on two profiles, scored through a table.

    python samples/search_example.py [--generations 30] [--population 256] [--budget-us 60]

The space: a 5-stage CNN (``search_space.CNN_SPACE``: widths, kernel sizes, strides per stage).
``CostModel.table`` costs every block in every context it can meet once; the search then
scores each generation with ``table.score`` (a numpy gather + sum).  Accuracy proxy: exact
FLOPs (more is better, within the budget).  Prints the Pareto front (FLOPs vs the slower
profile's latency) and candidates scored per second.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)


def pareto(lat: np.ndarray, acc: np.ndarray) -> np.ndarray:
    """Indices of the non-dominated points (lower latency, higher accuracy), by latency."""
    order = np.lexsort((-acc, lat))
    front, best = [], -np.inf
    for i in order:
        if acc[i] > best:
            front.append(i)
            best = acc[i]
    return np.asarray(front, np.int64)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--generations", type=int, default=30)
    ap.add_argument("--population", type=int, default=256)
    ap.add_argument("--budget-us", type=float, default=60.0)
    ap.add_argument("--hw", default="a100,tpu-v5e")
    args = ap.parse_args(argv)

    import analyzer
    import search_space as ss

    hw = args.hw.split(",")
    cm = analyzer.CostModel(hw, runtime="kernel")
    t0 = time.perf_counter()
    table = cm.table(ss.CNN_SPACE, ss.CNN_INPUT)
    print(f"table: {table.stages} stages, built in {time.perf_counter() - t0:.2f} s on {', '.join(hw)}")
    sizes = np.array([len(s) for s in ss.CNN_SPACE])
    rng = np.random.default_rng(0)
    budget = args.budget_us * 1e-6

    def fitness(pop):
        lat = table.score(pop).max(axis=1)          # the slower of the two profiles
        acc = np.log(table.count(pop, "flops"))
        return lat, acc, np.where(lat <= budget, acc, -np.inf)

    pop = rng.integers(0, sizes, size=(args.population, len(sizes)))
    scored, t_score = 0, 0.0
    seen_lat, seen_acc, seen = [], [], []
    for _ in range(args.generations):
        t = time.perf_counter()
        lat, acc, fit = fitness(pop)
        t_score += time.perf_counter() - t
        scored += len(pop)
        seen.append(pop.copy())
        seen_lat.append(lat)
        seen_acc.append(acc)
        parents = pop[np.argsort(-fit)[: len(pop) // 4]]
        kids = parents[rng.integers(len(parents), size=len(pop))]
        mutate = rng.random(kids.shape) < 0.2
        kids[mutate] = rng.integers(0, np.broadcast_to(sizes, kids.shape)[mutate])
        pop = kids
    allp = np.concatenate(seen)
    lat, acc = np.concatenate(seen_lat), np.concatenate(seen_acc)
    allp, idx = np.unique(allp, axis=0, return_index=True)
    lat, acc = lat[idx], acc[idx]
    ok = lat <= budget
    front = pareto(lat[ok], acc[ok])
    print(f"{scored} candidates scored in {t_score * 1e3:.1f} ms: "
          f"{scored / max(t_score, 1e-9):,.0f} candidates/s (table.score)")
    print(f"{len(allp)} distinct candidates, {int(ok.sum())} within {args.budget_us:g} us; "
          f"Pareto front (FLOPs vs latency on the slower profile):")
    both = table.score(allp[ok][front])
    for j, i in enumerate(front):
        c = allp[ok][i]
        print(f"  {'-'.join(map(str, c))}  GFLOPs {np.exp(acc[ok][i]) / 1e9:7.3f}  "
              + "  ".join(f"{h} {both[j, p] * 1e6:7.2f} us" for p, h in enumerate(hw)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
