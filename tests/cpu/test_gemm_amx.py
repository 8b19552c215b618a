"""The CPU GEMM on AMX tiles (gemm_amx, `dot` 'amx'): offered exactly for bfloat16 matmul, batch_matmul and conv2d
(its im2col panels) on an AMX target, with tile-shaped microkernels that fit the 8 tile registers; the kernels compile
with the real AMX flags on any host, run correct on ragged shapes with the tile instructions emulated
(tests/amx_emulation.py) wherever the host has AVX-512 BF16, and with the real instructions where it has AMX; a host
lists AMX only where Linux grants the tile state."""
from __future__ import annotations

import random
import re

import numpy as np
import pytest

import compiler_core as cc
from compiler_core import target as target_module
from compiler_core.codegen import c_amx
from compiler_core.runtime.c_runtime import compile_shared_library
from compiler_core.schedules.cpu import conv2d_pairs, gemm, gemm_amx
from compiler_core.target import host_isas
from device_agent import fingerprint
from tests.amx_emulation import emulated_kernel, emulated_source
from tests.c_source_mutants import catching_input_sets
from tests.space_configs import knob_choices

AMX = cc.cpu_target(isa="amx", cores=2)
BF16 = cc.cpu_target(isa="avx512bf16", cores=2)
emulated_here = pytest.mark.skipif("avx512bf16" not in host_isas(), reason="the emulation's code needs AVX-512 BF16")
real_here = pytest.mark.skipif("amx" not in host_isas(), reason="this host (or its kernel) does not run AMX")
TILE_SHAPES = [(mr, nr) for mr in gemm_amx.TILE_MR for nr in (16, 32, 48, 64) if gemm_amx.fits(mr, nr)]


def _matmul(dtype="bfloat16", **shape):
    return cc.make_workload("matmul", dict({"M": 67, "N": 131, "K": 45}, **shape, dtype=dtype))


def _tiled(w, mr=32, nr=32, **knobs) -> dict:
    """The default with AMX tiles of mr x nr, A and B packed, blocks that hold whole tiles."""
    config = dict(cc.default_config(w, AMX), dot="amx", mr=mr, nr=nr, pack_a=1, mc=2 * mr, nc=4 * nr, kc=64)
    config.update({"b_source": "im2col" if w.op == "conv2d" else "packed"}, **knobs)
    return config


# ---- the space -------------------------------------------------------------------------------------------------

def test_tiles_are_offered_for_bfloat16_gemms_on_an_amx_target_only():
    conv = cc.make_workload("conv2d", dict(N=1, C=16, H=12, W=12, K=64, R=3, S=3, pad=1, dtype="bfloat16"))
    batched = cc.make_workload("batch_matmul", batch=2, M=16, N=32, K=8, dtype="bfloat16")
    for w in (_matmul(), batched, conv):
        space = cc.get_space(w, AMX)
        assert knob_choices(space, "dot") == ("fma", "bf16", "amx"), w.key
        assert knob_choices(space, "mr") == gemm.MR_CHOICES + gemm_amx.TILE_MR
    for w, target in ((_matmul(), BF16), (_matmul(dtype="float32"), AMX), (_matmul(dtype="float16"), AMX)):
        space = cc.get_space(w, target)
        assert "amx" not in (knob_choices(space, "dot") if "dot" in space.names else ()), (w.key, target.arch)
        assert knob_choices(space, "mr") == gemm.MR_CHOICES


@pytest.mark.parametrize("cores", [2, 16])
def test_the_tiles_default_packs_b_per_block_only_over_a_long_reduction(cores):
    """Each kc slice of a block loads and stores the tiles' float32 sums once more: B per block pays back over a long K
    (AMX_BLOCKS_MIN_K) and a small enough block of C, on 2 cores as on 16."""
    target = cc.cpu_target(isa="amx", cores=cores)

    def source(**shape) -> str:
        config = cc.default_config(_matmul(**shape), target)
        assert config["dot"] == "amx" and config["parallel"] == "n"
        return config["b_source"]

    assert source(M=256, N=4096, K=4096) == "blocks"
    assert source(M=256, N=4096, K=1024) == "packed"  # a short reduction
    assert source(M=2048, N=2048, K=2048) == "packed"
    assert source(M=8192, N=8192, K=4096) == "packed"  # 8192 rows x the thread's columns of float32: too large
    few = [cc.default_config(_matmul(M=m, N=4096, K=4096), target)["mr"] for m in (9, 16, 17)]
    assert few == [gemm_amx.ONE_TILE_ROW, gemm_amx.ONE_TILE_ROW, 32]  # one row of tiles for at most 16 rows


def test_tile_shapes_must_fit_the_tile_registers():
    w = _matmul()
    space = cc.get_space(w, AMX)
    assert TILE_SHAPES == [(16, 16), (16, 32), (16, 48), (32, 16), (32, 32)]
    for mr in gemm.MR_CHOICES + gemm_amx.TILE_MR:
        for nr in knob_choices(space, "nr"):
            config = _tiled(w, mr, nr, mc=96 if mr != 32 else 64, nc=192)
            assert space.is_valid(config) == ((mr, nr) in TILE_SHAPES), config
    # the vector microkernels keep their register bound: 32 rows of FMAs do not fit
    assert not space.is_valid(dict(_tiled(w), dot="fma"))
    assert any("pack_a" in v for v in space.violations(_tiled(w, pack_a=0)))
    assert space.is_valid(_tiled(w, b_source="blocks"))
    assert any("b_source in ('packed', 'blocks')" in v for v in space.violations(_tiled(w, b_source="in_place")))
    narrow = cc.make_workload("conv2d", dict(N=1, C=16, H=12, W=12, K=64, R=3, S=3, pad=1, dtype="bfloat16"))
    assert any("multiple of 32" in v for v in cc.get_space(narrow, AMX).violations(_tiled(narrow, b_source="padded")))
    assert cc.get_space(narrow, AMX).is_valid(_tiled(narrow, b_source="im2col"))
    conv = cc.make_workload("conv2d", dict(N=1, C=64, H=12, W=12, K=64, R=3, S=3, pad=1, dtype="bfloat16"))
    assert cc.get_space(conv, AMX).is_valid(_tiled(conv, b_source="padded"))
    with pytest.raises(ValueError, match="8 tile registers"):
        c_amx.tile_helper(2, 3)


def test_tiles_are_refused_where_the_target_lacks_them():
    w = _matmul()
    with pytest.raises(ValueError, match="AMX"):  # the builder's own check, under the space's
        gemm.make_plan(gemm.GemmOperands(M=4, N=4, K=4, batch=1, a=None, b=None, c=None, c_index=None),
                       _tiled(w), BF16)


def test_the_kernels_compile_with_the_amx_flags():
    w = _matmul()
    for mr, nr in TILE_SHAPES:
        source = cc.generate(w, _tiled(w, mr, nr), AMX)
        assert f"tf_amx_tile_{mr // 16}x{nr // 16}(" in source and "tf_amx_setup();" in source
        assert "_tile_release();" in source
        assert compile_shared_library(source, march=AMX.march_flags).stat().st_size > 0
    conv = cc.make_workload("conv2d", CONVS[3] | {"dtype": "bfloat16"})
    source = cc.generate(conv, _tiled(conv, b_source="padded"), AMX)  # B's tiles read in place, tap by tap
    assert "tf_amx_rows_2x2(" in source
    assert compile_shared_library(source, march=AMX.march_flags).stat().st_size > 0


# ---- the kernels, tiles emulated -------------------------------------------------------------------------------

SHAPES = [  # K < one tile, K off the tile and over several kc blocks, M and N off the tile, one element, a batch
    ("matmul", {"M": 67, "N": 131, "K": 45}),
    ("matmul", {"M": 1, "N": 1, "K": 1}),
    ("matmul", {"M": 96, "N": 64, "K": 513}),
    ("matmul", {"M": 33, "N": 200, "K": 300}),
    ("batch_matmul", {"batch": 3, "M": 17, "N": 48, "K": 31}),
    ("batch_matmul", {"batch": 4, "M": 64, "N": 40, "K": 130}),
]
CONVS = [  # odd C*R*S, stride and padding past the image, a 1x1 filter with K off the tile; then channels in whole
    # tiles, which the padded copy's tiles read in place (stride 2, a 2x3 filter, a 1x1 one, two images)
    {"N": 1, "C": 3, "H": 17, "W": 13, "K": 96, "R": 3, "S": 3, "pad": 1},
    {"N": 2, "C": 5, "H": 11, "W": 9, "K": 33, "R": 3, "S": 3, "stride": 2, "pad": 2},
    {"N": 1, "C": 8, "H": 7, "W": 7, "K": 130, "R": 1, "S": 1},
    {"N": 2, "C": 64, "H": 11, "W": 9, "K": 33, "R": 3, "S": 3, "stride": 2, "pad": 2},
    {"N": 1, "C": 96, "H": 6, "W": 5, "K": 16, "R": 2, "S": 3, "pad": 1},
    {"N": 1, "C": 32, "H": 7, "W": 7, "K": 70, "R": 1, "S": 1},
]


def _configs(w, count: int, seed: int) -> list[dict]:
    """Every tile shape on small blocks (B packed once, and for matmuls per block by each thread, the threads
    splitting rows or columns), and `count` sampled configs with tiles."""
    sampled = [c for c in cc.get_space(w, AMX).sample(random.Random(seed), 60 * count) if c["dot"] == "amx"]
    configs = [_tiled(w, mr, nr) for mr, nr in TILE_SHAPES]
    if w.op == "conv2d" and conv2d_pairs.tiled(w):
        configs += [_tiled(w, mr, nr, b_source="padded") for mr, nr in TILE_SHAPES]
    elif w.op != "conv2d":
        configs += [_tiled(w, 32, 32, b_source="blocks", parallel=p) for p in ("m", "n")]
        configs.append(_tiled(w, 16, 48, b_source="blocks", nc=96))
    return configs + sampled[:count]


def _check(w, build, configs) -> None:
    for inputs in cc.input_sets(w, seed=5):
        expected = cc.expect(w, inputs.arrays)
        for config in configs:
            result = cc.verify(w, build(w, config, AMX).run(*inputs.arrays), expected)
            assert result.ok, (inputs.name, config, result.message)


# the tile instructions emulated anywhere with AVX-512 BF16 (every other config: the emulation is scalar), or real
BUILDS = [pytest.param(emulated_kernel, 2, id="emulated", marks=emulated_here),
          pytest.param(cc.build, 1, id="real", marks=real_here)]


@pytest.mark.parametrize("build, every", BUILDS)
@pytest.mark.parametrize("op, shape", SHAPES, ids=str)
def test_tile_kernels_match_the_reference(build, every, op, shape):
    w = cc.make_workload(op, dict(shape, dtype="bfloat16"))
    _check(w, build, _configs(w, 3, seed=len(str(shape)))[::every])


@pytest.mark.parametrize("build, every", BUILDS)
@pytest.mark.parametrize("across_rows", [0, 1 << 20], ids=["down K", "across panels"])
def test_both_orders_of_packing_a_block_of_b_match_the_reference(build, every, across_rows, monkeypatch):
    """B per block is packed across the panels for few rows of A and down K panel by panel for more
    (gemm_amx.PACK_ACROSS_ROWS): both orders on ragged blocks (K off the tile and over two kc blocks, N off the
    panel, a thread's columns in several blocks)."""
    monkeypatch.setattr(gemm_amx, "PACK_ACROSS_ROWS", across_rows)
    w = _matmul(M=40, N=150, K=300)
    configs = [_tiled(w, 32, 32, b_source="blocks", parallel=p, kc=256, nc=64) for p in ("m", "n")]
    _check(w, build, configs + [_tiled(w, 16, 48, b_source="blocks", nc=96, kc=128)][::every])


@pytest.mark.parametrize("build, every", BUILDS)
@pytest.mark.parametrize("shape", CONVS, ids=str)
def test_conv2d_tile_kernels_match_the_reference(build, every, shape):
    w = cc.make_workload("conv2d", dict(shape, dtype="bfloat16"))
    _check(w, build, _configs(w, 2, seed=4)[::every])


# planted bugs, each an edit of the generated C that verification must catch
TILE_MUTANTS = {
    # the microkernel stops one tile of K short (K 45: two tiles of 32 steps)
    "last K tile dropped": lambda s: re.subn(r"(tf_amx_tile_2x2\(.*), 2\);", r"\1, 1);", s),
    # the second column tile reads the first one's B columns
    "second B tile misplaced": lambda s: re.subn(r"b_stride \+ 64, b_stride\)", "b_stride + 0, b_stride)", s),
    # A's panel rows are read 64 bytes short of their stride: rows shifted into each other
    "A stride wrong": lambda s: re.subn(r"\)\]\), 128, \(&Bp", ")]), 64, (&Bp", s),
}
CONV_MUTANTS = {  # the padded copy's tiles, read in place tap by tap
    # every K tile reads the first tap's rows
    "every tile from the first tap": lambda s: re.subn(r"rows\[16 \* s\]", "rows[0 * s]", s),
    # the filter copied in the pairs' (channel pair, tap) order, not the tiles' (tap, channel pair)
    "filter in the pairs' order": lambda s: re.subn(r"\(\(ft \* 48\) \+ fc\)", "((fc * 6) + ft)", s),
}


def _caught(w, config: dict, edit) -> bool:
    """Whether verification fails the emulated kernel of `config` edited by `edit` (re.subn-like) on the random
    inputs, while it passes the kernel itself (tests/c_source_mutants.py)."""
    kernel = emulated_kernel(w, config, AMX)
    return "random" in catching_input_sets(w, kernel, edit, seed=5, march=BF16.march_flags)


@emulated_here
@pytest.mark.parametrize("mutant", list(TILE_MUTANTS))
def test_a_planted_bug_in_the_tile_kernel_fails(mutant):
    assert _caught(_matmul(), _tiled(_matmul()), TILE_MUTANTS[mutant]), mutant


@emulated_here
@pytest.mark.parametrize("mutant", list(CONV_MUTANTS))
def test_a_planted_bug_in_the_padded_tiles_fails(mutant):
    w = cc.make_workload("conv2d", CONVS[4] | {"dtype": "bfloat16"})
    assert _caught(w, _tiled(w, b_source="padded"), CONV_MUTANTS[mutant]), mutant


def test_the_emulation_replaces_exactly_the_tile_intrinsics():
    source = emulated_source(cc.generate(_matmul(), _tiled(_matmul()), AMX))
    used = set(re.findall(r"\b(_tile_\w+)\(", cc.generate(_matmul(), _tiled(_matmul()), AMX)))
    assert used == {"_tile_loadconfig", "_tile_zero", "_tile_loadd", "_tile_dpbf16ps", "_tile_stored",
                    "_tile_release"}
    assert all(f"#define {name}(" in source for name in used)


# ---- the kernels on real tiles ---------------------------------------------------------------------------------

@real_here
def test_real_and_emulated_tiles_agree():
    """The emulation follows Intel's definition closely enough that both pass the same verification, and their
    float32 sums differ by rounding only."""
    w = _matmul(M=70, N=96, K=300, dtype="bfloat16")
    inputs = cc.random_inputs(w, seed=2)
    real = cc.build(w, _tiled(w), AMX).run(*inputs)[0].astype(np.float32)
    emulated = emulated_kernel(w, _tiled(w), AMX).run(*inputs)[0].astype(np.float32)
    assert np.all(np.abs(real - emulated) <= 2.0 ** -7 * np.maximum(np.abs(real), 1e-3))


# ---- which hosts list AMX --------------------------------------------------------------------------------------

def test_a_host_lists_amx_only_where_linux_grants_the_tiles(monkeypatch):
    flags = set("fpu sse sse2 cx16 lahf_lm popcnt pni ssse3 sse4_1 sse4_2 avx avx2 bmi1 bmi2 f16c fma abm movbe "
                "xsave avx512f avx512bw avx512_bf16 amx_tile amx_bf16".split())
    monkeypatch.setattr(target_module, "_cpu_flags", lambda: flags)
    monkeypatch.setattr(target_module.platform, "machine", lambda: "x86_64")
    for granted, widest in ((True, "amx"), (False, "avx512bf16")):
        target_module.host_isas.cache_clear()
        monkeypatch.setattr(target_module, "amx_permitted", lambda granted=granted: granted)
        monkeypatch.setattr(cc, "amx_permitted", lambda granted=granted: granted)
        assert target_module.host_isas()[-1] == widest
        listed = fingerprint.isa_flags({"flags": " ".join(sorted(flags))})
        assert ("amx_bf16" in listed) == granted and ("amx_tile" in listed) == granted
    target_module.host_isas.cache_clear()


# ---- the defaults ----------------------------------------------------------------------------------------------

def test_the_default_multiplies_on_tiles_past_the_streamed_rows_and_on_wide_convolutions():
    """Tiles ran 2.9-4.1x the FMA default on bfloat16 GEMMs of 64-2048 rows on a Sapphire Rapids Xeon; a few rows
    keep B streamed (4 rows: the stream 6x faster than tiles); convolutions read the padded copy as tiles where C is
    a multiple of 32, else im2col panels as tiles with at least 256 output channels, else FMAs (tiles on im2col
    panels 0.5-0.7x there)."""
    for shape in ({"M": 17, "N": 4096, "K": 4096}, {"M": 100, "N": 30, "K": 7}):
        assert cc.default_config(_matmul(**shape), AMX) | gemm_amx.DEFAULT == cc.default_config(_matmul(**shape), AMX)
    few = cc.default_config(_matmul(M=16, N=4096, K=4096), AMX)  # one row of tiles
    assert few | gemm_amx.DEFAULT | {"mr": gemm_amx.ONE_TILE_ROW} == few
    assert cc.default_config(_matmul(M=4), AMX)["b_source"] == "streamed"
    assert cc.default_config(_matmul(M=4), AMX)["dot"] == "fma"
    layer = cc.make_workload("conv2d", dict(N=1, C=64, H=56, W=56, K=64, R=3, S=3, pad=1, dtype="bfloat16"))
    wide = cc.make_workload("conv2d", dict(N=1, C=48, H=14, W=14, K=256, R=1, S=1, dtype="bfloat16"))
    narrow = cc.make_workload("conv2d", dict(N=1, C=3, H=56, W=56, K=64, R=3, S=3, pad=1, dtype="bfloat16"))
    assert cc.default_config(layer, AMX)["dot"] == "amx" and cc.default_config(layer, AMX)["b_source"] == "padded"
    assert cc.default_config(wide, AMX)["dot"] == "amx" and cc.default_config(wide, AMX)["b_source"] == "im2col"
    assert cc.default_config(narrow, AMX)["dot"] == "fma"
    for w in (_matmul(), layer, wide, narrow, _matmul(M=4)):
        assert cc.get_space(w, AMX).is_valid(cc.default_config(w, AMX)), w.key
    assert cc.default_config(_matmul(), BF16)["dot"] == "bf16"  # no tiles: pair dot products
