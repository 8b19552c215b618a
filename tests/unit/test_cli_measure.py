"""`--measure name=value,...`: numbers and true/false become the job's measurement options; anything else is a
one-line CliError before a request is sent (names and bounds are the server's to check). `--strategy-options`: JSON
values where they parse, strings otherwise, or one JSON object."""
from __future__ import annotations

import pytest

from tunefarm_cli.commands import CliError, parse_measure, parse_strategy_options


def test_numbers_and_booleans_parse_and_nothing_given_is_no_option():
    assert parse_measure("max_time_s=0.5, recheck_top=2,flush_cache=false,time_reference=true") == \
        {"max_time_s": 0.5, "recheck_top": 2, "flush_cache": False, "time_reference": True}
    assert parse_measure(None) == {} and parse_measure("") == {}


@pytest.mark.parametrize("text, words", [
    ("recheck_top", "'recheck_top' is not name=value"),
    ("=3", "'=3' is not name=value"),
    ("max_time_s=soon", "max_time_s=soon: a measurement option is a finite number or true/false"),
    ("max_time_s=NaN", "a finite number"),
    ("max_time_s=1e999", "a finite number"),
    ("max_time_s=Infinity", "a finite number"),
    ("recheck_top=[2]", "a finite number"),
])
def test_anything_else_is_named(text, words):
    with pytest.raises(CliError) as caught:
        parse_measure(text)
    assert words in str(caught.value)


def test_strategy_options_take_json_values_strings_or_an_object():
    assert parse_strategy_options("members=8, acquisition=ei,stall=null,kappa=1.5,transfer=false") == \
        {"members": 8, "acquisition": "ei", "stall": None, "kappa": 1.5, "transfer": False}
    assert parse_strategy_options('{"members": 8, "acquisition": "ei"}') == {"members": 8, "acquisition": "ei"}
    assert parse_strategy_options(None) == {} and parse_strategy_options("") == {}
    for text, words in (("members", "'members' is not name=value"), ("{1: 2}", "not a JSON object"),
                        ("[1]", "'[1]' is not name=value"), ('{"a": 1', "not a JSON object")):
        with pytest.raises(CliError, match=words.replace("[", r"\[")):
            parse_strategy_options(text)
