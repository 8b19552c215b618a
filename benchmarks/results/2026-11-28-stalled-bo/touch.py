"""When a search first measures a config of the optimum's basin of attraction (`basin_sizes.py`: steepest one-knob
descent from it ends at the optimum), how many descent steps that config lay above the optimum, and when the search
reached 5 % of the optimum; per seed, for the model strategy and the BO reference (every unmeasured config scored).
It tells a search that never entered the optimum's basin from one that entered it and did not go down. From the
repository root:

    python3 benchmarks/results/2026-11-28-stalled-bo/touch.py synth-basins-11k12-s32 16
"""
import functools
import json
import multiprocessing
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(REPO), str(REPO / "benchmarks"), str(Path(__file__).resolve().parent)]
from basin_sizes import bottom, descent  # noqa: E402
from search_efficiency import reach  # noqa: E402

from compiler_core.space import config_key  # noqa: E402
from tuner_server.replay import run_strategy  # noqa: E402
from tuner_server.synthetic_spaces import spec_from_name, synthetic_table  # noqa: E402

BUDGET = 400


@functools.cache
def _landscape(space: str):
    """The space's table, its descent steps and runtimes (`basin_sizes.descent`), and the optimum's key: built once
    per process, not once per run."""
    table = synthetic_table(spec_from_name(space))
    step, runtime = descent(table)
    return table, step, runtime, min(runtime, key=runtime.get)


def trace(task: tuple[str, str, int]) -> dict:
    space, strategy, seed = task
    table, step, runtime, optimum = _landscape(space)
    options = {"candidates": len(table)} if strategy == "bo" else {}
    observed = run_strategy(table, strategy, BUDGET, seed=seed, batch=8, options=options)
    entered, height = None, None
    for i, o in enumerate(observed, 1):
        key = config_key(o.config)
        end, steps = bottom(step, key) if key in runtime else (None, None)
        if end == optimum:
            entered, height = i, steps
            break
    return {"strategy": strategy, "seed": seed, "entered": entered, "steps_above": height,
            "to_5pct": reach(observed, table.optimum)}


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
