"""tuner_server.measure_policy: the one place measurement options get their defaults, types and bounds."""
from __future__ import annotations

import math
import re

import pytest

from tunefarm_proto import tunefarm_pb2 as pb
from tuner_server import measure_policy
from tuner_server.repo import InvalidRequest
from tuner_server.rpc import convert


@pytest.mark.parametrize("kind", ["cpu", "cuda"])
def test_nothing_given_resolves_every_field_to_the_kinds_defaults(kind):
    options = measure_policy.resolve(None, kind)
    assert options == measure_policy.DEFAULTS[kind] and set(options) == set(measure_policy.FIELDS)
    for name, (type_, low, high, _) in measure_policy.FIELDS.items():
        assert type(options[name]) is type_ and low <= options[name] <= high, name
    assert options["min_repeats"] <= options["max_repeats"] and options["min_time_s"] <= options["max_time_s"]
    assert measure_policy.resolve({}, kind) == options


def test_the_kinds_differ_and_given_values_win():
    cpu, cuda = measure_policy.DEFAULTS["cpu"], measure_policy.DEFAULTS["cuda"]
    assert cpu["max_contention"] < cuda["max_contention"] and cpu["warmup"] != cuda["warmup"]
    given = {"warmup": 0, "min_time_s": 1, "flush_cache": False, "recheck_top": 0, "target_rel_ci": None}
    options = measure_policy.resolve(given, "cuda")
    assert options == {**cuda, "warmup": 0, "min_time_s": 1.0, "flush_cache": False, "recheck_top": 0}
    assert type(options["min_time_s"]) is float  # an integer where a number is expected is coerced


@pytest.mark.parametrize("given, words", [
    ({"warmups": 1, "colour": "red"}, ["unknown measure option(s) colour, warmups", "known: warmup"]),
    ({"min_repeats": True}, ["measure.min_repeats must be an integer", "True"]),
    ({"max_repeats": 4.0}, ["measure.max_repeats must be an integer", "4.0"]),
    ({"warmup": "1"}, ["measure.warmup must be an integer"]),
    ({"min_time_s": "fast"}, ["measure.min_time_s must be a number"]),
    ({"flush_cache": 1}, ["measure.flush_cache must be true or false"]),
    ({"time_reference": "yes"}, ["measure.time_reference must be true or false"]),
    ({"warmup": -1}, ["measure.warmup must be between 0 and 1000", "-1"]),
    ({"recheck_top": 65}, ["measure.recheck_top must be between 0 and 64"]),
    ({"target_rel_ci": 0.0}, ["measure.target_rel_ci must be between 0.0001 and 1"]),
    ({"max_contention": 1.5}, ["measure.max_contention"]),
    ({"timeout_s": math.inf}, ["measure.timeout_s"]),
    ({"min_time_s": math.nan}, ["measure.min_time_s"]),
    ({"min_repeats": 500}, ["measure.min_repeats (500) exceeds measure.max_repeats (400)"]),  # cpu's default max
    ({"min_time_s": 5.0, "max_time_s": 1.0}, ["measure.min_time_s (5.0) exceeds measure.max_time_s (1.0)"]),
])
def test_bad_options_name_the_field(given, words):
    with pytest.raises(InvalidRequest) as err:
        measure_policy.resolve(given, "cpu")
    for word in words:
        assert word in str(err.value), (word, str(err.value))


@pytest.mark.parametrize("given, words", [
    ({"max_time_s": 600.0, "timeout_s": 1.0}, ["measure.max_time_s (600.0) must be below measure.timeout_s (1.0)"]),
    ({"timeout_s": 1.0}, ["measure.max_time_s (2.0, the cpu default) must be below measure.timeout_s (1.0)"]),
    ({"max_time_s": 60.0}, ["measure.max_time_s (60.0)", "measure.timeout_s (60.0, the cpu default)"]),
])
def test_sampling_that_cannot_fit_in_the_task_budget_is_refused(given, words):
    with pytest.raises(InvalidRequest) as err:
        measure_policy.resolve(given, "cpu")
    assert all(word in str(err.value) for word in words), str(err.value)


def test_a_job_stored_before_the_budget_rule_still_resolves():
    stored = {"max_time_s": 600.0, "timeout_s": 1.0}
    assert measure_policy.of_job(stored, "cpu-x86_64-avx2-2c")["max_time_s"] == 600.0
    for kind, defaults in measure_policy.DEFAULTS.items():
        assert defaults["max_time_s"] < defaults["timeout_s"], kind


def test_an_unknown_kind_is_refused():
    with pytest.raises(InvalidRequest, match=re.escape("no measurement defaults for device kind 'tpu'")):
        measure_policy.resolve({}, "tpu")


def test_describe_lists_every_field_with_its_defaults():
    described = {d["name"]: d for d in measure_policy.describe()}
    assert set(described) == set(measure_policy.FIELDS)
    assert described["warmup"]["defaults"] == {"cpu": 1, "cuda": 3} and described["warmup"]["type"] == "int"


def test_agents_receive_exactly_the_agent_fields_resolved():
    assert set(measure_policy.AGENT_FIELDS) <= set(measure_policy.FIELDS)
    assert set(measure_policy.AGENT_FIELDS) == set(pb.MeasureOptions.DESCRIPTOR.fields_by_name)
    options = measure_policy.resolve({"min_repeats": 9, "max_time_s": 3.5}, "cpu")
    message = convert.measure_options(options)
    assert {name: getattr(message, name) for name in measure_policy.AGENT_FIELDS} == {
        name: pytest.approx(options[name]) for name in measure_policy.AGENT_FIELDS}
    assert (message.min_repeats, message.max_time_s) == (9, 3.5)


def test_final_comparisons_may_sample_longer():
    options = measure_policy.resolve({}, "cpu")
    final = measure_policy.for_final_comparison(options)
    factor = measure_policy.FINAL_TIME_FACTOR
    assert final["max_time_s"] == options["max_time_s"] * factor
    assert final["max_repeats"] == options["max_repeats"] * factor
    assert final["timeout_s"] >= final["max_time_s"] and final["target_rel_ci"] == options["target_rel_ci"]
