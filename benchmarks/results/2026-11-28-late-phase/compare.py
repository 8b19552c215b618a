"""Variants of the model strategy against the default they would replace, seed for seed, and against GA and BO.

Per space where anything differs or falls short: GA's or BO's best median measurements to 5 % of the optimum and
their best fraction of seeds reaching it ("ref"), then for the base and each variant its median, its fraction, SHORT
where it misses the medians' bar (median, reach and best@100 each at least as good as the best reference's), and the
one-sided Wilcoxon signed-rank p of the paired runs against the base where below 0.1 (a run never reaching 5 % counts
as more than any that does). Last, the spaces at the bar for each (a space GA and BO never ran counts as met).

    python3 benchmarks/results/2026-11-28-late-phase/compare.py BASE.jsonl VARIANT.jsonl ...
"""
import collections
import json
import math
import statistics
import sys
from pathlib import Path

from scipy.stats import wilcoxon

REFERENCES = Path(__file__).resolve().parents[1] / "2026-11-28-many-seeds" / "ga-bo-model-160seeds.jsonl"
NEVER = 10**6  # measurements to 5 % of a run that never got there


def runs(path, strategy: str | None = None) -> dict:
    out = collections.defaultdict(dict)
    for line in Path(path).read_text().splitlines()[1:]:
        r = json.loads(line)
        if strategy is None or r["strategy"] == strategy:
            out[r["space"]][r["seed"]] = r
    return out


def to_5pct(r: dict) -> int:
    return NEVER if r["to_5pct"] is None else r["to_5pct"]


def summary(rs: list[dict]) -> tuple[float, float, float]:
    return (statistics.median(map(to_5pct, rs)), sum(r["to_5pct"] is not None for r in rs) / len(rs),
            statistics.median(r["best_at_100"] for r in rs))


def paired(base: list[dict], variant: list[dict]) -> str:
    diff = [to_5pct(a) - to_5pct(b) for a, b in zip(base, variant, strict=True) if to_5pct(a) != to_5pct(b)]
    if len(diff) < 6:
        return ""
    faster, slower = (wilcoxon(diff, alternative=side).pvalue for side in ("greater", "less"))
    return f" faster p={faster:.3f}" if faster < 0.1 else f" SLOWER p={slower:.3f}" if slower < 0.1 else ""


def main(base_path: str, *variant_paths: str) -> None:
    references = [runs(REFERENCES, s) for s in ("ga", "bo")]
    columns = [runs(base_path)] + [runs(p) for p in variant_paths]
    at_bar = [0] * len(columns)
    print("| space | ref | " + " | ".join(Path(p).stem for p in (base_path, *variant_paths)) + " |")
    print("|---|---|" + "---|" * len(columns))
    for space in sorted(columns[0]):
        seeds = sorted(columns[0][space])
        refs = [summary([ref[space][s] for s in seeds]) for ref in references if space in ref]
        if refs:
            median, reach, best = min(r[0] for r in refs), max(r[1] for r in refs), min(r[2] for r in refs)
        else:  # a space GA and BO never ran: no bar, only the paired tests
            median, reach, best = math.inf, 0.0, math.inf
        cells = []
        for i, column in enumerate(columns):
            rs = [column[space][s] for s in seeds]
            m, f, b = summary(rs)
            ok = m <= median and f >= reach and b <= best + 1e-12
            at_bar[i] += ok
            cells.append(f"{'>400' if m >= NEVER else m} {f:.2f}{'' if ok else ' SHORT'}"
                         + (paired([columns[0][space][s] for s in seeds], rs) if i else ""))
        if any("SHORT" in c or "p=" in c for c in cells) or len({c.split()[1] for c in cells}) > 1:
            ref = "—" if not refs else f"{'>400' if median >= NEVER else median} {reach:.2f}"
            print(f"| {space} | {ref} | " + " | ".join(cells) + " |")
    print("\nspaces at the bar: " + ", ".join(f"{Path(p).stem} {n}"
                                              for p, n in zip((base_path, *variant_paths), at_bar, strict=True)))


if __name__ == "__main__":
    main(*sys.argv[1:])
