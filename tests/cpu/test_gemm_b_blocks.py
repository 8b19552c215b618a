"""matmul's and batch_matmul's B packed per kc x nc block by each thread (b_source 'blocks', BLIS's loop order in
schedules/cpu/gemm.py): a half C's bounded float32 block, the default's rule, exact results on ragged shapes (several
column, reduction and row blocks, every thread split, three dtypes, every ISA the host runs), and planted bugs in its
generated C that verification must catch."""
from __future__ import annotations

import random

import pytest

import compiler_core as cc
from tests.c_source_mutants import catching_input_sets

TARGET = cc.cpu_target(cores=2)
ISAS = ["sse", "avx2", "avx512", "avx512bf16"]


def _blocks(w, target=TARGET, **knobs) -> dict:
    return dict(cc.default_config(w, target), b_source="blocks", **knobs)


def _check(w, config, target=TARGET, seed=3) -> None:
    kernel = cc.build(w, config, target)
    for inputs in cc.input_sets(w, seed=seed):
        result = cc.verify(w, kernel.run(*inputs.arrays), cc.expect(w, inputs.arrays))
        assert result.ok, (w.key, config, inputs.name, result.message)


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


@pytest.mark.parametrize("isa", ISAS)
def test_the_default_packs_blocks_where_the_threads_do_not_split_rows(isa):
    target = cc.cpu_target(isa=isa, cores=2)

    def source(op, **shape) -> str:
        return cc.default_config(cc.make_workload(op, shape), target)["b_source"]

    assert source("matmul", M=64, N=4096, K=4096) == "blocks"  # the threads split columns
    assert source("batch_matmul", batch=4, M=64, N=1024, K=1024) == "blocks"  # the threads split problems
    assert source("matmul", M=2048, N=2048, K=2048) == "packed"  # rows: each thread would pack every block
    assert source("matmul", M=64, N=4096, K=4096, dtype="bfloat16") == "blocks"  # a 0.5 MiB float32 block of C
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
    _check(w, config)


@pytest.mark.parametrize("isa", ISAS)
def test_every_valid_blocked_config_is_exact_on_random_shapes(isa):
    from compiler_core.target import host_isas
    if isa not in host_isas():
        pytest.skip(f"this CPU lacks {isa}")
    target, rng = cc.cpu_target(isa=isa, cores=2), random.Random(isa)
    for _ in range(3):
        w = cc.make_workload("matmul", dict(M=rng.randint(17, 150), N=rng.randint(1, 300), K=rng.randint(1, 700),
                                            dtype=rng.choice(["float32", "float16", "bfloat16"])))
        configs = [c for c in cc.get_space(w, target).sample(rng, 300) if c["b_source"] == "blocks"]
        for config in configs[:3]:
            _check(w, config, target, seed=rng.randrange(100))


RAGGED = cc.make_workload("matmul", dict(M=30, N=100, K=70))
MUTANTS = {  # edits of the source of _blocks(RAGGED, kc=32, nc=64, nr=32, mr=6, mc=24)
    # the microkernel reads the block's first panel for every panel
    "panel offset": ("(jr * (((70 - (pc * 32)))", "(0 * (((70 - (pc * 32)))"),
    # each block packs B's rows from its first kc slice
    "reduction slice": ("in_B[((((pc * 32) + p) * 100)", "in_B[((((0 * 32) + p) * 100)"),
}


@pytest.mark.parametrize("mutant", list(MUTANTS))
def test_a_planted_bug_fails(mutant):
    kernel = cc.build(RAGGED, _blocks(RAGGED, kc=32, nc=64, nr=32, mr=6, mc=24), TARGET)
    old, new = MUTANTS[mutant]
    edit = lambda source: (source.replace(old, new), source.count(old))  # noqa: E731
    assert catching_input_sets(RAGGED, kernel, edit, seed=5), f"{mutant} passed every input set"
