"""Can a job tell from its first measurements which GP kernel will search better? For every space of
benchmarks/search_efficiency.py: 24 configs drawn at random (six draws), each predicted from the other 23 by (a) the BO
reference's fixed kernel on runtimes and (b) the portfolio's fitted kernel (per-knob length scales) on log-runtimes;
Spearman's rho of those leave-one-out predictions against the runtimes, beside BO's median measurements to 5 % over
the model strategy's (seeds 0-19 of the stored runs). From the repository root:

    python3 benchmarks/results/2026-11-27-surrogate-diagnosis/loo_signal.py > loo_signal.txt
"""
import json
import random
import sys
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

sys.path[:0] = ["benchmarks", "."]  # run from the repository root
import search_efficiency  # noqa: E402

from tuner_server.search.base import OK  # noqa: E402
from tuner_server.search.gaussian_process import GaussianProcess, KnobCoordinates, standardised  # noqa: E402
from tuner_server.search.gp_fit import fit_hyperparameters  # noqa: E402

POINTS, DRAWS = 24, 6
UNSEEN = ("synth-smooth-7k11-s31 synth-basins-11k12-s32 synth-needle-9k11-s33 synth-needle-14k12-s34 "
          "synth-invalid-10k11-s35 synth-noisy-8k10-s36 synth-noisy-12k13-s37 synth-basins-6k10-s38").split()
RUNS = ("benchmarks/results/2026-11-27-bo-faithful/combined-40seeds.json",
        "benchmarks/results/2026-11-27-search_efficiency-unseen-20seeds.json")


def fixed(X, y):
    return GaussianProcess(X, y, 1.5), lambda m: m


def fitted(X, y):
    h = fit_hyperparameters(X, standardised(np.log(y))[0])
    return GaussianProcess(X, np.log(y), h.lengthscales, h.amplitude, h.noise), np.exp


def loo_rho(make, X, y) -> float:
    predicted = []
    for i in range(len(y)):
        rest = np.arange(len(y)) != i
        gp, back = make(X[rest], y[rest])
        predicted.append(back(gp.posterior(X[i:i + 1])[0][0] * gp.sd + gp.mu))
    return float(spearmanr(predicted, y)[0])


def main() -> None:
    runs = [r for path in RUNS for r in json.loads(Path(path).read_text())["runs"] if r["seed"] < 20]
    spaces = search_efficiency.load_spaces(search_efficiency.parse_args(["--synthetic", ",".join(["every", *UNSEEN])]))
    print(f"{'space':34s} {'BO/model':>8s} {'rho fixed':>9s} {'rho fitted':>10s}")
    for name, table in spaces.items():
        median = {s: float(np.median([r["to_5pct"] or 401 for r in runs if r["space"] == name and r["strategy"] == s]))
                  for s in ("bo", "model")}
        coords = KnobCoordinates(table.space)
        ran = [o for o in table.results.values() if o.status == OK and o.median_s]
        rho = {"fixed": [], "fitted": []}
        for seed in range(DRAWS):
            picked = random.Random(seed).sample(ran, POINTS)
            X, y = coords.points([o.config for o in picked]), np.array([o.median_s for o in picked])
            rho["fixed"].append(loo_rho(fixed, X, y))
            rho["fitted"].append(loo_rho(fitted, X, y))
        print(f"{name:34s} {median['bo'] / median['model']:8.2f} {np.mean(rho['fixed']):9.2f} "
              f"{np.mean(rho['fitted']):10.2f}", flush=True)


if __name__ == "__main__":
    main()
