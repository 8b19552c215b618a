"""How the README's variant runs were made: benchmarks/search_efficiency.py, model strategy only, under a variant,
with `--checkpoint FILE` (each run is appended as it ends; the same command again goes on where a call cut short
stopped). From the repository root, with SEEDS (40), SYNTH (every), TABLES, JOBS (16) in the environment:

    MIN_TRAIN_DIMS=1 python3 benchmarks/results/2026-11-27-search-variants-40seeds/run_variant.py v1.jsonl
    VARIANT='tuner_server.search.gp_fit:PRIOR_LENGTHSCALE=1.0' python3 .../run_variant.py v2.jsonl
    GP_FLOOR=1.0 OPTIONS='{"sweep": 0.0}' SEEDS=20 python3 .../run_variant.py floor.jsonl

VARIANT='module:NAME=json;...' sets module constants; MIN_TRAIN_DIMS=k sets min_train to max(8, varied knobs + k);
GP_FLOOR=s gives the fitted GP at least share s of the acquisition's slots before gp_until; OPTIONS adds model options.
The patches are made before the worker processes fork, so the workers run them too. (The runs of this folder were
made by an earlier form of this script that wrote the same rows without the checkpoint's settings line.)
"""
import dataclasses
import importlib
import json
import os
import sys

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
    tables = ["--tables", os.environ["TABLES"]] if "TABLES" in os.environ else []
    se.main(["--synthetic", os.environ.get("SYNTH", "every"), "--seeds", os.environ.get("SEEDS", "40"),
             "--strategies", "model", "--jobs", os.environ.get("JOBS", "16"), "--checkpoint", sys.argv[1], *tables])


if __name__ == "__main__":
    main()
