"""The Hopper GEMM template through the farm's build path (nvcc, no GPU): `cc.generate` for a sample of configs
compiles for sm_90a with the CUDA backend's compiler; the parameter offsets the cubin names are where OpaqueLaunch
packs (tensor maps at 0x30 and 0xb0, not where natural packing puts them), maps are encoded once per address tuple
and the launch goes on the given stream; several opaque kernels share one module and nothing spills."""
from __future__ import annotations

import dataclasses
import struct
from concurrent.futures import ThreadPoolExecutor

import pytest

import compiler_core as cc
from compiler_core.backends import backend
from compiler_core.codegen import generate_source
from compiler_core.runtime import cubin_params, nvcc_sm90, tensor_map
from compiler_core.runtime.opaque_launch import OpaqueLaunch
from compiler_core.runtime.sm90_gemm_launch import ARG_KINDS
from tests.nvcc.recording_function import RecordingFunction

pytestmark = pytest.mark.nvcc

H100 = cc.cuda_target("sm_90a", sm_count=132)
BIG = cc.make_workload("matmul", dict(M=4096, N=4096, K=4096, dtype="float16"))
RAGGED = cc.make_workload("matmul", dict(M=136, N=264, K=520, dtype="float16"))
BASE = dict(bm=128, bn=256, stages=4, consumers=2, persistent=True, group_m=8, cluster=1, split_k=1,
            split_cluster=False, stream_k=False, sk_split=0)
SAMPLE = [  # (workload, config): the defaults and one departure per knob family
    (BIG, BASE),
    (RAGGED, cc.default_config(RAGGED, H100)),  # 64 x 128 s6 c1, split-K 2 (9 tiles, 9 K blocks)
    (BIG, dict(BASE, cluster=2)),
    (BIG, dict(BASE, bm=64, bn=128, consumers=1, persistent=False, group_m=1, stages=8)),
    (BIG, dict(BASE, bm=256, bn=128, stages=3)),
    (RAGGED, dict(BASE, bm=128, bn=64, consumers=1, stages=2, group_m=1, persistent=False, cluster=2)),
]
IDS = [f"{w['M']}-{c['bm']}x{c['bn']}s{c['stages']}c{c['consumers']}{'P' if c['persistent'] else 'NP'}cl{c['cluster']}"
       for w, c in SAMPLE]


@pytest.fixture(scope="module")
def built():
    """(kernel, cubin) per sample, compiled as an agent's build pool does (the backend's compile)."""
    modules = [cc.lower(w, c, H100) for w, c in SAMPLE]
    compile_ = backend("cuda").compile
    with ThreadPoolExecutor(max_workers=2) as pool:
        cubins = list(pool.map(lambda m: compile_(generate_source(m, H100), H100), modules))
    return [(m.kernels[0], cubin) for m, cubin in zip(modules, cubins, strict=True)]


def test_the_sample_is_in_the_space():
    for w, c in SAMPLE:
        assert cc.get_space(w, H100).is_valid(c), c


@pytest.mark.parametrize("i", range(len(SAMPLE)), ids=IDS)
def test_params_land_where_the_cubin_reads_them(i, built, monkeypatch):
    kernel, cubin = built[i]
    params = cubin_params.kernel_params(cubin, kernel.name)
    assert [p.offset for p in params] == tensor_map.cuda_param_offsets(ARG_KINDS) == [0x30, 0xB0, 0x130, 0x138,
                                                                                      0x13C, 0x140]
    assert cubin_params.param_space_bytes(params) == 0x144

    encoded = []

    def fake_encode(spec, address):  # no driver here: a map that names its address and box
        encoded.append(address)
        return struct.pack("<QQQ", address, *spec.box[:2]).ljust(128, b"\x5a")

    monkeypatch.setattr(tensor_map, "encode", fake_encode)
    fn = RecordingFunction()
    launch = OpaqueLaunch(fn, kernel, cubin, lambda: 132)
    assert fn.formats == [["324s"]] and launch.offsets == [p.offset for p in params]
    a, b, c = kernel.bound_buffers
    addresses = {a: 0x7F0000000000, b: 0x7F0000100000, c: 0x7F0000200000}
    launch(addresses, stream="s1")
    launch(addresses, stream="s2")
    assert encoded == [addresses[a], addresses[b]]  # encoded once for the pair of timed launches
    (grid, block, stream, buf, smem), second = fn.calls
    assert second[2] == "s2" and second[3] is buf and stream == "s1"
    assert grid == kernel.grid and block == kernel.block and smem == kernel.dynamic_shared_bytes
    box_rows, box_cols = kernel.tensor_maps[0].box
    assert buf[0x30:0x48] == struct.pack("<QQQ", addresses[a], box_cols, box_rows)
    assert buf[0xB0:0xB8] == struct.pack("<Q", addresses[b])
    m, n, k = (p.value for p in kernel.params[3:])
    assert struct.unpack_from("<Qiii", buf, 0x130) == (addresses[c], m, n, k)
    launch({a: 0x7F0000300000, b: addresses[b], c: addresses[c]})
    assert encoded[2:] == [0x7F0000300000, addresses[b]]  # new addresses: encoded again


def test_persistent_grid_asks_the_device_only_when_the_target_did_not_say(built):
    kernel, cubin = built[0]
    asked = []

    def device_sms() -> int:
        asked.append(1)
        return 114

    assert OpaqueLaunch(RecordingFunction(), kernel, cubin, device_sms).grid == (132, 1, 1) and not asked
    unknown = dataclasses.replace(kernel, sm_count=0)
    assert OpaqueLaunch(RecordingFunction(), unknown, cubin, device_sms).grid == (114, 1, 1) and asked


def test_several_opaque_kernels_share_a_module_and_none_spills():
    """One translation unit of three kernels (prelude blocks once, each kernel in its namespace), built with
    ptxas -v: every entry is there, without spills or a serialised wgmma."""
    kernels = tuple(cc.lower(w, c, H100).kernels[0] for w, c in (SAMPLE[0], SAMPLE[2], SAMPLE[3]))
    source = generate_source(cc.ir.Module("m", kernels, (), (), 0), H100)
    build = nvcc_sm90.compile_sm90a(source)
    assert set(build.kernels) == {k.name for k in kernels}
    for name, res in build.kernels.items():
        assert not res.spills, (name, res)
    assert not any("C7508" in w or "serialized" in w for w in build.warnings), build.warnings


def test_cuda_module_wires_the_opaque_launch(built, monkeypatch):
    """CudaModule with pycuda replaced: the kernel opts in to its dynamic shared memory, and launch_device packs the
    op-order addresses into one parameter buffer launched on the caller's stream."""
    import types

    from compiler_core.runtime import cuda_runtime

    kernel, cubin = built[0]
    fn = RecordingFunction()
    fn.attributes = {}
    fn.set_attribute = lambda attr, value: fn.attributes.__setitem__(attr, value)
    fake_drv = types.SimpleNamespace(
        module_from_buffer=lambda c: types.SimpleNamespace(get_function=lambda name: fn),
        function_attribute=types.SimpleNamespace(MAX_DYNAMIC_SHARED_SIZE_BYTES="max_dyn"))
    monkeypatch.setattr(cuda_runtime, "driver", lambda device=0: fake_drv)
    monkeypatch.setattr(tensor_map, "encode", lambda spec, address: struct.pack("<Q", address).ljust(128, b"\0"))
    module = cc.lower(*SAMPLE[0], H100)
    runtime = cuda_runtime.CudaModule("", list(module.kernels), cubin=cubin, module=module)
    assert fn.attributes == {"max_dyn": kernel.dynamic_shared_bytes}
    runtime.launch_device([0x10000, 0x20000, 0x30000], [], stream="s")
    ((grid, block, stream, buf, smem),) = fn.calls
    assert (grid, block, stream, smem) == ((132, 1, 1), (384, 1, 1), "s", kernel.dynamic_shared_bytes)
    assert struct.unpack_from("<Q", buf, 0x30)[0] == 0x10000 and struct.unpack_from("<Q", buf, 0xB0)[0] == 0x20000
    assert struct.unpack_from("<Qiii", buf, 0x130) == (0x30000, 4096, 4096, 4096)
