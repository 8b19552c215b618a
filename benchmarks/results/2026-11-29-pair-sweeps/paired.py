"""A variant's runs against the default's runs of the same seeds, per space: the best of GA and BO ("ref": median
measurements to 5 % of the optimum, reach, best@100), the default's and the variant's, SHORT where the medians' bar
is missed, how many runs changed, and the one-sided Wilcoxon signed-rank p of the paired runs where below 0.1.

    python3 benchmarks/results/2026-11-28-late-phase/combined.py /tmp/default.jsonl
    python3 benchmarks/results/2026-11-29-pair-sweeps/paired.py /tmp/default.jsonl VARIANT.jsonl
"""
import sys
from pathlib import Path

from scipy.stats import wilcoxon

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "2026-11-28-late-phase"))
from compare import REFERENCES, runs, summary, to_5pct  # noqa: E402


def line(space: str, base: dict, variant: dict, references: list[dict]) -> str:
    seeds = sorted(variant[space])
    b, v = [base[space][s] for s in seeds], [variant[space][s] for s in seeds]
    refs = [summary([r[space][s] for s in seeds]) for r in references if space in r]
    ref = (min(x[0] for x in refs), max(x[1] for x in refs), min(x[2] for x in refs)) if refs else None
    diff = [to_5pct(x) - to_5pct(y) for x, y in zip(b, v, strict=True) if to_5pct(x) != to_5pct(y)]
    p = ""
    if len(diff) >= 6:
        faster, slower = (wilcoxon(diff, alternative=side).pvalue for side in ("greater", "less"))
        p = f"faster p={faster:.3f}" if faster < 0.1 else f"SLOWER p={slower:.3f}" if slower < 0.1 else ""

    def fmt(t: tuple) -> str:
        return f"{t[0]:g} {t[1]:.2f} {t[2]:.3f}"

    def short(t: tuple) -> str:
        met = ref is None or (t[0] <= ref[0] and t[1] >= ref[1] and t[2] <= ref[2] + 1e-9)
        return "" if met else " SHORT"

    bs, vs = summary(b), summary(v)
    return (f"{space:38s} n={len(seeds):3d} ref {fmt(ref) if ref else '-':18s} default {fmt(bs)}{short(bs)} | "
            f"variant {fmt(vs)}{short(vs)} changed={len(diff)} {p}")


def main(base_path: str, variant_path: str) -> None:
    references = [runs(REFERENCES, s) for s in ("ga", "bo")]
    base, variant = runs(base_path), runs(variant_path)
    for space in sorted(variant):
        print(line(space, base, variant, references))


if __name__ == "__main__":
    main(*sys.argv[1:3])
