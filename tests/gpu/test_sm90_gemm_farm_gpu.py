"""The Hopper GEMM template built through the farm's path runs exactly on an sm_90a GPU: `cc.build` then
`kernel(A, B, C)` on host arrays for ragged and large shapes and a sample of each one's space (outputs poisoned
with NaN first, so an element no CTA writes fails), `launch_device` on pycuda allocations and a stream (twice, on
two outputs: the packed parameters follow the addresses), and the agent's CudaBench verify + timed path.
Marked gpu: skipped without CUDA and pycuda, and on a device that is not sm_90a."""
from __future__ import annotations

import random

import numpy as np
import pytest

import compiler_core as cc
from compiler_core.ir.opaque import OpaqueKernel
from tests.gpu.reference_runs import built_kernels, verified_failures

pytestmark = pytest.mark.gpu

SAMPLES = 5  # random configs of each shape's space, besides the default and the variants below
SHAPES = [(136, 264, 520), (1000, 1000, 1000), (64, 64, 64), (16, 64, 8), (1001, 72, 8), (3000, 2056, 1032)]
LARGE = [(4096, 4096, 4096)]


def matmul(M, N, K):
    return cc.make_workload("matmul", dict(M=M, N=N, K=K, dtype="float16"))


@pytest.fixture(scope="module")
def target():
    from compiler_core.runtime.cuda_runtime import device_target

    t = device_target()
    if not t.has_tensor_cores("wgmma"):
        pytest.skip(f"the Hopper template needs an sm_90a device, this one is {t.arch}")
    return t


def configs_for(w, target, samples: int) -> list[dict]:
    """The default, its cluster-2 / non-persistent / one-consumer variants where valid, and seeded samples."""
    space = cc.get_space(w, target)
    default = cc.default_config(w, target)
    variants = [default, dict(default, cluster=2), dict(default, persistent=False),
                dict(default, consumers=1, bm=64), dict(default, bm=256, bn=128, stages=3)]
    out = [c for c in variants if space.is_valid(c)]
    out += space.sample(random.Random(w.key), samples)
    return list({cc.config_key(c): c for c in out}.values())


def _run_all(w, target, configs) -> list:
    kernels = built_kernels(w, configs, target)
    assert all(isinstance(k.module.kernels[0], OpaqueKernel) for k in kernels)
    return verified_failures(w, configs, kernels, seed=11)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_host_arrays_match_the_reference(shape, target):
    w = matmul(*shape)
    configs = configs_for(w, target, SAMPLES)
    failures = _run_all(w, target, configs)
    assert not failures, f"{len(failures)} of {len(configs)} configs wrong: {failures}"


@pytest.mark.parametrize("shape", LARGE, ids=lambda s: "x".join(map(str, s)))
def test_large_shapes_match_the_reference(shape, target):
    w = matmul(*shape)
    configs = configs_for(w, target, 1)
    failures = _run_all(w, target, configs)
    assert not failures, f"{len(failures)} of {len(configs)} configs wrong: {failures}"


def test_build_gives_the_hopper_kernel_with_the_devices_sm_count(target):
    w = matmul(4096, 4096, 4096)
    kernel = cc.build(w, cc.default_config(w, target), target)
    (k,) = kernel.module.kernels
    assert isinstance(k, OpaqueKernel) and k.sm_count == target.sm_count > 0
    assert kernel.launch[0]["grid"] == [min(k.units, target.sm_count), 1, 1]


def test_launch_device_on_pycuda_allocations_and_a_stream(target):
    from compiler_core.runtime.cuda_runtime import driver

    drv = driver()
    w = matmul(1000, 1000, 1000)
    kernel = cc.build(w, cc.default_config(w, target), target)
    inputs = cc.random_inputs(w, seed=5)
    expected = cc.expect(w, inputs)
    a, b = (drv.to_device(x) for x in inputs)
    nbytes = 1000 * 1000 * 2
    outs = [drv.mem_alloc(nbytes) for _ in range(2)]
    stream = drv.Stream()
    for c in outs:
        drv.memset_d8(c, 0xFF, nbytes)  # NaN in float16
        kernel.launch_device([a, b, c], [], stream)
    kernel.launch_device([int(a), int(b), int(outs[0])], [], stream)  # raw addresses: the same packed buffer
    stream.synchronize()
    for c in outs:
        got = drv.from_device(c, (1000, 1000), np.float16)
        result = cc.verify(w, [got], expected)
        assert result.ok, result.message


def test_the_agents_bench_verifies_and_times_it(target, tmp_path):
    from device_agent.benches import CudaBench
    from device_agent.records import MeasureOptions
    from device_agent.workload_data import WorkloadCache

    bench = CudaBench(0, str(tmp_path))
    w = matmul(2048, 2048, 2048)
    data = WorkloadCache(None).get(w, 1)
    kernel = bench.build(w, cc.default_config(w, bench.target))
    assert isinstance(kernel.module.kernels[0], OpaqueKernel)
    result = bench.verify(kernel, data)
    assert result.ok, result.message
    opts = MeasureOptions(warmup=3, min_repeats=20, min_time_s=0.0, max_repeats=50, timeout_s=60.0,
                          flush_cache=True, max_time_s=10.0, target_rel_ci=0.05, max_contention=1.0)
    fns = [bench.timed(kernel, data)]
    baseline = bench.baseline(data)
    fns += [baseline] if baseline is not None else []
    run = bench.sample(fns, opts, watched=1)
    samples = np.array(run.series[0])
    assert len(samples) >= 20 and np.isfinite(samples).all() and (samples > 0).all()
    if baseline is not None:  # for the log (-s): never asserted, timings vary
        print(f"\n2048^3 fp16 default config: {np.median(samples) * 1e3:.3f} ms, torch "
              f"{np.median(run.series[1]) * 1e3:.3f} ms")
    bench.release(data)
