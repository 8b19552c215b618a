"""Start a checkpoint of benchmarks/search_efficiency.py for a variant that changes nothing before SETTLE (128)
observations: the default's runs that reached 5 % of the optimum by then are that variant's runs too (the same seed
proposes the same configs until then), so they are copied in, and the command given the checkpoint runs only the
others (about a quarter of the 34 synthetic spaces' 1,360 runs). From the repository root:

    python3 benchmarks/results/2026-11-28-late-gp/seed_checkpoint.py '{"gp_until": 256, "gp_settle": 128}' /tmp/v.jsonl
    python3 benchmarks/search_efficiency.py --tables '' --synthetic report,newest --seeds 40 --strategies model \\
        --options '{"gp_until": 256, "gp_settle": 128}' --checkpoint /tmp/v.jsonl --jobs 2
"""
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(REPO / "benchmarks"), str(REPO)]
import search_efficiency as se  # noqa: E402

RESULTS = Path(__file__).resolve().parent.parent
DEFAULTS = [RESULTS / "2026-11-27-batch-order" / "fastest_first-48spaces-40seeds.jsonl",  # the report's spaces
            RESULTS / "2026-11-28-stalled-bo" / "unseen-refs.jsonl"]  # the eight newest
SETTLE = 128
SEEDS = 40


def main(options: str, out: str) -> None:
    if Path(out).exists():
        raise SystemExit(f"{out} exists: a checkpoint is seeded once")
    args = se.parse_args(["--seeds", str(SEEDS), "--options", options])  # the command's other settings: defaults
    settings = {name: getattr(args, name) for name in se.CHECKPOINTED}  # what its --checkpoint checks
    rows = []
    for path in DEFAULTS:
        for line in path.read_text().splitlines():
            r = json.loads(line)
            if r.get("strategy") == "model" and r["space"].startswith("synth-") and r["seed"] < SEEDS and \
                    r["to_5pct"] is not None and r["to_5pct"] <= SETTLE:
                rows.append(r)
    Path(out).write_text("".join(json.dumps(r) + "\n" for r in [{"settings": settings}, *rows]))
    print(f"{len(rows)} runs copied", file=sys.stderr)


if __name__ == "__main__":
    main(*sys.argv[1:])
