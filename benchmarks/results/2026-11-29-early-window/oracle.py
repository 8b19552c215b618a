"""How far choosing a variant per space could go: on each space where the default falls short of the medians' bar,
every variant of the model strategy stored at 160 seeds (any jsonl under benchmarks/results/ holding that space's
160 seeds), best first, and whether it meets the bar there (median, reach and best@100 each at least as good as the
best of GA and BO). A space none meets stays short even for a rule that knew each space's best variant beforehand.

    python3 benchmarks/results/2026-11-28-late-phase/combined.py /tmp/default.jsonl   # today's default, 160 seeds
    python3 benchmarks/results/2026-11-29-early-window/oracle.py /tmp/default.jsonl

The default's own runs are not stored whole (combined.py assembles them from the screens): name its checkpoint, and
any other jsonl of runs, as arguments; the short spaces are the first one's (without arguments, the 160-seed runs
of the default of 2026-11-28).
"""
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(RESULTS / "2026-11-28-late-phase"))
import compare  # noqa: E402

SEEDS = range(160)


def bar(references: list[dict], space: str) -> tuple[float, float, float]:
    refs = [compare.summary([ref[space][s] for s in SEEDS]) for ref in references]
    return min(r[0] for r in refs), max(r[1] for r in refs), min(r[2] for r in refs)


def meets(summary: tuple, target: tuple) -> bool:
    return summary[0] <= target[0] and summary[1] >= target[1] and summary[2] <= target[2] + 1e-12


def main(*extra: str) -> None:
    references = [compare.runs(compare.REFERENCES, s) for s in ("ga", "bo")]
    default = compare.runs(extra[0] if extra else compare.REFERENCES, "model")
    short = [space for space in sorted(default)
             if not meets(compare.summary([default[space][s] for s in SEEDS]), bar(references, space))]
    stored = {path: compare.runs(path, "model") for path in sorted(RESULTS.glob("*/*.jsonl"))
              if '"strategy"' in path.open().read(4096)}  # run records, not diagnostics
    stored.update({Path(path): compare.runs(path, "model") for path in extra})
    met = 0
    for space in short:
        target = bar(references, space)
        print(f"\n{space}: best of GA and BO {target[0]}, reach {target[1]:.2f}, best@100 {target[2]:.3f}")
        rows = []
        for path, runs in stored.items():
            if all(s in runs.get(space, {}) for s in SEEDS):
                summary = compare.summary([runs[space][s] for s in SEEDS])
                rows.append((summary, f"{path.parent.name}/{path.name}"))
        rows.sort(key=lambda row: (row[0][0], -row[0][1]))
        for (median, reach, best), name in rows:
            ok = meets((median, reach, best), target)
            print(f"  {median:>6} {reach:.2f} {best:.3f} {'MEETS' if ok else '     '} {name}")
        met += any(meets(summary, target) for summary, _ in rows)
    print(f"\nshort spaces: {len(short)}; where some stored variant meets the bar: {met}")


if __name__ == "__main__":
    main(*sys.argv[1:])
