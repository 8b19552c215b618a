"""The landscape of synthetic spaces under one-knob moves: from every config that ran, steepest descent (to the
fastest one-knob neighbour that ran, while it is faster) ends in a local optimum; per space, how many local optima
there are, how many configs descend to the optimum (its basin of attraction), how many are within 5 % of it, and the
five best local optima (runtime over the optimum's, basin size). From any folder:

    python3 benchmarks/results/2026-11-28-stalled-bo/basin_sizes.py synth-basins-11k12-s32 synth-needle-14k12-s34
"""
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[3])]
from tuner_server.synthetic_spaces import spec_from_name, synthetic_table  # noqa: E402


def descent(table) -> tuple[dict[str, str], dict[str, float]]:
    """Each config that ran (by key) -> its fastest one-knob neighbour that ran when that is faster, else itself; and
    the runtimes of the configs that ran."""
    configs = {key: o.config for key, o in table.results.items()}
    runtime = {key: o.median_s for key, o in table.results.items() if o.median_s}
    knobs = list(next(iter(configs.values())))
    # configs that agree on every knob but one are one-knob neighbours: group them by the knobs they share
    groups = defaultdict(list)
    for key, config in configs.items():
        for knob in knobs:
            groups[knob, tuple(config[k] for k in knobs if k != knob)].append(key)
    step = {}
    for key in runtime:
        config = configs[key]
        near = [j for knob in knobs for j in groups[knob, tuple(config[k] for k in knobs if k != knob)]
                if j != key and j in runtime]
        best = min(near, key=runtime.get, default=key)
        step[key] = best if runtime[best] < runtime[key] else key
    return step, runtime


def bottom(step: dict[str, str], key: str) -> tuple[str, int]:
    """Where descent from `key` ends (a local optimum), and in how many steps."""
    steps = 0
    while step[key] != key:
        key, steps = step[key], steps + 1
    return key, steps


def landscape(name: str) -> dict:
    table = synthetic_table(spec_from_name(name))
    step, runtime = descent(table)
    basins = Counter(bottom(step, key)[0] for key in runtime)
    optimum = min(runtime, key=runtime.get)
    best = sorted(basins, key=runtime.get)[:5]
    return {"space": name, "configs": len(table.results), "ran": len(runtime), "local optima": len(basins),
            "within 5 %": sum(t <= 1.05 * runtime[optimum] for t in runtime.values()),
            "optimum's basin": basins[optimum],
            "best local optima": [(round(runtime[b] / runtime[optimum], 3), basins[b]) for b in best]}


if __name__ == "__main__":
    print("| space | configs that ran | local optima | within 5 % | optimum's basin | best local optima (runtime "
          "ratio, basin) |\n|---|---:|---:|---:|---:|---|")
    for name in sys.argv[1:]:
        r = landscape(name)
        cells = [r["space"], r["ran"], r["local optima"], r["within 5 %"], r["optimum's basin"],
                 ", ".join(f"{ratio} ({n})" for ratio, n in r["best local optima"])]
        print("| " + " | ".join(map(str, cells)) + " |")
