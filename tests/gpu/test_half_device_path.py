"""The agent's GPU data path for the half dtypes (run on the device machine): raw-byte transfers of ml_dtypes'
bfloat16 (which refuses the buffer protocol), the on-device checker's float16 and bfloat16 kernels, CudaBench's
verify on both paths, and PyTorch's bfloat16 reference and its elementwise chains on the device."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import compiler_core as cc
from compiler_core.dtypes import numpy_dtype

pytestmark = pytest.mark.gpu
HALVES = ("float16", "bfloat16")


@pytest.fixture(scope="module")
def drv():
    from compiler_core.runtime.cuda_runtime import driver

    return driver()


@pytest.mark.parametrize("dtype", HALVES)
def test_upload_and_download_move_every_bit(drv, dtype):
    from device_agent.device_check import download, upload

    bits = np.arange(1 << 16, dtype=np.uint16).reshape(256, 256)
    host = bits.view(numpy_dtype(dtype))
    back = download(drv, upload(drv, host), host.shape, dtype)
    assert back.dtype == numpy_dtype(dtype) and np.array_equal(back.view(np.uint16), bits)


@pytest.mark.parametrize("dtype", HALVES)
def test_device_checker_counts_wrong_half_elements(drv, dtype):
    from compiler_core.runtime.cuda_runtime import device_arch
    from device_agent.device_check import DeviceChecker, upload

    checker = DeviceChecker(drv, device_arch())
    assert checker.supports(dtype)
    w = cc.make_workload("softmax", rows=33, cols=1001, dtype=dtype)
    (x,) = cc.random_inputs(w, 1)
    expected = cc.expect(w, [x])
    (ref_tol,) = checker.upload(expected, [x.shape])
    good = expected.outputs[0].astype(numpy_dtype(dtype))
    assert checker.check(upload(drv, good), dtype, good.size, ref_tol)[0] == 0
    bad = good.copy()
    bad[3, 7] = bad[3, 7] * 2 + 1
    bad[5, 9] = np.nan
    assert checker.check(upload(drv, bad), dtype, bad.size, ref_tol)[0] == 2


@pytest.mark.parametrize("dtype", HALVES)
@pytest.mark.parametrize("op, params", [("layernorm", dict(rows=37, cols=203)),
                                        ("matmul", dict(M=67, N=131, K=45)),
                                        ("conv2d", dict(N=2, C=3, H=9, W=11, K=5, R=3, S=3, stride=2, pad=1))])
def test_cuda_bench_verifies_half_kernels_on_device_and_host(tmp_path, op, params, dtype):
    from device_agent.benches import CudaBench
    from device_agent.workload_data import WorkloadCache

    bench = CudaBench(0, str(tmp_path))
    w = cc.make_workload(op, dict(params, dtype=dtype))
    data = WorkloadCache(tmp_path / "data").get(w, 0)
    kernel = bench.build(w, cc.default_config(w, bench.target))
    assert bench.verify(kernel, data).ok
    checker, bench.checker = bench.checker, None  # the host path: outputs downloaded as raw bytes
    assert bench.verify(kernel, data).ok
    bench.checker = checker
    again = WorkloadCache(tmp_path / "data").get(w, 0)  # inputs read back from the .npz cache
    assert all(a.dtype == numpy_dtype(dtype) for s in again.sets for a in s.inputs)
    bench.release(data)


@pytest.mark.parametrize("op, params", [("matmul", dict(M=64, N=48, K=32)), ("softmax", dict(rows=8, cols=100)),
                                        ("layernorm", dict(rows=8, cols=100)),
                                        ("elementwise", dict(rows=8, cols=100, expr="gelu(x*w+b)-exp(2)*y",
                                                             vectors="w,b"))])
def test_torch_reference_runs_on_bfloat16_inputs(drv, op, params):
    torch = pytest.importorskip("torch")
    from device_agent.baselines import cuda_baseline, to_torch

    w = cc.make_workload(op, dict(params, dtype="bfloat16"))
    inputs = cc.random_inputs(w, 0)
    x = to_torch(torch, inputs[0])
    assert x.dtype == torch.bfloat16
    assert np.array_equal(x.view(torch.int16).numpy().view(np.uint16), inputs[0].view(np.uint16))
    baseline = cuda_baseline(w, inputs)
    assert baseline is not None
    stream = drv.Stream()
    baseline.run(stream)
    stream.synchronize()
    assert inputs[0].dtype == ml_dtypes.bfloat16


@pytest.mark.parametrize("dtype", ("float32", *HALVES))
def test_torch_reference_of_a_chain_on_the_device_matches_the_op(dtype):
    torch = pytest.importorskip("torch")
    from device_agent.baselines import to_torch, torch_op

    w = cc.make_workload("elementwise", {"rows": 33, "cols": 65, "vectors": "w,b", "dtype": dtype,
                                         "expr": "max(x,0.5)*gelu(x*w+b)-min(w,1)/rsqrt(abs(b)+1)+exp(2)*erf(x)"})
    inputs = cc.random_inputs(w, seed=3)
    got = torch_op(w, torch, [to_torch(torch, a).cuda() for a in inputs])()
    torch.cuda.synchronize()
    got = got.float().cpu().numpy()
    if dtype == "float32":  # eager half chains round after every operation: only float32 is the op's semantics
        assert cc.verify(w, [got], cc.expect(w, inputs)).ok
    else:  # near the float64 reference within a few of the dtype's steps per operation
        step = float(np.finfo(np.float16).eps) if dtype == "float16" else 2.0 ** -7
        ref = cc.reference(w, inputs)[0]
        assert np.allclose(got, ref, rtol=16 * step, atol=16 * step), np.max(np.abs(got - ref))
