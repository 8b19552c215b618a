"""The CUDA attention templates' generated code (SIMT, loop-IR and register-tiled; WMMA and mma.sync tensor cores for
the half types), run on the CPU through the CUDA emulator (tests/cpu/cuda_emulation.py: a fiber per CUDA thread,
barriers, warp shuffles and tensor-core instructions as meetings, ASan and UBSan), matches the float64 reference on odd
shapes, causal or not, in every dtype, through a set of configs that takes every value of every knob at least once,
on random and adversarial inputs. Planted bugs must fail: any barrier dropped (a tile overwritten while rows still
read it, or read before it is staged), a butterfly that reads no other lane, and for the mma.sync kernel a missing
rescale, V read untransposed, a wait that lets the tile in use stay in flight, and a combine of the key splits that
ignores their maxima; for the tiled kernel each barrier, the pipeline wait, the running sum's rescale, the butterfly,
the causal mask, the combine's maxima and each split's share of the keys. The one barrier the emulator cannot check
is WMMA's before the P V product (see attention_wmma's docstring)."""
from __future__ import annotations

import pytest

import compiler_core as cc
from compiler_core.verify import hard_inputs
from tests.cpu.cuda_emulation import (
    BARRIER,
    compiler_available,
    drop_barrier,
    emulated_failures,
    emulated_failures_on_sets,
    emulated_verdicts,
    kernel_source,
    mutate_kernels,
)
from tests.space_configs import covering_configs

pytestmark = pytest.mark.skipif(not compiler_available(), reason="g++ not on PATH")
SM90 = cc.cuda_target("sm_90")
WORKLOADS = [
    cc.make_workload("attention", dict(heads=2, seq_q=33, seq_kv=70, head_dim=13, causal=1)),  # nothing divides
    cc.make_workload("attention", dict(heads=1, seq_q=17, seq_kv=40, head_dim=64, causal=1, dtype="float16")),  # WMMA
    cc.make_workload("attention", dict(heads=2, seq_q=33, seq_kv=70, head_dim=16, dtype="bfloat16")),  # WMMA
    cc.make_workload("attention", dict(heads=3, seq_q=1, seq_kv=200, head_dim=48, dtype="float16")),  # decode, splits
    cc.make_workload("attention", dict(heads=1, seq_q=70, seq_kv=45, head_dim=32, causal=1, dtype="bfloat16")),
    # no tensor-core engine takes head_dim 24: the half types' tiled SIMT engine, staged by loads that convert
    cc.make_workload("attention", dict(heads=2, seq_q=40, seq_kv=45, head_dim=24, causal=1, dtype="float16")),
]


@pytest.mark.parametrize("w", WORKLOADS, ids=lambda w: w.key)
def test_every_knob_value_is_exact_when_emulated(w):
    configs = covering_configs(w, SM90)
    failures = emulated_failures_on_sets(w, configs, SM90, [cc.random_inputs(w, seed=7), hard_inputs(w, seed=3)])
    assert not failures, f"{len(failures)} runs of {len(configs)} configs (random, hard inputs) fail: {failures[:2]}"


# two tiles of keys at least (kv_tile 8 of 70), lanes sharing each row (the butterfly runs)
MUTATION_CONFIG = dict(threads_per_row=4, rows_per_block=16, kv_tile=8)
SIMT_MUTANTS = {  # module i of one batch gets mutation i: one build for all of them
    "staged-then-read barrier dropped": lambda source: drop_barrier(source, 0),
    "read-then-overwritten barrier dropped": lambda source: drop_barrier(source, 1),
    "a butterfly that hears no other lane": lambda source: "#define __shfl_xor_sync(mask, v, m) (v)\n" + source,
}


def test_every_planted_simt_bug_fails(monkeypatch):
    w, mutants = WORKLOADS[0], list(SIMT_MUTANTS.values())
    mutate_kernels(monkeypatch, lambda source, i: mutants[i](source))
    failures = emulated_failures(w, [MUTATION_CONFIG] * len(mutants), SM90, cc.random_inputs(w, seed=7))
    assert len(failures) == len(mutants), f"only {len(failures)} of {list(SIMT_MUTANTS)} fail"


WMMA_CASE = cc.make_workload("attention", dict(heads=2, seq_q=33, seq_kv=70, head_dim=32, causal=1, dtype="float16"))
# five tiles of keys; max_first 0 (one pass, rescaled) and 1 (the rows' maxima first)
WMMA_CONFIG = dict(engine="wmma", threads_per_row=32, rows_per_block=1, warps=2, kv_tile=16, pad=8)
WMMA_BARRIERS = {
    0: {0: "Q staged", 1: "K and V staged", 2: "scores stored", 4: "P V stored"},
    1: {0: "Q staged", 2: "first pass: scores stored", 3: "second pass: the last tile read", 4: "K and V staged",
        5: "scores stored", 7: "P V stored"},
}
# Left out: the barrier after P is written (it orders lanes of one warp: see attention_wmma's docstring), and the
# first pass's after K is staged (a stale key there only shifts a row's max, which the result does not depend on
# unless an exp overflows).
UNCHECKED = {0: (3,), 1: (1, 6)}


@pytest.mark.parametrize("max_first", [0, 1])
def test_dropping_any_checked_wmma_barrier_fails(monkeypatch, max_first):
    config = dict(WMMA_CONFIG, max_first=max_first)
    assert kernel_source(cc.lower(WMMA_CASE, config, SM90), SM90).count(BARRIER) == \
        len(WMMA_BARRIERS[max_first]) + len(UNCHECKED[max_first])
    which = list(WMMA_BARRIERS[max_first])
    mutate_kernels(monkeypatch, lambda source, i: drop_barrier(source, which[i]))
    failures = emulated_failures(WMMA_CASE, [config] * len(which), SM90, cc.random_inputs(WMMA_CASE, seed=7))
    assert len(failures) == len(which), f"only {len(failures)} of the barriers {WMMA_BARRIERS[max_first]} fail"


MMA_CASE = cc.make_workload("attention", dict(heads=2, seq_q=37, seq_kv=130, head_dim=32, dtype="float16"))
MMA_CONFIG = dict(engine="mma", threads_per_row=32, rows_per_block=1, pad=0, max_first=0, warps=2, row_frags=1,
                  kv_tile=32, stages=2, kv_splits=1)  # five tiles of keys, two warps sharing each tile
MMA_MUTANTS = [  # (config changes, why, mutation): module i of one batch gets mutation i
    (dict(stages=1), "single buffer: staged-then-read barrier dropped", lambda source: drop_barrier(source, 0)),
    (dict(stages=1), "single buffer: read-then-overwritten barrier dropped", lambda source: drop_barrier(source, 1)),
    ({}, "double buffer: staged-then-read barrier dropped", lambda source: drop_barrier(source, 0)),
    ({}, "double buffer: read-then-overwritten barrier dropped", lambda source: drop_barrier(source, 1)),
    ({}, "the wait leaves the tile in use in flight",
     lambda source: source.replace("__pipeline_wait_prior(1)", "__pipeline_wait_prior(2)")),
    ({}, "no rescale when the max grows",
     lambda source: source.replace("sum[f][half] * alpha + part", "sum[f][half] + part")),
    ({}, "V read untransposed", lambda source: source.replace("tf_ldsm_x4_t(b,", "tf_ldsm_x4(b,")),
    (dict(kv_splits=2), "the combine ignores the splits' maxima",
     lambda source: source.replace("exp2f(st.x - M)", "1.f")),
]


def test_every_planted_mma_bug_fails(monkeypatch):
    configs = [dict(MMA_CONFIG, **changes) for changes, _, _ in MMA_MUTANTS]
    assert all(cc.get_space(MMA_CASE, SM90).is_valid(c) for c in configs)
    mutate_kernels(monkeypatch, lambda source, i: MMA_MUTANTS[i][2](source))
    verdicts = emulated_verdicts(MMA_CASE, configs, SM90, cc.random_inputs(MMA_CASE, seed=7))
    passing = [why for (_, why, _), verdict in zip(MMA_MUTANTS, verdicts, strict=True) if verdict is None]
    assert not passing, f"planted bugs that pass: {passing}"


TILED_CASE = cc.make_workload("attention", dict(heads=2, seq_q=130, seq_kv=130, head_dim=32, causal=1))
TILED_CONFIG = dict(engine="tiled", threads_per_row=8, rows_per_block=32, thread_rows=4, kv_tile=32, stages=2)
TILED_MUTANTS = [  # (config changes, why, mutation): five tiles of keys, two warps of 4 row groups each
    # (the end-of-tile barrier is dropped from the single-buffered kernel: double-buffered, the emulator lands the
    # next tile's copy at its wait, after the next top-of-tile barrier, where a GPU may land it before)
    (dict(stages=1), "single buffer: staged-then-read barrier dropped", lambda source: drop_barrier(source, 0)),
    ({}, "double buffer: staged-then-read barrier dropped", lambda source: drop_barrier(source, 0)),
    ({}, "P written-then-read barrier dropped", lambda source: drop_barrier(source, 1)),
    (dict(stages=1), "read-then-overwritten barrier dropped", lambda source: drop_barrier(source, 2)),
    ({}, "the wait leaves the tile in use in flight",
     lambda source: source.replace("__pipeline_wait_prior(1)", "__pipeline_wait_prior(2)")),
    ({}, "no rescale of the running sum when the max grows",
     lambda source: source.replace("sum[i] * alpha + part", "sum[i] + part")),
    ({}, "a butterfly that hears no other lane", lambda source: "#define __shfl_xor_sync(mask, v, m) (v)\n" + source),
    ({}, "keys after the query not masked", lambda source: source.replace("(diagonal && kj > qi)", "false")),
    (dict(kv_splits=2), "the combine ignores the splits' maxima",
     lambda source: source.replace("exp2f(st.x - M)", "1.f")),
    (dict(kv_splits=2), "every split walks the first split's key tiles",
     lambda source: source.replace("t0 = min(seen, split * per), t1 = min(seen, t0 + per)",
                                   "t0 = 0, t1 = min(seen, per)")),
]


def test_every_planted_tiled_bug_fails(monkeypatch):
    configs = [dict(TILED_CONFIG, **changes) for changes, _, _ in TILED_MUTANTS]
    space = cc.get_space(TILED_CASE, SM90)
    configs = [space.validate(dict(cc.default_config(TILED_CASE, SM90), **c)) for c in configs]
    mutate_kernels(monkeypatch, lambda source, i: TILED_MUTANTS[i][2](source))
    verdicts = emulated_verdicts(TILED_CASE, configs, SM90, cc.random_inputs(TILED_CASE, seed=7))
    passing = [why for (_, why, _), verdict in zip(TILED_MUTANTS, verdicts, strict=True) if verdict is None]
    assert not passing, f"planted bugs that pass: {passing}"
