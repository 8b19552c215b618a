"""The half conv2d's layout copies on the tensor-core paths (schedules/cuda/conv2d.py `nhwc_copies`): a transpose
whose inner extent is 1 is left out and the op's buffer read in place, narrow ones (below a warp) move whole rows,
and a pointwise conv whose images TMA can step over runs as one batched GEMM launch on the NCHW tensors. The GPU
tier (tests/gpu/test_conv_sm90_gpu.py, test_conv_tensor_core_gpu.py) checks the numbers."""
from __future__ import annotations

import numpy as np
import pytest

import compiler_core as cc
from compiler_core.codegen import generate_source
from compiler_core.ir import stmt as S
from compiler_core.ir.opaque import OpaqueKernel, TensorMapParam
from compiler_core.schedules.cuda import conv2d_sm90, transpose
from compiler_core.schedules.cuda.conv2d import LAYOUT_TRANSPOSE
from tests.ir_blocks import run_blocks

H100 = cc.cuda_target("sm_90a", sm_count=132)
A100 = cc.cuda_target("sm_80", sm_count=108)


def conv(N=2, C=64, H=7, W=7, K=128, R=3, S=3, stride=1, pad=1, dtype="float16"):
    return cc.make_workload("conv2d", dict(N=N, C=C, H=H, W=W, K=K, R=R, S=S, stride=stride, pad=pad, dtype=dtype))


def lowered(w, target=H100):
    return cc.lower(w, cc.default_config(w, target), target)


def names(module) -> list[str]:
    return [k.name for k in module.kernels]


def test_a_3x3_conv_copies_x_and_its_filter_in_one_launch_the_filter_through_the_narrow_transpose():
    module = lowered(conv())
    assert names(module)[0] == "conv2d_nhwc_krsc" and len(module.kernels) == 2 and len(module.workspaces) == 2
    copies = module.kernels[0]
    assert [b.name for b in copies.params] == ["in_X", "in_Wt", "ws_X_nhwc", "ws_Wt_krsc"]
    source = generate_source(module, H100)
    assert "rows_tile" in source and "tile[" in source  # 9 taps: narrow rows; 49 pixels: square tiles


def test_the_combined_copies_move_every_element_where_the_two_transposes_would():
    """Runs the fused copy kernel's IR block by block in numpy (its index arithmetic), for a 3 x 3 filter (narrow)
    and an image of 49 pixels (square tiles, ragged), against numpy's transposes."""
    w = conv(N=2, C=40, H=7, W=7, K=24)
    copies = lowered(w).kernels[0]
    x = np.arange(2 * 40 * 49, dtype=np.float64)
    f = np.arange(24 * 40 * 9, dtype=np.float64) + 0.5
    out = run_blocks(copies, {"in_X": x, "in_Wt": f}, {"ws_X_nhwc": x.size, "ws_Wt_krsc": f.size})
    assert np.array_equal(out["ws_X_nhwc"], x.reshape(2, 40, 49).transpose(0, 2, 1).ravel())
    assert np.array_equal(out["ws_Wt_krsc"], f.reshape(24, 40, 9).transpose(0, 2, 1).ravel())


@pytest.mark.parametrize("shape", [(3, 40, 9), (2, 300, 7), (1, 5, 1), (4, 70, 49), (2, 33, 64), (1, 1, 40)],
                         ids=str)
def test_each_transpose_of_a_layout_change_moves_every_element(shape):
    """(batch, rows, cols): narrow ones below 32 columns (a block's rows past the end), square ones ragged."""
    X, Y = S.Buffer("in_X", "float16", (int(np.prod(shape)),)), S.Buffer("out_Y", "float16", (int(np.prod(shape)),))
    x = np.arange(np.prod(shape), dtype=np.float64)
    out = run_blocks(transpose.layout_transpose("t", X, Y, shape, LAYOUT_TRANSPOSE), {"in_X": x},
                     {"out_Y": x.size})["out_Y"]
    assert np.array_equal(out, x.reshape(shape).transpose(0, 2, 1).ravel())


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


@pytest.mark.parametrize("hw, by_element", [(7, True), (13, True), (14, True), (28, False)])
def test_the_epilogue_writes_element_rows_where_an_images_runs_are_shorter_than_a_vector(hw, by_element):
    """NCHW runs stay inside an image's P*Q outputs: 49 and 169 leave single elements, 196 runs of 4 (16-byte
    segments would scatter 2- or 8-byte stores); 784 takes whole 16-byte vectors."""
    module = lowered(conv(N=4, C=64, H=hw, W=hw, K=128))
    source = module.kernels[-1].source
    assert ("if (row >= M) break;  // warp-uniform" in source) is by_element
    assert ("store_run(dst, from)" in source) is not by_element
