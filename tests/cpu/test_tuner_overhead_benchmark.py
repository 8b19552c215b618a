"""benchmarks/tuner_overhead.py end to end on a small history: the overhead table, and with --sections the time per
part of the strategy, with the timers taken off afterwards."""
from __future__ import annotations

from pathlib import Path

from tests.file_modules import module_from_file
from tuner_server.search.model_guided import ModelGuided

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "tuner_overhead.py"


def test_a_small_run_prints_the_overhead_and_its_sections(capsys):
    bench = module_from_file("tuner_overhead", SCRIPT)
    propose = ModelGuided.propose
    bench.main(["--history", "120", "--budget", "24", "--workers", "1", "--sections"])
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("| 120 | 24 |"))
    hot, refit, total = (float(v) for v in row.split("|")[3:6])
    assert hot > 0 and abs(hot + refit - total) < 0.02
    assert 0 < float(row.split("|")[7]) < 3 * hot  # the hot path's CPU time: this process only
    sections = {line.split(" | ")[0].strip("| ·"): line.split(" | ") for line in out.splitlines()
                if line.startswith("| ") and " | " in line}
    proposes, calls = float(sections["strategy proposes"][1]), int(sections["strategy proposes"][2].strip(" |"))
    assert 0 < proposes <= hot and calls >= 3  # 24 candidates in batches of 8
    assert float(sections["refit"][1]) <= proposes  # sections nest
    assert ModelGuided.propose is propose  # the timers are gone
