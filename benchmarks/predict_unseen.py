"""How good is GET /v1/best?predict=true for a shape nobody tuned? Measured on recorded spaces held out from training.

For each recorded table (benchmarks/data; tuner_server.replay) with other tables of the same op and device class:
1. a class model is trained on those other tables only (what the farm's device-class model would hold), the way the
   farm's keeper trains it (train_on_trials, lowered-IR features on the table's target);
2. tuner_server.predict ranks the candidates the server would rank: the other tables' best configs (the heads of
   other shapes), the untuned default, random samples (here drawn from the table's recorded configs, so each has a
   measured runtime), `--candidates` in all, and takes the best-ranked one that generates;
3. its recorded runtime is compared with the table's optimum: speed = optimum / runtime (1.0: the optimum).
Beside it: the untuned default's speed and the best candidate's (what a perfect ranking of the same candidates
would give). Seeds vary the sampled candidates; the median over seeds is reported. Nothing is asserted.

    nice -n 10 python benchmarks/predict_unseen.py [--tables 'benchmarks/data/*.json.gz'] [--seeds 5]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import compiler_core as cc  # noqa: E402
from compiler_core.space import config_key  # noqa: E402
from tuner_server import predict  # noqa: E402
from tuner_server.cost_model import LoweredFeatures, lowered_featurizers, shared_cache, train_on_trials  # noqa: E402
from tuner_server.cost_model.featurize import FEATURE_NAMES  # noqa: E402
from tuner_server.replay import ReplayError, ReplayTable, load_tables  # noqa: E402
from tuner_server.search.base import OK  # noqa: E402


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tables", default=str(REPO / "benchmarks" / "data" / "*.json.gz"), help="glob of tables")
    p.add_argument("--candidates", type=int, default=predict.DEFAULT_CANDIDATES)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--json", dest="json_out", default=None, help="write every row here")
    return p.parse_args(argv)


def runtime(table: ReplayTable, config: dict) -> float | None:
    found = table.results.get(config_key(config))
    return found.median_s if found is not None and found.status == OK else None


def best_config(table: ReplayTable) -> dict:
    return min((o for o in table.results.values() if o.status == OK and o.median_s is not None),
               key=lambda o: o.median_s).config


def peers_of(table: ReplayTable, tables: list[ReplayTable]) -> list[ReplayTable]:
    return [t for t in tables if t is not table and t.workload_key and t.meta.get("op") == table.meta.get("op")
            and t.meta.get("device_class") == table.meta.get("device_class")]


def held_out(table: ReplayTable, others: list[ReplayTable], args) -> dict:
    workload, target = cc.parse_key(table.workload_key), table.target()
    trials = [trial for t in others for trial in t.transfer_trials()]
    model = train_on_trials(trials, FEATURE_NAMES, lowered_featurizers(target, shared_cache()), seed=0)
    recorded = [o.config for o in table.results.values()]
    featurize = LoweredFeatures(workload.key, target, shared_cache())
    optimum, speeds, ceilings = table.optimum, [], []
    for seed in range(args.seeds):
        configs, from_peers = predict.candidates(workload, target, [best_config(t) for t in others],
                                                 args.candidates, seed=seed, pool=recorded)
        configs = [c for c in configs if runtime(table, c) is not None]  # the default may not be recorded
        _, pick = predict.first_that_builds(workload, target, predict.rank(model, featurize, configs))
        speeds.append(optimum / runtime(table, pick))
        ceilings.append(optimum / min(runtime(table, c) for c in configs))
    default_s = runtime(table, cc.default_config(workload, target))
    return {"table": table.meta["name"], "op": table.meta["op"], "device_class": table.meta["device_class"],
            "configs": len(table), "trained_on": [t.meta["name"] for t in others],
            "training_trials": len(trials), "candidates": args.candidates, "from_heads": from_peers,
            "speed": statistics.median(speeds), "speed_min": min(speeds), "speed_max": max(speeds),
            "ceiling": statistics.median(ceilings), "default_speed": optimum / default_s if default_s else None}


def main(argv=None) -> None:
    args = parse_args(argv)
    try:
        tables = [t for t in load_tables(args.tables) if t.optimum is not None and t.workload_key
                  and t.target() is not None]
    except ReplayError as exc:
        raise SystemExit(f"--tables: {exc}") from None
    rows = []
    for table in tables:
        others = peers_of(table, tables)
        if not others:
            continue
        print(f"{table.meta['name']}: model from {', '.join(t.meta['name'] for t in others)}", file=sys.stderr,
              flush=True)
        rows.append(held_out(table, others, args))
    print("| held-out space | configs | trained on (trials) | predicted: speed vs optimum, median (min-max) "
          "| best of the candidates | untuned default |")
    print("|---|---:|---|---|---:|---:|")
    for r in rows:
        default = f"{r['default_speed']:.3f}" if r["default_speed"] else "not recorded"
        print(f"| {r['table']} | {r['configs']} | {len(r['trained_on'])} tables ({r['training_trials']}) | "
              f"{r['speed']:.3f} ({r['speed_min']:.3f}-{r['speed_max']:.3f}) | {r['ceiling']:.3f} | {default} |")
    by_op: dict[str, list[float]] = {}  # an op on a device class, every dtype and template of it together
    for r in rows:
        by_op.setdefault(f"{r['op']} on {r['device_class']}", []).append(r["speed"])
    for op, speeds in by_op.items():
        print(f"\n{op}: median predicted speed over {len(speeds)} held-out shapes {statistics.median(speeds):.3f}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"args": vars(args), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
