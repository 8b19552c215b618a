"""The checkpoint the many-seeds runs start from: the stored runs of seeds 0-39 of GA, BO and the default model
strategy on the 72 spaces (22 recorded tables, 50 synthetic), each (space, strategy, seed) once. The model's runs are
the default's as it stands (the late-GP files; the exact rewrites since left every proposal as it was), GA's and BO's
the reference runs every comparison since 2026-11-27 used.

    python3 benchmarks/results/2026-11-28-many-seeds/seed40.py OUT.jsonl
"""
import json
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(RESULTS.parents[0]), str(RESULTS.parents[1])]
import search_efficiency as se  # noqa: E402

REFERENCES = ["2026-11-27-rank-tests/all-41-spaces-40seeds.jsonl", "2026-11-27-new-gpu-tables/new-tables-40seeds.jsonl",
              "2026-11-28-stalled-bo/unseen-refs.jsonl", "2026-11-28-late-gp/check-refs.jsonl",
              "2026-11-28-unseen-s71-s78/ga-bo-model-40seeds.jsonl"]
DEFAULTS = ["2026-11-28-late-gp/late_gp-48spaces-40seeds.jsonl", "2026-11-28-late-gp/newest-40seeds.jsonl",
            "2026-11-28-late-gp/check-late-gp.jsonl", "2026-11-28-unseen-s71-s78/ga-bo-model-40seeds.jsonl"]


def main(out: str) -> None:
    if Path(out).exists():
        raise SystemExit(f"{out} exists")
    rows = {}
    for files, strategies in ((DEFAULTS, {"model"}), (REFERENCES, {"ga", "bo"})):
        for name in files:
            for line in (RESULTS / name).read_text().splitlines():
                r = json.loads(line)
                if r.get("strategy") in strategies and r["seed"] < 40:
                    rows.setdefault((r["space"], r["strategy"], r["seed"]), r)
    args = se.parse_args([])  # budget 400, batch 8, no options, BO scoring every config: what the runs had
    settings = {name: getattr(args, name) for name in se.CHECKPOINTED}
    Path(out).write_text("".join(json.dumps(r) + "\n" for r in [{"settings": settings}, *rows.values()]))
    spaces = {s for s, _, _ in rows}
    print(f"{len(rows)} runs of {len(spaces)} spaces", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1])
