"""This folder's tables: each run file (JSON lines of benchmarks/search_efficiency.py --checkpoint) against GA, BO
and the model strategy as it was before `codes_from` (seeds 0-19 of the stored runs), with the verdict of
search_efficiency.py: median measurements to 5 %, fraction of seeds reaching it, best@100. From the repository root:

    python3 benchmarks/results/2026-11-27-categorical-codes/compare.py \
        benchmarks/results/2026-11-27-categorical-codes/*-20seeds.jsonl
"""
import json
import sys
from pathlib import Path

sys.path[:0] = ["benchmarks", "."]  # run from the repository root
import efficiency_report as se  # noqa: E402

RESULTS = Path("benchmarks/results")
STORED = (RESULTS / "2026-11-27-bo-faithful/combined-40seeds.json",
          RESULTS / "2026-11-27-search_efficiency-unseen-20seeds.json")
SEEDS, BUDGET = 20, 400  # every run here had the budget of 400 (a run that never reaches 5 % counts as 401)


def main(files: list[str]) -> None:
    runs = [r for path in STORED for r in json.loads(path.read_text())["runs"] if r["seed"] < SEEDS]
    columns = {"ga": [r for r in runs if r["strategy"] == "ga"], "bo": [r for r in runs if r["strategy"] == "bo"],
               "before": [r for r in runs if r["strategy"] == "model"]}
    for name in files:
        lines = Path(name).read_text().splitlines()
        columns[Path(name).stem.removesuffix("-20seeds")] = [json.loads(line) for line in lines[1:] if line.strip()]
    spaces = sorted({r["space"] for name in files for r in columns[Path(name).stem.removesuffix("-20seeds")]})
    rows = {c: {s: [r for r in runs_ if r["space"] == s and r["seed"] < SEEDS] for s in spaces}
            for c, runs_ in columns.items()}

    def figure(c: str, s: str) -> dict | None:
        return se.summary_row(rows[c][s], BUDGET) if rows[c][s] else None

    print("| space | " + " | ".join(columns) + " |\n|---|" + "---:|" * len(columns))
    for s in spaces:
        cells = []
        for c in columns:
            f = figure(c, s)
            reach = f" ({f['reached']:.2f})" if f and f["reached"] < 1 else ""
            cells.append("-" if f is None else f"{f['median']:g}{reach}")
        print(f"| {s} | " + " | ".join(cells) + " |")
    print()
    for c in columns:
        if c in se.REFERENCES:
            continue
        compared = [s for s in spaces if figure(c, s) and all(figure(r, s) for r in se.REFERENCES)]
        failing = [s for s in compared if not se.verdict(figure(c, s), [figure(r, s) for r in se.REFERENCES])[0]]
        counted = len(compared)
        print(f"{c}: at least as good as the best of GA and BO on {counted - len(failing)} of {counted}; "
              f"not on: {', '.join(failing) or 'none'}")


if __name__ == "__main__":
    main(sys.argv[1:])
