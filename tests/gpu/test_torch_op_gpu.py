"""tunefarm_client.torch on a GPU: CUDA kernels as custom ops on CUDA tensors, on the current stream (a side
stream, and inside a CUDA graph capture, which fails for launches on any other stream), under torch.compile,
with torch-allocated workspaces (split_k), out=, and DLPack from CuPy. Marked gpu: run it on the device machine."""
from __future__ import annotations

import random

import pytest

import compiler_core as cc

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu

MATMUL_F16 = {"M": 256, "N": 192, "K": 128, "dtype": "float16"}


@pytest.fixture(scope="module")
def target():
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no CUDA device")
    from compiler_core.runtime.cuda_runtime import device_target

    return device_target()


def _op(op: str, params: dict, target, config: dict | None = None):
    from tunefarm_client.torch import custom_op

    workload = cc.make_workload(op, params)
    return custom_op(cc.build(workload, config or cc.default_config(workload, target), target))


@pytest.fixture(scope="module")
def matmul(target):
    return _op("matmul", MATMUL_F16, target)


def _ab(dtype=torch.float16, m=256, n=192, k=128):
    g = torch.Generator(device="cuda").manual_seed(0)
    return (torch.randn(m, k, device="cuda", dtype=dtype, generator=g),
            torch.randn(k, n, device="cuda", dtype=dtype, generator=g))


def test_fp16_matmul_on_a_side_stream_matches_torch(matmul):
    a, b = _ab()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        c = matmul(a, b)
        expected = torch.matmul(a, b)
    side.synchronize()
    assert c.device == a.device and c.dtype == torch.float16 and c.shape == (256, 192)
    torch.testing.assert_close(c.float(), expected.float(), rtol=2e-2, atol=5e-2)


def test_launches_are_captured_in_a_cuda_graph(matmul):
    """Capture fails for work on the legacy stream: a captured op proves it launched on the current stream."""
    a, b = _ab()
    out = torch.empty(256, 192, device="cuda", dtype=torch.float16)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        matmul(a, b, out=out)  # warm-up outside the capture (loads the module)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        matmul(a, b, out=out)
    out.zero_()
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(out.float(), (a @ b).float(), rtol=2e-2, atol=5e-2)


def test_torch_compile_fullgraph_on_cuda(matmul, target):
    softmax = _op("softmax", {"rows": 256, "cols": 192, "dtype": "float16"}, target)
    torch._dynamo.reset()
    compiled = torch.compile(lambda x, y: softmax(matmul(x, y) * 0.1), fullgraph=True)
    a, b = _ab()
    expected = torch.softmax((a @ b).float() * 0.1, dim=-1)
    for _ in range(2):
        torch.testing.assert_close(compiled(a, b).float(), expected, rtol=2e-2, atol=2e-3)


def test_workspaces_are_torch_allocations_zeroed_per_call(target):
    workload = cc.make_workload("matmul", {"M": 128, "N": 128, "K": 512})
    space = cc.get_space(workload, target)
    configs = [c for c in space.sample(random.Random(0), 256) if c.get("split_k", 1) > 1]
    if not configs:
        pytest.skip("no split_k config in this target's matmul space")
    op = _op("matmul", {"M": 128, "N": 128, "K": 512}, target, configs[0])
    assert op.kernel.module.workspaces
    a, b = _ab(torch.float32, 128, 128, 512)
    for _ in range(3):  # stale partial sums would accumulate if a workspace were reused unzeroed
        torch.testing.assert_close(op(a, b), a @ b, rtol=1e-3, atol=1e-2)


def test_wrong_device_and_dtype_are_named(matmul):
    a, b = _ab()
    with pytest.raises(ValueError, match=r"input A: expected \(256, 128\) float16 on cuda, got .* on cpu"):
        matmul(a.cpu(), b.cpu())
    with pytest.raises(ValueError, match=r"input B: expected \(128, 192\) float16 on cuda, got .* float32"):
        matmul(a, b.float())


def test_dlpack_from_cupy(matmul):
    cupy = pytest.importorskip("cupy")
    from tunefarm_client.torch import run_dlpack

    a, b = _ab()
    ca, cb = cupy.from_dlpack(a), cupy.from_dlpack(b)
    out = cupy.empty((256, 192), dtype=cupy.float16)
    assert run_dlpack(matmul, ca, cb, out=out) is out
    torch.testing.assert_close(torch.from_dlpack(out).float(), (a @ b).float(), rtol=2e-2, atol=5e-2)


@pytest.mark.parametrize("dtype, tolerance", [("bfloat16", 2e-2), ("float32", 1e-4)])
def test_attention_default_matches_sdpa_and_is_captured_in_a_cuda_graph(target, dtype, tolerance):
    """The attention default as a custom op (on Hopper, bfloat16's the wgmma engine: TMA maps encoded from each
    call's tensors; float32's the tiled SIMT engine, over 48 KiB of dynamic shared memory): close to PyTorch's
    scaled_dot_product_attention, on fresh tensors each call, and inside a CUDA graph."""
    # 48 heads x 3 query tiles fill 132 SMs: the wgmma default's two consumers taking turns
    params = {"heads": 48, "seq_q": 300, "seq_kv": 333, "head_dim": 128, "causal": 1, "dtype": dtype}
    attention = _op("attention", params, target)
    g = torch.Generator(device="cuda").manual_seed(1)
    torch_dtype = getattr(torch, dtype)

    def qkv():
        return [torch.randn(params["heads"], n, 128, device="cuda", dtype=torch_dtype, generator=g)
                for n in (300, 333, 333)]

    def reference(q, k, v):
        return torch.nn.functional.scaled_dot_product_attention(q[None].float(), k[None].float(), v[None].float(),
                                                                is_causal=True)[0]

    for _ in range(2):  # new tensors, new addresses: the maps follow them
        q, k, v = qkv()
        assert (attention(q, k, v).float() - reference(q, k, v)).abs().max().item() < tolerance
    q, k, v = qkv()
    out = torch.empty_like(q)
    attention(q, k, v, out=out)  # warm-up outside the capture (loads the module)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        attention(q, k, v, out=out)
    out.zero_()
    graph.replay()
    torch.cuda.synchronize()
    assert (out.float() - reference(q, k, v)).abs().max().item() < tolerance
