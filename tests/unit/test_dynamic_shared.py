"""Dynamic shared memory: buffers laid out by infer_launch (aligned, in order), rendered as pointers into one
`extern __shared__` array, checked against the device's opt-in limit (compiled and run in tests/nvcc, tests/gpu)."""
from __future__ import annotations

import dataclasses

import pytest

import compiler_core as cc
from compiler_core.codegen import generate_source
from compiler_core.errors import ResourceError
from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.builder import IRBuilder

H100 = cc.cuda_target("sm_90a")


def _module(a_bytes: int, b_bytes: int, static_bytes: int = 0, align: int = 1024) -> S.Module:
    out = S.Buffer("out", "float32", (256,))
    b = IRBuilder()
    with b.loop("tx", 256, S.ForKind.THREAD_X) as tx:
        with b.allocate("sa", "float16", (a_bytes // 2,), S.Scope.SHARED_DYN) as sa:
            sa.align = align
            with b.allocate("sb", "float32", (b_bytes // 4,), S.Scope.SHARED_DYN) as sb:
                sb.align = align
                if static_bytes:
                    with b.allocate("st", "float32", (static_bytes // 4,), S.Scope.SHARED) as st:
                        b.store(st, (tx,), E.FloatImm(1.0))
                b.store(sa, (tx,), E.Cast("float16", E.Cast("float32", tx)))
                b.store(sb, (tx,), E.Cast("float32", sa[tx]))
                b.barrier()
                b.store(out, (tx,), sb[(tx + 1) % 256])
    return S.Module("dyn", (S.PrimFunc("dyn", (out,), b.get()),), (out,), (), 0)


def test_buffers_get_aligned_offsets_in_order_and_the_total_is_launched():
    (f,) = cc.run_passes(_module(1000, 4096), H100).kernels
    assert f.dynamic_offsets == {"sa": 0, "sb": 1024} and f.dynamic_shared_bytes == 1024 + 4096
    assert f.shared_bytes == 0


def test_codegen_carves_the_buffers_out_of_one_extern_array():
    source = generate_source(cc.run_passes(_module(1000, 4096), H100), H100)
    assert "extern __shared__ __align__(1024) unsigned char tf_dyn_smem[];" in source
    assert "float* __restrict__ sb = reinterpret_cast<float*>(tf_dyn_smem + 1024);" in source


def test_static_plus_dynamic_must_fit_the_opt_in_limit_of_the_target():
    ok = cc.run_passes(_module(100 * 1024, 100 * 1024, static_bytes=16 * 1024), H100)
    assert ok.kernels[0].dynamic_shared_bytes == 200 * 1024  # beyond 48 KiB: fine on an H100 (227 KiB)
    with pytest.raises(ResourceError, match="opt-in limit"):
        cc.run_passes(_module(120 * 1024, 110 * 1024), H100)
    with pytest.raises(ResourceError, match="opt-in limit"):  # an sm_86 device opts in to 99 KiB only
        cc.run_passes(_module(60 * 1024, 50 * 1024), cc.cuda_target("sm_86"))
    small = dataclasses.replace(H100, max_dynamic_shared_bytes=64 * 1024)  # what a device may report
    with pytest.raises(ResourceError, match="opt-in limit"):
        cc.run_passes(_module(40 * 1024, 40 * 1024), small)


def test_launch_dims_report_dynamic_shared_memory():
    module = cc.run_passes(_module(1000, 4096), H100)
    kernel = cc.Kernel(None, {}, H100, module, "")
    assert kernel.launch[0]["dynamic_shared_bytes"] == 5120
