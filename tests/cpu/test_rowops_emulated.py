"""The generated CUDA of the row ops (softmax, layernorm, reduce_sum: warp shuffles and block reductions), transpose
(shared-memory tiles) and fused elementwise chains, in float32, float16 and bfloat16, run on the CPU through the
CUDA emulator (tests/cpu/cuda_emulation.py: a fiber per CUDA thread, barriers and warp shuffles as meetings),
matches the numpy reference on odd shapes for a set of configs that takes every value of every knob at least once;
out-of-range or misaligned accesses fail the run. CI has no GPU: this is where these kernels' indexing, edges and
reductions are run there (the GPU tier runs them on a device). Planted mutations (a butterfly that reads the wrong
lane, shuffles dropped, a transpose without its barrier) must fail, so the check can fail."""
from __future__ import annotations

import pytest

import compiler_core as cc
from compiler_core.verify import hard_inputs
from tests.cpu import emulated_sweep
from tests.cpu.cuda_emulation import BARRIER, compiler_available, emulated_failures, mutate_kernels
from tests.space_configs import covering_configs

pytestmark = pytest.mark.skipif(not compiler_available(), reason="g++ not on PATH")
SM90 = cc.cuda_target("sm_90")
GELU = {"expr": "gelu(x*w+b)", "vectors": "w,b"}
WORKLOADS = [
    cc.make_workload("softmax", {"rows": 5, "cols": 77}),  # rows and cols that no block or vector width divides
    cc.make_workload("softmax", {"rows": 3, "cols": 1}),  # one column: every lane but one is past the row
    cc.make_workload("softmax", {"rows": 2, "cols": 5003}),  # longer than any thread caches: the uncached passes
    cc.make_workload("layernorm", {"rows": 7, "cols": 300}),
    cc.make_workload("reduce_sum", {"rows": 3, "cols": 1000}),
    cc.make_workload("transpose", {"rows": 33, "cols": 17}),  # edge tiles in both dimensions
    cc.make_workload("transpose", {"rows": 130, "cols": 70}),
    cc.make_workload("elementwise", {"rows": 5, "cols": 77, **GELU}),
    # the half types: stored as 16 bits, converted to float32 to compute, rounded to nearest even on the way out
    cc.make_workload("softmax", {"rows": 5, "cols": 77, "dtype": "float16"}),
    cc.make_workload("layernorm", {"rows": 7, "cols": 300, "dtype": "bfloat16"}),
    cc.make_workload("reduce_sum", {"rows": 3, "cols": 1000, "dtype": "float16"}),
    cc.make_workload("transpose", {"rows": 33, "cols": 17, "dtype": "bfloat16"}),
    cc.make_workload("elementwise", {"rows": 5, "cols": 77, "dtype": "bfloat16", **GELU}),
]


@pytest.mark.parametrize("w", WORKLOADS, ids=lambda w: w.key)
def test_every_knob_value_is_exact_when_emulated(w):
    configs = covering_configs(w, SM90)
    failures = emulated_failures(w, configs, SM90, cc.random_inputs(w, seed=7))
    assert not failures, f"{len(failures)} of {len(configs)} configs fail: {failures}"


def test_softmax_is_exact_on_its_hard_inputs_when_emulated():
    """The op's adversarial rows (huge and -inf logits, ties), through every knob value."""
    w = WORKLOADS[0]
    configs = covering_configs(w, SM90)
    failures = emulated_failures(w, configs, SM90, hard_inputs(w, seed=3))
    assert not failures, f"{len(failures)} of {len(configs)} configs fail: {failures}"


@pytest.mark.parametrize("mutation", [
    "#define __shfl_xor_sync(mask, v, m) __shfl_xor_sync(mask, v, (m) ^ 1)\n",  # the butterfly reads the wrong lane
    "#define __shfl_xor_sync(mask, v, m) (v)\n",  # no lane hears the others
], ids=["wrong-lane", "no-shuffle"])
def test_a_broken_butterfly_fails(monkeypatch, mutation):
    w = WORKLOADS[3]  # layernorm: two reductions across lanes
    config = dict(cc.default_config(w, SM90), threads_per_row=32)
    mutate_kernels(monkeypatch, lambda source, _: mutation + source)
    assert emulated_failures(w, [config], SM90, cc.random_inputs(w, seed=7))


def test_a_shuffle_half_the_lanes_skip_is_reported(monkeypatch):
    """Odd lanes skip the butterfly's shuffles and meet the even ones at a later one: a GPU's result would be
    undefined, the emulator names it."""
    w = WORKLOADS[3]
    config = dict(cc.default_config(w, SM90), threads_per_row=32)
    mutate_kernels(monkeypatch, lambda source, _: "#define __shfl_xor_sync(mask, v, m) "
                                         "(threadIdx.x % 2 ? (v) : __shfl_xor_sync(mask, v, m))\n" + source)
    ((_, why),) = emulated_failures(w, [config], SM90, cc.random_inputs(w, seed=7))
    assert "shuffle divergence" in why, why


def test_a_transpose_without_its_barrier_fails(monkeypatch):
    w = WORKLOADS[6]
    mutate_kernels(monkeypatch, lambda source, _: source.replace(BARRIER, ";"))
    assert emulated_failures(w, [cc.default_config(w, SM90)], SM90, cc.random_inputs(w, seed=7))


def test_the_random_sweep_runs_and_finds_nothing_on_a_fixed_seed(capsys):
    """tests/cpu/emulated_sweep.py, the by-hand bug hunt over the same harness, on three random workloads."""
    assert emulated_sweep.main(["--seed", "5", "--workloads", "3", "--configs", "2"]) == 0
    assert "3 workloads, " in capsys.readouterr().out
