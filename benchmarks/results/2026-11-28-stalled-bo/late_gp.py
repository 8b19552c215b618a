"""The model strategy with its fitted GP proposing until GP_UNTIL (256) observations instead of 128, at the cost of the
128 it had: the GP's kernel hyperparameters are no longer refitted once it is fitted on FIT_UNTIL (128) points (its
posterior still takes in every new point), and the number of candidates it scores per round follows 128 as before, so
every round up to 128 observations runs exactly as the default's. From the repository root, with SEEDS (40), SYNTH
(report,newest), TABLES ('' : none), JOBS (16) in the environment:

    python3 benchmarks/results/2026-11-28-stalled-bo/late_gp.py /tmp/late_gp.jsonl

Written when the default `gp_until` was 128: `late_gp-40seeds.jsonl` is reproduced at commit 42531ee. The late GP
it led to is the default since (options `gp_settle`, `gp_refit`; ../2026-11-28-late-gp/).
"""
import json
import os
import sys

sys.path[:0] = ["benchmarks", "."]  # run from the repository root

import search_efficiency as se  # noqa: E402

from tuner_server.search import portfolio  # noqa: E402

GP_UNTIL = int(os.environ.get("GP_UNTIL", "256"))
FIT_UNTIL = int(os.environ.get("FIT_UNTIL", "128"))
SCORABLE_AT = 128  # the default `gp_until`, which sets how many candidates the GP scores per round

_fit = portfolio.fit_hyperparameters


def fit_until(X, z, start=None):
    if start is not None and len(X) >= FIT_UNTIL and len(start.lengthscales) == X.shape[1]:
        return start  # frozen: the last fit's hyperparameters
    return _fit(X, z, start)


def scorable(self, cap, points):
    grown = cap * (SCORABLE_AT / max(points, 1)) ** 2
    return int(min(max(grown, cap), portfolio.EARLY_GROWTH * cap))


portfolio.fit_hyperparameters = fit_until
portfolio.Portfolio._scorable = scorable


def main() -> None:
    se.main(["--tables", os.environ.get("TABLES", ""), "--synthetic", os.environ.get("SYNTH", "report,newest"),
             "--seeds", os.environ.get("SEEDS", "40"), "--strategies", "model", "--jobs", os.environ.get("JOBS", "16"),
             "--options", json.dumps({"gp_until": GP_UNTIL}), "--checkpoint", sys.argv[1]])


if __name__ == "__main__":
    main()
