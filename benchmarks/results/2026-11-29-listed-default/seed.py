"""A checkpoint for a default that changes nothing before FROM observations, seeded from an earlier default's runs:
the runs of SOURCE that reached 5 % of the optimum within FROM measurements are the new default's too, seed for seed,
so only the others run (`search_efficiency.py --checkpoint OUT` skips the runs it holds).

    python3 benchmarks/results/2026-11-29-listed-default/seed.py SOURCE.jsonl OUT.jsonl [FROM] [OPTIONS_JSON]

SOURCE: a checkpoint of model runs (other strategies' runs are left out). OPTIONS_JSON ('{}', the default) must be
the --options string of the command that continues OUT.
"""
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(REPO / "benchmarks"), str(REPO)]
import search_efficiency as se  # noqa: E402


def main(source: str, out: str, settle: int = 128, options: str = "{}") -> None:
    if Path(out).exists():
        raise SystemExit(f"{out} exists: a checkpoint is seeded once")
    args = se.parse_args(["--options", options])
    settings = {name: getattr(args, name) for name in se.CHECKPOINTED}
    rows = [r for r in map(json.loads, Path(source).read_text().splitlines()[1:])
            if r["strategy"] == "model" and r["to_5pct"] is not None and r["to_5pct"] <= settle]
    Path(out).write_text("".join(json.dumps(r) + "\n" for r in [{"settings": settings}, *rows]))
    print(f"{len(rows)} runs copied", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], *([int(sys.argv[3])] if len(sys.argv) > 3 else []), *sys.argv[4:])
