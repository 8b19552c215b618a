"""Per space: median measurements to 5 % of the optimum, the fraction of seeds reaching it, the fractions by
measurement 48, 96, 128 and 256, for the default, BO and GA of a full checkpoint and for each variant's runs of the
same seeds, with the one-sided signed-rank p of each variant against the default.

    python3 benchmarks/results/2026-11-28-late-phase/combined.py /tmp/default.jsonl
    python3 benchmarks/results/2026-11-29-early-window/windows.py /tmp/default.jsonl VARIANT.jsonl ...
"""
import statistics
import sys
from pathlib import Path

from scipy.stats import wilcoxon

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "2026-11-28-late-phase"))
import compare  # noqa: E402

NEVER = compare.NEVER
WINDOWS = (48, 96, 128, 256)


def runs(path: str, strategy: str = "model") -> dict:
    """Measurements to 5 % by space and seed (NEVER for a run that did not get there)."""
    return {space: {seed: compare.to_5pct(r) for seed, r in by_seed.items()}
            for space, by_seed in compare.runs(path, strategy).items()}


def main(full: str, *variants: str) -> None:
    default = runs(full)
    columns = [("default", default), ("BO", runs(full, "bo")), ("GA", runs(full, "ga"))]
    columns += [(Path(v).stem, runs(v)) for v in variants]
    for space in runs(variants[0]):
        seeds = sorted(runs(variants[0])[space])
        base = [default[space][s] for s in seeds]
        for name, column in columns:
            v = [column[space][s] for s in seeds]
            p = ""
            diff = [a - b for a, b in zip(base, v, strict=True) if a != b]
            if name not in ("default", "BO", "GA") and len(diff) > 5:
                p = (f"faster p={wilcoxon(diff, alternative='greater').pvalue:.3f} "
                     f"slower p={wilcoxon(diff, alternative='less').pvalue:.3f}")
            by = " ".join(f"<={w}:{sum(t <= w for t in v) / len(v):.2f}" for w in WINDOWS)
            print(f"{space:26s} {name:36s} median {statistics.median(v):7.1f} reach "
                  f"{sum(t < NEVER for t in v) / len(v):.2f} {by} {p}")


if __name__ == "__main__":
    main(*sys.argv[1:])
