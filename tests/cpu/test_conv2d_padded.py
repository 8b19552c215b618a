"""conv2d's padded-image path (b_source 'padded', schedules/cpu/conv2d.py): its rules, the stored configs before it,
and planted bugs in its generated C that the farm's verifier must catch (random and adversarial inputs)."""
from __future__ import annotations

import re

import pytest

import compiler_core as cc
from tests.c_source_mutants import catching_input_sets

TARGET = cc.cpu_target(cores=2)
# Hp = 11, Wp = 13: a plane of 143, an image of 3 * 143 = 429; GEMM columns (9 - 1) * 13 + 11 = 115
W = cc.make_workload("conv2d", dict(N=2, C=3, H=9, W=11, K=5, R=3, S=3, pad=1))
STRIDED = cc.make_workload("conv2d", dict(W.param_dict, stride=2))  # four 6 x 7 phase planes per channel

MUTANTS = {  # (workload, edit of the source)
    # a tap's row offset taken at the unpadded width: every tap below the first row reads the wrong pixels
    "tap rows at the wrong width": (W, lambda s: re.subn(r"(tap\[k\] = .*% 3\) \* )13\)", r"\g<1>12)", s)),
    # the result copied out at the output width instead of the padded one: rows drift by the dropped columns
    "copy-out at the output width": (W, lambda s: re.subn(r"\(p \* 13\)\) \+ q\)\]", "(p * 11)) + q)]", s)),
    # the image copied one column left inside its border
    "image shifted left": (W, lambda s: re.subn(r"\+ pb\) - 1\)\];", "+ pb) - 0)];", s)),
    # every image of the batch reads the first one's pixels
    "batch offset dropped": (W, lambda s: re.subn(r"\(bt \* 429\)", "(bt * 0)", s)),
    # stride 2: the column phase planes filled from the row phase
    "column phase from the row phase": (STRIDED, lambda s: re.subn(r"\* 2\)\) \+ pb\) - 1\)\]",
                                                                   "* 2)) + pa) - 1)]", s)),
    # stride 2: a tap's plane chosen by its column phase twice
    "tap plane by the wrong phase": (STRIDED, lambda s: re.subn(r"\(\(\(k / 3\) % 3\) % 2\)\) \* 2\)",
                                                              "((k % 3) % 2)) * 2)", s)),
}


@pytest.mark.parametrize("mutant", list(MUTANTS))
def test_a_planted_bug_fails(mutant):
    w, edit = MUTANTS[mutant]
    kernel = cc.build(w, dict(cc.default_config(w, TARGET), b_source="padded"), TARGET)
    assert catching_input_sets(w, kernel, edit, seed=3), f"{mutant} passed every input set"


def test_the_default_copies_the_padded_image_where_the_im2col_would_move_as_much():
    def source(**params) -> str:
        # one image: with several, the padded copy is folded (b_source 'folded', tests/unit/test_conv2d_folded.py)
        w = cc.make_workload("conv2d", dict(W.param_dict, N=1, **params))
        return cc.default_config(w, TARGET)["b_source"]

    assert source() == source(stride=2) == source(R=2, S=2, pad=0, stride=2) == "padded"  # R*S >= stride^2
    assert source(R=1, S=1, pad=0, stride=2) == "im2col"  # it would copy four pixels for each one used
    assert source(R=1, S=1, pad=0) == "padded"


def test_a_config_stored_before_the_knob_builds_the_im2col_kernel():
    old = {k: v for k, v in cc.default_config(W, TARGET).items() if k != "b_source"}
    assert cc.generate(W, old, TARGET) == cc.generate(W, dict(old, b_source="im2col"), TARGET)
    assert cc.generate(W, old, TARGET) != cc.generate(W, dict(old, b_source="padded"), TARGET)


def test_no_im2col_pack_in_the_padded_kernel():
    source = cc.generate(W, dict(cc.default_config(W, TARGET), b_source="padded", parallel="batch"), TARGET)
    assert "Bp" not in source and "Xp" in source
    folded = cc.generate(W, cc.default_config(W, TARGET), TARGET)  # the default folds the batch: its own copy
    assert "Bp" not in folded and "Xf" in folded


def test_the_padded_batch_is_bounded_and_kept_small_in_the_default(monkeypatch):
    from compiler_core.schedules.cpu import conv2d

    big = cc.make_workload("conv2d", dict(N=64, C=256, H=56, W=56, K=256, R=3, S=3, pad=1))
    assert conv2d.padded_bytes(big) > conv2d.PADDED_DEFAULT_MAX_BYTES
    assert cc.default_config(big, TARGET)["b_source"] == "im2col"
    config = dict(cc.default_config(W, TARGET), b_source="padded")
    monkeypatch.setattr(conv2d, "PADDED_MAX_BYTES", conv2d.padded_bytes(W) - 1)
    assert any("holds the padded batch" in v for v in cc.get_space(W, TARGET).violations(config))
