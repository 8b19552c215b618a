"""The model strategy under a "stalled" variant: once STALL observations in a row found nothing faster, the
portfolio's GPs take more of the acquisition's slots (benchmarks/search_efficiency.py, model strategy only, with
`--checkpoint FILE`). From the repository root, with SEEDS (40), SYNTH (report: the 48-space report's synthetic spaces;
its runs were made when the default was `every`, which left out `later`), TABLES, JOBS (16) in the environment:

    STALL=24 JOINT=1 python3 benchmarks/results/2026-11-28-stalled-bo/run.py joint24.jsonl
    STALL=32 SMOOTH=0.75 python3 benchmarks/results/2026-11-28-stalled-bo/run.py smooth32.jsonl

JOINT=1: before `gp_until` observations, a stalled job's acquisition slots all go to the GPs' joint expected
improvement (the rounds before `joint_until`, resumed). SMOOTH=s: from `gp_until` on, a stalled job gives the smooth
GP (the BO reference's) at least share s of the acquisition's slots instead of `smooth`. The patches are made before
the worker processes fork, so the workers run them too.
"""
import os
import sys

sys.path[:0] = ["benchmarks", "."]  # run from the repository root

import search_efficiency as se  # noqa: E402

from tuner_server.search import model_guided, portfolio  # noqa: E402

STALL = int(os.environ["STALL"])
JOINT = os.environ.get("JOINT") == "1"
SMOOTH = float(os.environ["SMOOTH"]) if os.environ.get("SMOOTH") else None

_model_batch = model_guided.ModelGuided._model_batch


def model_batch(self, model, n):
    self._portfolio.stalled = self._since_best >= STALL
    return _model_batch(self, model, n)


_shares = portfolio.Portfolio.shares


def shares(self, observed):
    stalled = getattr(self, "stalled", False)
    early = observed < self.options["gp_until"]
    if stalled and early and JOINT:
        return {"gp": 1.0, "smooth": 0.0}
    out = _shares(self, observed)
    if stalled and not early and SMOOTH is not None:
        out["smooth"] = max(out["smooth"], SMOOTH)
        out["gp"] = min(out["gp"], 1.0 - out["smooth"])
    return out


_gp_batch = portfolio.Portfolio._gp_batch


def gp_batch(self, observations, indices, codes, k):
    if JOINT and getattr(self, "stalled", False) and len(observations) < self.options["gp_until"]:
        return self._joint_batch(observations, indices, codes, k)
    return _gp_batch(self, observations, indices, codes, k)


model_guided.ModelGuided._model_batch = model_batch
portfolio.Portfolio.shares = shares
portfolio.Portfolio._gp_batch = gp_batch


def main() -> None:
    tables = ["--tables", os.environ["TABLES"]] if "TABLES" in os.environ else []
    se.main(["--synthetic", os.environ.get("SYNTH", "report"), "--seeds", os.environ.get("SEEDS", "40"),
             "--strategies", "model", "--jobs", os.environ.get("JOBS", "16"), "--checkpoint", sys.argv[1], *tables])


if __name__ == "__main__":
    main()
