"""The CPU row-op templates (softmax, layernorm, reduce_sum, transpose) compiled and checked against numpy on
odd shapes, special values, and the vector exp the explicit-vector configs use."""
from __future__ import annotations

import random
import re
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import compiler_core as cc
from compiler_core.codegen import generate_source
from compiler_core.ir import IRBuilder, Load, Module, PrimFunc, call
from compiler_core.ir.stmt import Buffer, ForKind
from compiler_core.lower import run_passes
from compiler_core.runtime.c_runtime import CLibrary, compile_shared_library

TARGET = cc.cpu_target(cores=2)
ROW = {"rows_per_task": 1, "vector": "explicit", "accumulators": 1}
# Hand-picked: both vector modes, every accumulator count and statistics scheme, partial row tasks,
# split rows (reduce_sum), every tile order (transpose).
VARIANTS = {
    "softmax": [
        {**ROW, "stats": "two_pass", "store_exp": 0},
        {**ROW, "accumulators": 4, "stats": "two_pass", "store_exp": 1, "rows_per_task": 4},
        {**ROW, "accumulators": 2, "stats": "online", "store_exp": 0, "rows_per_task": 2},
        {**ROW, "vector": "simd", "accumulators": 2, "stats": "two_pass", "store_exp": 1},
        {**ROW, "vector": "simd", "accumulators": 4, "stats": "online", "store_exp": 0, "rows_per_task": 16},
    ],
    "layernorm": [
        {**ROW, "stats": "two_pass"},
        {**ROW, "accumulators": 4, "stats": "shifted", "rows_per_task": 4},
        {**ROW, "vector": "simd", "accumulators": 2, "stats": "two_pass", "rows_per_task": 2},
        {**ROW, "vector": "simd", "accumulators": 1, "stats": "shifted", "rows_per_task": 64},
    ],
    "reduce_sum": [
        {**ROW, "split": 1},
        {**ROW, "accumulators": 4, "split": 1, "rows_per_task": 8},
        {**ROW, "accumulators": 2, "split": 4, "rows_per_task": 2},
        {**ROW, "vector": "simd", "accumulators": 4, "split": 16},
        {**ROW, "vector": "simd", "accumulators": 1, "split": 2, "rows_per_task": 4},
    ],
    "transpose": [
        {"tile": 8, "order": "read", "simd": 0},
        {"tile": 16, "order": "write", "simd": 1},
        {"tile": 64, "order": "read", "simd": 1},
        {"tile": 128, "order": "write", "simd": 0},
    ],
}
SHAPES = [(1, 1), (3, 7), (5, 37), (1000, 333), (3, 100000), (100000, 3)]


def _configs(w) -> list[dict]:
    space = cc.get_space(w, TARGET)
    picked = [c for c in VARIANTS[w.op] if space.is_valid(c)]
    return [cc.default_config(w, TARGET), *picked, *space.sample(random.Random(w.key), 2)]


def _check(w, config, inputs, expected):
    return config, cc.verify(w, cc.build(w, config, TARGET).run(*inputs), expected)


def _check_all(w, configs, inputs):
    expected = cc.expect(w, inputs)
    with ThreadPoolExecutor(max_workers=2) as pool:  # gcc runs in subprocesses: two compile at once
        results = list(pool.map(lambda c: _check(w, c, inputs, expected), configs))
    failures = [(c, r.message) for c, r in results if not r.ok]
    assert not failures, f"{len(failures)} of {len(configs)} configs wrong, first: {failures[0]}"


@pytest.mark.parametrize("op", list(VARIANTS))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_configs_match_reference(op, shape):
    w = cc.make_workload(op, rows=shape[0], cols=shape[1])
    _check_all(w, _configs(w), cc.random_inputs(w, seed=shape[0] + shape[1]))


def test_softmax_masks_and_extremes():
    w = cc.make_workload("softmax", rows=6, cols=45)
    rng = np.random.default_rng(3)
    x = (rng.uniform(-1, 1, (6, 45)) * 60).astype(np.float32)
    x[0, ::3] = -np.inf  # masked entries are exactly 0
    x[1, :20] = -np.inf  # a masked prefix: the online state must not become -inf - -inf
    x[2, :] = -np.inf
    x[2, 44] = 5.0
    x[3, :] *= 2  # most exps underflow
    x[4, :] = -np.inf  # fully masked: NaN, as in the reference
    configs = [c for c in cc.get_space(w, TARGET) if c["rows_per_task"] == 2]
    with np.errstate(invalid="ignore"):
        _check_all(w, configs, [x])


def test_layernorm_offset_and_constant_rows():
    w = cc.make_workload("layernorm", rows=9, cols=300, eps="0.001")
    inputs = cc.random_inputs(w, seed=5)
    inputs[0] = (inputs[0] * 3 + 100).astype(np.float32)  # mean far from 0: cancellation in E[x^2] - E[x]^2
    inputs[0][1, :] = 7.0  # zero variance
    configs = [c for c in cc.get_space(w, TARGET) if c["rows_per_task"] == 4]
    _check_all(w, configs, inputs)


def test_vector_exp_is_accurate_and_handles_special_values():
    n = 1 << 16
    x_buf, y_buf = Buffer("x", "float32", (n,)), Buffer("y", "float32", (n,))
    b = IRBuilder()
    with b.loop("j", n // 8, ForKind.PARALLEL) as j:
        b.store(y_buf, j * 8, call("exp", Load(x_buf, (j * 8,), 8), dtype="float32x8"), 8)
    module = Module("vexp", (PrimFunc("vexp", (x_buf, y_buf), b.get()),), (x_buf, y_buf), (), 1)
    module = run_passes(module, TARGET)
    lib = CLibrary(compile_shared_library(generate_source(module, TARGET)), 2)
    special = np.array([-np.inf, np.inf, np.nan, 0.0, -0.0, 88.7, 88.73, -87.3, -104.0, 1e-8], np.float32)
    x = np.concatenate([special, np.linspace(-87.3, 88.72, n - special.size, dtype=np.float32)])
    y = np.empty_like(x)
    lib.call([x.ctypes.data, y.ctypes.data])
    with np.errstate(over="ignore"):
        ref = np.exp(x.astype(np.float64))
    finite = np.isfinite(ref) & (ref >= np.finfo(np.float32).tiny) & (ref <= np.finfo(np.float32).max)
    assert np.max(np.abs(y[finite] - ref[finite]) / ref[finite]) < 2e-7
    assert y[0] == 0 and y[1] == np.inf and np.isnan(y[2]) and y[3] == 1 and y[4] == 1
    assert y[6] == np.inf and y[8] == 0


def test_layernorm_constant_rows_give_beta_exactly_and_offset_rows_keep_their_digits():
    """eps=1e-12 turns any centring residue on a constant row into an error of order 1 (residue / sqrt(eps));
    shifting by a row element makes the residue exactly 0. On a row offset by 1e4 with spread 1 the error
    stays at float32's rounding of the offset (ulp(1e4) / 2 ~ 5e-4) relative to the spread."""
    w = cc.make_workload("layernorm", rows=4, cols=333, eps="1e-12")
    rng = np.random.default_rng(1)
    x = rng.uniform(-1.0, 1.0, (4, 333))
    x[0], x[1], x[2] = 7.1, x[1] + 1e4, -3e3 + 0.3
    inputs = [a.astype(np.float32) for a in (x, rng.uniform(0.5, 2.0, 333), rng.uniform(-1.0, 1.0, 333))]
    ref = cc.reference(w, inputs)[0]
    for config in (c for c in cc.get_space(w, TARGET) if c["rows_per_task"] == 1):
        y = cc.build(w, config, TARGET).run(*inputs)[0]
        assert np.array_equal(y[[0, 2]], np.stack([inputs[2], inputs[2]])), config
        assert np.abs(y[1] - ref[1]).max() < 2e-3, config


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_softmax_keeps_its_exps_in_a_float32_row(dtype):
    from compiler_core.schedules.cpu.softmax import SCRATCH_MAX_COLS

    for rows, cols in ((5, 37), (64, 333), (2, 9000)):  # the last row of exps on the heap (over 32 KiB)
        w = cc.make_workload("softmax", rows=rows, cols=cols, dtype=dtype)
        config = cc.default_config(w, TARGET)
        assert config["store_exp"] == 1
        source = cc.generate(w, config, TARGET)
        assert re.search(r"float\*? ?(__restrict__ )?exps", source), "the exps go to a float32 row"
        variants = [config, {**config, "vector": "simd", "accumulators": 4, "rows_per_task": 2}]
        _check_all(w, variants, cc.random_inputs(w, seed=cols))
    wide = cc.make_workload("softmax", rows=2, cols=SCRATCH_MAX_COLS + 1, dtype=dtype)
    assert cc.default_config(wide, TARGET)["store_exp"] == 0
    with pytest.raises(cc.ConfigError, match=f"cols \\({SCRATCH_MAX_COLS + 1}\\) <= {SCRATCH_MAX_COLS}"):
        cc.lower(wide, {**cc.default_config(wide, TARGET), "store_exp": 1}, TARGET)
