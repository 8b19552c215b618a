"""Where a seed's run ends: after 400 measurements (or on reaching 5 % of the optimum), the best config's runtime over
the optimum, its distance in knobs to the nearest config within 5 % ("good"), its one-knob neighbours and how many
are left unmeasured, the six fastest measured configs as (runtime ratio, distance to good), and how close any
measured config came to a good one.

    python3 benchmarks/results/2026-11-29-pair-sweeps/stuck.py synth-noisy-7k11-s16 7,8,11,23 '{"sweep_pairs": 16}'
"""
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(REPO / "benchmarks"), str(REPO)]
import search_efficiency as se  # noqa: E402

from tuner_server.replay import run_strategy  # noqa: E402
from tuner_server.search.base import OK  # noqa: E402
from tuner_server.search.knob_walk import config_id, hamming, neighbours  # noqa: E402


def main(name: str, seeds: list[int], options: dict) -> None:
    table = se.load_spaces(se.parse_args(["--tables", "", "--synthetic", name]))[name]
    good = [o.config for o in table.results.values()
            if o.status == OK and o.median_s is not None and o.median_s <= 1.05 * table.optimum]
    for seed in seeds:
        observed = run_strategy(table, "model", 400, seed=seed, options=options)
        seen = {config_id(o.config) for o in observed}
        measured = sorted((o for o in observed if o.status == OK and o.median_s), key=lambda o: o.median_s)
        best = measured[0]
        near = [c for c, _ in neighbours(table.space, best.config)]
        top = [(round(o.median_s / table.optimum, 3), min(hamming(o.config, g) for g in good)) for o in measured[:6]]
        closest = min(hamming(o.config, g) for o in observed for g in good)
        print(f"seed {seed} to_5pct={se.reach(observed, table.optimum)} best {best.median_s / table.optimum:.3f} "
              f"d_good={min(hamming(best.config, g) for g in good)} neighbours={len(near)} "
              f"unmeasured={sum(config_id(c) not in seen for c in near)} top6={top} closest_to_good={closest}",
              flush=True)


if __name__ == "__main__":
    main(sys.argv[1], [int(s) for s in sys.argv[2].split(",")], json.loads(sys.argv[3]) if len(sys.argv) > 3 else {})
