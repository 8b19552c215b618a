"""BO's first 48 measurements, then the default model strategy taking them as its history (the job rebuilt after a
restart); per space and seed, measurements to 5 % and best@100, as search_efficiency.py's runs.

    python3 benchmarks/results/2026-11-29-early-window/hybrid.py OUT.jsonl SEEDS JOBS SPACE...

The reverse, the default's first 48 and then BO's GP alone, is an options string of the model strategy (device.sh).
"""
import json
import sys
from dataclasses import replace
from multiprocessing import Pool
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(REPO / "benchmarks"), str(REPO)]
import search_efficiency as se  # noqa: E402

from tuner_server.replay import context_for  # noqa: E402
from tuner_server.search import make_strategy  # noqa: E402

START = 48
SPACES = {}


def init(names):
    SPACES.update(se.load_spaces(se.parse_args(["--tables", "", "--synthetic", ",".join(names)])))


def run(task):
    name, seed = task
    table = SPACES[name]
    observed = []

    def step(search, until):
        while len(observed) < until and not se.decided(observed, table.optimum):
            configs = search.propose(8)
            results = [table.measure(c) for c in configs]
            search.observe(results)
            observed.extend(results)

    bo = make_strategy("bo", context_for(table, seed, {"candidates": len(table)}))
    step(bo, START)
    ctx = replace(context_for(table, seed, {}), history=list(observed))
    step(make_strategy("model", ctx), 400)
    return {"space": name, "strategy": "model", "seed": seed, "measured": len(observed),
            "to_5pct": se.reach(observed, table.optimum), "best_at_100": se.best_after(observed, table.optimum, 100)}


if __name__ == "__main__":
    out, seeds, jobs, names = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
    with open(out, "w") as f, Pool(jobs, init, (names,)) as pool:
        f.write(json.dumps({"settings": {"hybrid": f"bo {START} then the default model"}}) + "\n")
        for r in pool.imap_unordered(run, [(n, s) for n in names for s in range(seeds)]):
            f.write(json.dumps(r) + "\n")
            f.flush()
