"""The checkpoint of the new default's report: GA's and BO's 160-seed runs (../2026-11-28-many-seeds/), and the
default's: the three-quarters screen's runs (`rebuild.py`), with the 20k needle's runs made again by the default
(`runs-default-needle-20k.jsonl`: that space has more configs than `late_candidates`, so the default scores one
sample drawn per job where the screen drew one each round).

    python3 benchmarks/results/2026-11-28-late-phase/combined.py /tmp/default.jsonl
    python3 benchmarks/search_efficiency.py --synthetic $S --seeds 160 --strategies ga,bo,model --decided \\
        --checkpoint /tmp/default.jsonl        # runs nothing: prints report-160seeds.md (--svg FILE: its figure)
"""
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import rebuild  # noqa: E402

REFERENCES = HERE.parent / "2026-11-28-many-seeds" / "ga-bo-model-160seeds.jsonl"
NEEDLE = "synth-needle-20k15-s4"


def main(out: str, screen: Path = HERE / "runs-every-config-three-quarters.jsonl",
         needle: Path = HERE / "runs-default-needle-20k.jsonl") -> None:
    """Write the checkpoint: GA's and BO's runs, `screen`'s runs (rebuilt with the default's runs decided by its
    `seeded_from`), the 20k needle's replaced by those of `needle`."""
    references = REFERENCES.read_text().splitlines()
    with tempfile.TemporaryDirectory() as tmp:
        rebuilt = Path(tmp) / "screen.jsonl"
        rebuild.main(str(screen), str(rebuilt))
        default = [json.loads(line) for line in rebuilt.read_text().splitlines()[1:]]
    again = {r["seed"]: r for r in map(json.loads, needle.read_text().splitlines()[1:])}
    default = [again.get(r["seed"], r) if r["space"] == NEEDLE else r for r in default]
    rows = [line for line in references[1:] if json.loads(line)["strategy"] != "model"]
    rows += [json.dumps(r) for r in default]
    Path(out).write_text("\n".join([references[0], *rows]) + "\n")  # the settings line: options "{}", the default


if __name__ == "__main__":
    main(sys.argv[1])
