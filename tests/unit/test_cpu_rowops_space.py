"""The CPU row-op spaces (softmax, layernorm, reduce_sum, transpose): knobs, constraints, defaults, and what
lowering makes of a config (no compiler)."""
from __future__ import annotations

import json
import random
import re

import pytest

import compiler_core as cc
from compiler_core.codegen.c_vector_math import vector_minmax
from compiler_core.schedules.cpu import reduce_sum

SSE, AVX2, AVX512 = (cc.cpu_target(isa=isa, cores=2) for isa in ("sse", "avx2", "avx512"))
OPS = ("softmax", "layernorm", "reduce_sum", "transpose")
SHAPES = ((1, 1), (3, 7), (1000, 333), (64, 4096), (3, 100000), (100000, 3))


def _workload(op, rows, cols):
    return cc.make_workload(op, rows=rows, cols=cols)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_every_shape_has_twenty_configs_and_a_valid_default(op, shape):
    w = _workload(op, *shape)
    space = cc.get_space(w, AVX2)
    configs = space.sample(random.Random(0), 20)
    assert len(configs) == 20
    default = cc.default_config(w, AVX2)
    assert space.is_valid(default)
    for c in configs + [default]:
        assert json.loads(cc.config_key(c)) == c


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("target", [SSE, AVX2, AVX512], ids=lambda t: t.arch)
@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (5, 37), (2, 130)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_every_config_lowers_and_renders(op, target, shape):
    w = _workload(op, *shape)
    for config in cc.get_space(w, target):
        source = cc.generate(w, config, target)
        assert "int tf_entry(" in source
        assert not re.search(r"tf_float32x\d+ \w+ = .*\?", source), "no ?: on vectors in C"


def test_store_exp_needs_two_pass():
    w = _workload("softmax", 4, 100)
    space = cc.get_space(w, AVX2)
    base = {"rows_per_task": 1, "vector": "explicit", "accumulators": 2, "stats": "online", "store_exp": 0}
    assert space.is_valid(base)
    assert space.violations({**base, "store_exp": 1}) == ["store_exp needs stats=two_pass"]
    with pytest.raises(cc.ConfigError):
        cc.lower(w, {**base, "store_exp": 1}, AVX2)


def test_split_needs_long_rows():
    base = {"rows_per_task": 1, "vector": "simd", "accumulators": 1, "split": 4}
    assert not cc.get_space(_workload("reduce_sum", 3, 255), AVX2).is_valid(base)
    assert cc.get_space(_workload("reduce_sum", 3, 256), AVX2).is_valid(base)
    few_long = cc.default_config(_workload("reduce_sum", 3, 100000), AVX2)
    many_short = cc.default_config(_workload("reduce_sum", 100000, 3), AVX2)
    assert few_long["split"] > 1 and many_short["split"] == 1


@pytest.mark.parametrize("cols", [64, 65, 130, 1000, 4097, 100000])
@pytest.mark.parametrize("split", [2, 4, 8, 16])
def test_chunks_cover_the_row_in_whole_vectors(cols, split):
    chunk, chunks = reduce_sum.chunking(cols, split, 8)
    assert chunk % 8 == 0 and 1 <= chunks <= split
    last = cols - (chunks - 1) * chunk
    assert 0 < last <= chunk


def test_split_reduce_sum_is_two_kernels_over_a_workspace():
    w = _workload("reduce_sum", 3, 100000)
    config = {"rows_per_task": 1, "vector": "explicit", "accumulators": 4, "split": 8}
    module = cc.lower(w, config, AVX2)
    assert [k.name for k in module.kernels] == ["reduce_sum_partial", "reduce_sum_add"]
    (ws,) = module.workspaces
    assert ws.shape == (3, reduce_sum.chunking(100000, 8, 8)[1])
    single = cc.lower(w, {**config, "split": 1}, AVX2)
    assert len(single.kernels) == 1 and not single.workspaces


def test_explicit_vectors_follow_the_target_width():
    w = _workload("softmax", 5, 100)
    config = {"rows_per_task": 1, "vector": "explicit", "accumulators": 2, "stats": "two_pass", "store_exp": 1}
    for target, lanes in ((SSE, 4), (AVX2, 8), (AVX512, 16)):
        source = cc.generate(w, config, target)
        assert f"typedef float tf_float32x{lanes} " in source
        assert f"tf_exp_float32x{lanes}(" in source
        assert source.count(f"static inline tf_float32x{lanes} tf_exp_float32x{lanes}(") == 1


def test_simd_mode_is_scalar_code_under_omp_simd():
    w = _workload("layernorm", 5, 100)
    config = {"rows_per_task": 2, "vector": "simd", "accumulators": 2, "stats": "shifted"}
    source = cc.generate(w, config, AVX2)
    assert "#pragma omp simd" in source
    assert "tf_float32x" not in source
    assert "float part" in source  # per-lane partial sums, 16 = 8 lanes x 2 accumulators
    assert "[16]" in source


def test_online_softmax_starts_from_the_lowest_finite_float():
    w = _workload("softmax", 2, 64)
    config = {"rows_per_task": 1, "vector": "explicit", "accumulators": 1, "stats": "online", "store_exp": 0}
    source = cc.generate(w, config, AVX2)
    assert "-3.4028234663852886e+38f" in source
    two_pass = cc.generate(w, {**config, "stats": "two_pass"}, AVX2)
    assert "(-INFINITY)" in two_pass


def test_vector_max_renders_as_a_mask_select():
    text = vector_minmax("max", "a", "b", "tf_float32x8", 8)
    assert "tf_a > tf_b" in text and "?" not in text
    assert "tf_a < tf_b" in vector_minmax("min", "a", "b", "tf_float32x8", 8)


def test_rows_per_task_guards_a_partial_last_task():
    w = _workload("reduce_sum", 10, 16)
    config = {"rows_per_task": 4, "vector": "explicit", "accumulators": 1, "split": 1}
    assert "if ((i < 10))" in cc.generate(w, config, AVX2)
    assert "if ((i <" not in cc.generate(w, {**config, "rows_per_task": 2}, AVX2)


def test_transpose_edge_tiles_are_bounded():
    config = {"tile": 32, "order": "write", "simd": 1}
    odd = cc.generate(_workload("transpose", 333, 1000), config, AVX2)
    assert "} else {" in odd and "(333 - i0)" in odd and "(1000 - j0)" in odd
    even = cc.generate(_workload("transpose", 64, 128), config, AVX2)
    assert "} else {" not in even
