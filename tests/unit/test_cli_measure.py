"""`--measure name=value,...`: numbers and true/false become the job's measurement options; anything else is a
one-line CliError before a request is sent (names and bounds are the server's to check)."""
from __future__ import annotations

import pytest

from tunefarm_cli.commands import CliError, parse_measure


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
