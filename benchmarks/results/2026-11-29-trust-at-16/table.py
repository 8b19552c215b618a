"""Per space, from probe.py's lines: median trust in the fitted GP and the ensemble at AT measurements, the median of
the larger of the two, the fractions of runs where it is below 0.2 and 0.3, and the fraction reaching 5 % by 24.

    python3 table.py trust-16seeds.jsonl AT
"""
import json
import statistics as st
import sys
from collections import defaultdict


def larger(trust: dict) -> float:
    return max(trust["gp"], trust["ensemble"])


def main(path: str, at: str) -> None:
    by = defaultdict(list)
    for line in open(path):
        run = json.loads(line)
        by[run["space"]].append(run["rows"][at])
    print(f"{'space':36s} gp_med ens_med max_med  frac(max<0.2) frac(max<0.3) reached<=24")
    for space in sorted(by, key=lambda s: st.median(map(larger, by[s]))):
        runs = by[space]
        top = [larger(t) for t in runs]
        reached = sum((t["reached"] or 999) <= 24 for t in runs) / len(runs)
        print(f"{space:36s} {st.median(t['gp'] for t in runs):6.2f} {st.median(t['ensemble'] for t in runs):6.2f} "
              f"{st.median(top):6.2f}  {sum(x < 0.2 for x in top) / len(top):.2f} "
              f"{sum(x < 0.3 for x in top) / len(top):.2f}  {reached:.2f}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "16")
