"""make_workload validation, canonical keys and parse_key."""
from __future__ import annotations

import pytest

from compiler_core import OPS, WorkloadError, get_op, make_workload, parse_key
from compiler_core.workload import MAX_DIM, MAX_TENSOR_ELEMS, Workload, parse_params

MATMUL = dict(M=64, N=32, K=16)


# ---- errors --------------------------------------------------------------------------------
def test_unknown_op_lists_the_known_ones():
    with pytest.raises(WorkloadError, match=r"unknown op 'conv'; known ops: .*conv2d.*matmul"):
        make_workload("conv", {})
    with pytest.raises(WorkloadError, match="unknown op"):
        get_op(3)


def test_missing_param():
    with pytest.raises(WorkloadError, match=r"matmul: missing param K; expected M, N, K, dtype"):
        make_workload("matmul", M=4, N=4)


def test_extra_param():
    with pytest.raises(WorkloadError, match=r"matmul: unknown param\(s\) Q, Z; expected M, N, K, dtype"):
        make_workload("matmul", dict(MATMUL, Z=1, Q=2))


@pytest.mark.parametrize("value", [4.0, "abc", True, False, None, "4.5", [4], "²", "٣", "4²", "", "1" * 40,
                                   " 64", "+64", "064", "64 ", "64\n", "1" * 19])
def test_non_integer(value):
    with pytest.raises(WorkloadError, match=rf"param M must be an integer in \[1, {MAX_DIM}\], got"):
        make_workload("matmul", dict(MATMUL, M=value))


def test_non_string_and_unknown_dtype_name_the_choices():
    with pytest.raises(WorkloadError, match=r"param dtype must be a string \(one of float32, float16, bfloat16\), "
                                            r"got 3"):
        make_workload("matmul", dict(MATMUL, dtype=3))
    with pytest.raises(WorkloadError, match=r"unsupported dtype 'bf16'; allowed: float32, float16, bfloat16"):
        make_workload("matmul", dict(MATMUL, dtype="bf16"))


@pytest.mark.parametrize("op, params", [("matmul", MATMUL), ("batch_matmul", dict(batch=2, M=4, N=4, K=4)),
                                        ("conv2d", dict(N=1, C=2, H=5, W=5, K=3, R=3, S=3)),
                                        ("softmax", dict(rows=4, cols=4)), ("layernorm", dict(rows=4, cols=4)),
                                        ("reduce_sum", dict(rows=4, cols=4)), ("transpose", dict(rows=4, cols=4)),
                                        ("elementwise", dict(rows=4, cols=4, expr="x*y"))])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_every_op_takes_the_half_dtypes(op, params, dtype):
    w = make_workload(op, dict(params, dtype=dtype))
    assert w.dtype == dtype and w.key.endswith(f"dtype={dtype})")


@pytest.mark.parametrize("params", ["M=4", [("M", 4)], 7])
def test_params_must_be_a_dict(params):
    with pytest.raises(WorkloadError, match=r"matmul: params must be a dict of M, N, K, dtype"):
        make_workload("matmul", params)


def test_key_with_a_non_ascii_digit_is_a_workload_error():
    with pytest.raises(WorkloadError, match="param M must be an integer"):
        parse_key("matmul(M=²,N=4,K=4,dtype=float32)")


def test_integer_strings_are_accepted():
    assert make_workload("matmul", dict(MATMUL, M="64")) == make_workload("matmul", MATMUL)


def test_params_text_names_a_param_at_most_once():
    assert parse_params("M=64, N=8,K=16") == {"M": 64, "N": 8, "K": 16}
    assert parse_params("M=+64,N=064") == {"M": "+64", "N": "064"}  # text: the op's int param refuses it
    assert parse_params(f"M={'9' * 18},N={'9' * 19}") == {"M": int("9" * 18), "N": "9" * 19}  # 64-bit ints only
    with pytest.raises(WorkloadError, match="param 'M' given more than once"):
        parse_params("M=64,N=8,M=32")
    with pytest.raises(WorkloadError, match="'=3' is not name=value"):
        parse_params("M=64,=3")


@pytest.mark.parametrize("value", [0, -3])
def test_non_positive(value):
    with pytest.raises(WorkloadError, match=rf"param M={value} out of range \[1, {MAX_DIM}\]"):
        make_workload("matmul", dict(MATMUL, M=value))


def test_absurd_sizes():
    with pytest.raises(WorkloadError, match="out of range"):
        make_workload("matmul", dict(MATMUL, M=MAX_DIM + 1))
    with pytest.raises(WorkloadError, match=rf"tensor C would have {MAX_DIM * MAX_DIM} elements > {MAX_TENSOR_ELEMS}"):
        make_workload("matmul", M=MAX_DIM, N=MAX_DIM, K=4)
    with pytest.raises(WorkloadError, match="out of range"):
        make_workload("conv2d", N=1, C=1, H=8, W=8, K=1, R=64, S=3)


@pytest.mark.parametrize("op, params, allowed", [
    ("matmul", dict(MATMUL, dtype="float64"), "float32, float16, bfloat16"),
    ("softmax", dict(rows=4, cols=4, dtype="half"), "float32, float16, bfloat16"),
    ("elementwise", dict(rows=4, cols=4, expr="x", dtype="int32"), "float32, float16, bfloat16"),
])
def test_unsupported_dtype(op, params, allowed):
    with pytest.raises(WorkloadError, match=rf"unsupported dtype '{params['dtype']}'; allowed: {allowed}"):
        make_workload(op, params)


def test_string_params_must_be_strings():
    with pytest.raises(WorkloadError, match="param dtype must be a string"):
        make_workload("matmul", dict(MATMUL, dtype=16))


@pytest.mark.parametrize("expr, message", [
    ('__import__("os")', "unexpected character '\"'"),
    ("__import__(os)", "unknown function '__import__'"),
    ("x.__class__", "unexpected character '.'"),
    ("x;y", "unexpected character ';'"),
    ("x+", "expected a value, found 'end of input'"),
    ("x**2", "expected a value, found '\\*'"),
    ("(x", "expected \\), found 'end of input'"),
    ("foo(x)", "unknown function 'foo'"),
    ("max(x)", "max takes 2 argument\\(s\\), got 1"),
    ("exp(x,y)", "exp takes 1 argument\\(s\\), got 2"),
    ("relu", "relu is a function and needs arguments"),
    ("", "empty"),
    ("1+2", "reads no input"),
    ("x" * 300, "longer than 256 characters"),
    ("+".join("abcdefghi"), "9 inputs > 8"),
    ("(" * 40 + "x" + ")" * 40, "nested deeper than 32"),
])
def test_malformed_or_unsafe_elementwise_expressions(expr, message):
    with pytest.raises(WorkloadError, match=message):
        make_workload("elementwise", rows=4, cols=4, expr=expr)


def test_elementwise_vector_inputs_are_checked():
    with pytest.raises(WorkloadError, match="vectors z not inputs of the expression"):
        make_workload("elementwise", rows=4, cols=4, expr="x+y", vectors="z")
    with pytest.raises(WorkloadError, match="at least one input must be a full"):
        make_workload("elementwise", rows=4, cols=4, expr="x+y", vectors="x,y")


EPS_RANGE = r"eps must be in \[1.1754944e-38, 1\] \(float32's smallest normal number to 1\)"


@pytest.mark.parametrize("eps, message", [("abc", "eps must be a number"), ("0", EPS_RANGE), ("nan", EPS_RANGE),
                                          ("2", EPS_RANGE), ("1e-50", EPS_RANGE), ("1e-38", EPS_RANGE),
                                          ("-1e-5", EPS_RANGE), ("inf", EPS_RANGE)])
def test_layernorm_eps_is_checked(eps, message):
    with pytest.raises(WorkloadError, match=message):
        make_workload("layernorm", rows=4, cols=4, eps=eps)


@pytest.mark.parametrize("eps", ["1.1754944e-38", "1.17549435e-38", "1e-37"])
def test_smallest_eps_is_emitted_as_a_normal_float32(eps):
    """A literal below float32's smallest normal would be subnormal (or 0 under flush-to-zero): rsqrt(0 + eps)
    of a constant row would be inf and 0 * inf NaN."""
    import re

    import numpy as np

    from compiler_core import cpu_target, cuda_target, default_config, generate

    w = make_workload("layernorm", rows=4, cols=8, eps=eps)
    for target in (cpu_target(cores=2), cuda_target("sm_90")):
        source = generate(w, default_config(w, target), target)
        literals = [np.float32(v) for v in re.findall(r"(\d(?:\.\d*)?e-3\d)f", source)]
        assert literals and all(v >= np.finfo(np.float32).tiny for v in literals), (target.kind, literals)


@pytest.mark.parametrize("expr", ["x+1e999", "x*1e39", "x*-3.5e38", "x+1e-50"])
def test_elementwise_literals_outside_float32_are_refused(expr):
    with pytest.raises(WorkloadError, match=r"outside float32's range: literals must be 0 or between 1.1754944e-38"):
        make_workload("elementwise", rows=2, cols=2, expr=expr)


@pytest.mark.parametrize("expr", ["x+inf", "nan*x", "x+Infinity", "NaN"])
def test_inf_and_nan_never_name_inputs(expr):
    with pytest.raises(WorkloadError, match=r"cannot name an input \(it reads as a number\)"):
        make_workload("elementwise", rows=2, cols=2, expr=expr)


def test_large_and_small_float32_literals_round_trip_through_the_key():
    w = make_workload("elementwise", rows=2, cols=2, expr="x*3e38+y*2e-38+0.0")
    assert parse_key(w.key) == w


def test_conv2d_cross_param_checks():
    # each refusal names what is wrong and the range allowed for these params
    with pytest.raises(WorkloadError, match=r"filter 5x5 larger than padded input 2x2: R must be in "
                                            r"\[1, H \+ 2 pad\] = \[1, 2\] and S in \[1, W \+ 2 pad\] = \[1, 2\]"):
        make_workload("conv2d", N=1, C=1, H=2, W=2, K=1, R=5, S=5)
    with pytest.raises(WorkloadError, match=r"filter 1x7 larger than padded input 8x6: .* S in .* = \[1, 6\]"):
        make_workload("conv2d", N=1, C=1, H=6, W=4, K=1, R=1, S=7, pad=1)
    with pytest.raises(WorkloadError, match=r"pad=3 must be smaller than the filter size: pad in "
                                            r"\[0, max\(R, S\) - 1\] = \[0, 2\]"):
        make_workload("conv2d", N=1, C=1, H=8, W=8, K=1, R=3, S=3, pad=3)
    assert make_workload("conv2d", N=1, C=1, H=6, W=4, K=1, R=1, S=6, pad=1).get("S") == 6  # the edges pass
    assert make_workload("conv2d", N=1, C=1, H=8, W=8, K=1, R=3, S=3, pad=2).get("pad") == 2


# ---- canonical keys ---------------------------------------------------------------------------
def test_key_is_in_signature_order_with_defaults():
    a = make_workload("matmul", K=16, N=32, M=64)
    b = make_workload("matmul", {"M": 64, "N": 32, "K": 16, "dtype": "float32"})
    assert a.key == b.key == "matmul(M=64,N=32,K=16,dtype=float32)"
    assert a == b and hash(a) == hash(b) and str(a) == a.key
    assert a["M"] == 64 and a.dtype == "float32" and a.get("nope", 7) == 7


def test_elementwise_key_is_canonical():
    a = make_workload("elementwise", rows=4, cols=8, expr="gelu( x * w + b )", vectors="w, b")
    b = make_workload("elementwise", rows=4, cols=8, expr="gelu(((x*w))+b)", vectors="b,w")
    assert a.key == b.key == "elementwise(rows=4,cols=8,expr=gelu(x*w+b),vectors=b,w,dtype=float32)"


def test_elementwise_canonical_text_keeps_needed_parentheses():
    w = make_workload("elementwise", rows=2, cols=2, expr="x/(y*z)-(a-b)")
    assert w["expr"] == "x/(y*z)-(a-b)"
    assert make_workload("elementwise", rows=2, cols=2, expr="(x*y)+z")["expr"] == "x*y+z"


def test_layernorm_eps_is_canonical():
    a = make_workload("layernorm", rows=4, cols=8, eps="1e-5")
    assert a.key == "layernorm(rows=4,cols=8,eps=1e-05,dtype=float32)"
    assert make_workload("layernorm", rows=4, cols=8) == a
    assert make_workload("layernorm", rows=4, cols=8, eps="0.001")["eps"] == "0.001"


ROUND_TRIP = [
    ("matmul", dict(M=64, N=32, K=16, dtype="float16")),
    ("batch_matmul", dict(batch=2, M=8, N=8, K=8)),
    ("conv2d", dict(N=1, C=3, H=9, W=11, K=5, R=3, S=3, stride=2, pad=1)),
    ("softmax", dict(rows=3, cols=7)),
    ("layernorm", dict(rows=3, cols=7, eps="1e-3")),
    ("reduce_sum", dict(rows=3, cols=7)),
    ("transpose", dict(rows=3, cols=7)),
    ("elementwise", dict(rows=3, cols=7, expr="max(x,y)-min(a,b)*2.5", vectors="y,b")),
    ("elementwise", dict(rows=3, cols=7, expr="gelu(x*w+b)", vectors="w,b")),
    ("elementwise", dict(rows=3, cols=7, expr="-x/(y+1e-3)")),
    ("attention", dict(heads=2, seq_q=3, seq_kv=5, head_dim=4, causal=1, dtype="bfloat16")),
]


@pytest.mark.parametrize("op, params", ROUND_TRIP, ids=[f"{op}-{i}" for i, (op, _) in enumerate(ROUND_TRIP)])
def test_parse_key_round_trips(op, params):
    w = make_workload(op, params)
    again = parse_key(w.key)
    assert isinstance(again, Workload) and again == w and again.key == w.key


def test_round_trip_cases_cover_every_op():
    assert {op for op, _ in ROUND_TRIP} == set(OPS)


@pytest.mark.parametrize("key", ["matmul", "matmul(M=4,N=4,K=4", "nope(M=1)", "matmul(M=4,N=4,K=4,dtype=float64)",
                                 "matmul(M=4,N=4,K)"])
def test_parse_key_rejects_malformed_keys(key):
    with pytest.raises(WorkloadError):
        parse_key(key)


def test_parse_key_validates_like_make_workload():
    with pytest.raises(WorkloadError, match="unexpected character"):
        parse_key('elementwise(rows=2,cols=2,expr=__import__("os"),vectors=,dtype=float32)')
