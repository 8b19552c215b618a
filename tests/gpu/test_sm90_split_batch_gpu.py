"""The Hopper GEMM's split-K and batched kernels run exactly on an sm_90a GPU: matmul with M in {1, 16, 17, 128, 200}
and batch_matmul with 1..16 entries, N and K multiples of 8 past the tiles, split_k from 1 to 16 (summed by a
second kernel or inside a cluster), clusters, float16
and bfloat16, each through the farm's build path (cc.lower, nvcc, build_module) and `launch_device` on pycuda
allocations whose output AND workspace are poisoned with NaN first: an output element no unit writes, or a partial
the sum reads before a unit wrote it (the module skips the workspace memset), fails the float64 numpy reference.
Marked gpu: skipped without CUDA and pycuda, and on a device that is not sm_90a."""
from __future__ import annotations

import numpy as np
import pytest

import compiler_core as cc
from compiler_core.dtypes import numpy_dtype, raw_bytes
from compiler_core.ir.opaque import OpaqueKernel
from tests.gpu.reference_runs import built_kernels

pytestmark = pytest.mark.gpu

MATMUL = [(1, 264, 520), (16, 4096, 4096), (17, 1032, 4104), (128, 4096, 4096), (200, 136, 2056)]
BATCHED = [(1, 128, 256, 512), (2, 17, 40, 4104), (3, 200, 264, 1032), (8, 1024, 1024, 1024), (16, 512, 512, 512),
           (16, 1, 72, 264)]
WORKLOADS = [cc.make_workload("matmul", dict(M=m, N=n, K=k, dtype=d)) for m, n, k in MATMUL
             for d in ("float16", "bfloat16")]
WORKLOADS += [cc.make_workload("batch_matmul", dict(batch=b, M=m, N=n, K=k, dtype=d)) for b, m, n, k in BATCHED
              for d in ("float16", "bfloat16")]


@pytest.fixture(scope="module")
def target():
    from compiler_core.runtime.cuda_runtime import device_target

    t = device_target()
    if not t.has_tensor_cores("wgmma"):
        pytest.skip(f"the Hopper template needs an sm_90a device, this one is {t.arch}")
    return t


def configs_for(w, target) -> list[dict]:
    """The default, then every split the space takes with the default's other knobs, a cluster of two and a
    one-unit-per-CTA grid where valid, every split summed inside a cluster (one and two consumer warpgroups), and
    192-column tiles (three B boxes; ragged where N is not a multiple of 192) alone, in a cluster of two and split."""
    space = cc.get_space(w, target)
    default = cc.default_config(w, target)
    variants = [default, *(dict(default, split_k=k) for k in (1, 2, 4, 8, 16)),
                dict(default, cluster=2), dict(default, persistent=False),
                dict(default, cluster=2, split_k=2, group_m=1), dict(default, bm=64, consumers=1, split_k=16)]
    in_cluster = dict(default, split_cluster=True, persistent=False, cluster=1)
    variants += [dict(in_cluster, split_k=k) for k in (2, 4, 8)]
    variants += [dict(in_cluster, bm=128, consumers=2, split_k=k) for k in (2, 4)]
    wide = dict(default, bm=128, bn=192, consumers=2, stages=4)
    variants += [wide, dict(wide, cluster=2), dict(wide, split_k=2, split_cluster=True, persistent=False, group_m=1)]
    return list({cc.config_key(c): c for c in variants if space.is_valid(c)}.values())


def run_poisoned(kernel, inputs: list) -> np.ndarray:
    """The output of one launch_device with NaN in the output and in every workspace beforehand."""
    from compiler_core.runtime.cuda_runtime import driver

    drv = driver()
    module = kernel.module
    allocations = []

    def alloc(nbytes: int):
        allocations.append(drv.mem_alloc(max(nbytes, 1)))
        return allocations[-1]

    try:
        args = []
        for x in inputs:
            args.append(alloc(x.nbytes))
            drv.memcpy_htod(args[-1], raw_bytes(np.ascontiguousarray(x)))
        poisoned = [module.args[-1], *module.workspaces]
        devs = [alloc(b.nbytes) for b in poisoned]
        for dev, b in zip(devs, poisoned, strict=True):  # all-ones: NaN in float32, float16 and bfloat16
            drv.memset_d8(dev, 0 if b in module.kept_zero else 0xFF, b.nbytes)  # kept-zero ones start at zero
        kernel.launch_device([*args, devs[0]], devs[1:])
        drv.Context.synchronize()
        out = np.empty(module.args[-1].shape, dtype=numpy_dtype(module.args[-1].dtype))
        drv.memcpy_dtoh(raw_bytes(out), devs[0])
        return out
    finally:
        for dev in allocations:
            dev.free()


@pytest.mark.parametrize("w", WORKLOADS, ids=lambda w: w.key)
def test_split_and_batched_kernels_match_the_reference(w, target):
    configs = configs_for(w, target)
    if w.op == "matmul":  # every matmul case here has K ranges to split
        assert any(c["split_k"] > 1 for c in configs), configs
    kernels = built_kernels(w, configs, target)
    assert all(isinstance(k.module.kernels[0], OpaqueKernel) for k in kernels)
    inputs = cc.random_inputs(w, seed=3)
    expected = cc.expect(w, inputs)
    failures = []
    for config, kernel in zip(configs, kernels, strict=True):
        result = cc.verify(w, [run_poisoned(kernel, inputs)], expected)
        if not result.ok:
            failures.append((config, result.message))
    assert not failures, f"{len(failures)} of {len(configs)} configs wrong: {failures}"


def test_the_default_splits_skinny_shapes_and_fills_the_sms(target):
    """On the device's own SM count: M=16 and M=128 over N=K=4096 split (their tiles leave SMs idle), a square
    4096^3 does not, and a split default launches no more units than one round of the SMs holds."""
    for m, splits in ((16, True), (128, True), (4096, False)):
        w = cc.make_workload("matmul", dict(M=m, N=4096, K=4096, dtype="float16"))
        config = cc.default_config(w, target)
        assert (config["split_k"] > 1) == splits, (m, config)
        kernel = cc.lower(w, config, target).kernels[0]
        if splits:
            assert kernel.units <= target.sm_count, (m, config, kernel.units)
