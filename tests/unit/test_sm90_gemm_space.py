"""The Hopper GEMM as a farm template (no compiler): its space and default on sm_90a, where matmul float16 dispatches
(and where it stays on WMMA), the OpaqueKernel it lowers to (params, grid, passes leave it alone, resource checks),
codegen emitting the prelude once, and finite cost-model features. Compiled in tests/nvcc/
test_sm90_gemm_farm_compiles.py, run in tests/gpu/test_sm90_gemm_farm_gpu.py."""
from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest

import compiler_core as cc
from compiler_core.codegen import generate_source, sm90_gemm
from compiler_core.errors import ResourceError, WorkloadError
from compiler_core.features import FEATURE_NAMES
from compiler_core.ir.opaque import OpaqueKernel, TensorMapParam
from compiler_core.runtime.sm90_gemm_launch import ARG_KINDS
from compiler_core.schedules.cuda import gemm_sm90, gemm_wmma

H100 = cc.cuda_target("sm_90a", sm_count=132)
COMPILE_ONLY = cc.cuda_target("sm_90a")  # no SM count: the nominal one plans, the runtime asks the device


def matmul(M, N, K, dtype="float16"):
    return cc.make_workload("matmul", dict(M=M, N=N, K=K, dtype=dtype))


BIG, SMALL, RAGGED = matmul(4096, 4096, 4096), matmul(1024, 1024, 1024), matmul(136, 264, 520)


def value(vec, name: str) -> float:
    return float(vec[FEATURE_NAMES.index(name)])


# ---- space and default ---------------------------------------------------------------------------
def test_every_config_obeys_the_kernel_rules_and_fits_the_target():
    space = cc.get_space(BIG, H100)
    configs = list(space)
    assert space.names == ["bm", "bn", "stages", "consumers", "persistent", "group_m", "cluster", "split_k",
                           "split_cluster", "stream_k", "sk_split"]
    assert 500 < len(configs) < space.size  # the rules prune, and plenty is left to tune
    for c in configs:
        cfg = gemm_sm90.hopper_config(c)
        sm90_gemm.check(cfg, "float16")
        assert sm90_gemm.smem_layout(cfg, "float16").dynamic <= H100.shared_limit
        assert cfg.out_dtype("float16") == "float16" and not cfg.b_kmajor
    seen = {k: {c[k] for c in configs} for k in space.names}
    assert seen["bm"] == {64, 128, 256} and seen["bn"] == {64, 128, 192, 256} and seen["cluster"] == {1, 2}
    assert seen["consumers"] == {1, 2} and seen["persistent"] == {False, True}
    assert seen["split_k"] == {1} and seen["split_cluster"] == {False}  # 4096^2 fills the SMs with tiles: no split


def test_a_device_with_less_opt_in_shared_memory_gets_fewer_deep_rings():
    small = dataclasses.replace(H100, max_dynamic_shared_bytes=100 * 1024)
    configs = list(cc.get_space(BIG, small))
    assert configs and len(configs) < len(list(cc.get_space(BIG, H100)))
    assert all(gemm_sm90._smem(c) <= 100 * 1024 for c in configs)


def test_small_problems_get_no_oversized_tiles_or_idle_cluster_peers():
    configs = list(cc.get_space(matmul(64, 64, 64), H100))
    assert configs and all(c["bm"] == 64 and c["bn"] == 64 and c["cluster"] == 1 and c["group_m"] == 1
                           for c in configs)


@pytest.mark.parametrize("w", [BIG, SMALL, RAGGED, matmul(64, 64, 64), matmul(1001, 72, 8), matmul(8192, 256, 1024)],
                         ids=lambda w: w.key)
@pytest.mark.parametrize("target", [H100, COMPILE_ONLY], ids=["h100", "compile-only"])
def test_default_config_is_in_the_space(w, target):
    config = cc.default_config(w, target)
    assert cc.get_space(w, target).is_valid(config) and set(config) == set(cc.get_space(w, target).names)


def test_default_is_a_rule_on_how_many_large_tiles_fill_the_sms():
    """The probe's 128x256 s4 c2 where its tiles fill every SM at least once; from two rows of them, whichever of
    128 x 256, 128 x 192 and 128 x 128 fills half a wave and takes the least time over its rounds of SMs; else
    64x128 s6 c1: the same problem flips with the device's SM count, so this is a rule on the size, not a table of
    shapes."""
    large, wide, mid, small = gemm_sm90.LARGE, gemm_sm90.WIDE, gemm_sm90.MID, gemm_sm90.SMALL
    pick = lambda w, t: {k: cc.default_config(w, t)[k] for k in large}  # noqa: E731
    sms = lambda n: dataclasses.replace(H100, sm_count=n)  # noqa: E731
    assert pick(BIG, H100) == large and pick(SMALL, H100) == small
    assert pick(SMALL, sms(32)) == large  # 8 x 4 large tiles fill 32 SMs
    assert pick(matmul(2048, 2048, 64), H100) == large  # 16 x 8 = 128 large tiles: 97 % of one wave of 132
    assert pick(matmul(1152, 2048, 64), H100) == wide  # 72 large tiles (55 %), or 99 wide ones, 3/4 as long
    assert pick(matmul(2304, 2048, 64), H100) == wide  # two rounds either way (144 large, 198 wide tiles)
    assert pick(matmul(1408, 1408, 64), H100) == mid  # 121 mid tiles in one round, half as long as a large one
    assert pick(matmul(5120, 2048, 64), H100) == mid  # 5 rounds of mid (2.5 large ones) against 3 of large
    assert pick(matmul(1536, 1536, 64), sms(72)) == large  # 72 large tiles fill 72 SMs; 96 wide take two rounds
    assert pick(matmul(1536, 1536, 64), sms(96)) == wide
    assert pick(matmul(512, 2048, 64), H100) == small  # 32 large, 44 wide, 64 mid tiles: under half a wave
    assert pick(matmul(1024, 2048, 64), sms(264)) == small  # 128 mid < 132
    assert pick(matmul(128, 16384, 4096), H100) == small  # one row of large tiles: the skinny rules decide
    assert pick(matmul(1024, 192, 64), sms(8)) == wide  # N = 192: a large tile would multiply 64 columns of zeros
    assert cc.default_config(BIG, H100)["persistent"] is True
    assert cc.default_config(matmul(1152, 2048, 4096), H100)["split_k"] == 1  # half a wave of tiles: no split


def test_a_config_stored_before_192_column_tiles_stays_in_the_space():
    """bn=192 widened the knob, not the oversize rule: a 256-column tile where N <= 192 was valid before and is now."""
    w = matmul(1024, 160, 1024)
    old = dict(cc.default_config(w, H100), **gemm_sm90.LARGE, group_m=1, split_k=1)
    assert gemm_sm90.covering(gemm_sm90.TILE_CHOICES, 160) == 256 and cc.get_space(w, H100).is_valid(old)
    assert not cc.get_space(matmul(1024, 128, 1024), H100).is_valid(dict(old, bn=192))  # 128 covers N: no wider


# ---- dispatch ------------------------------------------------------------------------------------
@pytest.mark.parametrize("w, target", [
    (BIG, cc.cuda_target("sm_90")),  # no 'a': no wgmma
    (BIG, cc.cuda_target("sm_80")),
    (matmul(4096, 4096, 4100), H100),  # K % 8: A's rows are not 16-byte multiples
    (matmul(4096, 4100, 4096), H100),  # N % 8: B's rows
    (cc.make_workload("batch_matmul", dict(batch=2, M=256, N=256, K=256, dtype="float16")), cc.cuda_target("sm_80")),
    (cc.make_workload("batch_matmul", dict(batch=2, M=256, N=256, K=252, dtype="bfloat16")), H100),
], ids=["sm_90", "sm_80", "k-unaligned", "n-unaligned", "batch_matmul-sm_80", "batch_matmul-k-unaligned"])
def test_float16_stays_on_wmma_where_the_hopper_kernel_does_not_apply(w, target):
    assert not gemm_sm90.applies(w, target)
    assert cc.get_space(w, target).names == gemm_wmma.space(w, target).names
    assert isinstance(cc.lower(w, cc.default_config(w, target), target).kernels[0], cc.ir.PrimFunc)


def test_float16_matmul_on_sm90a_with_aligned_rows_goes_to_hopper_any_m():
    for w in (BIG, RAGGED, matmul(1001, 8, 8)):
        assert gemm_sm90.applies(w, H100) and "consumers" in cc.get_space(w, H100).names
    assert not gemm_sm90.applies(matmul(4096, 4096, 4096, "float32"), H100)
    with pytest.raises(WorkloadError, match="multiples of 8"):
        gemm_sm90.space(matmul(64, 64, 60), H100)


def test_a_wmma_config_stored_before_the_hopper_template_still_builds_on_sm90a():
    """Heads tuned (and pinned) on WMMA before sm_90a had its own template must keep lowering; a config mixing
    the two families is refused like any config outside the space."""
    old = gemm_wmma.default_config(BIG, cc.cuda_target("sm_90"))
    module = cc.lower(BIG, old, H100)
    assert isinstance(module.kernels[0], cc.ir.PrimFunc) and "wmma" in generate_source(module, H100)
    assert isinstance(cc.lower(BIG, cc.default_config(BIG, H100), H100).kernels[0], OpaqueKernel)
    with pytest.raises(cc.ConfigError):
        cc.lower(BIG, {**old, "consumers": 2}, H100)


# ---- the lowered kernel --------------------------------------------------------------------------
def test_lowers_to_one_opaque_kernel_with_the_probes_parameters():
    config = dict(cc.default_config(RAGGED, H100), persistent=False, split_k=1)
    module = cc.lower(RAGGED, config, H100)
    (k,) = module.kernels
    assert isinstance(k, OpaqueKernel) and k.requires == ("wgmma",)
    assert k.param_kinds == ARG_KINDS  # what the probe's launcher packs, in the same order
    a_map, b_map = k.tensor_maps
    assert (a_map.shape, a_map.box) == ((136, 520), (config["bm"], 64))
    assert (b_map.shape, b_map.box) == ((520, 264), (64, 64))
    assert [p.value for p in k.params[3:]] == [136, 264, 520]
    assert k.bound_buffers == (module.args[0], module.args[1], module.args[2])
    cfg = gemm_sm90.hopper_config(config)
    assert k.name == sm90_gemm.kernel_name(cfg, "float16") and k.block == (cfg.threads, 1, 1)
    assert k.dynamic_shared_bytes == sm90_gemm.smem_layout(cfg, "float16").dynamic
    tiles = -(-136 // config["bm"]) * -(-264 // config["bn"])
    assert k.grid == (tiles, 1, 1)  # non-persistent: a CTA per tile


def test_persistent_grids_stop_at_the_sms_and_clusters_stay_whole():
    config = dict(cc.default_config(BIG, H100), cluster=2)
    k = cc.lower(BIG, config, H100).kernels[0]
    assert k.grid == (132, 1, 1) and k.units == 16 * 16  # 256-row cluster tiles x 256-column tiles
    assert k.grid_for(7)[0] == 6  # 3 clusters of 2 on 7 SMs
    assert k.grid_for(0)[0] == 2 * k.units  # SMs unknown: uncapped (the runtime asks the device)
    assert cc.lower(BIG, config, COMPILE_ONLY).kernels[0].sm_count == 0
    k1 = cc.lower(BIG, dict(config, persistent=False), H100).kernels[0]
    assert k1.grid == (2 * k1.units, 1, 1)


def test_passes_leave_the_opaque_kernel_alone():
    config = cc.default_config(BIG, H100)
    raw = gemm_sm90.schedule(BIG, config, H100)
    lowered = cc.run_passes(raw, H100)
    assert lowered.kernels[0] is raw.kernels[0]
    assert lowered.kernels[0].attrs["registers_estimate"] == raw.kernels[0].profile.registers


def _with(kernel: OpaqueKernel, **changes) -> cc.ir.Module:
    k = dataclasses.replace(kernel, **changes)
    return cc.ir.Module("m", (k,), (), (), 0)


def test_resource_checks_read_the_declared_numbers():
    k = gemm_sm90.schedule(BIG, cc.default_config(BIG, H100), H100).kernels[0]
    with pytest.raises(ResourceError, match="wgmma"):
        cc.run_passes(_with(k), cc.cuda_target("sm_90"))
    with pytest.raises(ResourceError, match="opt-in limit"):
        cc.run_passes(_with(k), dataclasses.replace(H100, max_dynamic_shared_bytes=100 * 1024))
    with pytest.raises(ResourceError, match="threads per block"):
        cc.run_passes(_with(k, block=(2048, 1, 1)), H100)
    with pytest.raises(ResourceError, match="clusters"):
        cc.run_passes(_with(k, cluster=16), H100)
    a_map = k.params[0]
    bad = TensorMapParam(a_map.buffer, (4096, 4100), a_map.box)  # 8200-byte rows: not a multiple of 16
    with pytest.raises(ResourceError, match="multiple of 16"):
        cc.run_passes(_with(k, params=(bad, *k.params[1:])), H100)


# ---- codegen -------------------------------------------------------------------------------------
def test_generate_emits_the_prelude_once_and_the_kernel_in_its_namespace():
    config = dict(cc.default_config(BIG, H100), cluster=2)
    source = cc.generate(BIG, config, H100)
    name = sm90_gemm.kernel_name(gemm_sm90.hopper_config(config), "float16")
    assert source.count("struct __align__(64) tf_tensor_map") == 1
    assert f"namespace {name}_impl {{" in source and 'extern "C" __global__' in source
    assert sm90_gemm.render_kernel(gemm_sm90.hopper_config(config)) in source


def test_two_opaque_kernels_share_one_prelude():
    """Blocks common to both kernels appear once; each one's own wgmma variant appears."""
    k1 = gemm_sm90.schedule(BIG, cc.default_config(BIG, H100), H100).kernels[0]
    k2 = gemm_sm90.schedule(BIG, dict(cc.default_config(BIG, H100), bn=128, cluster=2), H100).kernels[0]
    source = generate_source(cc.ir.Module("m", (k1, k2), (), (), 0), H100)
    assert source.count("struct __align__(64) tf_tensor_map") == 1
    assert "tf_wgmma_m64n256k16" in source and "tf_wgmma_m64n128k16" in source
    assert source.count("namespace ") == 2 * 2  # each kernel's namespace opens and is named at its close


def test_modules_of_ir_kernels_render_as_before():
    w = matmul(256, 256, 256)
    target = cc.cuda_target("sm_90")
    source = cc.generate(w, cc.default_config(w, target), target)
    assert "namespace" not in source and "tf_tensor_map" not in source


# ---- features ------------------------------------------------------------------------------------
@pytest.mark.parametrize("target", [H100, COMPILE_ONLY], ids=["h100", "compile-only"])
def test_features_are_finite_and_describe_the_tiling(target):
    configs = cc.get_space(BIG, target).sample(random.Random(3), 20)
    rows = np.stack([cc.features(BIG, c, target) for c in configs])
    assert rows.shape == (20, len(FEATURE_NAMES)) and np.isfinite(rows).all()
    config = cc.default_config(BIG, target)
    vec = cc.features(BIG, config, target)
    tiles = (4096 // 128) * (4096 // 256)
    assert value(vec, "tile.waves") == pytest.approx(tiles / 132)
    assert value(vec, "tile.last_wave_fill") == pytest.approx((tiles - 3 * 132) / 132)
    assert value(vec, "tile.lg_m") == 7 and value(vec, "tile.lg_n") == 8 and value(vec, "tile.stages") == 4
    assert value(vec, "ops.lg_flops") == pytest.approx(np.log2(1 + 2 * 4096.0 ** 3))
    assert value(vec, "launch.blocks") == 132 and value(vec, "launch.threads_per_block") == 384
    assert value(vec, "mem.global.coalesced_frac") == 1 and value(vec, "ops.lg_mma") > 0
    assert value(vec, "res.shared_frac") == pytest.approx(config_smem(config) / target.shared_limit)


def config_smem(config: dict) -> int:
    return gemm_sm90._smem(config)


def test_every_knob_moves_the_features_and_ir_kernels_leave_the_tile_group_at_zero():
    space = cc.get_space(SMALL, H100)
    base = dict(cc.default_config(SMALL, H100), persistent=False)
    vec = cc.features(SMALL, base, H100)
    for knob in space.knobs:
        for choice in knob.choices:
            other = dict(base, **{knob.name: choice})
            if choice != base[knob.name] and space.is_valid(other):
                assert not np.array_equal(cc.features(SMALL, other, H100), vec), f"{knob.name}={choice} unseen"
    w = matmul(256, 256, 256)
    target = cc.cuda_target("sm_90")
    vec = cc.features(w, cc.default_config(w, target), target)
    assert all(value(vec, n) == 0 for n in FEATURE_NAMES if n.startswith("tile."))


def test_the_cost_models_featurizer_gives_finite_rows():
    from tuner_server.cost_model.featurize import LoweredFeatures, featurizer_for

    feats = featurizer_for(cc.get_space(RAGGED, H100), RAGGED.key, H100)
    assert isinstance(feats, LoweredFeatures)
    X = feats(cc.get_space(RAGGED, H100).sample(random.Random(1), 8))
    assert X.shape == (8, len(FEATURE_NAMES)) and np.isfinite(X).all()


def test_feature_caches_keep_devices_of_one_arch_apart():
    """Waves and grids read the SM count: an H100 PCIe (114 SMs) must not reuse an SXM's (132) cached vectors."""
    from tuner_server.cost_model.featurize import LoweredFeatures, feature_set

    pcie = dataclasses.replace(H100, sm_count=114)
    assert LoweredFeatures.cache_prefix(BIG.key, H100) != LoweredFeatures.cache_prefix(BIG.key, pcie)
    assert feature_set(H100) != feature_set(pcie)
    config = cc.default_config(BIG, H100)
    assert value(cc.features(BIG, config, H100), "tile.waves") != value(cc.features(BIG, config, pcie), "tile.waves")
