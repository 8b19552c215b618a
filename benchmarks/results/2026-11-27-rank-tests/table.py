"""This folder's tables: search_efficiency.py's report (medians, intervals, verdicts, replicates and rank tests) of
GA, BO and one file of model runs, on all 41 spaces at 40 seeds (20 for the 20-seed files). GA and BO are the runs
of `all-41-spaces-40seeds.jsonl`; nothing is run. From the repository root:

    python3 benchmarks/results/2026-11-27-rank-tests/table.py                                   # the strategy before
    python3 benchmarks/results/2026-11-27-rank-tests/table.py \
        benchmarks/results/2026-11-27-rank-tests/joint_until_48-40seeds.jsonl                   # joint_until 48
"""
import json
import sys
import tempfile
from pathlib import Path

sys.path[:0] = ["benchmarks", "."]  # run from the repository root
import search_efficiency as se  # noqa: E402

HERE = Path(__file__).parent
UNSEEN = ("synth-smooth-7k11-s31,synth-basins-11k12-s32,synth-needle-9k11-s33,synth-needle-14k12-s34,"
          "synth-invalid-10k11-s35,synth-noisy-8k10-s36,synth-noisy-12k13-s37,synth-basins-6k10-s38")


def runs(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()[1:] if line.strip()]


def main(model_file: str | None) -> None:
    rows = runs(HERE / "all-41-spaces-40seeds.jsonl")
    if model_file:
        rows = [r for r in rows if r["strategy"] != "model"] + runs(Path(model_file))
    seeds = 1 + max(r["seed"] for r in rows if r["strategy"] == "model")
    rows = [r for r in rows if r["seed"] < seeds]
    settings = {"seeds": seeds, "budget": 400, "batch": 8, "options": "{}", "bo_sample": 0}
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as checkpoint:
        checkpoint.write("\n".join(json.dumps(r) for r in [{"settings": settings}, *rows]) + "\n")
        checkpoint.flush()
        se.main(["--tables", "benchmarks/data/*.json.gz", "--synthetic", f"every,{UNSEEN}", "--seeds", str(seeds),
                 "--strategies", "ga,bo,model", "--checkpoint", checkpoint.name])


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
