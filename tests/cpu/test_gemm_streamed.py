"""matmul's and batch_matmul's B streamed row by row past C's block (b_source 'streamed', schedules/cpu/gemm_streamed):
its constraints, its defaults for very few rows of A on every ISA, exact results on ragged shapes (N past the last
whole strip, K past the last whole step and block, C's block split in rows and columns, half types widened as they are
loaded, a half C through its float32 block), and planted bugs in its generated C that verification must catch."""
from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

import compiler_core as cc
from compiler_core.runtime.c_runtime import CLibrary, compile_shared_library
from compiler_core.schedules.cpu import gemm_b_source
from tests.c_source_mutants import catching_input_sets
from tests.gemm_b_sources import check_exact, check_random_shapes

TARGET = cc.cpu_target(cores=2)


def _streamed(w, target=TARGET, **knobs) -> dict:
    config = dict(cc.default_config(w, target), b_source="streamed", pack_a=0, order="jr_ir", **knobs)
    if "dot" in config:
        config["dot"] = "fma"
    return config


# ---- the space and the default ---------------------------------------------------------------------------------

def test_streamed_reads_a_in_place_in_one_loop_order():
    w = cc.make_workload("matmul", dict(M=4, N=100, K=30))
    space = cc.get_space(w, TARGET)
    assert space.is_valid(_streamed(w))
    for knob, value in (("pack_a", 1), ("order", "ir_jr")):
        violations = space.violations(dict(_streamed(w), **{knob: value}))
        assert any("'streamed' reads A in place" in v for v in violations), (knob, violations)


def test_streamed_takes_any_n_where_in_place_needs_whole_panels():
    w = cc.make_workload("matmul", dict(M=4, N=131, K=30))
    space = cc.get_space(w, TARGET)
    assert space.is_valid(_streamed(w, mr=4, nr=TARGET.vector_lanes_f32 * 2))  # fits AVX2's 16 registers
    assert not space.is_valid(dict(_streamed(w), b_source="in_place", pack_a=1))


def test_bfloat16_pairs_are_never_streamed():
    target = cc.cpu_target(isa="avx512bf16", cores=2)
    w = cc.make_workload("matmul", dict(M=4, N=192, K=8, dtype="bfloat16"))
    with pytest.raises(cc.ConfigError, match="dot 'bf16' packs B into pairs"):
        cc.lower(w, dict(_streamed(w, target), dot="bf16"), target)


@pytest.mark.parametrize("isa", ["sse", "avx2", "avx512", "avx512bf16"])
@pytest.mark.parametrize("op", ["matmul", "batch_matmul"])
def test_the_default_streams_b_for_very_few_rows_of_a(isa, op):
    target = cc.cpu_target(isa=isa)
    rows = gemm_b_source.STREAMED_M_ROWS
    batch = {"batch": 3} if op == "batch_matmul" else {}
    for m, expected in ((1, "streamed"), (rows, "streamed"), (rows + 1, "in_place")):
        config = cc.default_config(cc.make_workload(op, dict(batch, M=m, N=1024, K=64)), target)
        assert config["b_source"] == expected, (m, config)
        if expected == "streamed":
            assert config["mr"] == gemm_b_source.STREAMED_MR and config["nr"] == target.vector_lanes_f32
            assert cc.get_space(cc.make_workload(op, dict(batch, M=m, N=1024, K=64)), target).is_valid(config)


# ---- results ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("shape, knobs", [  # knobs that fit AVX2's 16 vector registers (so any CI host's)
    (dict(M=1, N=1000, K=333), dict(mr=6, nr=16, kc=128)),  # N past the last strip, K past the last step and block
    (dict(M=3, N=7, K=5), dict(mr=8)),  # narrower than one strip, shallower than one step
    (dict(M=20, N=130, K=64), dict(mr=4, nr=16, mc=16, nc=64)),  # C's block split in rows and columns
    (dict(M=9, N=64, K=19), dict(mr=2, nr=16, parallel="m")),  # the threads split rows
])
def test_streamed_matmuls_are_exact(shape, knobs, dtype):
    w = cc.make_workload("matmul", dict(shape, dtype=dtype))
    check_exact(w, _streamed(w, **knobs), TARGET)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("parallel", ["n", "batch"])
def test_streamed_batch_matmuls_are_exact(parallel, dtype):
    w = cc.make_workload("batch_matmul", dict(batch=3, M=2, N=100, K=50, dtype=dtype))
    check_exact(w, _streamed(w, parallel=parallel, mr=4), TARGET)


@pytest.mark.parametrize("isa", ["sse", "avx2", "avx512", "avx512bf16"])
def test_every_valid_streamed_config_is_exact_on_random_shapes(isa):
    check_random_shapes(isa, "streamed", rows=(1, 12), depth=300, shapes=4)


# ---- planted bugs ----------------------------------------------------------------------------------------------

RAGGED = cc.make_workload("matmul", dict(M=3, N=100, K=37))
MUTANTS = {  # edits of the source of _streamed(RAGGED, mr=6, nr=16, kc=32) (mr 8 overflows AVX2's registers)
    # the last whole step of B rows in each full kc block skipped
    "a step skipped": lambda s: re.subn(r"for \(int s = 0; s < (\d+); \+\+s\)",
                                        lambda m: f"for (int s = 0; s < {int(m[1]) - 1}; ++s)", s, count=1),
    # the columns past the last whole strip skipped
    "ragged columns dropped": lambda s: re.subn(r"jt < \(nlen % 16\)", "jt < 0", s, count=1),
    # every step reads the first row of its group of B rows
    "B row offset dropped": lambda s: re.subn(r"\+ 1\) \* 100\) \+ j0\)", ") * 100) + j0)", s, count=1),
}


@pytest.mark.parametrize("mutant", list(MUTANTS))
def test_a_planted_bug_fails(mutant):
    kernel = cc.build(RAGGED, _streamed(RAGGED, mr=6, nr=16, kc=32), TARGET)
    assert catching_input_sets(RAGGED, kernel, MUTANTS[mutant], seed=5), f"{mutant} passed every input set"


def test_a_block_not_cleared_fails_on_the_agents_poisoned_outputs():
    """The agent verifies into outputs filled with NaN (device_agent.benches), where a block that accumulates onto
    whatever C held shows; into zeros it would not."""
    kernel = cc.build(RAGGED, _streamed(RAGGED, mr=6, nr=16, kc=32), TARGET)
    source, count = re.subn(r"\] = 0\.0f;", "] += 0.0f;", kernel.source)
    assert count
    wrong = dataclasses.replace(kernel, source=source,
                                _impl=CLibrary(compile_shared_library(source), len(kernel.module.args)))
    inputs = cc.random_inputs(RAGGED, seed=1)
    expected = cc.expect(RAGGED, inputs)
    for k, ok in ((kernel, True), (wrong, False)):
        out = np.full((3, 100), np.nan, dtype=np.float32)
        k(*inputs, out)
        assert cc.verify(RAGGED, [out], expected).ok == ok
