"""conv2d's padded path with bfloat16 pair dot products (b_source 'padded', dot 'bf16', schedules/cpu/conv2d_pairs):
offered beside the im2col pairs, compiled on any host, and where the host has AVX-512 BF16 exact on ragged layers (odd
C, whose last pair is half zero; stride 2 with padding 2; 5x5 and 1x1 taps; filters off the tile) on both input
sets and close to the FMA path; planted bugs in its generated C fail verification."""
from __future__ import annotations

import random

import numpy as np
import pytest

import compiler_core as cc
from compiler_core.runtime.c_runtime import compile_shared_library
from compiler_core.target import host_isas
from tests.c_source_mutants import catching_input_sets

BF16 = cc.cpu_target(isa="avx512bf16", cores=2)
runs_here = pytest.mark.skipif("avx512bf16" not in host_isas(), reason="this CPU lacks AVX-512 BF16")

LAYERS = [
    dict(N=2, C=5, H=9, W=11, K=20, R=3, S=3, stride=2, pad=2),  # odd C, stride 2, padding 2
    dict(N=1, C=64, H=12, W=12, K=130, R=3, S=3, stride=1, pad=1),  # filters off the tile
    dict(N=3, C=7, H=13, W=10, K=33, R=5, S=5, stride=1, pad=2),
    dict(N=1, C=16, H=9, W=9, K=8, R=1, S=1, stride=2, pad=0),
]


def _conv(**shape):
    return cc.make_workload("conv2d", dict(shape, dtype="bfloat16"))


def _pairs(w, **knobs) -> dict:
    return dict(cc.default_config(w, BF16), b_source="padded", dot="bf16", pack_a=1, **knobs)


def test_the_padded_path_takes_the_pairs_as_the_im2col_path_does():
    w = _conv(**LAYERS[0])
    space = cc.get_space(w, BF16)
    assert space.is_valid(_pairs(w)) and space.is_valid(dict(_pairs(w), b_source="im2col"))
    assert not space.is_valid(dict(_pairs(w), pack_a=0))


def test_the_padded_pair_kernels_compile_with_the_targets_flags():
    for layer in LAYERS:
        w = _conv(**layer)
        source = cc.generate(w, _pairs(w), BF16)
        assert "_mm512_dpbf16_ps" in source and "Wp[" in source
        assert compile_shared_library(source, march=BF16.march_flags).stat().st_size > 0


@runs_here
@pytest.mark.parametrize("layer", LAYERS, ids=lambda v: str(v))
def test_padded_pair_kernels_match_the_reference_and_the_fma_path(layer):
    w = _conv(**layer)
    space = cc.get_space(w, BF16)
    sampled = [c for c in space.sample(random.Random(str(layer)), 300) if c["dot"] == "bf16"
               and c["b_source"] == "padded"]
    fma = cc.build(w, dict(cc.default_config(w, BF16), dot="fma"), BF16)
    for config in [_pairs(w), *sampled[:2]]:
        kernel = cc.build(w, config, BF16)
        for inputs in cc.input_sets(w, seed=4):
            result = cc.verify(w, kernel.run(*inputs.arrays), cc.expect(w, inputs.arrays))
            assert result.ok, (config, inputs.name, result.message)
        inputs = cc.random_inputs(w, seed=6)
        got, ref = kernel.run(*inputs)[0].astype(np.float32), fma.run(*inputs)[0].astype(np.float32)
        # the same exact products in float32, summed in another order: a few bfloat16 steps at most
        assert np.all(np.abs(got - ref) <= 2.0 ** -6 * np.maximum(np.abs(ref), 1e-2)), config


RAGGED = _conv(**LAYERS[0])
MUTANTS = {  # edits of the source of _pairs(RAGGED)
    # every tap's row offset in its plane at the wrong width
    "tap row width": lambda s: _subn(s, "((((k / 3) % 3) / 2) * 8)", "((((k / 3) % 3) / 2) * 7)"),
    # the filter's odd channels copied from the even ones
    "filter pair": lambda s: _subn(s, "(((fc * 2) + 1)) < (4) ? (((fc * 2) + 1))", "(((fc * 2))) < (4) ? (((fc * 2)))"),
    # the image's odd channel of each pair stored over the even one
    "image pair": lambda s: _subn(s, "+ ((lo + j) * 2)) + 1)] =", "+ ((lo + j) * 2)) + 0)] ="),
    # the second B vector of a step (columns 16-31) read one pair short
    "second vector": lambda s: _subn(s, "((j0 + (jr * 64)) * 2)) + 32)]", "((j0 + (jr * 64)) * 2)) + 30)]"),
}


def _subn(source: str, old: str, new: str) -> tuple[str, int]:
    return source.replace(old, new), source.count(old)


@runs_here
@pytest.mark.parametrize("mutant", list(MUTANTS))
def test_a_planted_bug_fails(mutant):
    kernel = cc.build(RAGGED, _pairs(RAGGED), BF16)
    assert catching_input_sets(RAGGED, kernel, MUTANTS[mutant], seed=5), f"{mutant} passed every input set"
