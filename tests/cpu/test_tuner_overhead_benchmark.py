"""benchmarks/tuner_overhead.py end to end on a small history: the overhead table, with --sections the time per
part of the tick (the timers taken off afterwards), and several option sets interleaved over one history."""
from __future__ import annotations

import gc
import re
from pathlib import Path

import pytest

import compiler_core as cc
from tests.file_modules import module_from_file
from tuner_server import repo
from tuner_server.db import make_engine, make_session_factory, session_scope, upgrade_to_head
from tuner_server.driver import JobDriver
from tuner_server.search.model_guided import ModelGuided

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "tuner_overhead.py"


@pytest.fixture(autouse=True)
def restored_gc_thresholds():
    """The benchmark sets its process's collector as the tuner does; this process goes back to its own after."""
    before = gc.get_threshold()
    yield
    gc.set_threshold(*before)


def rows(out: str) -> list[list[str]]:
    return [[cell.strip() for cell in line.split("|")[1:-1]] for line in out.splitlines()
            if line.startswith("| {") and " | 120 | " in line]


def test_a_small_run_prints_the_overhead_and_its_sections(capsys):
    bench = module_from_file("tuner_overhead", SCRIPT)
    propose, read = ModelGuided.propose, JobDriver._read
    bench.main(["--history", "120", "--budget", "24", "--workers", "1", "--sections"])
    captured = capsys.readouterr()
    out = captured.out
    assert re.search(r"host: a Python loop of 10\^6 squares took [\d.]+ ms before the history and [\d.]+ ms after",
                     captured.err)  # the host's speed, to compare overheads of hosts by
    [row] = rows(out)
    assert row[:3] == ["{}", "120", "24"]
    hot, refit, total = (float(v) for v in row[3:6])
    assert hot > 0 and abs(hot + refit - total) < 0.02
    assert 0 < float(row[7]) < 3 * hot  # the hot path's CPU time: this process only
    sections = {line.split(" | ")[0].strip("| ·"): line.split(" | ") for line in out.splitlines()
                if line.startswith("| ") and " | " in line}
    proposes, calls = float(sections["strategy proposes"][1]), int(sections["strategy proposes"][2].strip(" |"))
    assert 0 < proposes <= hot and calls >= 3  # 24 candidates in batches of 8
    assert float(sections["refit"][1]) <= proposes  # sections nest
    driver = sum(float(v[1]) for k, v in sections.items() if k.startswith("driver:"))
    assert 0 < driver and driver + proposes <= hot  # the driver's parts and the strategy's share the tick
    assert ModelGuided.propose is propose and JobDriver._read is read  # the timers are gone


def test_option_sets_take_turns_over_one_history(capsys):
    bench = module_from_file("tuner_overhead", SCRIPT)
    bench.main(["--history", "120", "--budget", "8", "--workers", "1", "--options", "{}", '{"gp_until": 0}',
                "--repeats", "2"])
    out = capsys.readouterr().out
    assert [row[0] for row in rows(out)] == ["{}", '{"gp_until": 0}'] * 2
    assert all(row[2] == "8" for row in rows(out))  # each job measured its whole budget (the last was cancelled)


def test_a_database_that_holds_trials_is_refused(tmp_path):
    bench = module_from_file("tuner_overhead", SCRIPT)
    url = f"sqlite:///{tmp_path / 'used.db'}"
    upgrade_to_head(url)
    engine = make_engine(url)
    try:
        sessions = make_session_factory(engine)
        with session_scope(sessions) as s:
            agent = repo.register_agent(bench.FINGERPRINT, "earlier", cc.codegen_version(), session=s).agent
            dclass = agent.device_class
        bench.populate(sessions, dclass, ["64,64,64"], 3)  # an earlier run's history
    finally:
        engine.dispose()
    with pytest.raises(SystemExit, match="holds 3 trials; this benchmark needs an empty one"):
        bench.main(["--history", "120", "--budget", "16", "--workers", "1", "--database-url", url])
