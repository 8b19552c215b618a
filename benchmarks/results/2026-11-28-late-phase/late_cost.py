"""Time per proposal round (8 configs) of the model strategy replaying a synthetic space, before and after the last
phase starts (256 observations), for the default, the sampled path (`late_candidates` 0) and every config computed
afresh each round.

    python3 benchmarks/results/2026-11-28-late-phase/late_cost.py synth-needle-15k13-s23 [SEED]
"""
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from tuner_server.replay import context_for  # noqa: E402
from tuner_server.search import make_strategy  # noqa: E402
from tuner_server.synthetic_spaces import spec_from_name, synthetic_table  # noqa: E402

VARIANTS = ({}, {"late_candidates": 0}, {"late_candidates": 0, "smooth_candidates": 16384})


def main(space: str, seed: int = 3) -> None:
    table = synthetic_table(spec_from_name(space))
    for options in VARIANTS:
        search = make_strategy("model", context_for(table, seed, options))
        observed, rounds = [], []
        while len(observed) < 400:
            t0 = time.perf_counter()
            configs = search.propose(8)
            rounds.append((len(observed), time.perf_counter() - t0))
            results = [table.measure(c) for c in configs]
            search.observe(results)
            observed += results
        mid = [dt for n, dt in rounds if 128 <= n < 256]
        late = [dt for n, dt in rounds if n >= 256]
        print(f"{options}: ms per round, 128-255 median {1e3 * statistics.median(mid):.0f}; 256-399 median "
              f"{1e3 * statistics.median(late):.0f}, max {1e3 * max(late):.0f}")


if __name__ == "__main__":
    main(sys.argv[1], *map(int, sys.argv[2:]))
