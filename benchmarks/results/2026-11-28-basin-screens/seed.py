"""A checkpoint for smooth_from.py: the default's runs (the stored files below) that reached 5 % of the optimum
within FROM measurements are the variant's runs too, seed for seed; the variant runs only the others.

    python3 benchmarks/results/2026-11-28-basin-screens/seed.py OUT.jsonl [FROM]
"""
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(REPO / "benchmarks"), str(REPO)]
import search_efficiency as se  # noqa: E402

LATE_GP = REPO / "benchmarks" / "results" / "2026-11-28-late-gp"
DEFAULTS = [LATE_GP / "late_gp-48spaces-40seeds.jsonl", LATE_GP / "newest-40seeds.jsonl",
            LATE_GP / "check-late-gp.jsonl"]  # the default on the 48 report spaces, the newest 8 and s61-s68
SEEDS = 40


def main(out: str, settle: int = 48) -> None:
    if Path(out).exists():
        raise SystemExit(f"{out} exists: a checkpoint is seeded once")
    args = se.parse_args(["--seeds", str(SEEDS)])
    settings = {name: getattr(args, name) for name in se.CHECKPOINTED}
    rows = {}
    for path in DEFAULTS:
        for line in path.read_text().splitlines():
            r = json.loads(line)
            if r.get("strategy") == "model" and r["seed"] < SEEDS and r["to_5pct"] is not None \
                    and r["to_5pct"] <= settle:
                rows[(r["space"], r["seed"])] = r
    Path(out).write_text("".join(json.dumps(r) + "\n" for r in [{"settings": settings}, *rows.values()]))
    print(f"{len(rows)} runs copied", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1], *map(int, sys.argv[2:]))
