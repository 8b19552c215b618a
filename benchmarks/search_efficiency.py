"""Search efficiency on recorded spaces: how many measurements each strategy needs to get near the optimum.

Every strategy runs against each table in benchmarks/data (tuner_server.replay: no hardware), once per seed, with the
job driver's loop (propose a batch, measure it, observe). For each (table, strategy) it reports the median over seeds
of the measurements needed to reach within 5 % and within 1 % of the table's optimum, and the median best/optimum
after 64 and 256 measurements. "model+transfer" starts from a cost model trained on the other tables of the same op
and device class (the device-class model a farm keeps), "model" from nothing. Grid search ignores the seed.

    nice -n 10 python benchmarks/search_efficiency.py --seeds 20 [--tables 'benchmarks/data/cpu-*.json.gz']
"""
from __future__ import annotations

import argparse
import glob
import json
import math
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tuner_server.cost_model import lowered_featurizers, shared_cache, train_on_trials  # noqa: E402
from tuner_server.cost_model.featurize import FEATURE_NAMES  # noqa: E402
from tuner_server.replay import ReplayTable, load_table, run_strategy  # noqa: E402

STRATEGIES = ("random", "grid", "model", "model+transfer")


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tables", default=str(REPO / "benchmarks" / "data" / "*.json.gz"), help="glob of tables")
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument("--batch", type=int, default=8, help="configs proposed per round (the farm's queue refill)")
    p.add_argument("--budget", type=int, default=600, help="measurements per run, at most the table's size")
    p.add_argument("--strategies", default=",".join(STRATEGIES))
    p.add_argument("--options", default="{}", help="JSON options for the model strategy")
    p.add_argument("--json", dest="json_out", default=None, help="write every run's figures here")
    return p.parse_args(argv)


def reach(observed, optimum: float, tolerance: float) -> int | None:
    """Measurements until the best OK runtime is within `tolerance` of the optimum (None: never, in the run)."""
    best = math.inf
    for i, o in enumerate(observed, 1):
        if o.status == "OK" and o.median_s is not None:
            best = min(best, o.median_s)
        if best <= optimum * (1 + tolerance):
            return i
    return None


def best_after(observed, optimum: float, n: int) -> float:
    times = [o.median_s for o in observed[:n] if o.status == "OK" and o.median_s is not None]
    return min(times) / optimum if times else math.inf


def transfer_model(table: ReplayTable, tables: list[ReplayTable], seed: int = 0):
    """A model trained on the other tables of the same op, device class and target (None if there are none)."""
    others = [t for t in tables if t is not table and t.meta.get("op") == table.meta.get("op")
              and t.meta.get("device_class") == table.meta.get("device_class")
              and t.meta.get("target") == table.meta.get("target") and t.workload_key is not None]
    if not others or table.workload_key is None:
        return None, []
    trials = [trial for t in others for trial in t.transfer_trials()]
    model = train_on_trials(trials, FEATURE_NAMES, lowered_featurizers(table.target(), shared_cache()), seed=seed)
    return (model if model.trained else None), [t.meta["name"] for t in others]


def run_one(table: ReplayTable, strategy: str, seed: int, args, model_options: dict, base) -> dict:
    budget = min(args.budget, len(table))
    name = "model" if strategy.startswith("model") else strategy
    options = model_options if name == "model" else {}
    t0 = time.perf_counter()
    observed = run_strategy(table, name, budget, seed=seed, batch=args.batch, options=options,
                            cost_model=base if strategy == "model+transfer" else None)
    optimum = table.optimum
    return {"table": table.meta["name"], "strategy": strategy, "seed": seed, "measured": len(observed),
            "to_5pct": reach(observed, optimum, 0.05), "to_1pct": reach(observed, optimum, 0.01),
            "best_at_64": best_after(observed, optimum, 64), "best_at_256": best_after(observed, optimum, 256),
            "wall_s": time.perf_counter() - t0}


def median_steps(values: list[int | None], budget: int) -> str:
    """Median with runs that never got there counted as past the budget ('>N' when the median is one of them)."""
    m = statistics.median(v if v is not None else budget + 1 for v in values)
    return f">{budget}" if m > budget else f"{m:g}"


def summarize(rows: list[dict], tables: dict[str, ReplayTable], budget: int) -> str:
    lines = ["| space | configs | strategy | meas. to 5 % | meas. to 1 % | best/opt @64 | best/opt @256 | s/run |",
             "|---|---:|---|---:|---:|---:|---:|---:|"]
    for name, table in tables.items():
        cap = min(budget, len(table))
        for strategy in dict.fromkeys(r["strategy"] for r in rows if r["table"] == name):
            runs = [r for r in rows if r["table"] == name and r["strategy"] == strategy]
            lines.append(
                f"| {name} | {len(table)} | {strategy} | {median_steps([r['to_5pct'] for r in runs], cap)} | "
                f"{median_steps([r['to_1pct'] for r in runs], cap)} | "
                f"{statistics.median(r['best_at_64'] for r in runs):.3f} | "
                f"{statistics.median(r['best_at_256'] for r in runs):.3f} | "
                f"{statistics.median(r['wall_s'] for r in runs):.2f} |")
    return "\n".join(lines)


def main(argv=None) -> None:
    args = parse_args(argv)
    paths = sorted(glob.glob(args.tables))
    if not paths:
        raise SystemExit(f"no tables match {args.tables}")
    tables = {t.meta["name"]: t for t in map(load_table, paths) if t.optimum is not None}
    strategies = [s.strip() for s in args.strategies.split(",") if s.strip()]
    model_options = json.loads(args.options)
    rows = []
    for name, table in tables.items():
        base, sources = transfer_model(table, list(tables.values())) if "model+transfer" in strategies else (None, [])
        print(f"{name}: {len(table)} configs, optimum {table.optimum * 1e3:.4f} ms"
              + (f", transfer from {', '.join(sources)}" if sources else ""), file=sys.stderr, flush=True)
        for strategy in strategies:
            if strategy == "model+transfer" and base is None:
                continue
            seeds = [0] if strategy == "grid" else range(args.seeds)
            rows += [run_one(table, strategy, seed, args, model_options, base) for seed in seeds]
    print(summarize(rows, tables, args.budget))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"args": vars(args), "runs": rows}, indent=1))


if __name__ == "__main__":
    main()
