"""This folder's tables: search_efficiency.py's report (medians, intervals, verdicts, replicates and rank tests) of GA,
BO and one file of model runs on all 48 spaces at 40 seeds. GA and BO are the stored runs (the 41 spaces of
`../2026-11-27-rank-tests/all-41-spaces-40seeds.jsonl`, the 7 H100 tables of
`../2026-11-27-new-gpu-tables/new-tables-40seeds.jsonl`); nothing is run. From the repository root:

    python3 benchmarks/results/2026-11-27-batch-order/table.py                 # late_gp (the default since 2026-11-28)
    python3 benchmarks/results/2026-11-27-batch-order/table.py fastest_first   # the default before it
    python3 benchmarks/results/2026-11-27-batch-order/table.py before          # the stored runs before fastest_first
    python3 benchmarks/results/2026-11-27-batch-order/table.py late_gp docs/figures/search-efficiency.svg
                                                                               # ... and the report's figure
"""
import json
import sys
import tempfile
from pathlib import Path

sys.path[:0] = ["benchmarks", "."]  # run from the repository root
import search_efficiency as se  # noqa: E402

HERE = Path(__file__).parent
RESULTS = HERE.parent
SYNTHETIC = "report"  # the 24 synthetic spaces of the 48-space report (tuner_server.synthetic_spaces.GROUPS)
MODEL_FILES = {
    "late_gp": [RESULTS / "2026-11-28-late-gp" / "late_gp-48spaces-40seeds.jsonl"],
    "fastest_first": [HERE / "fastest_first-48spaces-40seeds.jsonl"],
    "before": [RESULTS / "2026-11-27-additive-gp" / "additive_joint_weighted-40seeds.jsonl",
               RESULTS / "2026-11-27-new-gpu-tables" / "new-tables-40seeds.jsonl"],
}


def runs(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip() and '"space"' in line]


def main(which: str, svg: str | None = None) -> None:
    references = runs(RESULTS / "2026-11-27-rank-tests" / "all-41-spaces-40seeds.jsonl") + \
        runs(RESULTS / "2026-11-27-new-gpu-tables" / "new-tables-40seeds.jsonl")
    rows = [r for r in references if r["strategy"] in ("ga", "bo") and r["seed"] < 40]
    rows += [r for f in MODEL_FILES[which] for r in runs(f) if r["strategy"] == "model" and r["seed"] < 40]
    settings = {"seeds": 40, "budget": 400, "batch": 8, "options": "{}", "bo_sample": 0}
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as checkpoint:
        checkpoint.write("\n".join(json.dumps(r) for r in [{"settings": settings}, *rows]) + "\n")
        checkpoint.flush()
        se.main(["--tables", "benchmarks/data/*.json.gz", "--synthetic", SYNTHETIC, "--seeds", "40",
                 "--strategies", "ga,bo,model", "--checkpoint", checkpoint.name, *(["--svg", svg] if svg else [])])


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "late_gp", sys.argv[2] if len(sys.argv) > 2 else None)
