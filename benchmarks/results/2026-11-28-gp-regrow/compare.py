"""Two checkpoint files of benchmarks/search_efficiency.py, table by table: the median measurements to 5 % of each,
one-sided Mann-Whitney p that the second is slower and that it is faster (misses count as budget + 1), the median
best@100 of each, and whether the runs of a table are identical:

    python3 compare.py A.jsonl B.jsonl
"""
import json
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(REPO / "benchmarks"), str(REPO)]
from efficiency_report import median_steps, slower_p  # noqa: E402


def load(path: str) -> tuple[dict[str, list[dict]], int]:
    """The file's runs by space, and its budget (a run that never reaches 5 % counts as budget + 1)."""
    runs: dict[str, list[dict]] = {}
    budget = 400
    for line in open(path):
        row = json.loads(line)
        if "settings" in row:
            budget = row["settings"]["budget"]
        elif "space" in row:
            runs.setdefault(row["space"], []).append(row)
    return runs, budget


def main() -> None:
    (a, budget), (b, _) = load(sys.argv[1]), load(sys.argv[2])
    identical = 0
    for space in sorted(a):
        x, y = [r["to_5pct"] for r in a[space]], [r["to_5pct"] for r in b[space]]
        identical += x == y
        slower = slower_p(b[space], a[space], budget) if x != y else 1.0
        faster = slower_p(b[space], a[space], budget, alternative="less") if x != y else 1.0
        best_a, best_b = (statistics.median(r["best_at_100"] for r in runs[space]) for runs in (a, b))
        print(f"{space:40s} {median_steps(x, budget):6.1f} {median_steps(y, budget):6.1f}  p(B slower)={slower:.2f} "
              f"p(B faster)={faster:.2f}  b@100 {best_a:.3f} {best_b:.3f} {'same runs' if x == y else ''}")
    print("identical tables", identical, "of", len(a))


if __name__ == "__main__":
    main()
