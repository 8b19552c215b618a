"""CUDA row-op templates (softmax, layernorm, reduce_sum, transpose): spaces, defaults and lowered structure.

No compiler here: these check that constraints accept and reject what they say, that every valid config lowers
within the target's limits for any shape, and that no barrier or warp shuffle sits under a branch (every thread of
a block must reach each __syncthreads, every lane of a warp each shfl).
"""
from __future__ import annotations

import random

import pytest

import compiler_core as cc
from compiler_core.errors import ConfigError
from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.schedules.cuda.block_reduce import CACHE_MAX_FLOATS, WARP

ROW_OPS = ("softmax", "layernorm", "reduce_sum")
OPS = ROW_OPS + ("transpose",)
SHAPES = [(8192, 8192), (1000, 333), (3, 7), (1, 1), (7, 100000), (100000, 7), (3, 4097), (1000, 332), (5, 8)]
TARGET = cc.cuda_target("sm_90")


def _workload(op, rows, cols):
    return cc.make_workload(op, rows=rows, cols=cols)


def _configs(space, n=40, seed=0):
    everything = list(space)
    return everything if len(everything) <= n else random.Random(seed).sample(everything, n)


def _sync_points_under_branch(stmt) -> list:
    """Barriers and shuffles found inside an IfThenElse (or a thread-bound loop that codegen guards)."""
    found = []

    def visit(node, guarded: bool):
        if isinstance(node, S.Barrier) and guarded:
            found.append("barrier")
        if isinstance(node, E.Call) and node.name.startswith("shfl") and guarded:
            found.append(node.name)
        if isinstance(node, S.IfThenElse):
            for child in (node.then, node.else_):
                if child is not None:
                    visit(child, True)
            return
        for value in vars(node).values():
            children = value if isinstance(value, tuple) else (value,)
            for child in children:
                if isinstance(child, (E.Expr, S.Stmt)):
                    visit(child, guarded)

    visit(stmt, False)
    return found


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("rows,cols", SHAPES)
def test_every_sampled_config_lowers_within_limits(op, rows, cols):
    w = _workload(op, rows, cols)
    space = cc.get_space(w, TARGET)
    configs = _configs(space)
    assert configs, f"empty space for {w.key}"
    for config in configs:
        module = cc.lower(w, config, TARGET)
        (kernel,) = module.kernels
        threads = kernel.block[0] * kernel.block[1] * kernel.block[2]
        assert threads % WARP == 0 and WARP <= threads <= TARGET.max_threads_per_block, config
        assert kernel.grid[1] == kernel.grid[2] == 1 and kernel.grid[0] >= 1, config
        assert kernel.shared_bytes <= TARGET.max_shared_bytes, config
        assert not _sync_points_under_branch(kernel.body), config


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("rows,cols", SHAPES)
def test_default_config_is_valid(op, rows, cols):
    w = _workload(op, rows, cols)
    config = cc.default_config(w, TARGET)
    assert cc.get_space(w, TARGET).is_valid(config), config
    cc.lower(w, config, TARGET)


@pytest.mark.parametrize("op", ROW_OPS)
def test_vec4_needs_cols_divisible_by_4(op):
    ok, odd = _workload(op, 64, 128), _workload(op, 64, 130)
    config = {"threads_per_row": 32, "rows_per_block": 4, "vec": 4, "unroll": 1}
    config.update({"cache_row": 0} if op != "reduce_sum" else {"stage_shared": 0})
    assert cc.get_space(ok, TARGET).is_valid(config)
    with pytest.raises(ConfigError, match="vec 4"):
        cc.lower(odd, config, TARGET)
    assert not any(c["vec"] == 4 for c in cc.get_space(odd, TARGET))


@pytest.mark.parametrize("op", ROW_OPS)
def test_threads_make_whole_warps(op):
    space = cc.get_space(_workload(op, 1000, 333), TARGET)
    for config in space:
        threads = config["threads_per_row"] * config["rows_per_block"]
        assert threads % WARP == 0 and threads <= 1024
    small = {"threads_per_row": 4, "rows_per_block": 4, "vec": 1, "unroll": 1}
    small.update({"cache_row": 0} if op != "reduce_sum" else {"stage_shared": 0})
    assert any("whole warps" in v for v in space.violations(small))


@pytest.mark.parametrize("op", ("softmax", "layernorm"))
def test_cache_row_only_when_the_row_fits_registers(op):
    w = _workload(op, 8192, 8192)
    space = cc.get_space(w, TARGET)
    base = {"rows_per_block": 1, "vec": 4, "unroll": 1, "cache_row": 1}
    assert space.is_valid(dict(base, threads_per_row=256))  # 8 chunks of 4 floats
    assert not space.is_valid(dict(base, threads_per_row=64))  # 128 floats
    # 64 floats fit 128 threads' share of the register file, not 1024 threads' (64 registers each)
    assert space.is_valid(dict(base, threads_per_row=128))
    assert not space.is_valid(dict(base, threads_per_row=128, rows_per_block=8))
    assert not space.is_valid(dict(base, threads_per_row=256, unroll=2))
    for config in (c for c in space if c["cache_row"]):
        floats = -(-8192 // config["vec"] // config["threads_per_row"]) * config["vec"]
        assert floats <= CACHE_MAX_FLOATS
    long_rows = cc.get_space(_workload(op, 2, 1 << 20), TARGET)
    assert not any(c["cache_row"] for c in long_rows)


def test_reduce_sum_staging_only_for_short_rows():
    short, long_ = _workload("reduce_sum", 100000, 7), _workload("reduce_sum", 100, 333)
    staged = {"threads_per_row": 1, "rows_per_block": 128, "vec": 1, "unroll": 1, "stage_shared": 1}
    assert cc.get_space(short, TARGET).is_valid(staged)
    assert not cc.get_space(long_, TARGET).is_valid(staged)
    assert not cc.get_space(short, TARGET).is_valid(dict(staged, threads_per_row=2, rows_per_block=64))
    assert cc.default_config(short, TARGET)["stage_shared"] == 1


def test_transpose_space():
    space = cc.get_space(_workload("transpose", 1000, 333), TARGET)
    assert space.is_valid({"tile": 32, "block_rows": 8, "pad": 1})
    assert not space.is_valid({"tile": 16, "block_rows": 32, "pad": 1})  # more rows than the tile
    assert not space.is_valid({"tile": 16, "block_rows": 1, "pad": 0})  # half a warp
    assert not space.is_valid({"tile": 64, "block_rows": 32, "pad": 0})  # 2048 threads
    module = cc.lower(_workload("transpose", 1000, 333), {"tile": 64, "block_rows": 8, "pad": 1}, TARGET)
    assert module.kernels[0].shared_bytes == 64 * 65 * 4


@pytest.mark.parametrize("op", OPS)
def test_generated_source_is_deterministic(op):
    w = _workload(op, 1000, 333)
    config = cc.default_config(w, TARGET)
    assert cc.generate(w, config, TARGET) == cc.generate(w, config, TARGET)


def test_unguarded_when_tiles_divide():
    """8192x8192 with a dividing config needs no bounds checks (no branch in the hot loop)."""
    w = _workload("softmax", 8192, 8192)
    config = {"threads_per_row": 256, "rows_per_block": 1, "vec": 4, "unroll": 1, "cache_row": 1}
    source = cc.generate(w, config, TARGET)
    assert "< 2048" not in source and "< 8192" not in source  # no chunk or row bounds checks
    t = _workload("transpose", 8192, 8192)
    assert "if (" not in cc.generate(t, {"tile": 32, "block_rows": 8, "pad": 1}, TARGET)


def test_branch_check_flags_a_planted_barrier():
    tx = E.Var("tx")
    planted = S.Seq((S.IfThenElse(tx < 3, S.Seq((S.Barrier(), S.Evaluate(E.call("shfl_xor", tx, 1))))),))
    assert _sync_points_under_branch(planted) == ["barrier", "shfl_xor"]
