"""The model strategy with a BO-like last phase: from `gp_until` (256) observations on, the smooth Gaussian process
(the BO reference's) fills SHARE (default 1.0) of the acquisition's slots instead of at least `smooth` (0.25); the
basin sweeps and random slots go on as before. Nothing changes before 256 observations, so the runs decided by then
are the default's (`seed_variant.py OUT '{}' 256`). With SMOOTH_BATCH=k the smooth GP picks k configs at a time from
then on (default 8, handed out over the next rounds): its picks are then as fresh as BO's. From the repository root:

    python3 benchmarks/results/2026-11-28-many-seeds/seed_variant.py /tmp/late.jsonl '{}' 256
    SHARE=1.0 python3 benchmarks/results/2026-11-28-many-seeds/late_bo.py --tables '' --synthetic ... --seeds 160 \\
        --strategies model --decided --jobs 64 --checkpoint /tmp/late.jsonl

Why: on the basin and noisy spaces BO's chance per measurement of reaching 5 % rises late in a run (noisy 7k: 0.20,
0.45 and 0.67 % over measurements 1-128, 129-256 and 257-400), while the default's stays flat (0.26, 0.25, 0.42).
The patch is made before the worker processes fork, so the workers run it too.
"""
import os
import sys

sys.path[:0] = ["benchmarks", "."]  # run from the repository root

import search_efficiency as se  # noqa: E402

from tuner_server.search import portfolio  # noqa: E402

SHARE = float(os.environ.get("SHARE", "1.0"))
BATCH = int(os.environ.get("SMOOTH_BATCH", "0"))  # > 0: the smooth GP's kriging-believer batch from `gp_until` on
_shares = portfolio.Portfolio.shares


def shares(self, observed):
    if observed < self.options["gp_until"]:
        return _shares(self, observed)
    if BATCH:
        self.options["smooth_batch"] = BATCH
    return {"gp": 0.0, "smooth": SHARE}


portfolio.Portfolio.shares = shares

if __name__ == "__main__":
    se.main(sys.argv[1:])
