"""matmul's and batch_matmul's B read where it lies (b_source 'in_place', schedules/cpu/gemm_b_source.py): its rule,
its default, the stored configs before it, and planted bugs in its generated C that verification must catch."""
from __future__ import annotations

import re

import pytest

import compiler_core as cc
from tests.c_source_mutants import catching_input_sets

TARGET = cc.cpu_target(cores=2)
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


def test_in_place_needs_float32_and_whole_panels():
    ragged = cc.make_workload("matmul", dict(M=8, N=131, K=8))
    half = cc.make_workload("matmul", dict(M=8, N=192, K=8, dtype="float16"))
    for w in (ragged, half):
        assert cc.default_config(w, TARGET)["b_source"] == "packed"
        with pytest.raises(cc.ConfigError, match="b_source 'in_place' needs float32 B"):
            cc.lower(w, dict(cc.default_config(w, TARGET), b_source="in_place"), TARGET)


def test_the_default_reads_b_in_place_while_it_is_small_for_the_vector_width():
    def source(isa: str, n: int) -> str:
        return cc.default_config(cc.make_workload("matmul", dict(M=n, N=n, K=n)), cc.cpu_target(isa=isa))["b_source"]

    assert [source("avx512", n) for n in (64, 512, 1024)] == ["in_place", "in_place", "packed"]  # B <= 1 MiB
    assert [source("avx2", n) for n in (64, 256, 512)] == ["in_place", "in_place", "packed"]  # B <= 256 KiB
    assert [source("sse", n) for n in (64, 256, 512)] == ["in_place", "in_place", "packed"]


def test_a_config_stored_before_the_knob_builds_the_packed_kernel():
    old = {k: v for k, v in cc.default_config(MATMUL, TARGET).items() if k != "b_source"}
    assert cc.generate(MATMUL, old, TARGET) == cc.generate(MATMUL, dict(old, b_source="packed"), TARGET)
    assert cc.generate(MATMUL, old, TARGET) != cc.generate(MATMUL, dict(old, b_source="in_place"), TARGET)
