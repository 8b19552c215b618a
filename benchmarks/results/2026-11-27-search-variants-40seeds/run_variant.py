"""How the README's variant runs were made: model-only benchmarks/search_efficiency.py runs under a variant, streamed
to JSON lines as they finish (a call cut short keeps what it ran; further arguments name JSON-lines files whose runs
are skipped). From the repository root, with SEEDS (40), SYNTH (every), TABLES, JOBS (16) in the environment:

    MIN_TRAIN_DIMS=1 python3 benchmarks/results/2026-11-27-search-variants-40seeds/run_variant.py v1.jsonl
    VARIANT='tuner_server.search.gp_fit:PRIOR_LENGTHSCALE=1.0' python3 .../run_variant.py v2.jsonl
    GP_FLOOR=1.0 OPTIONS='{"sweep": 0.0}' SEEDS=20 python3 .../run_variant.py floor.jsonl

VARIANT='module:NAME=json;...' sets module constants; MIN_TRAIN_DIMS=k sets min_train to max(8, varied knobs + k);
GP_FLOOR=s gives the fitted GP at least share s of the acquisition's slots before gp_until; OPTIONS adds model options.
The patches are made before the worker processes fork, so the workers run them too.
"""
import dataclasses
import importlib
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor

sys.path[:0] = ["benchmarks", "."]  # run from the repository root
for item in filter(None, os.environ.get("VARIANT", "").split(";")):
    where, value = item.split("=", 1)
    module, name = where.split(":")
    setattr(importlib.import_module(module), name, json.loads(value))

import search_efficiency as se  # noqa: E402

from tuner_server.search import model_guided, portfolio  # noqa: E402


def _with_options(extra):
    """ModelGuided.__init__ with options from extra(context) added where the job set none."""
    init = model_guided.ModelGuided.__init__

    def __init__(self, context):
        options = {**extra(context), **context.options}
        init(self, dataclasses.replace(context, options=options))
    model_guided.ModelGuided.__init__ = __init__


if os.environ.get("MIN_TRAIN_DIMS"):
    _with_options(lambda c: {"min_train": max(8, sum(len(k.choices) > 1 for k in c.space.knobs)
                                              + int(os.environ["MIN_TRAIN_DIMS"]))})
if os.environ.get("OPTIONS"):
    _with_options(lambda c: json.loads(os.environ["OPTIONS"]))
if os.environ.get("GP_FLOOR"):
    shares = portfolio.Portfolio.shares

    def floored(self, observed):
        out = shares(self, observed)
        if observed < self.options["gp_until"]:
            out["gp"] = max(out["gp"], float(os.environ["GP_FLOOR"]))
        return out
    portfolio.Portfolio.shares = floored


def main() -> None:
    out, done_files = sys.argv[1], sys.argv[2:]
    tables = ["--tables", os.environ["TABLES"]] if "TABLES" in os.environ else []
    args = se.parse_args(["--synthetic", os.environ.get("SYNTH", "every"), "--seeds", os.environ.get("SEEDS", "40"),
                          "--strategies", "model", *tables])
    done = {(r["space"], r["seed"]) for f in done_files for r in map(json.loads, open(f))}
    tasks = [(n, "model", s) for n in se.load_spaces(args) for s in range(args.seeds) if (n, s) not in done]
    t0 = time.time()
    with open(out, "a") as f, ProcessPoolExecutor(int(os.environ.get("JOBS", "16"))) as pool:
        for i, row in enumerate(pool.map(se._run_in_worker, tasks, [args] * len(tasks), chunksize=2)):
            f.write(json.dumps(row) + "\n")
            f.flush()
            if i % 100 == 0:
                print(f"{out}: {i}/{len(tasks)} {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
    print(f"{out}: all {len(tasks)} in {time.time() - t0:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
