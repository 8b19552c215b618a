"""A screened variant: once the model strategy has stalled (FORK_STALL observations in a row without a faster config,
and at least FORK_AFTER observations), FORK_SLOTS of each batch go to an independent Bayesian optimisation (the BO
reference strategy, every unmeasured config scored) that sees only its own measurements and FORK_SEED spread-out
configs of its own first: a restart in BO's mode, whose data is not the settled basin's. It pauses while the main
search improves, and resumes when it stalls again. The main search observes every result, so what the fork finds,
the main search's sweeps deepen. From the repository root:

    FORK_STALL=48 FORK_SLOTS=4 python3 benchmarks/results/2026-11-27-basins11k-variants/bo_fork.py --tables '' \\
        --synthetic synth-basins-11k12-s32 --seeds 40 --jobs 2 --strategies model --checkpoint fork.jsonl
"""
import os
import sys

sys.path[:0] = ["benchmarks", "."]  # run from the repository root
import search_efficiency  # noqa: E402

from tuner_server.search import model_guided  # noqa: E402
from tuner_server.search.base import StrategyContext  # noqa: E402
from tuner_server.search.bayes_opt import BayesOpt  # noqa: E402
from tuner_server.search.knob_walk import config_id  # noqa: E402
from tuner_server.search.listing import UnseenDraws  # noqa: E402

STALL = int(os.environ.get("FORK_STALL", "48"))
AFTER = int(os.environ.get("FORK_AFTER", "48"))
SLOTS = int(os.environ.get("FORK_SLOTS", "4"))
SEED = int(os.environ.get("FORK_SEED", "16"))  # the fork's own spread-out configs before its first EI pick
KEEP = os.environ.get("FORK_KEEP", "stalled")  # "stalled": slots only while stalled; "always": once started

ModelGuided = model_guided.ModelGuided
propose, observe = ModelGuided.propose, ModelGuided.observe


def forking(self) -> bool:
    if getattr(self, "_fork", None) is not None and KEEP == "always":
        return True
    return len(self._own) >= AFTER and self._since_best >= STALL


def fork_propose(self, n):
    picks = []
    if n > 0 and not self.stopped and self._current_model() is not None and forking(self):
        if getattr(self, "_fork", None) is None:
            fork = BayesOpt(StrategyContext(self.space, seed=self.context.seed + 7919,
                                            options={"popsize": SEED, "candidates": 1 << 30}))
            fork._seen = self._seen  # never proposes what the main search proposed or measured
            fork._draws = UnseenDraws(self.space, self._seen, fork.rng)
            self._fork, self._fork_ids = fork, set()
        picks = self._fork.propose(min(SLOTS, n))
        for config in picks:
            key = config_id(config)
            self._fork_ids.add(key)
            self._pool.pop(key, None)
            if self._listed is not None:
                self._listed.mark_seen(config)
    return propose(self, n - len(picks)) + picks


def fork_observe(self, results):
    observe(self, results)
    fork = getattr(self, "_fork", None)
    if fork is not None:
        fork.observe([r for r in results if config_id(r.config) in self._fork_ids])


if __name__ == "__main__":
    ModelGuided.propose, ModelGuided.observe = fork_propose, fork_observe  # before the worker processes fork
    search_efficiency.main(sys.argv[1:])
