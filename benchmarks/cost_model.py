"""Cost-model accuracy across shapes: train on all recorded shapes of an op but one, rank the held-out shape.

For every table in benchmarks/data whose op has at least one other table on the same device class and target, a
LightGBM ranker (each objective) is trained on the other tables' trials and scores every config of the held-out
table. Reported: pairwise ranking accuracy over OK configs with different runtimes (TenSet's metric), Kendall tau,
top-10 recall (is the true best among the model's 10 best?), the held-out best within 5 % among the model's top 10,
fit time, and per 1,000 candidates the time to predict (features cached) and to featurize (lowering, uncached).

    nice -n 10 python benchmarks/cost_model.py [--tables 'benchmarks/data/*.json.gz'] [--rounds 60]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
from scipy.stats import kendalltau

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tuner_server.cost_model import (  # noqa: E402
    OBJECTIVES,
    FeatureCache,
    LoweredFeatures,
    lowered_featurizers,
    train_on_trials,
)
from tuner_server.cost_model.featurize import FEATURE_NAMES  # noqa: E402
from tuner_server.replay import ReplayError, ReplayTable, load_tables  # noqa: E402


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tables", default=str(REPO / "benchmarks" / "data" / "*.json.gz"))
    p.add_argument("--rounds", type=int, default=60, help="boosting rounds")
    p.add_argument("--objectives", default=",".join(OBJECTIVES))
    p.add_argument("--json", dest="json_out", default=None)
    return p.parse_args(argv)


def pairwise_accuracy(scores: np.ndarray, runtimes: np.ndarray) -> float:
    """Share of pairs with different runtimes that the scores order the same way (higher score = faster)."""
    ds = scores[:, None] - scores[None, :]
    dt = runtimes[None, :] - runtimes[:, None]  # > 0 when row i is faster than column j
    mask = dt != 0
    return float(np.mean((ds[mask] > 0) == (dt[mask] > 0)))


def evaluate(model, held: ReplayTable, cache: FeatureCache) -> dict:
    ok = [o for o in held.results.values() if o.status == "OK"]
    configs = [o.config for o in ok]
    runtimes = np.array([o.median_s for o in ok])
    cold = LoweredFeatures(held.workload_key, held.target(), FeatureCache())
    n = min(len(configs), 200)
    t0 = time.perf_counter()
    cold(configs[:n])
    featurize_s_per_1000 = (time.perf_counter() - t0) / n * 1000
    X = LoweredFeatures(held.workload_key, held.target(), cache)(configs)
    reps = max(1, 1000 // len(configs))
    t0 = time.perf_counter()
    for _ in range(reps):
        scores = model.predict(X)
    predict_ms_per_1000 = (time.perf_counter() - t0) / (reps * len(configs)) * 1e6
    top10 = np.argsort(-scores, kind="stable")[:10]
    best = runtimes.min()
    return {"pairs": pairwise_accuracy(scores, runtimes), "tau": float(kendalltau(-scores, runtimes)[0]),
            "top10_best": bool(np.argmin(runtimes) in top10),
            "top10_within_5pct": bool(runtimes[top10].min() <= best * 1.05),
            "fit_s": model.fit_s, "predict_ms_per_1000": predict_ms_per_1000,
            "featurize_s_per_1000": featurize_s_per_1000}


def groups(tables: list[ReplayTable]) -> dict[tuple, list[ReplayTable]]:
    out: dict[tuple, list[ReplayTable]] = defaultdict(list)
    for t in tables:
        if t.workload_key is not None and t.optimum is not None:
            out[(t.meta["op"], t.meta["device_class"], json.dumps(t.meta["target"], sort_keys=True))].append(t)
    return {k: v for k, v in out.items() if len(v) >= 2}


def main(argv=None) -> None:
    args = parse_args(argv)
    try:
        tables = load_tables(args.tables)
    except ReplayError as exc:
        raise SystemExit(f"--tables: {exc}") from None
    cache = FeatureCache()
    rows = []
    for (op, device_class, _), members in groups(tables).items():
        for held in members:
            train = [trial for t in members if t is not held for trial in t.transfer_trials()]
            for objective in args.objectives.split(","):
                model = train_on_trials(train, FEATURE_NAMES, lowered_featurizers(held.target(), cache),
                                        objective=objective, rounds=args.rounds)
                row = {"op": op, "device_class": device_class, "held_out": held.meta["name"],
                       "train_rows": len(train), "objective": objective, **evaluate(model, held, cache)}
                rows.append(row)
                print(f"  {held.meta['name']} {objective}: pairs {row['pairs']:.3f}", file=sys.stderr, flush=True)
    print("| held-out space | trained on | objective | pairwise acc. | Kendall tau | best in top 10 | "
          "top 10 within 5 % | fit s | predict ms/1000 | featurize s/1000 |")
    print("|---|---:|---|---:|---:|---|---|---:|---:|---:|")
    for r in rows:
        print(f"| {r['held_out']} | {r['train_rows']} | {r['objective']} | {r['pairs']:.3f} | {r['tau']:.3f} | "
              f"{'yes' if r['top10_best'] else 'no'} | {'yes' if r['top10_within_5pct'] else 'no'} | "
              f"{r['fit_s']:.2f} | {r['predict_ms_per_1000']:.2f} | {r['featurize_s_per_1000']:.1f} |")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
