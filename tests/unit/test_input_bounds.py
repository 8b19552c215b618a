"""The edges' input rules without a server or database: time bounds, strict JSON, an imported trial's plausibility,
and REST schemas that say what the server enforces (measure options, op params)."""
from __future__ import annotations

import json
import math
from datetime import UTC, datetime

import pytest

import compiler_core as cc
from tuner_server import bounds, measure_policy, strict_json
from tuner_server.api.errors import error_response
from tuner_server.api.op_query import OpParamsQuery
from tuner_server.api.schemas import MeasureOptionsIn
from tuner_server.repo.comparisons import paired
from tuner_server.repo.plausible import MAX_SAMPLES, trial_problem

NOW = datetime(2026, 6, 1, tzinfo=UTC)


@pytest.mark.parametrize("text, problem", [
    ("0001-01-01T00:00:00+01:00", "must be between"),  # UTC would be year 0
    ("9999-12-31T23:59:59-01:00", "must be between"),  # UTC would be year 10000
    ("9999-12-31T00:00:00+00:00", "must be between"),
    ("1969-12-30T00:00:00+00:00", "must be between"),
    ("2026-01-01T00:00:00", "has no time zone"),
    ("2026-01-01T00:00:00+00:00", None),
    ("1970-01-01T00:00:00+00:00", None),
    ("9999-12-30T00:00:00+00:00", None),
])
def test_time_bounds_refuse_what_overflows_or_has_no_zone(text, problem):
    found = bounds.time_problem(datetime.fromisoformat(text))
    assert (found is None) if problem is None else (problem in found), found


@pytest.mark.parametrize("text, words", [
    ('{"median_s": NaN}', "NaN is not JSON"),
    ('{"median_s": -Infinity}', "-Infinity is not JSON"),
    ('[1e999]', "beyond a double's range"),
    ('{"name": "a\\u0000b"}', "name: a NUL character"),
    ('{"a\\u0000": 1}', "NUL character"),
    ('{"p": {"q": ["x", "\\u0000"]}}', "p.q[1]"),
])
def test_strict_json_refuses_non_finite_numbers_and_nul(text, words):
    with pytest.raises(ValueError, match=words.replace("[", r"\[").replace("]", r"\]")):
        strict_json.loads(text)


@pytest.mark.parametrize("data, error, words", [
    ('{"op": "\\ud800"}', strict_json.LoneSurrogate, "op: a lone UTF-16 surrogate (\\ud800)"),
    ('{"p": {"\\udfff": 1}}', strict_json.LoneSurrogate, "p.'\\udfff': a lone UTF-16 surrogate"),
    ('["a\\udc00b"]', strict_json.LoneSurrogate, "[0]: a lone"),
    ('{"a": 1, "a": 2}', strict_json.DuplicateKey, "key 'a' appears twice"),
    ('{"p": {"q": 1, "q": 1}}', strict_json.DuplicateKey, "key 'q' appears twice"),
    ("[" * 33 + "]" * 33, strict_json.NestedTooDeeply, "at most 32 levels"),
    ("[" * 100_000 + "]" * 100_000, strict_json.NestedTooDeeply, "at most 32 levels"),
    ("1" * 101, strict_json.NumberTooLong, "(101 characters) is too long"),
    ("[1." + "0" * 5000 + "]", strict_json.NumberTooLong, "too long"),
    (b'{"a": "\xff"}', strict_json.NotUTF8, "byte 0xff at offset 7"),
    ('{"a": 1}'.encode("utf-16"), strict_json.NotUTF8, "not UTF-8"),
    (b'{"a": "\xed\xa0\x80"}', strict_json.NotUTF8, "not UTF-8"),  # a surrogate written as UTF-8 bytes
])
def test_strict_json_refuses_what_other_readers_guess_at(data, error, words):
    with pytest.raises(error) as caught:
        strict_json.loads(data)
    assert words in str(caught.value) and isinstance(caught.value, strict_json.MalformedJSON)


def test_strict_json_reads_ordinary_json():
    assert strict_json.loads('{"a": [1, 2.5e-3, "x", null, true], "b": {"c": 1e308}}') == {
        "a": [1, 2.5e-3, "x", None, True], "b": {"c": 1e308}}
    text = '{"emoji": "\\ud83d\\ude00", "n": ' + "9" * 100 + ', "deep": ' + "[" * 31 + "]" * 31 + "}"
    assert strict_json.loads(text.encode())["emoji"] == "\U0001f600"  # a surrogate pair is one character
    assert strict_json.loads("é".join(['{"k": "', '"}']).encode()) == {"k": "é"}


def test_an_error_body_renders_whatever_it_echoes():
    response = error_response(422, "bad \ud800 value", {"input": "\udfff", "ratio": math.nan, "n": [math.inf]})
    body = json.loads(response.body)
    assert body == {"error": "bad \\ud800 value", "detail": {"input": "\\udfff", "ratio": "nan", "n": ["inf"]}}


def _trial(**changes) -> dict:
    trial = {"id": "t1", "status": "OK", "codegen_version": "18c543ff27d96181", "config": {"mr": 4, "form": "x"},
             "samples": [1.1e-3, 1.0e-3, 1.2e-3], "median_s": 1.1e-3, "ci_low_s": 1.0e-3, "ci_high_s": 1.2e-3,
             "compile_s": 0.5, "max_abs_error": 1e-6, "error": None, "created_at": datetime(2026, 1, 1, tzinfo=UTC)}
    trial.update(changes)
    return trial


@pytest.mark.parametrize("changes, words", [
    ({"median_s": -0.001}, "median_s must be > 0"),
    ({"median_s": 0.0}, "median_s must be > 0"),
    ({"median_s": math.nan}, "median_s must be a finite number"),
    ({"median_s": math.inf}, "median_s must be a finite number"),
    ({"samples": [1e-3, -1e-3]}, "samples[1] must be > 0"),
    ({"samples": [1e-3, math.nan]}, "samples[1] must be a finite number"),
    ({"samples": [10**400]}, "samples[0] must be a finite number"),
    ({"samples": [1e-3] * (MAX_SAMPLES + 1)}, f"at most {MAX_SAMPLES} samples"),
    ({"median_s": 5e-3}, "outside its samples' range"),
    ({"ci_low_s": 1.15e-3}, "does not hold median_s"),
    ({"ci_high_s": 1.05e-3}, "does not hold median_s"),
    ({"samples": []}, "an OK trial has its samples and median_s"),
    ({"median_s": None, "ci_low_s": None, "ci_high_s": None}, "an OK trial has its samples and median_s"),
    ({"status": "COMPILE_ERROR"}, "a COMPILE_ERROR trial was not timed"),
    ({"status": "WRONG_ANSWER", "samples": [], "ci_low_s": None, "ci_high_s": None}, "was not timed"),
    ({"codegen_version": ""}, "codegen_version must be"),
    ({"codegen_version": "x" * 65}, "codegen_version must be"),
    ({"compile_s": -1.0}, "compile_s must be >= 0"),
    ({"max_abs_error": math.nan}, "max_abs_error must be a finite number"),
    ({"config": {"mr": 2**40}}, "config knob 'mr'"),
    ({"config": {"mr": 1.5}}, "config knob 'mr'"),
    ({"config": {f"k{i}": 1 for i in range(65)}}, "config has 65 knobs"),
    ({"created_at": datetime(1969, 1, 1, tzinfo=UTC)}, "created_at 1969-01-01T00:00:00+00:00 must be between"),
    ({"created_at": datetime(2026, 6, 3, tzinfo=UTC)}, "is in the future"),
    ({"error": "x" * 16_001}, "error text over"),
])
def test_an_implausible_trial_is_named(changes, words):
    problem = trial_problem(_trial(**changes), NOW)
    assert problem is not None and words in problem, problem


@pytest.mark.parametrize("changes", [
    {},
    {"ci_low_s": None, "ci_high_s": None},
    {"status": "RUNTIME_ERROR", "samples": [], "median_s": None, "ci_low_s": None, "ci_high_s": None,
     "error": "illegal address", "max_abs_error": None},
    {"created_at": datetime(2026, 6, 1, 12, tzinfo=UTC)},  # a clock a little ahead
    {"config": {"vectorize": True, "unroll": 0}},
])
def test_a_plausible_trial_passes(changes):
    assert trial_problem(_trial(**changes), NOW) is None


def test_measure_option_bounds_in_the_schema_are_the_policys():
    schema = MeasureOptionsIn.model_json_schema()["properties"]
    assert set(schema) == set(measure_policy.FIELDS)
    for name, (kind, low, high, _) in measure_policy.FIELDS.items():
        number = next(s for s in schema[name]["anyOf"] if s["type"] != "null")
        if kind is bool:
            assert number["type"] == "boolean", name
        else:
            assert (number["type"], number["minimum"], number["maximum"]) == (
                "integer" if kind is int else "number", low, high), name


def test_every_op_param_is_a_declared_query_parameter_within_its_bounds():
    schema = OpParamsQuery.model_json_schema()["properties"]
    assert schema["op"]["enum"] == sorted(cc.OPS)
    for op in cc.OPS:
        for param in cc.get_op(op).params:
            declared = next(s for s in schema[param.name]["anyOf"] if s["type"] != "null")
            if param.kind == "int":
                assert declared["minimum"] <= param.lo and param.hi <= declared["maximum"], (op, param.name)
            elif param.choices:
                assert set(param.choices) <= set(declared["enum"]), (op, param.name)
            else:
                assert declared["type"] == "string" and "maxLength" in declared, (op, param.name)


def test_a_paired_ratio_beyond_a_double_is_left_out():
    assert paired([1.0], [5e-324]) is None  # 1 / 5e-324 is inf: nothing to store
    kept = paired([1.0, 2e-3, 2e-3], [5e-324, 1e-3, 1e-3])
    assert kept is not None and math.isfinite(kept.high) and kept.ratio == 2.0
