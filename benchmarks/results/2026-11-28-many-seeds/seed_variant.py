"""A checkpoint for a variant of the model strategy that changes nothing before FROM observations: the default's runs
of the 160-seed file that reached 5 % of the optimum within FROM measurements are the variant's runs too, seed for
seed, so the variant runs only the others (about a quarter of the synthetic spaces' runs for FROM 128).

    python3 benchmarks/results/2026-11-28-many-seeds/seed_variant.py OUT.jsonl OPTIONS_JSON [FROM] [SEEDS] [SOURCE]
    python3 benchmarks/search_efficiency.py --tables '' --synthetic ... --seeds SEEDS --strategies model \\
        --options OPTIONS_JSON --decided --checkpoint OUT.jsonl

OPTIONS_JSON must be the --options string of the command, as given: the checkpoint's settings name it. SOURCE is
the default's checkpoint to copy from (this folder's ga-bo-model-160seeds.jsonl unless given; the default of a later
day is another file, e.g. ../2026-11-30-sweep-later-160seeds/default-160seeds.jsonl).
"""
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(REPO / "benchmarks"), str(REPO)]
import search_efficiency as se  # noqa: E402

RUNS = Path(__file__).resolve().parent / "ga-bo-model-160seeds.jsonl"


def main(out: str, options: str, settle: int = 128, seeds: int = 160, source: Path = RUNS) -> None:
    """Seed `out` with the model runs of `source` (a checkpoint) of seeds below `seeds` decided by `settle`."""
    if Path(out).exists():
        raise SystemExit(f"{out} exists: a checkpoint is seeded once")
    json.loads(options)  # a mistyped options string fails here, not after the runs
    args = se.parse_args(["--options", options])
    settings = {name: getattr(args, name) for name in se.CHECKPOINTED}  # what the command's --checkpoint checks
    rows = [r for r in map(json.loads, Path(source).read_text().splitlines()[1:])
            if r["strategy"] == "model" and r["seed"] < seeds and r["to_5pct"] is not None and r["to_5pct"] <= settle]
    Path(out).write_text("".join(json.dumps(r) + "\n" for r in [{"settings": settings}, *rows]))
    print(f"{len(rows)} runs copied", file=sys.stderr)


if __name__ == "__main__":
    numbers, source = sys.argv[3:5], sys.argv[5:6]
    main(sys.argv[1], sys.argv[2], *map(int, numbers), *map(Path, source))
