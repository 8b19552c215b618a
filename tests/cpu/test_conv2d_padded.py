"""conv2d's padded-image path (b_source 'padded', schedules/cpu/conv2d.py): its rules, the stored configs before it,
and planted bugs in its generated C that the farm's verifier must catch (random and adversarial inputs)."""
from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

import compiler_core as cc
from compiler_core.runtime.c_runtime import CLibrary, compile_shared_library

TARGET = cc.cpu_target(cores=2)
# Hp = 11, Wp = 13: a plane of 143, an image of 3 * 143 = 429; GEMM columns (9 - 1) * 13 + 11 = 115
W = cc.make_workload("conv2d", dict(N=2, C=3, H=9, W=11, K=5, R=3, S=3, pad=1))

MUTANTS = {
    # a tap's row offset taken at the unpadded width: every tap below the first row reads the wrong pixels
    "tap rows at the wrong width": lambda s: re.subn(r"(tap\[k\] = .*% 3\) \* )13\)", r"\g<1>12)", s),
    # the result copied out at the output width instead of the padded one: rows drift by the dropped columns
    "copy-out at the output width": lambda s: re.subn(r"\(p \* 13\)\) \+ q\)\]", "(p * 11)) + q)]", s),
    # the image copied one column left inside its border
    "image shifted left": lambda s: re.subn(r"\+ 1\) \+ j\)\)?\] = in_X", "+ 0) + j)] = in_X", s),
    # every image of the batch reads the first one's pixels
    "batch offset dropped": lambda s: re.subn(r"\(bt \* 429\)", "(bt * 0)", s),
}


@pytest.mark.parametrize("mutant", list(MUTANTS))
def test_a_planted_bug_fails(mutant):
    kernel = cc.build(W, dict(cc.default_config(W, TARGET), b_source="padded"), TARGET)
    source, count = MUTANTS[mutant](kernel.source)
    assert count, f"the {mutant!r} pattern is not in the generated source"
    wrong = dataclasses.replace(kernel, source=source,
                                _impl=CLibrary(compile_shared_library(source), len(kernel.module.args)))
    caught = []
    for s in cc.input_sets(W, seed=3):
        expected = cc.expect(W, s.arrays)
        assert cc.verify(W, kernel.run(*s.arrays), expected).ok
        with np.errstate(all="ignore"):
            if not cc.verify(W, wrong.run(*s.arrays), expected).ok:
                caught.append(s.name)
    assert caught, f"{mutant} passed every input set"


def test_the_default_reads_the_padded_image_at_stride_1_and_packs_im2col_else():
    assert cc.default_config(W, TARGET)["b_source"] == "padded"
    strided = cc.make_workload("conv2d", dict(W.param_dict, stride=2))
    assert cc.default_config(strided, TARGET)["b_source"] == "im2col"
    with pytest.raises(cc.ConfigError, match="b_source 'padded' needs stride 1"):
        cc.lower(strided, dict(cc.default_config(strided, TARGET), b_source="padded"), TARGET)


def test_a_config_stored_before_the_knob_builds_the_im2col_kernel():
    old = {k: v for k, v in cc.default_config(W, TARGET).items() if k != "b_source"}
    assert cc.generate(W, old, TARGET) == cc.generate(W, dict(old, b_source="im2col"), TARGET)
    assert cc.generate(W, old, TARGET) != cc.generate(W, dict(old, b_source="padded"), TARGET)


def test_no_im2col_pack_in_the_padded_kernel():
    source = cc.generate(W, cc.default_config(W, TARGET), TARGET)
    assert "Bp" not in source and "Xp" in source
