"""The portfolio's trust in each surrogate (and whether 5 % was reached) after 8, 16, 24 and 32 measurements of the
default's runs: one line per run. No SPACES: the 22 recorded tables and the 50 synthetic spaces of the 72-space report.
    python3 benchmarks/results/2026-11-29-trust-at-16/probe.py SEEDS JOBS OUT.jsonl [SPACES]"""
import json
import multiprocessing as mp
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(REPO / "benchmarks"), str(REPO)]
import search_efficiency as se  # noqa: E402

from tuner_server.replay import context_for  # noqa: E402
from tuner_server.search import make_strategy  # noqa: E402

S = ("report,newest,late-gp-check,synth-basins-10k11-s71,synth-needle-11k12-s72,synth-noisy-9k10-s73,"
     "synth-invalid-12k11-s74,synth-smooth-7k10-s75,synth-basins-12k12-s76,synth-needle-9k11-s77,synth-noisy-11k12-s78")
SPACES = {}


def init(names):
    args = se.parse_args(["--synthetic", names] if names else ["--synthetic", S])
    SPACES.update(se.load_spaces(args))


def one(task):
    name, seed = task
    table = SPACES[name]
    search = make_strategy("model", context_for(table, seed, {}))
    observed, rows = [], {}
    while len(observed) < 32:
        results = [table.measure(c) for c in search.propose(8)]
        search.observe(results)
        observed += results
        j = search._portfolio.judge
        rows[len(observed)] = {**{k: round(v, 3) for k, v in j.trust.items()}, "updates": j.updates,
                               "reached": se.reach(observed, table.optimum)}
    return {"space": name, "seed": seed, "rows": rows}


if __name__ == "__main__":
    seeds, jobs, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    names = sys.argv[4] if len(sys.argv) > 4 else None
    init(names)
    tasks = [(n, s) for n in SPACES for s in range(seeds)]
    with mp.Pool(jobs, initializer=init, initargs=(names,)) as pool, open(out, "w") as f:
        for i, r in enumerate(pool.imap_unordered(one, tasks)):
            f.write(json.dumps(r) + "\n")
            if i % 50 == 0:
                print(i, len(tasks), flush=True)
