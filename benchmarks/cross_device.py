"""Cross-device warm start: does a device class with no history of its own tune faster from another class's model?

For each recorded table (benchmarks/data; tuner_server.replay) whose op was also recorded on another device class of
the same kind (e.g. the same matmul on an AVX2 and an AVX-512 CPU), the model-guided strategy tunes it twice per
seed, as a job on a class with its own history removed would:
- cold: no model to start from (the job fits its own once it has `min_train` trials);
- warm: starting from the model trained on the other class's tables (what ClassModels.start_model hands a class
  with fewer than OWN_HISTORY trials), fine-tuned on the job's own trials.
Reported per table: median measurements to reach within 5 % of the table's optimum (runs that never reach it count
as past the budget), the fraction of seeds that reach it, and the median best/optimum after 32 and 64 measurements.
Nothing is asserted.

    nice -n 10 python benchmarks/cross_device.py --seeds 20 [--tables 'benchmarks/data/cpu-*.json.gz']
    python benchmarks/cross_device.py --tables 'benchmarks/data/gpu-*matmul*' --tune 'benchmarks/data/gpu-h200-*'
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.efficiency_report import median_steps  # noqa: E402
from benchmarks.search_efficiency import best_after, reach  # noqa: E402
from tuner_server.cost_model import lowered_featurizers, shared_cache, train_on_trials  # noqa: E402
from tuner_server.cost_model.featurize import FEATURE_NAMES  # noqa: E402
from tuner_server.replay import ReplayError, ReplayTable, load_tables, run_strategy  # noqa: E402


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tables", default=str(REPO / "benchmarks" / "data" / "*.json.gz"), help="glob of tables")
    p.add_argument("--tune", default=None, help="glob of the tables to tune cold and warm (default: every table of "
                                                "--tables); the other tables of --tables only train donor models")
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument("--batch", type=int, default=8, help="configs proposed per round (the farm's queue refill)")
    p.add_argument("--budget", type=int, default=200, help="measurements per run, at most the table's size")
    p.add_argument("--json", dest="json_out", default=None, help="write every run's figures here")
    return p.parse_args(argv)


def donor_model(table: ReplayTable, tables: list[ReplayTable]):
    """The model of the other class of this kind with the most recorded trials of this op, and its name."""
    kind = table.target().kind
    by_class: dict[str, list[ReplayTable]] = {}
    for t in tables:
        if (t.meta.get("op") == table.meta.get("op") and t.target().kind == kind
                and t.meta.get("device_class") != table.meta.get("device_class")):
            by_class.setdefault(t.meta["device_class"], []).append(t)
    if not by_class:
        return None, None
    donor, donors = max(by_class.items(), key=lambda item: sum(len(t) for t in item[1]))
    trials = [trial for t in donors for trial in t.transfer_trials()]
    model = train_on_trials(trials, FEATURE_NAMES, lowered_featurizers(donors[0].target(), shared_cache()), seed=0)
    return (model if model.trained else None), donor


def runs(table: ReplayTable, model, args) -> list[dict]:
    budget, optimum, out = min(args.budget, len(table)), table.optimum, []
    for seed in range(args.seeds):
        observed = run_strategy(table, "model", budget, seed=seed, batch=args.batch, cost_model=model)
        out.append({"to_5pct": reach(observed, optimum, 0.05), "best_at_32": best_after(observed, optimum, 32),
                    "best_at_64": best_after(observed, optimum, 64)})
    return out


def main(argv=None) -> None:
    args = parse_args(argv)
    try:
        tables = [t for t in load_tables(args.tables) if t.optimum is not None and t.workload_key
                  and t.target() is not None]
    except ReplayError as exc:
        raise SystemExit(f"--tables: {exc}") from None
    try:
        tuned = None if args.tune is None else {t.meta["name"] for t in load_tables(args.tune)}
    except ReplayError as exc:
        raise SystemExit(f"--tune: {exc}") from None
    rows = []
    for table in tables:
        if tuned is not None and table.meta["name"] not in tuned:
            continue
        model, donor = donor_model(table, tables)
        if model is None:
            continue
        print(f"{table.meta['name']} ({table.meta['device_class']}): warm start from {donor}", file=sys.stderr,
              flush=True)
        for start, start_model in (("cold", None), ("warm", model)):
            for r in runs(table, start_model, args):
                rows.append({"table": table.meta["name"], "class": table.meta["device_class"], "donor": donor,
                             "start": start, **r})
    print("| space (class) | start | meas. to 5 % (median) | seeds reaching 5 % | best/opt @32 | best/opt @64 |")
    print("|---|---|---:|---:|---:|---:|")
    for name in dict.fromkeys(r["table"] for r in rows):
        table = next(t for t in tables if t.meta["name"] == name)
        cap = min(args.budget, len(table))
        for start in ("cold", "warm"):
            rs = [r for r in rows if r["table"] == name and r["start"] == start]
            reached = sum(r["to_5pct"] is not None for r in rs)
            print(f"| {name} ({rs[0]['class']}) | {start}{' from ' + rs[0]['donor'] if start == 'warm' else ''} | "
                  f"{median_steps([r['to_5pct'] for r in rs], cap):g} | {reached}/{len(rs)} | "
                  f"{statistics.median(r['best_at_32'] for r in rs):.3f} | "
                  f"{statistics.median(r['best_at_64'] for r in rs):.3f} |")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"args": vars(args), "runs": rows}, indent=1))


if __name__ == "__main__":
    main()
