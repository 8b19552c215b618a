"""A stream-K Hopper GEMM (codegen/sm90_stream_k.py) lowered by the farm's path compiles for sm_90a without spills,
takes its workspace slots and flags at the offsets the cubin names, and the Module keeps the flags zero (zeroed
where allocated, never per run) while the partials are never zeroed at all."""
from __future__ import annotations

import pytest

import compiler_core as cc
from compiler_core.codegen import generate_source
from compiler_core.runtime import cubin_params, nvcc_sm90, tensor_map
from compiler_core.schedules.cuda import gemm_sm90

pytestmark = pytest.mark.nvcc

H100 = cc.cuda_target("sm_90a", sm_count=132)
UNEVEN = cc.make_workload("matmul", dict(M=2304, N=2048, K=2048, dtype="bfloat16"))  # 198 WIDE tiles: 1.5 rounds


@pytest.mark.parametrize("tile", [gemm_sm90.LARGE, gemm_sm90.WIDE, gemm_sm90.MID, gemm_sm90.SMALL],
                         ids=["large", "wide", "mid", "small"])
def test_stream_k_module_compiles_and_lays_out_its_workspaces(tile):
    config = dict(cc.default_config(UNEVEN, H100), **tile, stream_k=True, sk_split=0)  # the default halves here
    assert cc.get_space(UNEVEN, H100).is_valid(config)
    module = cc.lower(UNEVEN, config, H100)
    partials, flags = module.workspaces
    assert module.kept_zero == (flags,) and module.zeroed_per_run() == ()
    assert module.zeroed_once(flags) and not module.zeroed_once(partials)
    assert partials.shape == (132 * tile["bm"] * tile["bn"],) and flags.shape == (132 * tile["consumers"],)
    kernel = module.kernels[0]
    assert kernel.name.endswith("_sk") and kernel.grid_for(132) == (132, 1, 1)
    build = nvcc_sm90.compile_sm90a(generate_source(module, H100))
    res = build.kernels[kernel.name]
    assert not res.spills, res
    params = cubin_params.kernel_params(build.cubin, kernel.name)
    offsets = tensor_map.check_param_layout(kernel.param_kinds, params)
    assert kernel.param_kinds[-3:] == ("pointer", "pointer", "int32") and len(offsets) == 9


def test_stream_k_is_only_where_a_round_is_partly_filled():
    space = cc.get_space(cc.make_workload("matmul", dict(M=1408, N=3072, K=1024, dtype="float16")), H100)
    base = dict(bm=128, bn=256, stages=4, consumers=2, persistent=True, group_m=8, cluster=1, split_k=1,
                split_cluster=False, sk_split=0)
    assert not space.is_valid(dict(base, stream_k=True))  # 11 x 12 = 132 tiles: whole rounds
    assert space.is_valid(dict(base, bn=192, stages=5, stream_k=True))  # 11 x 16 = 176: one round and a third
    assert not space.is_valid(dict(base, bn=192, stages=5, stream_k=True, persistent=False))
    assert not space.is_valid(dict(base, bn=192, stages=5, stream_k=True, cluster=2))
    assert space.is_valid(dict(base, bn=192, stages=5, stream_k=True, sk_split=2))
    assert not space.is_valid(dict(base, bn=192, stages=5, sk_split=2))  # K-major pieces are a form of stream-K


def test_k_major_pieces_size_their_workspace_by_the_partial_round():
    """198 WIDE tiles on 132 SMs: 66 in the partial round, each cut into 2 K ranges, the first to a slot."""
    config = dict(cc.default_config(UNEVEN, H100), stream_k=True, sk_split=2)
    module = cc.lower(UNEVEN, config, H100)
    partials, flags = module.workspaces
    assert partials.shape == (66 * 128 * 192,) and flags.shape == (66 * 2,)
    kernel = module.kernels[0]
    assert "constexpr int SK_SPLIT = 2;" in kernel.source and kernel.grid_for(132) == (132, 1, 1)
    build = nvcc_sm90.compile_sm90a(generate_source(module, H100))
    assert not build.kernels[kernel.name].spills
    # a target that leaves its SMs out: room for the largest partial round the nominal grid can leave
    unknown = cc.cuda_target("sm_90a")
    assert cc.lower(UNEVEN, config, unknown).workspaces[0].shape == (131 * 128 * 192,)
