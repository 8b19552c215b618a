"""The Hopper GEMM's split-K and batched families through the farm's build path (nvcc, no GPU): one config of each
family (split-K with one and two consumer warpgroups, with a cluster; batched with 3-D maps, with a cluster
multicasting 3-D boxes; batched and split together; K ranges summed inside a cluster; float16 and bfloat16)
compiles for sm_90a with ptxas -v, no kernel spills or serialises its wgmma, the split-K sum kernel compiles
beside it, and the launcher packs the workspace where the kernel reads C (C itself for a cluster's split)."""
from __future__ import annotations

import dataclasses
import struct

import pytest

import compiler_core as cc
from compiler_core.codegen import generate_source
from compiler_core.ir import stmt as S
from compiler_core.runtime import cubin_params, nvcc_sm90, tensor_map
from compiler_core.runtime.opaque_launch import OpaqueLaunch
from compiler_core.runtime.sm90_gemm_launch import ARG_KINDS
from tests.nvcc.recording_function import RecordingFunction

pytestmark = pytest.mark.nvcc

H100 = cc.cuda_target("sm_90a", sm_count=132)


def _w(op, dtype, **params):
    return cc.make_workload(op, dict(params, dtype=dtype))


SAMPLE = [  # (workload, config changes from its default): each a family the kernel text renders differently
    (_w("matmul", "float16", M=16, N=4096, K=4096), {}),  # the default: two K ranges in a cluster, one consumer
    (_w("matmul", "bfloat16", M=128, N=4096, K=4096), dict(bm=128, bn=128, consumers=2, group_m=1, split_k=8,
                                                          stages=6, split_cluster=False, persistent=True)),
    (_w("matmul", "float16", M=200, N=1000, K=8192), dict(bm=64, bn=256, stages=4, cluster=2, split_k=4)),
    (_w("batch_matmul", "float16", batch=16, M=512, N=512, K=512), {}),  # batch through 3-D maps
    (_w("batch_matmul", "bfloat16", batch=8, M=1024, N=1024, K=1024), dict(cluster=2)),  # 3-D multicast
    (_w("batch_matmul", "bfloat16", batch=3, M=17, N=40, K=4104), dict(split_k=16, split_cluster=False,
                                                                       persistent=True)),
    (_w("batch_matmul", "float16", batch=2, M=200, N=264, K=1032), dict(bm=64, bn=128, cluster=2, split_k=2)),
    # split_cluster: one launch, the partials summed through distributed shared memory
    (_w("matmul", "float16", M=16, N=4096, K=4096), dict(split_k=8, split_cluster=True, persistent=False)),
    (_w("matmul", "bfloat16", M=128, N=4096, K=4096), dict(bm=128, bn=128, consumers=2, group_m=1, split_k=4,
                                                          stages=6, split_cluster=True, persistent=False)),
    (_w("batch_matmul", "float16", batch=3, M=200, N=264, K=1032), dict(bm=128, bn=64, consumers=2, split_k=2,
                                                                       split_cluster=True, persistent=False)),
]
IDS = [f"{w.op}-{w.dtype}-{'-'.join(f'{k}{v}' for k, v in c.items()) or 'default'}" for w, c in SAMPLE]


def _modules():
    out = []
    for w, changes in SAMPLE:
        config = dict(cc.default_config(w, H100), **changes)
        out.append(cc.lower(w, config, H100))
    return out


@pytest.fixture(scope="module")
def built():
    """(modules, build): every sample's kernels in one translation unit (sum kernels renamed apart)."""
    modules = _modules()
    kernels = []
    for i, m in enumerate(modules):
        kernels += [k if not isinstance(k, S.PrimFunc) else dataclasses.replace(k, name=f"{k.name}_{i}")
                    for k in m.kernels]
    names = [k.name for k in kernels]
    assert len(set(names)) == len(names), names
    return modules, nvcc_sm90.compile_sm90a(generate_source(cc.ir.Module("m", tuple(kernels), (), (), 0), H100))


def test_each_family_is_what_its_config_says():
    for (w, changes), module in zip(SAMPLE, _modules(), strict=True):
        name = module.kernels[0].name
        config = dict(cc.default_config(w, H100), **changes)
        split, in_cluster = config["split_k"], config["split_cluster"]
        assert (f"_sk{split}" in name) == (split > 1) and (len(module.kernels) == 2) == (split > 1 and not in_cluster)
        assert name.endswith(f"_sk{split}c") == in_cluster or "_b" in name
        assert module.kernels[0].cluster == (split if in_cluster else config["cluster"])
        assert ("_b" + str(w.get("batch", 1)) in name) == (w.op == "batch_matmul" and w["batch"] > 1)
    assert any(m.kernels[0].cluster == 2 and "_b" in m.kernels[0].name for m in _modules())
    source = generate_source(_modules()[4], H100)
    assert "tf_tma_load_3d_multicast(" in source and "tf_tma_load_2d(" not in source.split("extern \"C\"")[-1]


@pytest.mark.parametrize("i", range(len(SAMPLE)), ids=IDS)
def test_compiles_for_sm90a_without_spills(i, built):
    modules, build = built
    module = modules[i]
    res = build.kernels[module.kernels[0].name]
    assert not res.spills, res
    assert any(n.startswith(f"{module.name}_splitk_sum_{i}") for n in build.kernels) == (len(module.kernels) == 2)
    assert not any("C7508" in w or "serialized" in w for w in build.warnings), build.warnings


def test_the_workspace_is_packed_where_the_kernel_reads_c(built, monkeypatch):
    modules, build = built
    module = modules[5]  # batched and split: 3-D maps, C is the float32 workspace
    kernel = module.kernels[0]
    params = cubin_params.kernel_params(build.cubin, kernel.name)
    assert [p.offset for p in params] == tensor_map.cuda_param_offsets(ARG_KINDS)
    monkeypatch.setattr(tensor_map, "encode", lambda spec, address: struct.pack("<QQ", address, len(spec.dims))
                        .ljust(128, b"\0"))
    fn = RecordingFunction()
    launch = OpaqueLaunch(fn, kernel, build.cubin, lambda: 132)
    (ws,) = module.workspaces
    a, b, _out = module.args
    launch({a: 0x10000, b: 0x20000, ws: 0x30000})
    ((grid, _block, _stream, buf, _shared),) = fn.calls
    assert struct.unpack_from("<QQ", buf, 0x30) == (0x10000, 3) and struct.unpack_from("<QQ", buf, 0xB0) == (0x20000, 3)
    assert struct.unpack_from("<Qiii", buf, 0x130) == (0x30000, 17, 40, 4104)
    assert grid == (kernel.units, 1, 1) == (3 * 16, 1, 1)  # 3 batch entries x 16 K ranges of one tile


def test_a_cluster_split_packs_c_itself_and_launches_a_cluster_per_tile(built, monkeypatch):
    modules, build = built
    module = modules[9]  # batched, two K ranges summed in each cluster
    kernel = module.kernels[0]
    assert not module.workspaces and kernel.cluster == 2
    params = cubin_params.kernel_params(build.cubin, kernel.name)
    assert [p.offset for p in params] == tensor_map.cuda_param_offsets(ARG_KINDS)
    monkeypatch.setattr(tensor_map, "encode", lambda spec, address: struct.pack("<QQ", address, len(spec.dims))
                        .ljust(128, b"\0"))
    fn = RecordingFunction()
    a, b, out = module.args
    OpaqueLaunch(fn, kernel, build.cubin, lambda: 132)({a: 0x10000, b: 0x20000, out: 0x40000})
    ((grid, _block, _stream, buf, _shared),) = fn.calls
    assert struct.unpack_from("<Qiii", buf, 0x130) == (0x40000, 200, 264, 1032)
    assert grid == (2 * kernel.units, 1, 1) == (2 * 3 * 2 * 5, 1, 1)  # two CTAs for each of 3 x (2 x 5) tiles
