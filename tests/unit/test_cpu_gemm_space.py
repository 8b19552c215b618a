"""The CPU GEMM spaces: their constraints, defaults, and what lowering makes of a config (no compiler)."""
from __future__ import annotations

import random

import pytest

import compiler_core as cc
from compiler_core.schedules.cpu import gemm

SSE, AVX2, AVX512 = (cc.cpu_target(isa=isa, cores=2) for isa in ("sse", "avx2", "avx512"))
MATMUL = cc.make_workload("matmul", M=67, N=131, K=45)
BMM = cc.make_workload("batch_matmul", batch=3, M=17, N=33, K=45)
CONV = cc.make_workload("conv2d", N=1, C=16, H=14, W=14, K=32, R=3, S=3, pad=1)
GOOD = {"mr": 6, "nr": 16, "mc": 96, "nc": 384, "kc": 256, "pack_a": 1, "order": "jr_ir", "parallel": "m",
        "b_source": "packed"}


def test_nr_choices_are_vector_multiples():
    for target in (SSE, AVX2, AVX512):
        lanes = target.vector_lanes_f32
        nr = next(k.choices for k in cc.get_space(MATMUL, target).knobs if k.name == "nr")
        assert nr == (lanes, 2 * lanes, 3 * lanes, 4 * lanes)


@pytest.mark.parametrize("target,registers", [(AVX2, 16), (AVX512, 32)])
def test_valid_configs_fit_the_registers_and_tile_the_blocks(target, registers):
    space = cc.get_space(MATMUL, target)
    configs = list(space)
    assert configs
    lanes = target.vector_lanes_f32
    for c in configs:
        nv = c["nr"] // lanes
        assert c["mr"] * nv + nv + 1 <= registers
        assert c["mc"] % c["mr"] == 0 and c["nc"] % c["nr"] == 0
    shapes = {(c["mr"], c["nr"] // lanes) for c in configs}
    if registers == 16:
        assert shapes == {(2, 1), (2, 2), (2, 3), (2, 4), (4, 1), (4, 2), (4, 3), (6, 1), (6, 2), (8, 1)}
    else:
        assert (8, 3) in shapes and (6, 4) in shapes and (8, 4) not in shapes


def test_constraint_messages():
    space = cc.get_space(MATMUL, AVX2)
    assert space.is_valid(GOOD)
    assert any("registers" in v for v in space.violations({**GOOD, "mr": 8}))
    assert space.violations({**GOOD, "mc": 64}) == ["mc must be a multiple of mr"]
    assert space.violations({**GOOD, "nr": 24, "nc": 64, "mr": 4}) == ["nc must be a multiple of nr"]
    with pytest.raises(cc.ConfigError):
        cc.lower(MATMUL, {**GOOD, "k_unroll": 4}, AVX2)


def test_parallel_over_batch_needs_enough_problems():
    assert "parallel" in cc.get_space(MATMUL, AVX2).names
    assert not cc.get_space(MATMUL, AVX2).is_valid({**GOOD, "parallel": "batch"})
    assert cc.get_space(BMM, AVX2).is_valid({**GOOD, "parallel": "batch"})
    one = cc.make_workload("batch_matmul", batch=1, M=17, N=33, K=45)
    assert cc.get_space(one, AVX2).violations({**GOOD, "parallel": "batch"}) == [
        "parallel='batch' needs batch >= threads (2)"]
    assert not cc.get_space(CONV, AVX2).is_valid({**GOOD, "parallel": "batch", "b_source": "im2col"})  # one image


@pytest.mark.parametrize("w", [MATMUL, BMM, CONV], ids=lambda w: w.op)
@pytest.mark.parametrize("target", [SSE, AVX2, AVX512], ids=lambda t: t.arch)
def test_default_config_is_valid(w, target):
    config = cc.default_config(w, target)
    assert cc.get_space(w, target).is_valid(config)


def test_sampling_finds_many_distinct_configs():
    configs = cc.get_space(MATMUL, AVX2).sample(random.Random(0), 200)
    assert len(configs) == 200
    assert len({cc.config_key(c) for c in configs}) == 200


def test_blocking_clips_to_the_problem_and_the_thread_share():
    ops = gemm.GemmOperands(M=67, N=131, K=45, batch=1, a=None, b=None, c=None, c_index=None)
    blk = gemm.make_plan(ops, {**GOOD, "mc": 384, "nc": 4096, "kc": 1024}, AVX2)
    assert (blk.mc, blk.nc, blk.kc) == (36, 144, 45)  # 34 rows per thread -> 36; 131 cols -> 144
    blk = gemm.make_plan(ops, {**GOOD, "mc": 384, "nc": 4096, "parallel": "n"}, AVX2)
    assert (blk.mc, blk.nc) == (72, 80)


def test_source_has_the_register_microkernel():
    src = cc.generate(MATMUL, GOOD, AVX2)
    assert "tf_float32x8 acc[12]" in src
    assert "#pragma omp parallel for" in src
    assert "edge[" in src  # 67 x 131 has partial tiles


def test_divisible_shapes_have_no_edge_path():
    w = cc.make_workload("matmul", M=96, N=128, K=64)
    assert "edge[" not in cc.generate(w, GOOD, AVX2)


def test_float16_accumulates_in_a_float32_block():
    w = cc.make_workload("matmul", M=67, N=131, K=45, dtype="float16")
    src = cc.generate(w, {**GOOD, "kc": 32}, AVX2)
    assert "float Ct[" in src or "float* __restrict__ Ct" in src
    assert "_Float16" in src


@pytest.mark.parametrize("isa", ["sse", "avx2", "avx512", "avx512bf16"])
def test_the_default_reads_a_in_place_where_a_thread_has_few_columns(isa):
    """A packed A panel serves each column tile once; a half A read in place is converted at every use, which paid
    with AVX-512 only."""
    target = cc.cpu_target(isa=isa, cores=2)

    def pack_a(op, **params) -> int:
        return cc.default_config(cc.make_workload(op, params), target)["pack_a"]

    most = gemm.A_IN_PLACE_MAX_COLS
    assert pack_a("matmul", M=1024, N=64, K=4096) == 0
    assert pack_a("matmul", M=1024, N=most, K=64) == 0 and pack_a("matmul", M=1024, N=most + 1, K=64) == 1
    assert pack_a("conv2d", N=2, C=512, H=7, W=7, K=512, R=3, S=3, pad=1) == 0  # 7 x 7 pixels
    assert pack_a("matmul", M=1024, N=64, K=4096, dtype="float16") == (0 if isa.startswith("avx512") else 1)


def test_the_last_column_tile_takes_only_the_vectors_it_needs():
    """`tail_vectors`: the tile through column N - 1 is a kernel of ceil((N mod nr) / lanes) vectors where that is
    fewer than nr's; every other tile, and a last one that needs them all, takes nv."""
    from compiler_core.schedules.cpu.gemm import GemmPlan
    from compiler_core.schedules.cpu.gemm_fma import tail_vectors

    plan = GemmPlan(mr=6, nr=64, lanes=16, mc=96, nc=4096, kc=256, pack_a=True, order="jr_ir", parallel="m",
                    threads=2)
    ops = lambda n: type("Ops", (), {"N": n})  # noqa: E731 - only N is read
    assert [tail_vectors(ops(n), plan) for n in (1024, 1000, 1008, 1016, 5, 63, 64, 65, 453)] == \
        [0, 3, 3, 0, 1, 0, 0, 1, 1]
