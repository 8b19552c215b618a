"""The CPU GEMM's bfloat16 pair dot products (gemm_bf16_dot): the `dot` knob exists exactly for bfloat16 matmul,
batch_matmul and conv2d (its im2col panels) on an AVX-512 BF16 target; its kernels compile on any host and, where
the host has AVX-512 BF16, run correct on ragged shapes (odd K, K past one block, M and N off the tile, strided and
padded convolutions), against the float64 reference and the FMA path."""
from __future__ import annotations

import random
import re

import numpy as np
import pytest

import compiler_core as cc
from compiler_core.runtime.c_runtime import compile_shared_library
from compiler_core.schedules import template_for
from compiler_core.schedules.cpu import gemm
from compiler_core.target import host_isas
from tests.c_source_mutants import catching_input_sets
from tests.space_configs import knob_choices

BF16 = cc.cpu_target(isa="avx512bf16", cores=2)
AVX512 = cc.cpu_target(isa="avx512", cores=2)
runs_here = pytest.mark.skipif("avx512bf16" not in host_isas(), reason="this CPU lacks AVX-512 BF16")


def _knobs(space) -> list[str]:
    return [k.name for k in space.knobs]


def _matmul(dtype="bfloat16", **shape):
    return cc.make_workload("matmul", dict({"M": 67, "N": 131, "K": 45}, **shape, dtype=dtype))


# ---- the space -------------------------------------------------------------------------------------------------

def test_the_knob_is_offered_for_bfloat16_matmuls_on_a_bf16_target_only():
    batched = cc.make_workload("batch_matmul", batch=2, M=16, N=32, K=8, dtype="bfloat16")
    assert knob_choices(cc.get_space(_matmul(), BF16), "dot") == ("fma", "bf16")
    assert knob_choices(cc.get_space(batched, BF16), "dot") == ("fma", "bf16")
    for w, target in ((_matmul(), AVX512), (_matmul(dtype="float32"), BF16), (_matmul(dtype="float16"), BF16)):
        assert "dot" not in _knobs(cc.get_space(w, target)), (w.key, target.arch)


def test_the_default_multiplies_by_pairs_and_the_pairs_need_packed_a():
    """On an AVX-512 BF16 target without AMX (Zen 4 and 5, where pairs ran 1.6-2.0x FMAs; a Sapphire Rapids, where
    they cost 0.60-0.72x, is in this class only without AMX's tiles) the untuned GEMM multiplies by pairs; the
    streamed rows keep FMAs (they read B unpacked)."""
    w = _matmul()
    config = cc.default_config(w, BF16)
    assert {k: config[k] for k in ("dot", "b_source", "pack_a")} == {"dot": "bf16", "b_source": "packed", "pack_a": 1}
    assert cc.get_space(w, BF16).is_valid(config)
    violations = cc.get_space(w, BF16).violations(dict(config, pack_a=0))
    assert any("pack_a" in v for v in violations), violations
    assert cc.default_config(_matmul(M=4), BF16)["dot"] == "fma"  # streamed
    assert "dot" not in cc.default_config(w, AVX512)


def test_a_config_without_the_knob_keeps_its_space_and_multiplies_by_fmas():
    """A config tuned for an AVX-512 host without BF16 (or transferred from one) stays valid here."""
    w = _matmul()
    old = cc.default_config(w, AVX512)
    space = template_for("matmul", "c", "tuned").config_space(w, BF16, old)
    assert space.is_valid(old) and "dot" not in _knobs(space)
    assert "_mm512_dpbf16_ps" not in cc.generate(w, old, BF16)


def test_pairs_are_refused_where_the_target_lacks_them():
    w = _matmul()
    with pytest.raises(ValueError, match=r"unknown knob\(s\) dot"):
        cc.generate(w, dict(cc.default_config(w, AVX512), dot="bf16"), AVX512)
    with pytest.raises(ValueError, match="AVX-512 BF16"):  # the builder's own check, under the space's
        gemm.make_plan(gemm.GemmOperands(M=4, N=4, K=4, batch=1, a=None, b=None, c=None, c_index=None,
                                         b_direct=(None, None)), dict(cc.default_config(w, AVX512), dot="bf16"),
                       AVX512)


# ---- the kernels -----------------------------------------------------------------------------------------------

def _pair_configs(w, count: int, seed: int) -> list[dict]:
    """The default with pairs (B packed), and `count` sampled configs with pairs."""
    space = cc.get_space(w, BF16)
    configs = [c for c in space.sample(random.Random(seed), 4 * count) if c["dot"] == "bf16"][:count]
    return [dict(cc.default_config(w, BF16), dot="bf16", b_source="packed", pack_a=1), *configs]


def test_the_pair_kernels_compile_with_the_targets_flags():
    w = _matmul()
    for config in _pair_configs(w, 2, seed=1):
        source = cc.generate(w, config, BF16)
        assert "_mm512_dpbf16_ps" in source and "tf_bfloat16x32" in source
        assert compile_shared_library(source, march=BF16.march_flags).stat().st_size > 0


SHAPES = [  # odd K (a half pair), K < kc, K over several blocks with an odd last one, M and N off the tile
    ("matmul", {"M": 67, "N": 131, "K": 45}),
    ("matmul", {"M": 1, "N": 1, "K": 1}),
    ("matmul", {"M": 96, "N": 64, "K": 513}),
    ("matmul", {"M": 33, "N": 200, "K": 300}),
    ("batch_matmul", {"batch": 3, "M": 17, "N": 48, "K": 31}),
    ("batch_matmul", {"batch": 4, "M": 64, "N": 40, "K": 130}),
]


@runs_here
@pytest.mark.parametrize("op, shape", SHAPES, ids=lambda v: str(v))
def test_pair_kernels_match_the_reference_and_the_fma_path(op, shape):
    w = cc.make_workload(op, dict(shape, dtype="bfloat16"))
    inputs = cc.random_inputs(w, seed=5)
    expected = cc.expect(w, inputs)
    fma = cc.build(w, dict(cc.default_config(w, BF16), dot="fma"), BF16).run(*inputs)[0].astype(np.float32)
    for config in _pair_configs(w, 3, seed=len(str(shape))):
        out = cc.build(w, config, BF16).run(*inputs)
        result = cc.verify(w, out, expected)
        assert result.ok, (config, result.message)
        # both accumulate the same exact products in float32; only the order of two adds and the final rounding
        # to bfloat16 can differ: one bfloat16 step (2^-8 relative) at most
        got = out[0].astype(np.float32)
        assert np.all(np.abs(got - fma) <= 2.0 ** -7 * np.maximum(np.abs(fma), 1e-3)), config


@runs_here
def test_every_microkernel_shape_and_order_runs_correct():
    w = _matmul(M=29, N=77, K=37)
    inputs = cc.random_inputs(w, seed=9)
    expected = cc.expect(w, inputs)
    space = cc.get_space(w, BF16)
    base = dict(cc.default_config(w, BF16), dot="bf16", b_source="packed", pack_a=1)
    lanes = BF16.vector_lanes_f32
    for mr in gemm.MR_CHOICES:
        for nr in knob_choices(space, "nr"):
            for order in ("jr_ir", "ir_jr"):
                mc = next(m for m in knob_choices(space, "mc") if m % mr == 0)
                nc = next(n for n in knob_choices(space, "nc") if n % nr == 0)
                config = dict(base, mr=mr, nr=nr, order=order, mc=mc, nc=nc, kc=32)
                if not space.is_valid(config):
                    registers = cc.cpu_target(isa="avx512").vector_registers
                    assert gemm._registers_needed(mr, nr // lanes) > registers, config
                    continue
                result = cc.verify(w, cc.build(w, config, BF16).run(*inputs), expected)
                assert result.ok, (config, result.message)


# ---- conv2d: the im2col panels as pairs ------------------------------------------------------------------------

def test_conv2d_offers_pairs_on_both_of_its_b_sources():
    """The im2col panels pack as pairs; the padded copy holds channel pairs read in place (test_conv2d_pairs.py)."""
    conv = cc.make_workload("conv2d", dict(N=1, C=16, H=12, W=12, K=128, R=3, S=3, pad=1, dtype="bfloat16"))
    space = cc.get_space(conv, BF16)
    assert knob_choices(space, "dot") == ("fma", "bf16")
    default = cc.default_config(conv, BF16)
    assert default["dot"] == "bf16" and default["b_source"] == "padded" and space.is_valid(default)
    assert space.is_valid(dict(default, dot="fma"))
    assert space.is_valid(dict(default, dot="bf16", b_source="im2col", pack_a=1))
    assert "dot" not in _knobs(cc.get_space(conv, AVX512))


CONVS = [  # odd C*R*S (a half pair), stride, padding past the image, output rows split across panels, a batch
    {"N": 1, "C": 3, "H": 17, "W": 13, "K": 96, "R": 3, "S": 3, "pad": 1},
    {"N": 2, "C": 5, "H": 11, "W": 9, "K": 33, "R": 3, "S": 3, "stride": 2, "pad": 2},
    {"N": 1, "C": 8, "H": 7, "W": 7, "K": 130, "R": 1, "S": 1},
]


@runs_here
@pytest.mark.parametrize("shape", CONVS, ids=str)
def test_conv2d_pair_kernels_match_the_reference(shape):
    w = cc.make_workload("conv2d", dict(shape, dtype="bfloat16"))
    space = cc.get_space(w, BF16)
    configs = [dict(cc.default_config(w, BF16), dot="bf16", b_source="im2col", pack_a=1)]
    configs += [c for c in space.sample(random.Random(3), 24) if c["dot"] == "bf16"][:3]
    for inputs in cc.input_sets(w, seed=6):
        expected = cc.expect(w, inputs.arrays)
        for config in configs:
            result = cc.verify(w, cc.build(w, config, BF16).run(*inputs.arrays), expected)
            assert result.ok, (inputs.name, config, result.message)


# ---- planted bugs: verification must catch each in the pair kernel ---------------------------------------------

PAIR_MUTANTS = {  # an edit of the generated C (re.subn-like)
    # the microkernel stops one pair short: K's last step (44 of 45) is dropped
    "last pair dropped": lambda s: re.subn(r"p2 < 23; \+\+p2\)", "p2 < 22; ++p2)", s),
    # B's packing writes each pair's first K step over its second (the first slot keeps whatever the buffer held)
    "first half over the second": lambda s: re.subn(r"\(2 \* j\)\)\] = ", "(2 * j)) + 1] = ", s, count=1),
}


@runs_here
@pytest.mark.parametrize("mutant", list(PAIR_MUTANTS))
def test_a_planted_bug_in_the_pair_kernel_fails(mutant):
    w = _matmul()
    kernel = cc.build(w, dict(cc.default_config(w, BF16), dot="bf16", b_source="packed", pack_a=1), BF16)
    assert catching_input_sets(w, kernel, PAIR_MUTANTS[mutant], seed=5), f"{mutant} passed every input set"
