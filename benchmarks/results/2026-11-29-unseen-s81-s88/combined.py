"""The checkpoint of the default against GA and BO on the eight spaces named after the defaults were fixed (s81-s88,
40 seeds): GA's and BO's runs made here (`ga-bo-s81-s88-40seeds.jsonl`) and the default's stored runs
(`../2026-11-28-late-phase/unseen-s81-s88-new-default.jsonl`). search_efficiency.py prints the report from it
without running anything:

    python3 benchmarks/results/2026-11-29-unseen-s81-s88/combined.py /tmp/s81.jsonl
    python3 benchmarks/search_efficiency.py --tables '' --synthetic synth-basins-11k11-s81,synth-basins-13k12-s88,\\
synth-basins-9k12-s84,synth-invalid-10k12-s87,synth-needle-10k10-s86,synth-needle-12k12-s83,synth-noisy-10k11-s85,\\
synth-noisy-8k12-s82 --seeds 40 --strategies ga,bo,model --decided --checkpoint /tmp/s81.jsonl
"""
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODEL = HERE.parent / "2026-11-28-late-phase" / "unseen-s81-s88-new-default.jsonl"


def main(out: str) -> None:
    refs = (HERE / "ga-bo-s81-s88-40seeds.jsonl").read_text().splitlines()
    model = MODEL.read_text().splitlines()
    if json.loads(refs[0]) != json.loads(model[0]):
        raise SystemExit("the two files ran under different settings")
    Path(out).write_text("\n".join([refs[0], *refs[1:], *model[1:]]) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
