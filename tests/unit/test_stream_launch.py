"""runtime/stream_launch against a recording stand-in for libcuda (no driver, no GPU): each kernel of a lowered
split_k module is launched in order on the caller's stream with its own launch dims and the right addresses
(args and workspaces by position), in the device's primary context, pushed only when another one is current."""
from __future__ import annotations

import ctypes
import random

import pytest

import compiler_core as cc
from compiler_core.errors import BuildError
from compiler_core.runtime import stream_launch

PRIMARY, OTHER = 0x1000, 0x2000


class FakeDriver:
    def __init__(self, current: int = PRIMARY) -> None:
        self.current, self.stack, self.launches, self.attributes, self.functions = current, [], [], [], {}

    def cuDeviceGet(self, ref, ordinal):
        ref._obj.value = ordinal
        return 0

    def cuDevicePrimaryCtxRetain(self, ref, dev):
        ref._obj.value = PRIMARY
        return 0

    def cuCtxGetCurrent(self, ref):
        ref._obj.value = self.current
        return 0

    def cuCtxPushCurrent_v2(self, ctx):
        self.stack.append(self.current)
        self.current = ctx.value
        return 0

    def cuCtxPopCurrent_v2(self, ref):
        self.current = self.stack.pop()
        return 0

    def cuModuleLoadData(self, ref, image):
        assert self.current == PRIMARY and image == b"cubin"
        ref._obj.value = 0x77
        return 0

    def cuModuleGetFunction(self, ref, module, name):
        ref._obj.value = 0x100 + len(self.functions)
        self.functions[ref._obj.value] = name.decode()
        return 0

    def cuFuncSetAttribute(self, fn, attribute, value):
        self.attributes.append((self.functions[fn.value], attribute, value))
        return 0

    def cuLaunchKernel(self, fn, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        addresses = [ctypes.c_uint64.from_address(p).value for p in params]
        self.launches.append((self.functions[fn.value], (gx, gy, gz), (bx, by, bz), shared, stream, addresses,
                              self.current))
        return 0


@pytest.fixture
def split_k_module():
    target = cc.cuda_target("sm_90a")
    workload = cc.make_workload("matmul", {"M": 128, "N": 128, "K": 512})
    space = cc.get_space(workload, target)
    config = next(c for c in space.sample(random.Random(0), 256) if c.get("split_k", 1) > 1)
    return cc.lower(workload, config, target)


def test_kernels_launch_in_order_on_the_callers_stream(monkeypatch, split_k_module):
    fake = FakeDriver(current=OTHER)
    monkeypatch.setattr(stream_launch, "libcuda", lambda: fake)
    module = stream_launch.StreamModule(split_k_module, b"cubin", device=0)
    assert fake.current == OTHER  # the load pushed the primary context and popped it again
    args = {b.name: 0xA000 + 0x100 * i for i, b in enumerate((*split_k_module.args, *split_k_module.workspaces))}
    module.launch(list(args.values()), stream=0xBEEF)
    assert [launch[0] for launch in fake.launches] == [k.name for k in split_k_module.kernels]
    for (_, grid, block, shared, stream, addresses, context), kernel in zip(fake.launches, split_k_module.kernels,
                                                                            strict=True):
        assert (grid, block, shared) == (tuple(kernel.grid), tuple(kernel.block), kernel.dynamic_shared_bytes)
        assert stream == 0xBEEF and context == PRIMARY
        assert addresses == [args[p.name] for p in kernel.params]
    assert fake.current == OTHER and not fake.stack


def test_no_push_when_the_primary_context_is_current(monkeypatch, split_k_module):
    fake = FakeDriver(current=PRIMARY)
    monkeypatch.setattr(stream_launch, "libcuda", lambda: fake)
    module = stream_launch.StreamModule(split_k_module, b"cubin")
    fake.cuCtxPushCurrent_v2 = None  # any push would fail
    module.launch([0x10] * (len(split_k_module.args) + len(split_k_module.workspaces)), stream=None)
    assert len(fake.launches) == len(split_k_module.kernels) and fake.launches[0][4] is None


def test_address_count_and_driver_errors(monkeypatch, split_k_module):
    fake = FakeDriver()
    monkeypatch.setattr(stream_launch, "libcuda", lambda: fake)
    module = stream_launch.StreamModule(split_k_module, b"cubin")
    with pytest.raises(ValueError, match="takes 4 addresses"):
        module.launch([1, 2, 3], stream=0)
    fake.cuLaunchKernel = lambda *args: 700  # CUDA_ERROR_ILLEGAL_ADDRESS
    monkeypatch.setattr(stream_launch.tensor_map, "_error_text", lambda lib, code: "an illegal memory access")
    with pytest.raises(BuildError, match="cuLaunchKernel failed: an illegal memory access"):
        module.launch([1, 2, 3, 4], stream=0)
