"""The best runtime over the optimum after 16, 32, ..., 200 measurements, per seed, of the named strategies on one
space (BO scores every config, as in search_efficiency.py), and the measurements to 5 %.

    python3 benchmarks/results/2026-11-29-early-window/curves.py synth-basins-11k12-s32 10 model,bo
"""
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(REPO / "benchmarks"), str(REPO)]
import search_efficiency as se  # noqa: E402

from tuner_server.replay import run_strategy  # noqa: E402
from tuner_server.search.base import OK  # noqa: E402

AT = (16, 32, 48, 64, 96, 128, 160, 200)


def main(name: str, seeds: int, strategies: str) -> None:
    table = se.load_spaces(se.parse_args(["--tables", "", "--synthetic", name]))[name]
    print("strategy seed " + " ".join(map(str, AT)) + " to_5pct(within 200)")
    for strategy in strategies.split(","):
        for seed in range(seeds):
            options = {"candidates": len(table)} if strategy == "bo" else {}
            observed = run_strategy(table, strategy, max(AT), seed=seed, options=options)
            runtimes = [o.median_s if o.status == OK and o.median_s else np.inf for o in observed]
            best = np.minimum.accumulate(runtimes) / table.optimum
            print(strategy, seed, " ".join(f"{best[min(a, len(best)) - 1]:.3f}" for a in AT),
                  se.reach(observed, table.optimum), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
