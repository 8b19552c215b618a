"""The README's diagnostic: at 16/24/32/40 observations of model runs, the best true runtime over the optimum that each
surrogate's whole batch of 8 would have reached (median over seeds, the incumbent counted), and the fitted GP's four
shortest length scales of seed 0. Run from the repository root:

    python3 benchmarks/results/2026-11-27-search-variants-40seeds/counterfactual.py synth-noisy-10k12-s26 12
    python3 benchmarks/results/2026-11-27-search-variants-40seeds/counterfactual.py \
        benchmarks/data/cpu-matmul-256x256x256.json.gz 12
"""
import statistics
import sys

import numpy as np

sys.path.insert(0, ".")  # run from the repository root
from tuner_server.replay import load_table, run_strategy  # noqa: E402
from tuner_server.search import model_guided  # noqa: E402
from tuner_server.search.gaussian_process import GaussianProcess, standardised  # noqa: E402
from tuner_server.search.gp_fit import fit_hyperparameters  # noqa: E402
from tuner_server.search.knob_walk import config_id, pick_diverse  # noqa: E402
from tuner_server.synthetic_spaces import FRESH, HELD_OUT, PRESETS, synthetic_table  # noqa: E402

AT = (16, 24, 32, 40)


def main() -> None:
    name, seeds = sys.argv[1], int(sys.argv[2])
    table = load_table(name) if name.endswith(".gz") else synthetic_table((PRESETS | HELD_OUT | FRESH)[name])
    opt = table.optimum
    listed = list(table.space)
    ids = [config_id(c) for c in listed]
    row_of = {key: i for i, key in enumerate(ids)}
    true = np.array([table.measure(c).median_s or np.inf for c in listed])
    found: dict[int, list[dict]] = {}
    propose = model_guided.ModelGuided.propose

    def counted(self, n):
        if len(self._own) in AT and self._model is not None:
            found.setdefault(len(self._own), []).append(batches(self))
        return propose(self, n)

    def batches(search) -> dict:
        observations = list(search._own.values())
        rows = np.flatnonzero([key not in search._seen for key in ids])
        C = search._portfolio.coords.points([listed[i] for i in rows])
        ran, y = search._portfolio._ran(observations, 256)
        X = search._portfolio.coords.at(ran)
        incumbent = min(o.median_s for o in observations if o.median_s) / opt
        h = fit_hyperparameters(X, standardised(np.log(y))[0])
        picks = {
            "ensemble": [row_of[config_id(c)] for c in pick_diverse(search._ranked(search._model, 64), 8, 2)],
            "fitted GP": [rows[j] for j in GaussianProcess(X, np.log(y), h.lengthscales, h.amplitude,
                                                           h.noise).ei_batch(C, 8, 0.01)],
            "smooth GP": [rows[j] for j in GaussianProcess(X, y, 1.5).ei_batch(C, 8, 0.01)],
        }
        out = {"incumbent": incumbent, **{k: min(incumbent, true[p].min() / opt) for k, p in picks.items()}}
        return out | {"lengthscales": np.round(np.sort(h.lengthscales), 2).tolist()[:4]}

    model_guided.ModelGuided.propose = counted
    for seed in range(seeds):
        run_strategy(table, "model", max(AT) + 8, seed=seed)
    for k, outs in sorted(found.items()):
        medians = {key: round(statistics.median(o[key] for o in outs), 3) for key in outs[0] if key != "lengthscales"}
        print(k, medians, outs[0]["lengthscales"])


if __name__ == "__main__":
    main()
