"""A checkpoint for a default that changes nothing before FROM observations, seeded from an earlier default's runs:
the runs of SOURCE that reached 5 % of the optimum within FROM measurements are the new default's too, seed for seed,
so only the others run (`search_efficiency.py --checkpoint OUT` skips the runs it holds).

    python3 benchmarks/results/2026-11-29-listed-default/seed.py SOURCE.jsonl OUT.jsonl [FROM] [OPTIONS_JSON]

SOURCE: a checkpoint of model runs (other strategies' runs are left out). OPTIONS_JSON ('{}', the default) must be
the --options string of the command that continues OUT.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "2026-11-28-many-seeds"))
import seed_variant  # noqa: E402


def main(source: str, out: str, settle: int = 128, options: str = "{}") -> None:
    seed_variant.main(out, options, settle, seeds=sys.maxsize, source=Path(source))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], *([int(sys.argv[3])] if len(sys.argv) > 3 else []), *sys.argv[4:])
