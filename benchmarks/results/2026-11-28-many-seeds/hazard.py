"""Per strategy and space: of the runs that have not reached 5 % of the optimum by the start of each window of
measurements, the share that reach it within the window, per 100 measurements (a hazard rate, in %).

    python3 benchmarks/results/2026-11-28-many-seeds/hazard.py RUNS.jsonl [SPACE ...]
"""
import collections
import json
import sys

WINDOWS = ((0, 128), (128, 256), (256, 400))


def hazards(values: list[int]) -> list[tuple[int, int, float]]:
    """(runs alive at the window's start, runs reaching 5 % within it, hazard in % per measurement) per window."""
    out = []
    for start, end in WINDOWS:
        alive = [v for v in values if v > start]
        hit = [v for v in alive if v <= end]
        out.append((len(alive), len(hit), 100 * len(hit) / max(len(alive), 1) / (end - start)))
    return out


def main(path: str, *spaces: str) -> None:
    runs = collections.defaultdict(list)
    for line in open(path):
        r = json.loads(line)
        if "space" in r and (not spaces or r["space"] in spaces):
            runs[(r["space"], r["strategy"])].append(r["to_5pct"] or 401)
    print("| space | strategy | " + " | ".join(f"{a + 1}-{b}: alive, reached, % per measurement" for a, b in WINDOWS)
          + " |")
    print("|---|---|" + "---|" * len(WINDOWS))
    for (space, strategy), values in sorted(runs.items()):
        cells = [f"{alive}, {hit}, {rate:.2f}" for alive, hit, rate in hazards(values)]
        print(f"| {space} | {strategy} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(*sys.argv[1:])
