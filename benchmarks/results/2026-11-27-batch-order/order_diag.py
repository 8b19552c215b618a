"""Within-batch order: where the first config within 5 % of the optimum sits in its batch, as the strategy's parts
proposed it (`fastest_first` off) and sorted by each surrogate's prediction of the batch (the fitted GP's, the smooth
GP's, the ensemble's, the best-trusted one's). The trajectory is the proposed one: only the position inside the batch
that reaches 5 % changes. One JSON line per call; from the repository root:

    python3 benchmarks/results/2026-11-27-batch-order/order_diag.py synth-basins-9k11-s21 0 20   # seeds 0-19
"""
import json
import sys

import numpy as np

sys.path[:0] = ["benchmarks", "."]  # run from the repository root
import tuner_server.search.model_guided as mg  # noqa: E402
from tuner_server.replay import load_table, run_strategy  # noqa: E402
from tuner_server.search.knob_walk import config_id  # noqa: E402
from tuner_server.synthetic_spaces import spec_from_name, synthetic_table  # noqa: E402

SURROGATES = ("gp", "smooth", "ensemble")  # the order of the portfolio's predictions
SNAP: dict[tuple, tuple] = {}  # config id -> (the portfolio's predictions, its trusts and updates when proposed)
_propose = mg.ModelGuided.propose


def propose(self, n):
    batch = _propose(self, n)
    portfolio = self._portfolio
    trust = (*(portfolio.trust[s] for s in SURROGATES), portfolio.judge.updates)
    for config in batch:
        SNAP[config_id(config)] = (portfolio.judge.predicted.get(config_id(config)), trust)
    return batch


mg.ModelGuided.propose = propose


def table_for(name: str):
    if name.startswith("synth"):
        return synthetic_table(spec_from_name(name))
    return load_table(f"benchmarks/data/{name}.json.gz")


def positions(batch, good: list[bool]) -> dict[str, int]:
    """1-based position of the first good config of `batch` under each order."""
    snaps = [SNAP.get(config_id(o.config), (None, None)) for o in batch]
    out = {"proposed": good.index(True) + 1}
    scores = np.array([s if s is not None else (np.nan,) * 3 for s, _ in snaps], dtype=float)
    trust = next((t for _, t in snaps if t is not None), None)

    def by(column: int) -> int:
        values = scores[:, column]
        if np.isnan(values).all():
            return out["proposed"]
        order = np.argsort(-np.nan_to_num(values, nan=-np.inf), kind="stable")
        return next(p for p, i in enumerate(order) if good[i]) + 1

    out["gp"], out["smooth"], out["ensemble"] = by(0), by(1), by(2)
    usable = [i for i in range(3) if not np.isnan(scores[:, i]).all()]
    if trust is None or not usable:
        out["trusted"] = out["trusted_gp_first"] = out["proposed"]
        return out
    best = max(usable, key=lambda i: (trust[i], -i))
    out["trusted"] = by(best)
    out["trusted_gp_first"] = by(best if trust[3] > 0 else (0 if 0 in usable else best))
    return out


def main(space: str, seeds: range) -> None:
    table = table_for(space)
    runs = []
    for seed in seeds:
        SNAP.clear()
        observed = run_strategy(table, "model", 400, seed=seed, batch=8, options={"fastest_first": False})
        hit = next((i for i, o in enumerate(observed) if o.median_s and o.median_s <= 1.05 * table.optimum), None)
        if hit is None:
            runs.append({"seed": seed})
            continue
        start = hit - hit % 8
        batch = observed[start:start + 8]
        good = [o.median_s is not None and o.median_s <= 1.05 * table.optimum for o in batch]
        runs.append({"seed": seed, **{k: start + v for k, v in positions(batch, good).items()}})
    print(json.dumps({"space": space, "runs": runs}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], range(int(sys.argv[2]), int(sys.argv[3])))
