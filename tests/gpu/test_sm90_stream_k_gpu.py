"""Stream-K Hopper GEMMs (codegen/sm90_stream_k.py: ranges over K blocks, and K-major pieces) run exactly on an
sm_90a GPU, launch after launch. The shapes end in a partly filled round on the device's SMs: ragged M and N, K of
one block and of many, and fewer tiles than SMs (a tile's K spread over up to about 9 CTAs). Each runs LARGE, WIDE,
MID and SMALL tiles, float16 and bfloat16, through the farm's build path. The output and the partials are poisoned
with NaN before each launch (a partial read before its peer wrote it, or an element no owner stored, fails the
float64 reference) and the flags must be back at zero after each (the Module keeps them zero). Marked gpu."""
from __future__ import annotations

import numpy as np
import pytest

import compiler_core as cc
from compiler_core.dtypes import numpy_dtype, raw_bytes
from compiler_core.schedules.cuda import gemm_sm90
from tests.gpu.reference_runs import built_kernels

pytestmark = pytest.mark.gpu

SHAPES = [(2304, 2048, 2048, "bfloat16"), (1536, 3072, 2048, "float16"), (1544, 2056, 1032, "float16"),
          (3000, 1000, 8, "bfloat16"), (2056, 1800, 4104, "float16"), (1100, 2200, 64, "float16"),
          (1536, 1536, 1536, "float16"), (256, 1024, 4096, "float16")]  # the last two: fewer tiles than SMs
TILES = (gemm_sm90.LARGE, gemm_sm90.WIDE, gemm_sm90.MID, gemm_sm90.SMALL)
LAUNCHES = 3


@pytest.fixture(scope="module")
def target():
    from compiler_core.runtime.cuda_runtime import device_target

    t = device_target()
    if not t.has_tensor_cores("wgmma"):
        pytest.skip(f"the Hopper template needs an sm_90a device, this one is {t.arch}")
    return t


def stream_k_configs(w, target) -> list[dict]:
    space = cc.get_space(w, target)
    default = dict(cc.default_config(w, target), split_k=1, split_cluster=False, persistent=True, cluster=1,
                   sk_split=0)
    variants = [dict(default, stream_k=True)] + [dict(default, **tile, stream_k=True) for tile in TILES]
    variants += [dict(v, group_m=1) for v in variants[:2]]
    variants += [dict(v, sk_split=2) for v in variants[:3]]  # K-major pieces of the partial round
    return list({cc.config_key(c): c for c in variants if space.is_valid(c)}.values())


def launches(kernel, inputs: list) -> list:
    """(output, flags after) of LAUNCHES launch_device calls on one set of allocations: output and partials set to
    NaN before each, the flags zeroed once."""
    from compiler_core.runtime.cuda_runtime import driver

    drv = driver()
    module = kernel.module
    out_buf, (partials, flags) = module.args[-1], module.workspaces
    allocations = []

    def alloc(nbytes: int):
        allocations.append(drv.mem_alloc(max(nbytes, 1)))
        return allocations[-1]

    try:
        args = []
        for x in inputs:
            args.append(alloc(x.nbytes))
            drv.memcpy_htod(args[-1], raw_bytes(np.ascontiguousarray(x)))
        out_dev, partials_dev, flags_dev = alloc(out_buf.nbytes), alloc(partials.nbytes), alloc(flags.nbytes)
        drv.memset_d8(flags_dev, 0, flags.nbytes)
        results = []
        for _ in range(LAUNCHES):
            drv.memset_d8(out_dev, 0xFF, out_buf.nbytes)
            drv.memset_d8(partials_dev, 0xFF, partials.nbytes)
            kernel.launch_device([*args, out_dev], [partials_dev, flags_dev])
            drv.Context.synchronize()
            out = np.empty(out_buf.shape, dtype=numpy_dtype(out_buf.dtype))
            drv.memcpy_dtoh(raw_bytes(out), out_dev)
            left = np.empty(flags.shape, dtype=np.int32)
            drv.memcpy_dtoh(left, flags_dev)
            results.append((out, left))
        return results
    finally:
        for dev in allocations:
            dev.free()


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_stream_k_matches_the_reference_launch_after_launch(shape, target):
    m, n, k, dtype = shape
    w = cc.make_workload("matmul", dict(M=m, N=n, K=k, dtype=dtype))
    configs = stream_k_configs(w, target)
    assert configs, "every shape here ends in a partly filled round: stream_k must be valid"
    kernels = built_kernels(w, configs, target)
    inputs = cc.random_inputs(w, seed=5)
    expected = cc.expect(w, inputs)
    failures = []
    for config, kernel in zip(configs, kernels, strict=True):
        for i, (out, flags) in enumerate(launches(kernel, inputs)):
            result = cc.verify(w, [out], expected)
            if not result.ok or flags.any():
                failures.append((config, i, result.message, int(np.count_nonzero(flags))))
    assert not failures, f"{len(failures)} wrong launches of {len(configs)} configs: {failures}"


# shapes of the half-round rule's checks on 132 SMs; on another SM count the test keeps those the rule selects there
RULE_SHAPES = [(3200, 1344, 6144, "float16"), (3584, 1216, 2048, "float16"), (5504, 2368, 8192, "bfloat16"),
               (1728, 2688, 4096, "float16"), (2496, 5184, 3072, "float16"), (3328, 4032, 4096, "float16")]


def test_the_default_takes_stream_k_halves_where_the_rule_does_and_they_are_exact(target):
    picked = []
    for m, n, k, dtype in RULE_SHAPES:
        w = cc.make_workload("matmul", dict(M=m, N=n, K=k, dtype=dtype))
        config = cc.default_config(w, target)
        if config.get("stream_k"):
            assert config["sk_split"] == 2, config
            picked.append((w, config))
    if not picked:
        pytest.skip(f"the half-round rule selects none of these shapes on {target.sm_count} SMs")
    failures = []
    for w, config in picked[:3]:
        (kernel,) = built_kernels(w, [config], target)
        inputs = cc.random_inputs(w, seed=9)
        expected = cc.expect(w, inputs)
        for i, (out, flags) in enumerate(launches(kernel, inputs)):
            result = cc.verify(w, [out], expected)
            if not result.ok or flags.any():
                failures.append((w.key, i, result.message, int(np.count_nonzero(flags))))
    assert not failures, failures
