"""Each variant file's model runs against the stored GA and BO runs and the default's (fastest_first, 40 seeds), per
space: median measurements to 5 % (a miss counts as 401), the fraction of seeds reaching it, whether the medians'
bar holds (`efficiency_report.verdict`), and a two-sided rank test against the default. From any folder:

    python3 benchmarks/results/2026-11-28-stalled-bo/compare.py FILE.jsonl [FILE.jsonl ...]

With `--references FILE ...` (GA and BO rows) and `--default FILE ...` (model rows) other stored runs take their
places, e.g. the eight spaces no default was tuned on: `unseen-joint24.jsonl --references unseen-refs.jsonl --default
unseen-refs.jsonl` (in this folder; the variants come first).
"""
import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(REPO / "benchmarks"), str(REPO)]
from efficiency_report import slower_p, summary_row, verdict  # noqa: E402

RESULTS = Path(__file__).resolve().parent.parent
REFERENCES = [RESULTS / "2026-11-27-rank-tests" / "all-41-spaces-40seeds.jsonl",
              RESULTS / "2026-11-27-new-gpu-tables" / "new-tables-40seeds.jsonl"]
DEFAULT = RESULTS / "2026-11-27-batch-order" / "fastest_first-48spaces-40seeds.jsonl"
BUDGET = 400


def runs(path: Path, strategies: tuple[str, ...]) -> dict[str, list[dict]]:
    out = defaultdict(list)
    for line in Path(path).read_text().splitlines():
        r = json.loads(line) if '"space"' in line else None
        if r and r["strategy"] in strategies and r["seed"] < 40:
            out[(r["space"], r["strategy"])].append(r)
    return out


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("variants", nargs="*", help="checkpoint files of model runs under a variant")
    p.add_argument("--references", nargs="+", default=REFERENCES, help="files of the GA and BO runs")
    p.add_argument("--default", nargs="+", default=[DEFAULT], help="files of the default model strategy's runs")
    args = p.parse_args(argv)
    refs = {}
    for f in args.references:
        refs.update(runs(f, ("ga", "bo")))
    default = {}
    for f in args.default:
        default.update(runs(f, ("model",)))
    variants = [(Path(f).stem, runs(f, ("model",))) for f in args.variants]
    spaces = sorted({s for s, _ in default})
    header = ["space", "GA", "BO", "default"] + [name for name, _ in variants]
    print("| " + " | ".join(header) + " |\n|" + "---|" * len(header))
    passes = defaultdict(int)
    for space in spaces:
        ref_rows = [summary_row(refs[(space, s)], BUDGET) for s in ("ga", "bo") if refs.get((space, s))]
        cells = [space] + [_cell(summary_row(refs[(space, s)], BUDGET)) if refs.get((space, s)) else "-"
                           for s in ("ga", "bo")]
        for name, model in [("default", default), *variants]:
            rs = model.get((space, "model"))
            if not rs:
                cells.append("-")
                continue
            row = summary_row(rs, BUDGET)
            ok, _ = verdict(row, ref_rows)
            passes[name] += ok
            p = "" if name == "default" else f" p={slower_p(rs, default[(space, 'model')], BUDGET, 'two-sided'):.2f}"
            cells.append(_cell(row) + ("" if ok else " ✗") + p)
        print("| " + " | ".join(cells) + " |")
    print("\nspaces at the bar: " + ", ".join(f"{k} {v}" for k, v in passes.items()))


def _cell(row: dict) -> str:
    m = f"{row['median']:g}"
    return m + (f" ({row['reached']:.2f})" if row["reached"] < 1 else "")


if __name__ == "__main__":
    main()
