"""The next candidate's two forms side by side: fresh picks of 3 from 128 observations over every config of a listed
space, scored by a posterior computed afresh each batch (`smooth_candidates` 16,384, as screened on 2026-11-28) or by
the growing posterior (`listed_from` 128). Prints whether the model strategy proposed the same configs, and the time
of its proposal rounds between 128 and 255 observations, with the default's beside them.

    python3 benchmarks/results/2026-11-29-listed-from/same_picks.py synth-noisy-7k11-s16 [SEED ...]
"""
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from tuner_server.replay import context_for  # noqa: E402
from tuner_server.search import make_strategy  # noqa: E402
from tuner_server.synthetic_spaces import spec_from_name, synthetic_table  # noqa: E402

VARIANTS = {"default": {}, "afresh": {"smooth_batch": 3, "smooth_candidates": 16384},
            "growing": {"smooth_batch": 3, "listed_from": 128}}
BUDGET = 256


def run(table, seed: int, options: dict) -> tuple[list, list[float]]:
    search = make_strategy("model", context_for(table, seed, options))
    proposed, middle = [], []
    while len(proposed) < BUDGET:
        t0 = time.perf_counter()
        configs = search.propose(8)
        if 128 <= len(proposed):
            middle.append(time.perf_counter() - t0)
        search.observe([table.measure(c) for c in configs])
        proposed += configs
    return proposed, middle


def main(space: str, seeds: list[int]) -> None:
    table = synthetic_table(spec_from_name(space))
    for seed in seeds:
        runs = {name: run(table, seed, options) for name, options in VARIANTS.items()}
        same = runs["afresh"][0] == runs["growing"][0]
        times = ", ".join(f"{name} {1e3 * statistics.median(middle):.0f} ms" for name, (_, middle) in runs.items())
        print(f"{space} seed {seed}: {'same' if same else 'different'} {BUDGET} proposals; rounds 128-255 median: "
              f"{times}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], [int(s) for s in sys.argv[2:]] or [0])
