"""How close a search has come to a synthetic space's optimum: per seed, the fewest knobs in which any measured config
differs from the optimum after 8, 16, 24, 32, 48, 64, 96 and 128 measurements, for the model strategy and the BO
reference (every unmeasured config scored). JSON lines: [strategy, seed, measurements to 5 %, distances]. From the
repository root:

    python3 benchmarks/results/2026-11-27-basins11k-variants/nearest.py synth-basins-11k12-s32 16
"""
import json
import multiprocessing
import sys

sys.path[:0] = ["benchmarks", "."]  # run from the repository root
from tuner_server.replay import run_strategy  # noqa: E402
from tuner_server.synthetic_spaces import spec_from_name, synthetic_table  # noqa: E402

AFTER = (8, 16, 24, 32, 48, 64, 96, 128)
BUDGET = 400


def nearest(task: tuple[str, str, int]) -> list:
    space, strategy, seed = task
    table = synthetic_table(spec_from_name(space))
    optimum = min((o for o in table.results.values() if o.median_s), key=lambda o: o.median_s).config
    options = {"candidates": len(table)} if strategy == "bo" else {}
    observed = run_strategy(table, strategy, BUDGET, seed=seed, batch=8, options=options)
    reached = next((i for i, o in enumerate(observed, 1) if o.median_s and o.median_s <= 1.05 * table.optimum),
                   BUDGET + 1)
    closest, so_far = [], len(optimum)
    for o in observed:
        so_far = min(so_far, sum(o.config[k] != optimum[k] for k in optimum))
        closest.append(so_far)
    return [strategy, seed, reached, [closest[n - 1] for n in AFTER]]


if __name__ == "__main__":
    space, seeds = sys.argv[1], int(sys.argv[2])
    with multiprocessing.Pool(2) as pool:
        for row in pool.map(nearest, [(space, s, i) for s in ("model", "bo") for i in range(seeds)]):
            print(json.dumps(row))
