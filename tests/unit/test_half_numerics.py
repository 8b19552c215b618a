"""The half dtypes' numerics: ROUNDING rows against ml_dtypes' finfo, and tolerances that pass a correctly rounded
output, fail one a few roundings off, and leave unchecked what a half output cannot hold."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import compiler_core as cc
from compiler_core.dtypes import numpy_dtype
from compiler_core.numerics import ROUNDING

HALVES = ("float16", "bfloat16")
ROW_OPS = {
    "softmax": dict(rows=16, cols=257),
    "layernorm": dict(rows=16, cols=257),
    "reduce_sum": dict(rows=16, cols=257),
    "elementwise": dict(rows=16, cols=257, expr="gelu(x*w+b)", vectors="w,b"),
    "matmul": dict(M=16, N=24, K=40),
    "conv2d": dict(N=1, C=3, H=7, W=7, K=4, R=3, S=3, pad=1),
}


@pytest.mark.parametrize("dtype", ["float32", *HALVES])
def test_rounding_rows_match_ml_dtypes_finfo(dtype):
    info = ml_dtypes.finfo(numpy_dtype(dtype))
    row = ROUNDING[dtype]
    assert (row.u, row.tiny, row.max) == (float(info.eps) / 2, float(info.smallest_normal), float(info.max))


def test_numpy_dtype_names_the_storage_types():
    assert numpy_dtype("bfloat16") == np.dtype(ml_dtypes.bfloat16)
    assert numpy_dtype("float16") == np.float16 and numpy_dtype("int32") == np.int32


def _rounded_outputs(w, expected):
    return [r.astype(numpy_dtype(w.dtype)) for r in expected.outputs]


@pytest.mark.parametrize("op", list(ROW_OPS))
@pytest.mark.parametrize("dtype", HALVES)
def test_correctly_rounded_outputs_pass_on_every_input_set(op, dtype):
    w = cc.make_workload(op, dict(ROW_OPS[op], dtype=dtype))
    for s in cc.input_sets(w, 3):
        assert all(a.dtype == numpy_dtype(dtype) for a in s.arrays)
        assert all(np.isfinite(a.astype(np.float64)).any() for a in s.arrays)
        expected = cc.expect(w, s.arrays)
        with np.errstate(all="ignore"):
            result = cc.verify(w, _rounded_outputs(w, expected), expected)
        assert result.ok, f"{s.name}: {result.message}"


@pytest.mark.parametrize("op", list(ROW_OPS))
@pytest.mark.parametrize("dtype", HALVES)
def test_outputs_eight_roundings_off_fail(op, dtype):
    """8u off (bfloat16: 3 %, float16: 0.4 %) is far outside what a float32-computing kernel may add."""
    w = cc.make_workload(op, dict(ROW_OPS[op], dtype=dtype))
    inputs = cc.random_inputs(w, 3)
    expected = cc.expect(w, inputs)
    off = [(r * (1 + 8 * ROUNDING[dtype].u)).astype(numpy_dtype(dtype)) for r in expected.outputs]
    assert not cc.verify(w, off, expected).ok


def test_float16_sums_beyond_its_range_are_unchecked_not_failed():
    """A row sum of 1e5 is inf in float16: the tolerance there is inf (unchecked), not a certain failure."""
    w = cc.make_workload("reduce_sum", rows=2, cols=4, dtype="float16")
    x = np.array([[3e4, 3e4, 3e4, 3e4], [1, 2, 3, 4]], dtype=np.float16)
    expected = cc.expect(w, [x])
    assert np.isposinf(np.broadcast_to(expected.tolerance[0], (2,))[0])
    got = np.array([np.inf, 10], dtype=np.float16)
    assert cc.verify(w, [got], expected).ok
    assert not cc.verify(w, [np.array([np.inf, 11], dtype=np.float16)], expected).ok


@pytest.mark.parametrize("op", ["reduce_sum", "layernorm", "softmax", "elementwise", "transpose"])
def test_float16_hard_inputs_stay_in_range(op):
    params = dict(rows=12, cols=4097) if op != "elementwise" else dict(rows=12, cols=64, expr="x*y")
    w = cc.make_workload(op, dict(params, dtype="float16"))
    x = cc.input_sets(w, 0)[1].arrays[0].astype(np.float64)
    finite = x[np.isfinite(x)]
    assert finite.size and np.abs(finite).max() <= 65504
    if op == "reduce_sum":  # every row sum stays well inside float16's range
        assert np.abs(x.sum(axis=-1)).max() <= 65504 / 2
    if op == "elementwise":  # the underflowing rows are float16 subnormals, not zeros
        tiny = np.abs(x[3::4])
        assert (tiny > 0).any() and tiny.max() < ROUNDING["float16"].tiny


def _max_first_attention(w, q, k, v):
    """What a tensor-core kernel that divides by each row's final max first computes (attention_wmma's max_first):
    float32 scores, p = exp(s - max) rounded to the input dtype for P V (float32 sums), the sum of the unrounded p."""
    half = numpy_dtype(w.dtype)
    scale = np.float32(1.0 / np.sqrt(w["head_dim"]))
    s = np.einsum("hqd,hkd->hqk", q.astype(np.float32), k.astype(np.float32)) * scale
    p = np.exp(s - s.max(axis=2, keepdims=True))
    acc = np.einsum("hqk,hkd->hqd", p.astype(half).astype(np.float32), v.astype(np.float32))
    return (acc / p.sum(axis=2, keepdims=True)).astype(half), p


def test_attention_tolerance_charges_p_rounded_into_float16_subnormals():
    """Keys far below a row's max leave p in float16's subnormal range, where rounding loses its relative precision:
    the tolerance charges u * tiny * sum |v| for it. Without that term these max_first numerics fail on 14 elements
    of the hard inputs (the farm rejected correct max_first kernels on the H200 the same way, at 16 x 2048^2)."""
    from compiler_core.verify import input_sets
    w = cc.make_workload("attention", dict(heads=8, seq_q=64, seq_kv=1024, head_dim=128, dtype="float16"))
    hard = next(s for s in input_sets(w, seed=0) if s.name == "hard").arrays
    out, p = _max_first_attention(w, *hard)
    assert ((p > 0) & (p < ROUNDING["float16"].tiny)).sum() > 1000  # many p are float16 subnormals
    assert cc.verify(w, [out], cc.expect(w, hard)).ok
