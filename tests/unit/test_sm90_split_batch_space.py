"""The Hopper GEMM's split_k knob and batch_matmul on it (no compiler): where split-K is offered and what the default
picks (a rule on tiles, K blocks and the target's SMs), batch_matmul's dispatch (sm_90a > WMMA > SIMT, stored
configs keeping their template), heads stored before split_k existed still lowering to the same kernel, and
features that tell splits and batches apart. The units' arithmetic: tests/unit/test_sm90_units_model.py."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import compiler_core as cc
from compiler_core.codegen import generate_source
from compiler_core.features import FEATURE_NAMES
from compiler_core.ir.opaque import OpaqueKernel
from compiler_core.schedules.cuda import gemm_sm90, gemm_wmma

H100 = cc.cuda_target("sm_90a", sm_count=132)


def mm(M, N, K, dtype="float16"):
    return cc.make_workload("matmul", dict(M=M, N=N, K=K, dtype=dtype))


def bmm(batch, M, N, K, dtype="float16"):
    return cc.make_workload("batch_matmul", dict(batch=batch, M=M, N=N, K=K, dtype=dtype))


def value(vec, name: str) -> float:
    return float(vec[FEATURE_NAMES.index(name)])


# ---- where split-K is offered --------------------------------------------------------------------
def test_split_k_is_offered_where_tiles_leave_sms_idle_and_k_is_long():
    splits = lambda w, t=H100: {c["split_k"] for c in cc.get_space(w, t)}  # noqa: E731
    assert splits(mm(16, 4096, 4096)) == {1, 2, 4, 8, 16}
    assert splits(mm(4096, 4096, 4096)) == {1}  # every tile choice fills 132 SMs
    assert splits(mm(16, 4096, 520)) == {1, 2}  # 9 K blocks: two ranges of at least 4
    assert splits(mm(16, 4096, 64)) == {1}
    assert splits(bmm(64, 128, 128, 4096)) == {1, 2, 4, 8, 16}  # 64 x 1 tiles at bm = bn = 128
    assert splits(bmm(64, 128, 256, 4096)) == {1, 2, 4, 8, 16}  # some tile shapes still leave SMs idle
    for c in cc.get_space(bmm(64, 128, 256, 4096), H100):
        assert c["split_k"] == 1 or 64 * gemm_sm90.cta_tiles(128, 256, c) < 132
    assert splits(mm(16, 4096, 4096), dataclasses.replace(H100, sm_count=16)) == {1}  # 32+ tiles fill 16 SMs


def test_every_split_config_obeys_the_kernel_rules():
    for w in (mm(16, 4096, 4096, "bfloat16"), bmm(3, 200, 264, 1032)):
        for c in cc.get_space(w, H100):
            cfg = gemm_sm90.hopper_config(c, gemm_sm90.batch_of(w))
            assert (cfg.out == "float32") == (c["split_k"] > 1 and not c["split_cluster"])
            assert not c["split_cluster"] or (c["split_k"] in (2, 4, 8) and not c["persistent"])
            assert gemm_sm90.K_BLOCK * gemm_sm90.MIN_SPLIT_K_BLOCKS * c["split_k"] <= w["K"] or c["split_k"] == 1


# ---- the default ---------------------------------------------------------------------------------
@pytest.mark.parametrize("w", [mm(16, 4096, 4096), mm(128, 4096, 4096), mm(1, 4096, 4096), mm(200, 1000, 8192),
                               bmm(2, 17, 40, 4104)], ids=lambda w: w.key)
def test_the_default_splits_until_one_round_of_sms_is_full(w):
    """Skinny shapes split; the workspace split's units fit one round of the SMs and doubling the split would
    overflow it (or the space stops it). Where the tiles form one row (or two rows of 64 become one of 128) the
    default sums half that split inside a cluster, whose CTAs fit one round too."""
    config, workspace = cc.default_config(w, H100), workspace_default(w, H100)
    split = workspace["split_k"]
    units = cc.lower(w, workspace, H100).kernels[0].units
    assert split > 1 and units <= 132
    doubled = dict(workspace, split_k=2 * split)
    assert units * 2 > 132 or not cc.get_space(w, H100).is_valid(doubled)
    if gemm_sm90.tiles(w["M"], w["N"], workspace)[0] == 1:
        assert config == gemm_sm90.cluster_split(workspace)
    elif 80 < w["M"] <= 128:
        assert config == gemm_sm90.cluster_split(dict(workspace, bm=128, bn=64, consumers=2, group_m=1))
    else:
        assert config == dict(workspace, split_cluster=False)
    assert cc.lower(w, config, H100).kernels[0].grid_for(132)[0] <= 132


def workspace_default(w, target) -> dict:
    """The default of the space before split_cluster: the workspace split rule's own choice."""
    return gemm_sm90.size_rule_default(w["M"], w["N"], gemm_sm90.TILE_CHOICES, gemm_sm90.TILE_CHOICES, target,
                                       gemm_sm90.space(w, target, cluster_knob=False), batch=gemm_sm90.batch_of(w),
                                       k_blocks=-(-w["K"] // gemm_sm90.K_BLOCK), cluster=1)


@pytest.mark.parametrize("w", [mm(4096, 4096, 4096), mm(1024, 1024, 1024), bmm(16, 512, 512, 512),
                               bmm(8, 1024, 1024, 1024), mm(16, 4096, 256)], ids=lambda w: w.key)
def test_the_default_does_not_split_where_tiles_fill_the_sms_or_k_is_short(w):
    assert cc.default_config(w, H100)["split_k"] == 1


@pytest.mark.parametrize("M", [81, 96, 112, 128])
def test_two_rows_of_64_become_one_row_of_128_whose_split_a_cluster_sums(M):
    """80 < M <= 128 with a split: the same number of tiles as one row of 128 x 64 (two consumer warpgroups of 64
    rows), so the split is summed inside a cluster: one launch, no workspace."""
    w = mm(M, 4096, 4096)
    config, workspace = cc.default_config(w, H100), workspace_default(w, H100)
    assert (workspace["bm"], workspace["bn"], workspace["split_k"]) == (64, 128, 2)
    assert {k: config[k] for k in ("bm", "bn", "consumers", "split_k", "split_cluster", "persistent")} == \
        {"bm": 128, "bn": 64, "consumers": 2, "split_k": 2, "split_cluster": True, "persistent": False}
    assert gemm_sm90.cta_tiles(M, 4096, config) == gemm_sm90.cta_tiles(M, 4096, workspace)
    module = cc.lower(w, config, H100)
    assert len(module.kernels) == 1 and not module.workspaces


@pytest.mark.parametrize("w", [mm(64, 4096, 4096), mm(72, 4096, 4096), mm(80, 4096, 11008), mm(200, 2048, 8192),
                               mm(100, 2048, 8192), mm(128, 2048, 16384), mm(96, 14336, 4096)],
                         ids=lambda w: w.key)
def test_the_one_row_of_128_is_left_where_it_lost(w):
    """At most 80 rows (65-80 lost up to 8 %), more than 128, a split of 4+ whose halves would leave each clustered CTA
    over 32 K blocks (100 x 2048 x 8192 lost 10 %), or no split (a full grid of 64 x 128 tiles beat 128 x 64):
    the default is the rule's as before."""
    config = cc.default_config(w, H100)
    assert config["bm"] == 64 or w["M"] <= 64
    assert not config["split_cluster"] or gemm_sm90.tiles(w["M"], w["N"], config)[0] == 1


def test_one_row_tiles_needs_the_tile_choices():
    config = {"bm": 64, "bn": 128, "consumers": 1, "group_m": 8, "split_k": 2}
    assert gemm_sm90.one_row_tiles(128, config, (64, 128, 256), (64, 128, 256), 64)["bm"] == 128
    assert gemm_sm90.one_row_tiles(128, config, (64, 256), (64, 128, 256), 64) is None  # no 128-row tile
    assert gemm_sm90.one_row_tiles(128, config, (64, 128), (128, 256), 64) is None  # no 64-column tile
    assert gemm_sm90.one_row_tiles(128, dict(config, split_k=4), (64, 128), (64, 128), 64)["bn"] == 64  # 32 each
    assert gemm_sm90.one_row_tiles(128, dict(config, split_k=4), (64, 128), (64, 128), 65) is None  # 33 each


def test_the_split_follows_the_devices_sm_count_not_a_shape_table():
    w = mm(16, 4096, 4096)
    assert workspace_default(w, H100)["split_k"] == 4  # 32 tiles of 64 x 128 on 132 SMs
    assert workspace_default(w, dataclasses.replace(H100, sm_count=66))["split_k"] == 2
    assert workspace_default(w, dataclasses.replace(H100, sm_count=32))["split_k"] == 1
    assert workspace_default(w, dataclasses.replace(H100, sm_count=264))["split_k"] == 8
    # the default sums half of it inside a cluster (at least two K ranges), or does not split
    assert [cc.default_config(w, dataclasses.replace(H100, sm_count=n))["split_k"] for n in (132, 66, 32, 264)] == \
        [2, 2, 1, 4]


def test_split_k_rule_weighs_rounds_against_the_units_fixed_cost():
    """A split that overflows one round only pays when the units' K work outweighs their fixed cost."""
    rule = gemm_sm90.split_k_rule
    anything = lambda k: True  # noqa: E731
    assert rule(32, 64, 132, anything) == 4  # 128 units in one round; 8 would need two
    assert rule(100, 64, 132, anything) == 1  # 200 units need two rounds of half the work plus the overhead
    assert rule(1, 64, 132, anything) == 16
    assert rule(1, 64, 132, lambda k: k <= 2) == 2  # the space has the last word


# ---- batch_matmul dispatch -----------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_batch_matmul_goes_to_hopper_on_sm90a_and_wmma_elsewhere(dtype):
    w = bmm(4, 200, 264, 1032, dtype)
    assert gemm_sm90.applies(w, H100) and "split_k" in cc.get_space(w, H100).names
    module = cc.lower(w, cc.default_config(w, H100), H100)
    assert isinstance(module.kernels[0], OpaqueKernel) and module.kernels[0].name.endswith("_b4")
    for arch in ("sm_80", "sm_90"):
        t = cc.cuda_target(arch)
        assert cc.get_space(w, t).names == gemm_wmma.space(w, t).names
        assert isinstance(cc.lower(w, cc.default_config(w, t), t).kernels[0], cc.ir.PrimFunc)
    f32 = bmm(4, 200, 264, 1032, "float32")
    assert "BM" in cc.default_config(f32, H100)  # SIMT


def test_a_wmma_batch_matmul_head_still_builds_on_sm90a():
    w = bmm(4, 200, 264, 1032)
    old = gemm_wmma.default_config(w, cc.cuda_target("sm_90"))
    module = cc.lower(w, old, H100)
    assert isinstance(module.kernels[0], cc.ir.PrimFunc) and "wmma" in generate_source(module, H100)
    with pytest.raises(cc.ConfigError):
        cc.lower(w, {**old, "split_k": 2}, H100)


def test_a_batch_of_one_is_the_matmul_kernel():
    config = dict(cc.default_config(mm(128, 256, 512), H100), split_k=1, split_cluster=False)
    one = cc.lower(bmm(1, 128, 256, 512), config, H100).kernels[0]
    plain = cc.lower(mm(128, 256, 512), config, H100).kernels[0]
    assert one.source == plain.source and one.name == plain.name


# ---- heads stored before split_k ------------------------------------------------------------------
def test_a_hopper_head_without_split_k_lowers_to_the_kernel_it_always_built():
    w = mm(16, 4096, 4096)
    old = {k: v for k, v in cc.default_config(w, H100).items() if k not in ("split_k", "split_cluster")}
    module = cc.lower(w, old, H100)
    assert len(module.kernels) == 1 and not module.workspaces
    assert module.kernels[0].source == cc.lower(w, dict(old, split_k=1), H100).kernels[0].source
    with pytest.raises(cc.ConfigError):
        cc.lower(w, dict(old, split_k=3), H100)
    with pytest.raises(cc.ConfigError):  # the new space's rules still hold for configs that have the knob
        cc.lower(mm(4096, 4096, 4096), dict(cc.default_config(mm(4096, 4096, 4096), H100), split_k=2), H100)


# ---- features ------------------------------------------------------------------------------------
def test_features_tell_splits_and_batches_apart():
    w = mm(16, 4096, 4096)
    base = workspace_default(w, H100)
    vecs = {k: cc.features(w, dict(base, split_k=k), H100) for k in (1, 2, 4, 8, 16)}
    for k, vec in vecs.items():
        assert np.isfinite(vec).all() and value(vec, "tile.lg_split_k") == np.log2(k)
        assert value(vec, "launch.num_kernels") == (1 if k == 1 else 2)
        assert value(vec, "tile.waves") == pytest.approx(32 * k / 132)
        assert value(vec, "tile.lg_k_steps") == np.log2(64 // k)
    assert value(vecs[4], "mem.global.lg_store_bytes") > value(vecs[1], "mem.global.lg_store_bytes")
    assert value(vecs[4], "ops.lg_mma") == value(vecs[1], "ops.lg_mma")  # the same tensor-core work, cut up
    one, many = (cc.features(bmm(b, 200, 264, 1032), dict(cc.default_config(bmm(b, 200, 264, 1032), H100),
                                                          split_k=1), H100) for b in (1, 8))
    assert value(many, "tile.waves") == pytest.approx(8 * value(one, "tile.waves"))
    assert value(many, "ops.lg_flops") > value(one, "ops.lg_flops")


def test_the_probes_launcher_refuses_split_and_batched_kernels():
    from compiler_core.codegen.sm90_gemm import HopperGemmConfig
    from compiler_core.errors import BuildError
    from compiler_core.runtime.sm90_gemm_launch import HopperGemm

    for cfg in (HopperGemmConfig(split_k=2, out="float32"), HopperGemmConfig(batch=4)):
        with pytest.raises(BuildError, match="one 2-D GEMM"):
            HopperGemm(cfg, "float16", b"")


# ---- split_cluster: the K ranges of a tile sum their partials inside one cluster --------------------------------
@pytest.mark.parametrize("w", [mm(16, 4096, 4096), mm(128, 4096, 4096, "bfloat16"), bmm(3, 200, 264, 1032)],
                         ids=lambda w: w.key)
def test_a_cluster_split_is_one_launch_of_a_cluster_per_tile_without_a_workspace(w):
    config = dict(cc.default_config(w, H100), split_k=2, split_cluster=True, persistent=False, cluster=1)
    assert cc.get_space(w, H100).is_valid(config)
    module = cc.lower(w, config, H100)
    (kernel,) = module.kernels
    assert not module.workspaces and kernel.cluster == 2
    tiles = gemm_sm90.batch_of(w) * -(-w["M"] // config["bm"]) * -(-w["N"] // config["bn"])
    assert kernel.units == tiles and kernel.grid_for(132)[0] == 2 * tiles  # a cluster of two CTAs per tile
    assert "__cluster_dims__(2, 1, 1)" in kernel.source and "reduce_split(acc, smem" in kernel.source
    assert module.args[-1].dtype == w.dtype  # C itself, never float32 partials
    workspace_split = cc.lower(w, dict(config, split_cluster=False, persistent=True), H100)
    assert len(workspace_split.kernels) == 2 and workspace_split.workspaces


def test_the_cluster_split_rules_name_what_they_allow():
    w = mm(16, 4096, 4096)
    space, base = cc.get_space(w, H100), dict(cc.default_config(w, H100), split_cluster=True, persistent=False)
    assert space.is_valid(dict(base, split_k=8)) and not space.is_valid(dict(base, split_k=16))
    assert not space.is_valid(dict(base, split_k=1))
    assert not space.is_valid(dict(base, split_k=4, persistent=True))
    with pytest.raises(cc.ConfigError, match="split_cluster only with split_k in"):
        cc.lower(w, dict(base, split_k=16), H100)


def test_a_head_stored_before_split_cluster_still_sums_in_a_second_kernel():
    w = mm(16, 4096, 4096)
    old = {k: v for k, v in cc.default_config(w, H100).items() if k != "split_cluster"}
    assert old["split_k"] > 1
    module = cc.lower(w, old, H100)
    assert len(module.kernels) == 2 and module.workspaces
    assert module.kernels[0].source == cc.lower(w, dict(old, split_cluster=False), H100).kernels[0].source


def test_features_tell_the_cluster_split_from_the_workspace_split():
    w = mm(16, 4096, 4096)
    base = dict(cc.default_config(w, H100), split_k=4, persistent=False)
    workspace, cluster = (cc.features(w, dict(base, split_cluster=c), H100) for c in (False, True))
    assert value(workspace, "launch.num_kernels") == 2 and value(cluster, "launch.num_kernels") == 1
    assert value(cluster, "mem.global.lg_store_bytes") < value(workspace, "mem.global.lg_store_bytes")
