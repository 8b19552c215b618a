"""What a job knows at 48 measurements, on the runs not yet within 5 % of the optimum: the portfolio's trust in the
fitted GP, the ensemble and the smooth GP, the fitted kernel's noise, amplitude and median length scale, the faster
configs found among the last 24 measurements, and the best runtime over the optimum (medians over the seeds).

    python3 benchmarks/results/2026-11-29-early-window/gate_probe.py SPACE,SPACE,... SEEDS
"""
import statistics
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(REPO / "benchmarks"), str(REPO)]
import search_efficiency as se  # noqa: E402

from tuner_server.replay import context_for  # noqa: E402
from tuner_server.search import make_strategy  # noqa: E402
from tuner_server.search.base import OK  # noqa: E402

AT = 48


def probe(table, seed: int) -> dict | None:
    search = make_strategy("model", context_for(table, seed, {}))
    observed = []
    while len(observed) < AT:
        results = [table.measure(c) for c in search.propose(8)]
        search.observe(results)
        observed += results
    if se.reach(observed, table.optimum) is not None:
        return None
    portfolio, kernel = search._portfolio, search._portfolio._hyper
    best = np.minimum.accumulate([o.median_s for o in observed if o.status == OK and o.median_s])
    return {"gp": portfolio.trust["gp"], "ensemble": portfolio.trust["ensemble"], "smooth": portfolio.trust["smooth"],
            "noise": kernel.noise, "amplitude": kernel.amplitude, "lengthscale": float(np.median(kernel.lengthscales)),
            "faster_in_last_24": int((np.diff(best) < 0)[-24:].sum()), "best_over_optimum": best[-1] / table.optimum}


def main(names: str, seeds: int) -> None:
    spaces = se.load_spaces(se.parse_args(["--tables", "", "--synthetic", names]))
    for name, table in spaces.items():
        rows = [r for r in (probe(table, seed) for seed in range(seeds)) if r is not None]
        medians = " ".join(f"{k}={statistics.median(r[k] for r in rows):.3f}" for k in (rows[0] if rows else ()))
        print(f"{name:26s} short at {AT}: {len(rows):2d} {medians}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
