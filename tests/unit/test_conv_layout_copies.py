"""The half conv2d's layout copies on the tensor-core paths (schedules/cuda/conv2d.py `nhwc_copies`): a transpose
whose inner extent is 1 is left out and the op's buffer read in place, narrow ones (below a warp) move whole rows,
and a pointwise conv whose images TMA can step over runs as one batched GEMM launch on the NCHW tensors. The GPU
tier (tests/gpu/test_conv_sm90_gpu.py, test_conv_tensor_core_gpu.py) checks the numbers."""
from __future__ import annotations

import compiler_core as cc
from compiler_core.ir.opaque import OpaqueKernel, TensorMapParam
from compiler_core.schedules.cuda import conv2d_sm90, transpose

H100 = cc.cuda_target("sm_90a", sm_count=132)
A100 = cc.cuda_target("sm_80", sm_count=108)


def conv(N=2, C=64, H=7, W=7, K=128, R=3, S=3, stride=1, pad=1, dtype="float16"):
    return cc.make_workload("conv2d", dict(N=N, C=C, H=H, W=W, K=K, R=R, S=S, stride=stride, pad=pad, dtype=dtype))


def lowered(w, target=H100):
    return cc.lower(w, cc.default_config(w, target), target)


def names(module) -> list[str]:
    return [k.name for k in module.kernels]


def test_a_3x3_conv_copies_x_and_its_filter_the_filter_through_the_narrow_transpose():
    module = lowered(conv())
    assert names(module)[:2] == ["conv2d_x_nhwc", "conv2d_w_krsc"] and len(module.workspaces) == 2
    x_copy, w_copy = module.kernels[:2]
    assert w_copy.block[0] == transpose.NARROW_THREADS  # 9 taps: below a warp
    assert x_copy.block != w_copy.block  # 49 pixels: the square tiles


def test_a_1x1_filter_is_read_in_place():
    module = lowered(conv(R=1, S=1, pad=0))  # 7 x 7 images: 98-byte rows, no pointwise GEMM
    assert names(module)[0] == "conv2d_x_nhwc" and len(module.kernels) == 2
    assert [b.name for b in module.workspaces] == ["ws_X_nhwc"]
    maps = [p for p in module.kernels[-1].params if isinstance(p, TensorMapParam)]
    assert maps[0].buffer.name == "in_Wt"


def test_1x1_images_need_no_copy_at_all():
    module = lowered(conv(H=1, W=1, R=1, S=1, pad=0))
    assert len(module.kernels) == 1 and module.workspaces == ()


def test_a_pointwise_conv_is_one_batched_gemm_with_one_filter_for_every_image():
    w = conv(N=4, C=256, H=28, W=28, K=512, R=1, S=1, pad=0)
    assert conv2d_sm90.pointwise(w)
    module = lowered(w)
    [kernel] = module.kernels
    assert isinstance(kernel, OpaqueKernel) and module.workspaces == ()
    assert kernel.name.startswith("tf_sm90_gemm_") and kernel.name.endswith("_b4_a2")
    a_map, b_map = (p for p in kernel.params if isinstance(p, TensorMapParam))
    assert a_map.buffer.name == "in_Wt" and a_map.shape == (512, 256)
    assert b_map.buffer.name == "in_X" and b_map.spec.dims == (28 * 28, 256, 4)  # innermost first: pixels, C, image
    assert "tf_tma_load_2d(a, tm_a" in kernel.source and "tf_tma_load_3d(b, tm_b" in kernel.source


def test_a_pointwise_conv_of_one_image_is_a_plain_gemm_with_2d_maps():
    """The kernel's loads are 2-D without a batch: a 3-D map under them is an illegal instruction on the GPU."""
    [kernel] = lowered(conv(N=1, C=256, H=28, W=28, K=128, R=1, S=1, pad=0)).kernels
    b_map = [p for p in kernel.params if isinstance(p, TensorMapParam)][1]
    assert b_map.spec.dims == (28 * 28, 256) and "tf_tma_load_3d" not in kernel.source


def test_only_stride_1_1x1_convs_with_aligned_images_are_pointwise():
    assert conv2d_sm90.pointwise(conv(H=4, W=6, R=1, S=1, pad=0))
    assert not conv2d_sm90.pointwise(conv(H=14, W=14, R=1, S=1, pad=0))  # 392-byte image rows
    assert not conv2d_sm90.pointwise(conv(H=8, W=8, R=1, S=1, pad=0, stride=2))
    assert not conv2d_sm90.pointwise(conv(H=8, W=8))


def test_the_default_of_a_pointwise_conv_counts_its_tiles_per_image():
    """64 images of 8 x 8 pixels: one 64-column tile per image, not 64 x 64 / 256 shared ones."""
    config = cc.default_config(conv(N=64, C=64, H=8, W=8, K=256, R=1, S=1, pad=0), H100)
    assert config["bn"] == 64


def test_the_wmma_path_reads_a_1x1_filter_in_place_too():
    module = lowered(conv(R=1, S=1, pad=0), A100)
    assert "conv2d_w_krsc" not in names(module) and [b.name for b in module.workspaces] == ["ws_X_nhwc"]
