"""`--measure name=value,...`: numbers and true/false become the job's measurement options; anything else is a
one-line CliError before a request is sent (names and bounds are the server's to check). `--strategy-options`: JSON
values where they parse, strings otherwise, or one JSON object (a number that is not finite refused). `--params`: a
param given twice is refused, and integers are read as the server reads them."""
from __future__ import annotations

import pytest

from tunefarm_cli.commands import CliError, parse_measure, parse_params, parse_strategy_options


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


@pytest.mark.parametrize("value", ["nan", "NaN", "-inf", "Infinity", "1e999"])
def test_a_strategy_option_that_is_no_finite_number_is_named_before_a_request(value):
    with pytest.raises(CliError, match=f"--strategy-options kappa={value}: not a finite number, and no option takes "
                                       "NaN or an infinity"):
        parse_strategy_options(f"kappa={value}")
    with pytest.raises(CliError, match="NaN is not JSON: numbers must be finite"):
        parse_strategy_options('{"kappa": NaN}')


def test_params_are_split_as_workload_keys_and_read_integers_as_the_server_does():
    assert parse_params("M=512, N=512,K=512,dtype=float32") == {"M": 512, "N": 512, "K": 512, "dtype": "float32"}
    assert parse_params("rows=8,cols=8,expr=max(x,w),vectors=w,b") == \
        {"rows": 8, "cols": 8, "expr": "max(x,w)", "vectors": "w,b"}
    # only JSON's spelling of an integer is one (compiler_core's INT_TEXT): the rest stay text, which the server refuses
    assert parse_params("M=+64,N=064,K=-1") == {"M": "+64", "N": "064", "K": -1}


def test_a_param_given_twice_is_refused_as_the_server_refuses_a_query_parameter_twice():
    with pytest.raises(CliError, match="--params 'M=64,N=8,M=32': param 'M' given more than once; give each at "
                                       "most once"):
        parse_params("M=64,N=8,M=32")
    with pytest.raises(CliError, match="'=3' is not name=value"):
        parse_params("M=64,=3")
