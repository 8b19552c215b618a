"""The CPU attention template (online softmax over blocks of keys, C + OpenMP) matches the float64 reference through
every knob value, on odd shapes, causal or not, in every dtype, on random and adversarial inputs; the generated code
never holds seq_q x seq_kv scores; planted bugs (no rescale when the max grows, a block of keys skipped) fail."""
from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

import compiler_core as cc
from compiler_core.runtime.c_runtime import CLibrary, compile_shared_library
from compiler_core.schedules.cpu.attention import SCORE_FLOATS
from tests.space_configs import covering_configs

TARGET = cc.cpu_target(cores=2)
WORKLOADS = [
    cc.make_workload("attention", dict(heads=2, seq_q=33, seq_kv=70, head_dim=13)),  # no tile or block divides
    cc.make_workload("attention", dict(heads=2, seq_q=33, seq_kv=70, head_dim=13, causal=1)),
    cc.make_workload("attention", dict(heads=1, seq_q=70, seq_kv=20, head_dim=24, causal=1, dtype="float16")),
    cc.make_workload("attention", dict(heads=3, seq_q=9, seq_kv=40, head_dim=8, dtype="bfloat16")),
    cc.make_workload("attention", dict(heads=1, seq_q=1, seq_kv=1, head_dim=1)),  # one key: the output is V
]


def _failures(w, configs):
    sets = cc.input_sets(w, seed=11)
    expected = [cc.expect(w, s.arrays) for s in sets]
    out = []
    for config in configs:
        kernel = cc.build(w, config, TARGET)
        for s, e in zip(sets, expected, strict=True):
            verdict = cc.verify(w, kernel.run(*s.arrays), e)
            if not verdict.ok:
                out.append((config, s.name, verdict.message))
    return out


@pytest.mark.parametrize("w", WORKLOADS, ids=lambda w: w.key)
def test_every_knob_value_matches_the_reference(w):
    configs = covering_configs(w, TARGET)
    failures = _failures(w, configs)
    assert not failures, f"{len(failures)} of {len(configs)} configs fail: {failures[:2]}"


def test_no_buffer_grows_with_the_sequences():
    """What a task allocates is bounded by the knobs, whatever seq_q and seq_kv are (no seq_q x seq_kv scores)."""
    w = cc.make_workload("attention", dict(heads=4, seq_q=4096, seq_kv=8192, head_dim=64))
    sizes = []
    for config in covering_configs(w, TARGET):
        source = cc.generate(w, config, TARGET)
        sizes += [int(n) for n in re.findall(r"float \w+\[(\d+)\]", source)]
        assert "aligned_alloc" not in source
    assert sizes and max(sizes) <= max(SCORE_FLOATS, 8 * 64)


MUTANTS = {
    # the running sums are not rescaled when a later block raises the max: wrong wherever the max moves
    "no rescale": (dict(kv_block=16), lambda s: re.subn(r"const float (alpha\d+) = expf\([^;]*\);",
                                                        r"const float \1 = 1.0f;", s)),
    # the last block of keys is never visited (the key loop one block short)
    "last block skipped": (dict(kv_block=16), lambda s: re.subn(r"kvb < 5;", "kvb < 4;", s)),
}


@pytest.mark.parametrize("mutant", list(MUTANTS))
def test_a_planted_bug_fails(mutant):
    w = WORKLOADS[0]
    change, edit = MUTANTS[mutant]
    kernel = cc.build(w, dict(cc.default_config(w, TARGET), **change), TARGET)
    source, count = edit(kernel.source)
    assert count, f"the {mutant!r} pattern is not in the generated source"
    wrong = dataclasses.replace(kernel, source=source,
                                _impl=CLibrary(compile_shared_library(source), len(kernel.module.args)))
    caught = []
    for s in cc.input_sets(w, seed=11):
        expected = cc.expect(w, s.arrays)
        assert cc.verify(w, kernel.run(*s.arrays), expected).ok
        with np.errstate(all="ignore"):
            if not cc.verify(w, wrong.run(*s.arrays), expected).ok:
                caught.append(s.name)
    assert caught, f"{mutant} passed every input set"
