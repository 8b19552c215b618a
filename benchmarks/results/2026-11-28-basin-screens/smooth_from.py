"""The model strategy with BO's smooth GP in play from FROM observations (default 48, where the joint rounds end)
instead of from `gp_settle` (128): it competes for the acquisition's slots by its trust (TRUST=1, default) and keeps
at least SMOOTH of them (default 0.25); with TAKE=ensemble that floor comes out of the ensemble's share only (at
most 1 - the fitted GP's share); with TAKE=sweeps the basin sweeps pause in that window, their quarter of the batch
going to the acquisition's slots. Runs decided within FROM measurements are the default's (nothing differs before),
so `seed.py` copies them into the checkpoint first. From the repository root:

    python3 benchmarks/results/2026-11-28-basin-screens/seed.py /tmp/v.jsonl
    SMOOTH=0.25 python3 benchmarks/results/2026-11-28-basin-screens/smooth_from.py \
        --synthetic report,newest,late-gp-check --seeds 40 --strategies model --jobs 2 --checkpoint /tmp/v.jsonl

The patch is made before the worker processes fork, so the workers run it too.
"""
import math
import os
import sys

sys.path[:0] = ["benchmarks", "."]  # run from the repository root

import search_efficiency as se  # noqa: E402

from tuner_server.search import model_guided, portfolio  # noqa: E402

FROM = int(os.environ.get("FROM", "48"))
SMOOTH = float(os.environ.get("SMOOTH", "0.25"))
TRUST = os.environ.get("TRUST", "1") == "1"
FROM_ENSEMBLE = os.environ.get("TAKE") == "ensemble"  # the smooth GP's slots come out of the ensemble's share only
FROM_SWEEPS = os.environ.get("TAKE") == "sweeps"  # ... or the sweeps' slots go to the acquisition, to make room
_shares = portfolio.Portfolio.shares


def shares(self, observed):
    out = _shares(self, observed)
    early = observed < self.options["gp_until"]
    if (early and observed < self.options["joint_until"]) or not FROM <= observed < self.options["gp_settle"]:
        return out
    playing = ["ensemble"] + (["gp"] if early else []) + (["smooth"] if TRUST else [])
    top = max(self.trust[name] for name in playing)
    weights = {name: math.exp(max((self.trust[name] - top) / self.options["trust_temperature"], -50.0))
               for name in playing}
    total = sum(weights.values())
    out = {name: weights.get(name, 0.0) / total for name in ("gp", "smooth")}
    if FROM_ENSEMBLE:
        out["smooth"] = max(out["smooth"], min(SMOOTH, 1.0 - out["gp"]))
        return out
    out["smooth"] = max(out["smooth"], SMOOTH)
    out["gp"] = min(out["gp"], 1.0 - out["smooth"])
    return out


portfolio.Portfolio.shares = shares
_model_batch = model_guided.ModelGuided._model_batch


def model_batch(self, model, n):
    """With TAKE=sweeps, no sweeps while the smooth GP's floor holds (their share, a quarter of the batch, goes to the
    acquisition's slots, of which the smooth GP keeps its floor)."""
    if not FROM_SWEEPS or not FROM <= len(self._own) < self.options["gp_settle"]:
        return _model_batch(self, model, n)
    sweep, self.options["sweep"] = self.options["sweep"], 0.0
    try:
        return _model_batch(self, model, n)
    finally:
        self.options["sweep"] = sweep


model_guided.ModelGuided._model_batch = model_batch

if __name__ == "__main__":
    se.main(sys.argv[1:])
