"""The checkpoint of the `listed_from` default's report: GA's and BO's 160-seed runs (../2026-11-28-many-seeds/), and
the default's: on spaces of at most 16,384 configs the runs of the screen it reproduces (`runs-fresh-from-128-floor-
quarter.jsonl` of ../2026-11-28-late-phase/, rebuilt with the runs decided by 128; `runs-same-check.jsonl` shows 136 of
136 rerun the same), and on the 20k needle its own runs (`runs-needle-20k.jsonl`: the growing posterior scores a
sample of the listing drawn once per job, where the screen drew one each round).

    python3 benchmarks/results/2026-11-29-listed-default/combined.py /tmp/listed.jsonl
    python3 benchmarks/search_efficiency.py --synthetic $S --seeds 160 --strategies ga,bo,model --decided \\
        --checkpoint /tmp/listed.jsonl        # runs nothing: prints report-160seeds.md (--svg FILE: its figure)
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
LATE = HERE.parent / "2026-11-28-late-phase"
sys.path.insert(0, str(LATE))
import combined  # noqa: E402


def main(out: str) -> None:
    combined.main(out, LATE / "runs-fresh-from-128-floor-quarter.jsonl", HERE / "runs-needle-20k.jsonl")


if __name__ == "__main__":
    main(sys.argv[1])
