"""search_efficiency.py with the portfolio's shares between `joint_until` and the last phase set by credit, not
trust: each part's (fitted GP, smooth GP, ensemble) exponential average of how its own picks ranked within their
measured batch (the fraction of the batch's other configs each pick beat; failures 0). Shares: a floor of 1/8 each,
the rest by softmax(credit / CREDIT_T). Patched in; workers are forked, so they inherit it.

    python3 benchmarks/results/2026-11-29-early-window/credit.py SEARCH_EFFICIENCY_ARGS...   # a screen (not run)
    python3 benchmarks/results/2026-11-29-early-window/credit.py --probe SPACE,SPACE,... SEEDS  # the credits

--probe: each part's credit at 64, 96 and 128 measurements, the mean over seeds, with `{"smooth_batch": 3}`.
"""
import math
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(REPO / "benchmarks"), str(REPO)]
import search_efficiency as se  # noqa: E402

import tuner_server.search.model_guided as mg  # noqa: E402
import tuner_server.search.portfolio as pf  # noqa: E402
from tuner_server.search.base import OK  # noqa: E402
from tuner_server.search.knob_walk import config_id  # noqa: E402

T = float(os.environ.get("CREDIT_T", "0.1"))
FLOOR = float(os.environ.get("CREDIT_FLOOR", "0.125"))
MEMORY = 0.5
ARMS = ("gp", "smooth", "ensemble")
CURRENT = []

_init = pf.Portfolio.__init__


def init(self, *a, **k):
    _init(self, *a, **k)
    self.origin, self.credit = {}, dict.fromkeys(ARMS, 0.5)


_smooth = pf.Portfolio._smooth_picks


def smooth_picks(self, *a, **k):
    out = _smooth(self, *a, **k)
    for c in out:
        self.origin[config_id(c)] = "smooth"
    return out


_picks = pf.Portfolio._picks


def picks(self, *a, **k):
    out = _picks(self, *a, **k)
    for c in out:
        self.origin.setdefault(config_id(c), "gp")
    return out


_shares = pf.Portfolio.shares


def shares(self, observed):
    o = self.options
    if observed < o["joint_until"] or observed >= o["gp_until"] or self._late(observed):
        return _shares(self, observed)
    top = max(self.credit.values())
    w = {a: math.exp((self.credit[a] - top) / T) for a in ARMS}
    total = sum(w.values())
    s = {a: FLOOR + (1 - len(ARMS) * FLOOR) * w[a] / total for a in ARMS}
    return {"gp": s["gp"], "smooth": s["smooth"]}


_batch = mg.ModelGuided._model_batch


def model_batch(self, *a, **k):
    CURRENT[:] = [self]
    try:
        return _batch(self, *a, **k)
    finally:
        CURRENT.clear()


_diverse = mg.pick_diverse


def pick_diverse(*a, **k):
    out = _diverse(*a, **k)
    if CURRENT:
        for c in out:
            CURRENT[0]._portfolio.origin.setdefault(config_id(c), "ensemble")
    return out


_observe = mg.ModelGuided.observe


def observe(self, results):
    p = self._portfolio
    speed = [r.median_s if r.status == OK and r.median_s else math.inf for r in results]
    rewards = {}
    for i, r in enumerate(results):
        arm = p.origin.pop(config_id(r.config), None)
        if arm is None or len(results) < 2:
            continue
        beaten = sum(speed[i] < speed[j] for j in range(len(results)) if j != i) if speed[i] < math.inf else 0
        rewards.setdefault(arm, []).append(beaten / (len(results) - 1))
    for arm, values in rewards.items():
        p.credit[arm] = MEMORY * p.credit[arm] + (1 - MEMORY) * sum(values) / len(values)
    return _observe(self, results)


pf.Portfolio.__init__, pf.Portfolio._smooth_picks, pf.Portfolio._picks = init, smooth_picks, picks
pf.Portfolio.shares = shares
mg.ModelGuided._model_batch, mg.pick_diverse, mg.ModelGuided.observe = model_batch, pick_diverse, observe



def probe(names: str, seeds: int) -> None:
    from tuner_server.replay import context_for
    from tuner_server.search import make_strategy
    for name, table in se.load_spaces(se.parse_args(["--tables", "", "--synthetic", names])).items():
        at = {64: [], 96: [], 128: []}
        for seed in range(seeds):
            search = make_strategy("model", context_for(table, seed, {"smooth_batch": 3}))
            observed = []
            while len(observed) < max(at):
                results = [table.measure(c) for c in search.propose(8)]
                search.observe(results)
                observed += results
                if len(observed) in at:
                    at[len(observed)].append(dict(search._portfolio.credit))
        print(name, " ".join(f"{n}: " + ",".join(f"{a}={sum(d[a] for d in v) / len(v):.2f}" for a in ARMS)
                             for n, v in at.items()), flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--probe"]:
        probe(sys.argv[2], int(sys.argv[3]))
    else:
        se.main(sys.argv[1:])
