"""How many one-knob neighbours of a config a space records, against its knobs' product: what a sweep of a basin's
best (one-knob moves) can measure there.

    PYTHONPATH=. python3 benchmarks/results/2026-11-30-pattern-moves/neighbours.py synth-basins-11k12-s32 ...

A name that is not a synthetic space's is read as a recorded table's file (benchmarks/data/...).
"""
import sys

import numpy as np

from tuner_server.replay import load_table
from tuner_server.synthetic_spaces import spec_from_name, synthetic_table


def recorded_neighbours(config: dict, knobs: list, recorded: set) -> int:
    return sum(tuple(sorted({**config, k.name: v}.items())) in recorded
               for k in knobs for v in k.choices if v != config[k.name])


def line(name: str) -> str:
    table = synthetic_table(spec_from_name(name)) if name.startswith("synth-") else load_table(name)
    knobs = [k for k in table.space.knobs if len(k.choices) > 1]
    product = int(np.prod([len(k.choices) for k in knobs], dtype=np.float64))
    observations = list(table.results.values())
    recorded = {tuple(sorted(o.config.items())) for o in observations}
    sample = [o.config for o in observations[:: max(1, len(observations) // 500)]]
    fastest = [o.config for o in sorted((o for o in observations if o.median_s is not None),
                                        key=lambda o: o.median_s)[:64]]
    mean = {which: np.mean([recorded_neighbours(c, knobs, recorded) for c in configs])
            for which, configs in (("sample", sample), ("fastest", fastest))}
    short = name.rsplit("/", 1)[-1].removesuffix(".json.gz")
    return (f"| {short} | {len(observations)} | {product} | {len(observations) / product:.2f} | "
            f"{sum(len(k.choices) - 1 for k in knobs)} | {mean['sample']:.1f} | {mean['fastest']:.1f} |")


if __name__ == "__main__":
    print("| space | configs | product | recorded share | one-knob neighbours in the product | recorded (mean) | "
          "recorded, at the 64 fastest configs (mean) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name in sys.argv[1:]:
        print(line(name))
