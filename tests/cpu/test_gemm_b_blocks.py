"""matmul's and batch_matmul's B packed per kc x nc block by each thread (b_source 'blocks', BLIS's loop order in
schedules/cpu/gemm.py): a half C's bounded float32 block, the default's rule, exact results on ragged shapes (several
column, reduction and row blocks, every thread split, three dtypes, every ISA the host runs), and planted bugs in its
generated C that verification must catch."""
from __future__ import annotations

import pytest

import compiler_core as cc
from compiler_core.ir import stmt as S
from compiler_core.ir.visitor import walk
from compiler_core.schedules.cpu import gemm_blocks
from tests.c_source_mutants import catching_input_sets
from tests.gemm_b_sources import check_exact, check_random_shapes, vector_target

TARGET = vector_target()
ISAS = ["sse", "avx2", "avx512", "avx512bf16"]


def _blocks(w, target=TARGET, **knobs) -> dict:
    return dict(cc.default_config(w, target), b_source="blocks", **knobs)


def test_a_half_c_sums_the_threads_rows_in_a_bounded_float32_block():
    """A half C is rounded once per column block after its last reduction slice, which BLIS's order reaches after
    every row block: its float32 sums cover the thread's rows, within BLOCKS_HALF_C_MAX_BYTES."""
    tall = cc.make_workload("matmul", dict(M=8192, N=4096, K=64, dtype="float16"))
    space = cc.get_space(tall, TARGET)
    config = _blocks(tall, parallel="n", nc=4096)
    assert any("sums a thread's rows x nc in float32" in v for v in space.violations(config))
    assert space.is_valid(dict(config, nc=256)) and space.is_valid(dict(config, parallel="m", nc=256))
    wide = cc.make_workload("matmul", dict(M=8192, N=4096, K=64))  # a float32 C sums in place
    assert cc.get_space(wide, TARGET).is_valid(_blocks(wide, parallel="n", nc=4096))


def _allocations(body) -> list:
    found = []
    walk(body, lambda n: found.append(n.buffer) if isinstance(n, S.Allocate) else None)
    return found


@pytest.mark.parametrize("cores", [1, 2, 3, 16, 64])
@pytest.mark.parametrize("parallel", ["m", "n"])
def test_the_space_bounds_the_same_float32_block_of_c_the_lowering_allocates(cores, parallel):
    """The constraint and the default's rule size a half C's block by `gemm_blocks.blocks_ct_bytes`, the Ct buffer the
    lowered GEMM allocates per thread (its rows in whole tiles x nc clipped to its columns), on any core count."""
    target = cc.cpu_target(isa="avx2", cores=cores)
    for M, N, nc in [(200, 8192, 4096), (67, 1000, 512), (1024, 4096, 4096), (5, 40, 64)]:
        w = cc.make_workload("matmul", dict(M=M, N=N, K=64, dtype="bfloat16"))
        config = _blocks(w, target, parallel=parallel, nc=nc, mc=24, mr=6)
        module = cc.lower(w, config, target)
        (ct,) = [b for b in _allocations(module.kernels[0].body) if b.name == "Ct"]
        assert 4 * int(ct.shape[0]) == gemm_blocks.blocks_ct_bytes(M, N, config, target), (M, N, nc, config)


@pytest.mark.parametrize("isa", ISAS)
def test_the_default_packs_blocks_where_the_threads_do_not_split_rows(isa):
    target = cc.cpu_target(isa=isa, cores=2)

    def source(op, **shape) -> str:
        return cc.default_config(cc.make_workload(op, shape), target)["b_source"]

    assert source("matmul", M=64, N=4096, K=4096) == "blocks"  # the threads split columns
    assert source("batch_matmul", batch=4, M=64, N=1024, K=1024) == "blocks"  # the threads split problems
    assert source("matmul", M=2048, N=2048, K=2048) == "packed"  # rows: each thread would pack every block
    # a 0.5 MiB float32 block of C; on an AVX-512 BF16 target the pairs' B is packed once per call instead
    pairs = target.bf16_dot and not target.amx
    assert source("matmul", M=64, N=4096, K=4096, dtype="bfloat16") == ("packed" if pairs else "blocks")
    assert source("matmul", M=1024, N=4096, K=4096, dtype="float16") == "packed"  # 8 MiB


@pytest.mark.parametrize("op, shape, knobs", [
    ("matmul", dict(M=67, N=131, K=300), dict(kc=64, nc=64, mc=24, mr=6)),  # every block ragged
    ("matmul", dict(M=300, N=20, K=1030), dict(parallel="m")),  # rows split: each thread packs every block
    ("batch_matmul", dict(batch=3, M=40, N=50, K=260), dict(parallel="batch", kc=128)),
    ("batch_matmul", dict(batch=1, M=200, N=96, K=33), dict(parallel="n", pack_a=0, order="ir_jr")),
])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_blocked_gemms_are_exact(op, shape, knobs, dtype):
    w = cc.make_workload(op, dict(shape, dtype=dtype))
    config = _blocks(w, **knobs)
    if "dot" in config:
        config["dot"] = "fma"
    if config["mc"] % config["mr"]:
        config["mc"] = 4 * config["mr"]
    check_exact(w, config, TARGET)


@pytest.mark.parametrize("isa", ISAS)
def test_every_valid_blocked_config_is_exact_on_random_shapes(isa):
    check_random_shapes(isa, "blocks", rows=(17, 150), depth=700, shapes=3)


RAGGED = cc.make_workload("matmul", dict(M=30, N=100, K=70))
MUTANTS = {  # edits of the source of _blocks(RAGGED, kc=32, nc=64, nr=16, mr=6, mc=24) (fits AVX2's registers)
    # the microkernel reads the block's first panel for every panel
    "panel offset": ("(jr * (((70 - (pc * 32)))", "(0 * (((70 - (pc * 32)))"),
    # each block packs B's rows from its first kc slice
    "reduction slice": ("in_B[((((pc * 32) + p) * 100)", "in_B[((((0 * 32) + p) * 100)"),
}


@pytest.mark.parametrize("mutant", list(MUTANTS))
def test_a_planted_bug_fails(mutant):
    kernel = cc.build(RAGGED, _blocks(RAGGED, kc=32, nc=64, nr=16, mr=6, mc=24), TARGET)
    old, new = MUTANTS[mutant]
    edit = lambda source: (source.replace(old, new), source.count(old))  # noqa: E731
    assert catching_input_sets(RAGGED, kernel, edit, seed=5), f"{mutant} passed every input set"
