"""conv2d's folded batch (b_source 'folded', schedules/cpu/conv2d_folded.py) compiled and run: ragged layers on both
input sets, half types, every ISA this host runs (the others compiled), and planted bugs in its generated C that the
farm's verifier must catch."""
from __future__ import annotations

import random
import re

import pytest

import compiler_core as cc
from compiler_core.runtime.c_runtime import compile_shared_library
from compiler_core.target import host_isas
from tests.c_source_mutants import catching_input_sets

TARGET = cc.cpu_target(cores=2)

LAYERS = [
    dict(N=3, C=5, H=7, W=11, K=6, R=3, S=3, pad=1),  # prime sizes, C off the vector width, shared borders
    dict(N=1, C=17, H=13, W=13, K=19, R=3, S=3, pad=1),  # one image: the padded layout, one GEMM
    dict(N=2, C=5, H=9, W=11, K=20, R=3, S=3, stride=2, pad=2),  # stride 2, padding 2
    dict(N=4, C=3, H=7, W=5, K=7, R=5, S=5, pad=2),
    dict(N=3, C=6, H=6, W=9, K=5, R=2, S=4),  # padding 0: no border shared
    dict(N=5, C=16, H=7, W=7, K=33, R=1, S=1),  # 1x1
    dict(N=3, C=5, H=6, W=5, K=7, R=5, S=3, stride=3, pad=4),  # padding wider than the window, stride 3
]


def _folded(w, target=TARGET, **knobs) -> dict:
    config = dict(cc.default_config(w, target), b_source="folded", parallel="m") | knobs
    return config | ({"dot": "fma"} if "dot" in config else {})


def _check(w, config, target=TARGET, seed=4) -> None:
    kernel = cc.build(w, config, target)
    for inputs in cc.input_sets(w, seed=seed):
        result = cc.verify(w, kernel.run(*inputs.arrays), cc.expect(w, inputs.arrays))
        assert result.ok, (w.key, config, inputs.name, result.message)


@pytest.mark.parametrize("layer", LAYERS, ids=str)
def test_folded_kernels_match_the_reference(layer):
    w = cc.make_workload("conv2d", layer)
    space = cc.get_space(w, TARGET)
    sampled = [c for c in space.sample(random.Random(str(layer)), 400) if c["b_source"] == "folded"]
    for config in [_folded(w), _folded(w, parallel="n", pack_a=1), _folded(w, pack_a=0, order="ir_jr"),
                   *sampled[:2]]:
        assert space.is_valid(config), space.violations(config)
        _check(w, config)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_types_fold(dtype):
    for layer in (LAYERS[0], LAYERS[2]):
        w = cc.make_workload("conv2d", dict(layer, dtype=dtype))
        _check(w, _folded(w))
        _check(w, _folded(w, parallel="n"))


@pytest.mark.parametrize("isa", ["sse", "avx2", "avx512"])
def test_every_isa_builds_the_fold_and_runs_it_where_it_can(isa):
    target = cc.cpu_target(isa=isa, cores=2)
    for layer in (LAYERS[0], LAYERS[2]):
        w = cc.make_workload("conv2d", layer)
        config = cc.default_config(w, target)
        assert config["b_source"] == "folded"
        if isa in host_isas():
            _check(w, config, target)
        else:
            assert compile_shared_library(cc.generate(w, config, target), march=target.march_flags).stat().st_size


# Hp = 9, Wp = 13, pitch 12 (one border column shared), row 2 * 12 + 13 = 37, a plane 9 * 37 = 333; 257 GEMM columns
RAGGED = cc.make_workload("conv2d", LAYERS[0])
MUTANTS = {  # edits of the source of _folded(RAGGED)
    # each image's columns in the copy at the unshared pitch: images overlap the next one's first data column
    "copy pitch": lambda s: re.subn(r"\+ \(n \* 12\)\);", "+ (n * 13));", s),
    # the result read back at the unshared pitch
    "copy-out pitch": lambda s: re.subn(r"\(p \* 37\)\) \+ \(n \* 12\)\)", "(p * 37)) + (n * 13))", s),
    # a tap's row offset at one image's width, not the folded row's
    "tap row width": lambda s: re.subn(r"\(\(\(k / 3\) % 3\) \* 37\)", "(((k / 3) % 3) * 13)", s),
    # every image but the last writes one column short: its last data column is left as it was
    "short image": lambda s: re.subn(r"\(\(n < 2\) \? 12 : 13\)", "((n < 2) ? 11 : 13)", s),
    # the images' copies all read the first image
    "image offset dropped": lambda s: re.subn(r"\(\(n \* 5\) \+ c\)", "((0 * 5) + c)", s),
}


@pytest.mark.parametrize("mutant", list(MUTANTS))
def test_a_planted_bug_fails(mutant):
    kernel = cc.build(RAGGED, _folded(RAGGED), TARGET)
    assert catching_input_sets(RAGGED, kernel, MUTANTS[mutant], seed=3), f"{mutant} passed every input set"
