"""matmul's and batch_matmul's B read where it lies (b_source 'in_place', schedules/cpu/gemm_b_source.py): its rules,
its defaults (a small B, or few rows of A), half-typed B widened as it is loaded, the stored configs before it, and
planted bugs in its generated C that verification must catch."""
from __future__ import annotations

import re

import pytest

import compiler_core as cc
from compiler_core.schedules.cpu import gemm_b_source
from tests.c_source_mutants import catching_input_sets
from tests.gemm_b_sources import vector_target

TARGET = vector_target()
MATMUL = cc.make_workload("matmul", dict(M=67, N=192, K=300))
BATCHED = cc.make_workload("batch_matmul", dict(batch=3, M=17, N=192, K=70))

MUTANTS = {  # (workload, edit of the source)
    # B's rows read at the wrong stride
    "row stride": (MATMUL, lambda s: re.subn(r"\* 192\) \+ j0\)", "* 191) + j0)", s)),
    # every problem of the batch reads the first one's B
    "batch offset dropped": (BATCHED, lambda s: re.subn(r"\(bt \* 70\) \+ p\)", "(bt * 0) + p)", s)),
}


@pytest.mark.parametrize("mutant", list(MUTANTS))
def test_a_planted_bug_fails(mutant):
    w, edit = MUTANTS[mutant]
    kernel = cc.build(w, dict(cc.default_config(w, TARGET), b_source="in_place"), TARGET)
    assert catching_input_sets(w, kernel, edit, seed=5), f"{mutant} passed every input set"


def test_in_place_needs_whole_panels():
    ragged = cc.make_workload("matmul", dict(M=12, N=131, K=8))
    assert cc.default_config(ragged, TARGET)["b_source"] == "blocks"  # packed, per block (test_gemm_b_blocks.py)
    with pytest.raises(cc.ConfigError, match=r"b_source 'in_place' needs N \(131\) a multiple of nr"):
        cc.lower(ragged, dict(cc.default_config(ragged, TARGET), b_source="in_place"), TARGET)


def test_bfloat16_pairs_need_b_packed():
    target = cc.cpu_target(isa="avx512bf16", cores=2)
    w = cc.make_workload("matmul", dict(M=64, N=192, K=8, dtype="bfloat16"))
    with pytest.raises(cc.ConfigError, match="dot 'bf16' packs B into pairs"):
        cc.lower(w, dict(cc.default_config(w, target), b_source="in_place", dot="bf16"), target)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("op, shape", [("matmul", dict(M=5, N=192, K=37)), ("batch_matmul", dict(batch=3, M=17, N=64,
                                                                                                      K=70))])
def test_a_half_b_read_in_place_is_widened_as_it_is_loaded(op, shape, dtype):
    w = cc.make_workload(op, dict(shape, dtype=dtype))
    config = dict(cc.default_config(w, TARGET), b_source="in_place")
    if "dot" in config:
        config["dot"] = "fma"
    kernel = cc.build(w, config, TARGET)
    for inputs in cc.input_sets(w, seed=2):
        result = cc.verify(w, kernel.run(*inputs.arrays), cc.expect(w, inputs.arrays))
        assert result.ok, (inputs.name, result.message)


def test_the_default_reads_b_in_place_while_it_is_small_for_the_vector_width():
    def source(isa: str, n: int) -> str:
        return cc.default_config(cc.make_workload("matmul", dict(M=n, N=n, K=n)), cc.cpu_target(isa=isa))["b_source"]

    assert [source("avx512", n) for n in (64, 512, 1024)] == ["in_place", "in_place", "packed"]  # B <= 1 MiB
    assert [source("avx2", n) for n in (64, 256, 512)] == ["in_place", "in_place", "packed"]  # B <= 256 KiB
    assert [source("sse", n) for n in (64, 256, 512)] == ["in_place", "in_place", "packed"]


@pytest.mark.parametrize("isa", ["sse", "avx2", "avx512", "avx512bf16"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_the_default_reads_b_in_place_for_few_rows_of_a_whatever_its_size(isa, dtype):
    """A 2048 x 2048 B is past every ISA's size rule: with a few rows of A, packing it would not pay; with fewer still,
    B is streamed row by row (test_gemm_streamed.py)."""
    target = cc.cpu_target(isa=isa)
    few, fewest = gemm_b_source.SMALL_M_ROWS, gemm_b_source.STREAMED_M_ROWS

    def default(m: int) -> dict:
        return cc.default_config(cc.make_workload("matmul", dict(M=m, N=2048, K=2048, dtype=dtype)), target)

    sources = [default(m)["b_source"] for m in (1, fewest, fewest + 1, few, few + 1)]
    if dtype == "bfloat16" and target.bf16_dot:  # past the streamed rows, pair dot products on packed panels
        assert sources == ["streamed", "streamed", "packed", "packed", "packed"]
        return
    assert sources == ["streamed", "streamed", "in_place", "in_place", "blocks"]  # test_gemm_b_blocks.py


def test_a_config_stored_before_the_knob_builds_the_packed_kernel():
    old = {k: v for k, v in cc.default_config(MATMUL, TARGET).items() if k != "b_source"}
    assert cc.generate(MATMUL, old, TARGET) == cc.generate(MATMUL, dict(old, b_source="packed"), TARGET)
    assert cc.generate(MATMUL, old, TARGET) != cc.generate(MATMUL, dict(old, b_source="in_place"), TARGET)


def test_a_packed_b_of_huge_pages_runs_correct():
    """B packed into a buffer past HUGE_PAGE_MIN_BYTES (2 MiB-aligned, marked for transparent huge pages)."""
    w = cc.make_workload("matmul", dict(M=20, N=4096, K=2056))  # 2056 x 4096 floats: 32.1 MiB of panels
    config = dict(cc.default_config(w, TARGET), b_source="packed")
    kernel = cc.build(w, config, TARGET)
    assert "MADV_HUGEPAGE" in kernel.source
    inputs = cc.random_inputs(w, seed=4)
    result = cc.verify(w, kernel.run(*inputs), cc.expect(w, inputs))
    assert result.ok, result.message
