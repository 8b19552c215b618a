"""Replay tables: our gzip JSON tables and Kernel Tuner cache files load into a deterministic device backend."""
from __future__ import annotations

import json

import pytest

from compiler_core.space import config_key
from tuner_server.replay import (
    ReplayError,
    load_kernel_tuner_cache,
    load_table,
    load_tables,
    run_strategy,
    save_table,
    table_from_trials,
)

META = {"op": "toy", "device": "test", "device_class": "cpu-test-1c", "date": "2024-01-01"}
TRIALS = [
    {"config": {"tile": 8, "vec": "a"}, "median_s": 2e-3, "status": "OK"},
    {"config": {"tile": 16, "vec": "a"}, "median_s": 1e-3, "status": "OK"},
    {"config": {"tile": 8, "vec": "b"}, "median_s": None, "status": "COMPILE_ERROR"},
    {"config": {"tile": 32, "vec": "b"}, "median_s": None, "status": "WRONG_ANSWER"},
]

# A Kernel Tuner cache as tune_kernel(cache=...) writes it: times in ms, failures as error names.
KT_CACHE = {
    "device_name": "Test GPU", "kernel_name": "vector_add", "problem_size": [4096],
    "tune_params_keys": ["block_size_x", "tile"],
    "tune_params": {"block_size_x": [64, 128, 256], "tile": [1, 2]},
    "objective": "time",
    "cache": {
        "64,1": {"block_size_x": 64, "tile": 1, "time": 0.5, "times": [0.5, 0.51], "compile_time": 400.0},
        "64,2": {"block_size_x": 64, "tile": 2, "time": 0.25},
        "128,1": {"block_size_x": 128, "tile": 1, "time": "CompilationFailedConfig"},
        "128,2": {"block_size_x": 128, "tile": 2, "time": "RuntimeFailedConfig"},
        "256,1": {"time": "InvalidConfig"},
        "256,2": {"block_size_x": 256, "tile": 2, "time": 1e20},
    },
}


def test_table_round_trip_space_and_lookup(tmp_path):
    path = save_table(tmp_path / "toy.json.gz", META, TRIALS)
    table = load_table(path)
    assert table.meta["device_class"] == "cpu-test-1c" and table.meta["name"] == "toy"
    assert len(table) == 4 and table.optimum == 1e-3
    assert [k.choices for k in table.space.knobs] == [(8, 16, 32), ("a", "b")]
    assert [config_key(c) for c in table.space] == [config_key(t["config"]) for t in
                                                    sorted(TRIALS, key=lambda t: (t["config"]["tile"],
                                                                                  t["config"]["vec"]))]
    assert not table.space.is_valid({"tile": 16, "vec": "b"})  # never recorded
    assert table.measure({"tile": 16, "vec": "a"}).median_s == 1e-3
    assert table.measure({"vec": "b", "tile": 32}).status == "WRONG_ANSWER"
    assert table.measure({"tile": 16, "vec": "b"}).status == "COMPILE_ERROR"
    assert {t.status for t in table.transfer_trials()} == {"OK", "COMPILE_ERROR", "WRONG_ANSWER"}


def test_bad_tables_are_refused(tmp_path):
    with pytest.raises(ReplayError):
        table_from_trials(META, [])
    with pytest.raises(ReplayError, match="positive median_s"):
        table_from_trials(META, [{"config": {"a": 1}, "median_s": None, "status": "OK"}])
    with pytest.raises(ReplayError, match=r"knob 'b' has the value \{'x': 1\}: a knob's values must be numbers"):
        table_from_trials(META, [{"config": {"a": 1, "b": {"x": 1}}, "median_s": 1e-3}])
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ReplayError, match="not JSON"):
        load_table(bad)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"rows": []}))
    with pytest.raises(ReplayError, match="neither"):
        load_table(other)


def test_load_tables_reads_a_glob_in_path_order_and_names_the_file_it_cannot_read(tmp_path):
    save_table(tmp_path / "b.json.gz", META, TRIALS)
    save_table(tmp_path / "a.json.gz", META, TRIALS)
    assert [t.meta["name"] for t in load_tables(str(tmp_path / "*.json.gz"))] == ["a", "b"]
    assert load_tables(str(tmp_path / "none-*.json")) == [] and load_tables("") == []
    (tmp_path / "c.json").write_text(json.dumps({"trials": [{"config": {"a": 1}, "median_s": -1.0}]}))
    with pytest.raises(ReplayError, match=r"c\.json: an OK trial needs a positive median_s"):
        load_tables(str(tmp_path / "*.json"))


def test_kernel_tuner_cache(tmp_path):
    path = tmp_path / "vector_add.json"
    path.write_text(json.dumps(KT_CACHE))
    table = load_kernel_tuner_cache(path)
    assert table.meta["source"] == "kernel_tuner" and table.meta["device"] == "Test GPU"
    assert [k.name for k in table.space.knobs] == ["block_size_x", "tile"]
    assert table.optimum == pytest.approx(0.25e-3)
    status = {(c["block_size_x"], c["tile"]): table.measure(c).status for c in table.space}
    assert status == {(64, 1): "OK", (64, 2): "OK", (128, 1): "COMPILE_ERROR", (128, 2): "RUNTIME_ERROR",
                      (256, 1): "RESOURCE_EXCEEDED", (256, 2): "RUNTIME_ERROR"}
    assert table.workload_key is None and table.target() is None


def test_kernel_tuner_cache_left_open_by_a_running_tuner(tmp_path):
    text = json.dumps(KT_CACHE, indent=0)
    open_text = text[: text.rindex("}", 0, text.rindex("}"))].rstrip() + ",\n"  # drop the two closing braces
    path = tmp_path / "open.json"
    path.write_text(open_text)
    assert len(load_kernel_tuner_cache(path)) == 6


def test_kernel_tuner_key_values_must_be_tune_params(tmp_path):
    cache = {**KT_CACHE, "cache": {"512,1": {"time": 1.0}}}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(cache))
    with pytest.raises(ReplayError, match="512"):
        load_table(path)
    ours = tmp_path / "ours.json.gz"
    save_table(ours, META, TRIALS)
    with pytest.raises(ReplayError, match="not a Kernel Tuner"):
        load_kernel_tuner_cache(ours)


@pytest.mark.parametrize("strategy", ["random", "grid", "model"])
def test_run_strategy_is_deterministic_and_stops_at_the_space(tmp_path, strategy):
    path = tmp_path / "vector_add.json"
    path.write_text(json.dumps(KT_CACHE))
    table = load_table(path)
    first = run_strategy(table, strategy, budget=100, seed=3, batch=4)
    again = run_strategy(table, strategy, budget=100, seed=3, batch=4)
    assert [config_key(o.config) for o in first] == [config_key(o.config) for o in again]
    assert sorted(config_key(o.config) for o in first) == sorted(config_key(c) for c in table.space)
    assert len(run_strategy(table, strategy, budget=2, seed=3, batch=4)) == 2
