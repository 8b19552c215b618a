"""Two checkpoint files of benchmarks/search_efficiency.py, table by table: the median measurements to 5 % of each,
one-sided Mann-Whitney p that the second is slower and that it is faster (misses count as budget + 1), the median
best@100 of each, and whether the runs of a table are identical:

    python3 compare.py A.jsonl B.jsonl
"""
import json
import statistics
import sys

from scipy.stats import mannwhitneyu


def load(path: str) -> dict[str, list[tuple[int, float]]]:
    runs: dict[str, list[tuple[int, float]]] = {}
    budget = 400
    for line in open(path):
        row = json.loads(line)
        if "settings" in row:
            budget = row["settings"]["budget"]
        elif "space" in row:
            reached = row["to_5pct"] if row["to_5pct"] is not None else budget + 1
            runs.setdefault(row["space"], []).append((reached, row["best_at_100"]))
    return runs


def main() -> None:
    a, b = load(sys.argv[1]), load(sys.argv[2])
    identical = 0
    for space in sorted(a):
        x, y = [r[0] for r in a[space]], [r[0] for r in b[space]]
        identical += x == y
        slower = mannwhitneyu(y, x, alternative="greater").pvalue if x != y else 1.0
        faster = mannwhitneyu(y, x, alternative="less").pvalue if x != y else 1.0
        best_a, best_b = (statistics.median(r[1] for r in runs[space]) for runs in (a, b))
        print(f"{space:40s} {statistics.median(x):6.1f} {statistics.median(y):6.1f}  p(B slower)={slower:.2f} "
              f"p(B faster)={faster:.2f}  b@100 {best_a:.3f} {best_b:.3f} {'same runs' if x == y else ''}")
    print("identical tables", identical, "of", len(a))


if __name__ == "__main__":
    main()
