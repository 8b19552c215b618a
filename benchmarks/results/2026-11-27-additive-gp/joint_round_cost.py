"""What the additive GP adds to a proposal: the model strategy's first 48 measurements (its joint rounds) on a large
synthetic space, with and without `joint_additive`, milliseconds per proposed config (median of the seeds). From the
repository root:

    python3 benchmarks/results/2026-11-27-additive-gp/joint_round_cost.py synth-basins-9k11-s21 5
"""
import statistics
import sys
import time

sys.path[:0] = ["benchmarks", "."]  # run from the repository root
from tuner_server.replay import context_for  # noqa: E402
from tuner_server.search import make_strategy  # noqa: E402
from tuner_server.synthetic_spaces import spec_from_name, synthetic_table  # noqa: E402

JOINT, BATCH = 48, 8


def ms_per_config(table, seed: int, options: dict) -> float:
    search = make_strategy("model", context_for(table, seed, options))
    spent, proposed = 0.0, 0
    while proposed < JOINT:
        t0 = time.perf_counter()
        batch = search.propose(BATCH)
        spent += time.perf_counter() - t0
        proposed += len(batch)
        search.observe([table.measure(c) for c in batch])
    return 1e3 * spent / proposed


def main(space: str, seeds: int) -> None:
    table = synthetic_table(spec_from_name(space))
    for options in ({"joint_additive": False}, {}):
        runs = [ms_per_config(table, seed, options) for seed in range(seeds)]
        print(f"{space}, {options or 'defaults'}: {statistics.median(runs):.1f} ms per proposed config "
              f"(seeds: {', '.join(f'{r:.1f}' for r in runs)})")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
