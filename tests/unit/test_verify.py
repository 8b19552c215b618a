"""verify without a compiler: input sets, per-element tolerances, the comparison and Expected on disk."""
from __future__ import annotations

import numpy as np
import pytest

import compiler_core as cc
from tests.verify_mutations import CASES, workload


@pytest.mark.parametrize("case", list(CASES))
def test_input_sets_are_deterministic_random_first_then_hard(case):
    w = workload(case)
    a, b = cc.input_sets(w, 3), cc.input_sets(w, 3)
    assert [s.name for s in a] == ["random", "hard"]
    for s, t in zip(a, b, strict=True):
        assert all(np.array_equal(x, y, equal_nan=True) for x, y in zip(s.arrays, t.arrays, strict=True))
        specs = cc.get_op(w.op).input_specs(w)
        assert [(x.shape, str(x.dtype)) for x in s.arrays] == [(p.shape, p.dtype) for p in specs]
    assert not np.array_equal(a[0].arrays[0], cc.input_sets(w, 4)[0].arrays[0])
    assert np.array_equal(a[0].arrays[0], cc.random_inputs(w, 3)[0])


@pytest.mark.parametrize("case", list(CASES))
def test_reference_rounded_to_the_dtype_passes_and_tolerances_are_finite(case):
    w = workload(case)
    for s in cc.input_sets(w, 3):
        expected = cc.expect(w, s.arrays)
        assert all(r.dtype == np.float64 and t.dtype == np.float64 for r, t in zip(
            expected.outputs, expected.tolerance, strict=True))
        with np.errstate(all="ignore"):
            rounded = [r.astype(w.dtype) for r in expected.outputs]
        assert cc.verify(w, rounded, expected).ok, (s.name, cc.verify(w, rounded, expected).message)


def test_all_zero_softmax_of_7_by_100003_fails():
    w = cc.make_workload("softmax", rows=7, cols=100003)
    inputs = cc.random_inputs(w, 0)
    result = cc.verify(w, [np.zeros((7, 100003), np.float32)], cc.expect(w, inputs))
    assert not result.ok and "700021 of 700021 elements wrong" in result.message


def test_a_row_reported_as_zero_fails_beside_a_row_of_1e5():
    w = cc.make_workload("reduce_sum", rows=2, cols=1000)
    x = np.stack([np.full(1000, 100.0), np.full(1000, 1e-3)]).astype(np.float32)
    expected = cc.expect(w, [x])
    good = x.astype(np.float64).sum(axis=1).astype(np.float32)
    assert cc.verify(w, [good], expected).ok
    result = cc.verify(w, [np.array([good[0], 0.0], np.float32)], expected)
    assert not result.ok
    assert result.message.startswith("output 0: 1 of 2 elements wrong; first at (1,): got 0.0, expected 1.0")


def test_layernorm_tolerance_follows_the_rows_conditioning():
    """A row offset by 1e4 with spread 1 is allowed float32's rounding of the offset; a centred row is not."""
    w = cc.make_workload("layernorm", rows=2, cols=64)
    rng = np.random.default_rng(0)
    x = rng.uniform(-1.0, 1.0, (2, 64))
    x[0] += 1e4
    inputs = [x.astype(np.float32), np.ones(64, np.float32), np.zeros(64, np.float32)]
    tol = cc.expect(w, inputs).tolerance[0]
    assert 1e-4 < tol[0].min() < 1e-2 and tol[1].max() < 1e-4


def test_nan_and_inf_must_match_and_infinite_tolerance_is_unchecked():
    w = cc.make_workload("transpose", rows=1, cols=4)
    x = np.array([[np.nan, np.inf, -np.inf, 1.0]], np.float32)
    expected = cc.expect(w, [x])
    assert cc.verify(w, [x.T.copy()], expected).ok
    for wrong in ([[0.0], [np.inf], [-np.inf], [1.0]], [[np.nan], [-np.inf], [-np.inf], [1.0]],
                  [[np.nan], [np.inf], [-np.inf], [np.nan]]):
        assert not cc.verify(w, [np.array(wrong, np.float32)], expected).ok
    loose = cc.Expected([np.array([1.0, 2.0])], [np.array([np.inf, 0.0])])
    assert cc.verify(w, [np.array([np.nan, 2.0])], loose).ok
    assert not cc.verify(w, [np.array([np.nan, 2.5])], loose).ok


def test_shape_mismatch_and_old_signature_are_refused():
    w = cc.make_workload("reduce_sum", rows=2, cols=3)
    expected = cc.expect(w, cc.random_inputs(w, 0))
    assert "shape (3,) != expected (2,)" in cc.verify(w, [np.zeros(3, np.float32)], expected).message
    with pytest.raises(TypeError, match="expect"):
        cc.verify(w, [np.zeros(2, np.float32)], [np.zeros(2)])


def test_expected_round_trips_through_npz_exactly(tmp_path):
    w = workload("softmax")
    expected = cc.expect(w, cc.input_sets(w, 1)[1].arrays)
    path = tmp_path / "softmax.expected"
    expected.save(path)
    loaded = cc.Expected.load(path)
    assert path.exists() and len(loaded.outputs) == len(expected.outputs) == 1
    for a, b in zip(expected.outputs + expected.tolerance, loaded.outputs + loaded.tolerance, strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=True)


def test_elementwise_tolerance_grows_with_cancellation_and_overflow_is_unchecked():
    w = cc.make_workload("elementwise", rows=1, cols=3, expr="exp(x)-exp(y)")
    x = np.array([[1.0, 1.0, 100.0]], np.float32)
    y = np.array([[1.0, -1.0, 0.0]], np.float32)
    expected = cc.expect(w, [x, y])
    tol = expected.tolerance[0][0]
    assert expected.outputs[0][0, 0] == 0 and 0 < tol[0] < 1e-5  # exp(1) - exp(1): both exps' rounding
    assert tol[1] < 1e-5 and tol[2] == np.inf  # exp(100) overflows float32


def test_an_op_without_an_error_model_gets_the_whole_output_fallback():
    import dataclasses

    from compiler_core.ops import OPS

    plain = dataclasses.replace(OPS["transpose"], name="plain_copy", tolerance=None, hard_inputs=None)
    OPS["plain_copy"] = plain
    try:
        w = cc.make_workload("plain_copy", rows=2, cols=3)
        assert [s.name for s in cc.input_sets(w, 0)] == ["random"]
        expected = cc.expect(w, [np.full((2, 3), 2.0, np.float32)])
        assert np.array_equal(expected.tolerance[0], [2e-4])
        assert cc.verify(w, [np.full((3, 2), 2.0001, np.float32)], expected).ok
        assert not cc.verify(w, [np.full((3, 2), 2.001, np.float32)], expected).ok
    finally:
        del OPS["plain_copy"]
