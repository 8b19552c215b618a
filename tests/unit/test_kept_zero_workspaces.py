"""The Module's workspace contract (ir/stmt.Module: zeroed per run, overwritten, or kept zero) as the runtimes keep
it, against a recording stand-in for the CUDA driver (no GPU): `launch_device` zeroes only what must be zeroed per
run, and the agent's workspace pool zeroes a kept-zero buffer once where it allocates it and never hands it to a
module that may leave it dirty."""
from __future__ import annotations

from types import SimpleNamespace

import compiler_core as cc
from compiler_core.ir import stmt as S
from compiler_core.runtime import cuda_runtime
from device_agent.benches import CudaBench

UNEVEN = cc.make_workload("matmul", dict(M=2304, N=2048, K=2048, dtype="bfloat16"))
H100 = cc.cuda_target("sm_90a", sm_count=132)


class RecordingDriver:
    """mem_alloc hands out increasing addresses; memsets are recorded as (address, value, bytes)."""

    def __init__(self) -> None:
        self.next, self.memsets = 0x10000, []

    def mem_alloc(self, nbytes: int) -> int:
        self.next += max(nbytes, 1) + 256
        return self.next

    def memset_d8(self, address, value: int, nbytes: int) -> None:
        self.memsets.append((int(address), value, nbytes))

    def memset_d8_async(self, address, value: int, nbytes: int, stream) -> None:
        self.memsets.append((int(address), value, nbytes))


def workspaces(kind: str) -> S.Module:
    """A module of two workspaces of fixed sizes, zeroed per run, overwritten, or the second kept zero."""
    a, b = S.Buffer("ws_a", "float32", (64,)), S.Buffer("ws_b", "int32", (8,))
    return S.Module("m", (), (), (a, b), 0, overwrites_workspaces=kind != "zeroed",
                    kept_zero=(b,) if kind == "kept" else ())


def test_the_contract_names_what_is_zeroed_when():
    zeroed, overwritten, kept = workspaces("zeroed"), workspaces("overwritten"), workspaces("kept")
    assert zeroed.zeroed_per_run() == zeroed.workspaces and all(zeroed.zeroed_once(w) for w in zeroed.workspaces)
    assert overwritten.zeroed_per_run() == () and not any(overwritten.zeroed_once(w) for w in overwritten.workspaces)
    partials, flags = kept.workspaces
    assert kept.zeroed_per_run() == () and kept.zeroed_once(flags) and not kept.zeroed_once(partials)
    stream_k = cc.lower(UNEVEN, dict(cc.default_config(UNEVEN, H100), stream_k=True), H100)
    assert stream_k.kept_zero == stream_k.workspaces[1:] and stream_k.with_kernels(()).kept_zero == stream_k.kept_zero


def test_launch_device_zeroes_only_the_per_run_workspaces(monkeypatch):
    drv = RecordingDriver()
    monkeypatch.setattr(cuda_runtime, "driver", lambda *a: drv)
    for kind, zeroed in (("zeroed", [0x100, 0x200]), ("overwritten", []), ("kept", [])):
        runtime = object.__new__(cuda_runtime.CudaModule)
        runtime.module, runtime._launches = workspaces(kind), []
        drv.memsets.clear()
        runtime.launch_device([], [0x100, 0x200])
        assert [m[0] for m in drv.memsets] == zeroed, kind


def test_the_agent_pool_zeroes_kept_zero_buffers_once_and_keeps_them_apart():
    bench = object.__new__(CudaBench)
    bench.drv = RecordingDriver()
    data = SimpleNamespace(device={})
    kept = SimpleNamespace(module=workspaces("kept"))
    first = bench._workspaces(data, kept)
    assert bench.drv.memsets == [(int(first[1]), 0, 32)]  # the flags, zeroed where allocated
    assert bench._workspaces(data, kept) is first and len(bench.drv.memsets) == 1  # reused, not zeroed again
    # same sizes, but a module that may leave them dirty: a pool of its own, nothing zeroed
    other = bench._workspaces(data, SimpleNamespace(module=workspaces("overwritten")))
    assert other is not first and set(map(int, other)).isdisjoint(map(int, first))
    assert len(bench.drv.memsets) == 1
