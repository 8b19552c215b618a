"""When a search first measures a config of the optimum's basin of attraction (`basin_sizes.py`: steepest one-knob
descent from it ends at the optimum), how many descent steps that config lay above the optimum, and when the search
reached 5 % of the optimum; per seed, for the model strategy and the BO reference (every unmeasured config scored).
It tells a search that never entered the optimum's basin from one that entered it and did not go down. From the
repository root:

    python3 benchmarks/results/2026-11-28-stalled-bo/touch.py synth-basins-11k12-s32 16
"""
import json
import multiprocessing
import statistics
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[3]), str(Path(__file__).resolve().parent)]
from basin_sizes import descent  # noqa: E402

from compiler_core.space import config_key  # noqa: E402
from tuner_server.replay import run_strategy  # noqa: E402
from tuner_server.synthetic_spaces import spec_from_name, synthetic_table  # noqa: E402

BUDGET = 400


def trace(task: tuple[str, str, int]) -> dict:
    space, strategy, seed = task
    table = synthetic_table(spec_from_name(space))
    step, runtime = descent(table)
    optimum = min(runtime, key=runtime.get)

    def steps_down(key):  # descent steps to the optimum, None when descent ends elsewhere
        n = 0
        while step[key] != key:
            key, n = step[key], n + 1
        return n if key == optimum else None

    options = {"candidates": len(table)} if strategy == "bo" else {}
    observed = run_strategy(table, strategy, BUDGET, seed=seed, batch=8, options=options)
    entered, height = None, None
    for i, o in enumerate(observed, 1):
        key = config_key(o.config)
        if key in runtime and (n := steps_down(key)) is not None:
            entered, height = i, n
            break
    reached = next((i for i, o in enumerate(observed, 1) if o.median_s and o.median_s <= 1.05 * runtime[optimum]),
                   None)
    return {"strategy": strategy, "seed": seed, "entered": entered, "steps_above": height, "to_5pct": reached}


if __name__ == "__main__":
    space, seeds = sys.argv[1], int(sys.argv[2])
    with multiprocessing.Pool(2) as pool:
        rows = pool.map(trace, [(space, s, i) for s in ("model", "bo") for i in range(seeds)])
    for row in rows:
        print(json.dumps(row))
    for strategy in ("model", "bo"):
        mine = [r for r in rows if r["strategy"] == strategy]
        entered = [r["entered"] for r in mine if r["entered"] is not None]
        gaps = [r["to_5pct"] - r["entered"] for r in mine if r["entered"] is not None and r["to_5pct"] is not None]
        print(f"{strategy}: entered the optimum's basin on {len(entered)} of {len(mine)} seeds (median at measurement "
              f"{statistics.median(entered) if entered else '-'}); from entering to 5 %: median "
              f"{statistics.median(gaps) if gaps else '-'} measurements; reached 5 % on "
              f"{sum(r['to_5pct'] is not None for r in mine)}")
