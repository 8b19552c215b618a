"""A full 160-seed checkpoint of a variant from the runs stored here: the default's runs decided by the variant's
`seeded_from` (copied by ../2026-11-28-many-seeds/seed_variant.py, which the variant leaves as they were), then the
runs it made. The checkpoint's settings are the ones it ran under, so search_efficiency.py prints its report from it.

    python3 benchmarks/results/2026-11-28-late-phase/rebuild.py runs-every-config-three-quarters.jsonl /tmp/v.jsonl
"""
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "2026-11-28-many-seeds"))
import seed_variant  # noqa: E402


def main(runs: str, out: str) -> None:
    lines = (HERE / runs if not Path(runs).exists() else Path(runs)).read_text().splitlines()
    header = json.loads(lines[0])
    seed_variant.main(out, header["settings"]["options"], header["seeded_from"])
    with open(out, "a") as f:
        f.write("".join(line + "\n" for line in lines[1:]))


if __name__ == "__main__":
    main(*sys.argv[1:])
