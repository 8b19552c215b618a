"""Hopper conv2d (TMA im2col + wgmma) through the farm's build path, no GPU: every config of tests/conv_sm90_cases
on a sample of its shapes compiles for sm_90a with ptxas -v and nothing spills; the module holds the two layout
copies and the conv kernel; the launcher packs both maps and the output where the cubin reads them, the im2col
map with the geometry and the filter map with its 3-D box."""
from __future__ import annotations

import struct

import pytest

import compiler_core as cc
from compiler_core.codegen import generate_source
from compiler_core.runtime import cubin_params, nvcc_sm90, tensor_map
from compiler_core.runtime.opaque_launch import OpaqueLaunch
from compiler_core.runtime.tensor_map import Im2colMap, TiledMap
from tests.conv_sm90_cases import LAYERS, SHAPES, configs
from tests.nvcc.recording_function import RecordingFunction

pytestmark = pytest.mark.nvcc

H100 = cc.cuda_target("sm_90a", sm_count=132)
SAMPLE = [LAYERS[0], SHAPES[0], SHAPES[3], SHAPES[9], LAYERS[1]]  # fp16 layer, stride 2, 7x7 bf16, 3x1, bf16 layer


@pytest.fixture(scope="module")
def built():
    """(module, build) per sampled workload: all its configs' kernels in one translation unit."""
    out = []
    for w in SAMPLE:
        modules = [cc.lower(w, c, H100) for c in configs(w, H100)]
        kernels = tuple(m.kernels[-1] for m in modules)
        source = generate_source(cc.ir.Module("m", kernels, (), (), 0), H100)
        out.append((modules, nvcc_sm90.compile_sm90a(source)))
    return out


@pytest.mark.parametrize("i", range(len(SAMPLE)), ids=[w.key for w in SAMPLE])
def test_every_config_compiles_without_spills(i, built):
    modules, build = built[i]
    names = {m.kernels[-1].name for m in modules}
    assert names <= set(build.kernels)
    for name in names:
        assert not build.kernels[name].spills, (name, build.kernels[name])


def test_the_module_is_one_launch_of_both_layout_copies_then_the_conv_kernel():
    w = LAYERS[0]
    module = cc.lower(w, cc.default_config(w, H100), H100)
    names = [k.name for k in module.kernels]
    assert names == ["conv2d_nhwc_krsc", names[1]] and names[1].startswith("tf_sm90_conv_f16")
    assert module.overwrites_workspaces and [b.name for b in module.workspaces] == ["ws_X_nhwc", "ws_Wt_krsc"]


def test_maps_and_output_are_packed_where_the_cubin_reads_them(monkeypatch):
    w = SHAPES[0]  # N=2 C=8 H=9 W=11 K=5 3x3 stride 2 pad 1
    module = cc.lower(w, cc.default_config(w, H100), H100)
    kernel = module.kernels[-1]
    build = nvcc_sm90.compile_sm90a(generate_source(cc.ir.Module("m", (kernel,), (), (), 0), H100))
    filt, im2col = (tensor_map.spec_of(p) for p in kernel.tensor_maps)
    assert isinstance(filt, TiledMap) and filt.dims == (8, 9, 5) and filt.box == (64, 1, kernel.profile.tile[0])
    assert isinstance(im2col, Im2colMap) and im2col.dims == (8, 11, 9, 2) and im2col.strides == (16, 176, 1584)
    assert im2col.lower == (-1, -1) and im2col.upper == (-1, -1) and im2col.element_strides == (1, 2, 2, 1)
    assert (im2col.channels, im2col.pixels) == (64, kernel.profile.tile[1])

    encoded = []
    monkeypatch.setattr(tensor_map, "encode", lambda spec, address: encoded.append((type(spec), address))
                        or struct.pack("<Q", address).ljust(128, b"\x5a"))
    params = cubin_params.kernel_params(build.cubin, kernel.name)
    fn = RecordingFunction()
    launch = OpaqueLaunch(fn, kernel, build.cubin, lambda: 132)
    wr, xt, y = kernel.bound_buffers
    addresses = {wr: 0x7F0000000000, xt: 0x7F0000100000, y: 0x7F0000200000}
    launch(addresses)
    assert encoded == [(TiledMap, addresses[wr]), (Im2colMap, addresses[xt])]
    buf = fn.calls[0][3]
    assert [p.offset for p in params][:3] == [0x30, 0xB0, 0x130]
    assert struct.unpack_from("<Q", buf, 0x30)[0] == addresses[wr] and struct.unpack_from("<Q", buf, 0xB0)[0] == \
        addresses[xt]
    M, N, K = (p.value for p in kernel.params[3:])
    assert struct.unpack_from("<Qiii", buf, 0x130) == (addresses[y], 5, 2 * 5 * 6, 9 * 64)
    assert (M, N, K) == (5, 60, 576)
