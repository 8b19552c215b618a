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
    with pytest.raises(ReplayError, match="an OK trial needs median_s, a positive number of seconds"):
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


MEDIAN = "median_s must be null or a positive number of seconds, "


@pytest.mark.parametrize("entry, problem", [
    ("not a trial", r"a trial must be an object \{config, median_s, status\}, got str"),
    ({"median_s": 1e-3}, r"a trial's config must be an object of knob values, got NoneType None"),
    ({"config": [8, "a"], "median_s": 1e-3}, r"a trial's config must be an object of knob values, got list"),
    ({"config": {"tile": 8, "vec": "c"}, "median_s": True}, MEDIAN + "got bool True"),
    ({"config": {"tile": 8, "vec": "c"}, "median_s": "1e-3"}, MEDIAN + r"got str '1e-3'"),
    ({"config": {"tile": 8, "vec": "c"}, "median_s": -1e-3}, MEDIAN + r"got -0.001"),
    ({"config": {"tile": 8, "vec": "c"}, "median_s": float("nan")}, MEDIAN + r"got nan"),
    ({"config": {"tile": 8, "vec": "c"}, "median_s": 0, "status": "TIMEOUT"}, MEDIAN + r"got 0"),
    ({"config": {"tile": 8, "vec": "c"}, "median_s": 1e-3, "status": "FAST"}, r"unknown trial status 'FAST'; known: "
                                                                               r"OK"),
    ({"config": {"tile": float("inf"), "vec": "c"}, "median_s": 1e-3}, r"knob 'tile' has the value inf: a knob's "
                                                                       r"numbers must be finite"),
])
def test_a_malformed_entry_is_refused_naming_the_file_and_the_entry(tmp_path, entry, problem):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"meta": META, "trials": [*TRIALS, entry]}))
    with pytest.raises(ReplayError, match=rf"bad\.json: trials\[4\] .*: {problem}"):
        load_table(path)


@pytest.mark.parametrize("data, problem", [
    ({"meta": META, "trials": {"config": {"a": 1}}}, "a table's trials must be a list of"),
    ({"meta": ["op"], "trials": TRIALS}, "a table's meta must be an object, got list"),
    ({**KT_CACHE, "tune_params": {"block_size_x": 64, "tile": [1, 2]}}, "a Kernel Tuner cache needs tune_params_keys"),
    ({**KT_CACHE, "tune_params_keys": "block_size_x,tile"}, "a Kernel Tuner cache needs tune_params_keys"),
    ({**KT_CACHE, "cache": {"64,1": {"block_size_x": [64], "tile": 1, "time": 0.5}}},
     r"cache key '64,1': knob 'block_size_x' has the value \[64\]"),
])
def test_a_malformed_table_or_cache_is_refused_naming_the_file(tmp_path, data, problem):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ReplayError, match=rf"bad\.json: {problem}"):
        load_table(path)


@pytest.mark.parametrize("values, shown", [
    ((0, 1, False, True), "int 0 and bool False; int 1 and bool True"),
    ((1, 1.0, 2), "int 1 and float 1.0"),
])
def test_a_knob_mixing_equal_values_of_two_types_is_refused(tmp_path, values, shown):
    """True == 1 and 1.0 == 1 in Python, but config keys (and Space.is_valid) tell them apart: as choices of one knob
    they would collapse, and the table would hold configs no strategy could propose."""
    trials = [{"config": {"flag": v, "tile": 8}, "median_s": 1e-3 * (i + 1)} for i, v in enumerate(values)]
    with pytest.raises(ReplayError, match=f"knob 'flag' mixes values that are equal in Python but distinct configs "
                                          rf"\({shown}\): record each of a knob's values with one type"):
        table_from_trials(META, trials)
    path = tmp_path / "mixed.json"
    path.write_text(json.dumps({"meta": META, "trials": trials}))
    with pytest.raises(ReplayError, match=r"mixed\.json: knob 'flag' mixes"):
        load_table(path)
    distinct = table_from_trials(META, [{"config": {"flag": v, "tile": 8}, "median_s": 1e-3} for v in (False, True)])
    assert distinct.space.knobs[0].choices == (False, True)  # booleans alone (or ints alone) are fine


def test_load_tables_reads_a_glob_in_path_order_and_names_the_file_it_cannot_read(tmp_path):
    save_table(tmp_path / "b.json.gz", META, TRIALS)
    save_table(tmp_path / "a.json.gz", META, TRIALS)
    assert [t.meta["name"] for t in load_tables(str(tmp_path / "*.json.gz"))] == ["a", "b"]
    assert load_tables(str(tmp_path / "none-*.json")) == [] and load_tables("") == []
    (tmp_path / "c.json").write_text(json.dumps({"trials": [{"config": {"a": 1}, "median_s": -1.0}]}))
    with pytest.raises(ReplayError, match=r"c\.json: trials\[0\] .*: median_s must be null or a positive number"):
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
