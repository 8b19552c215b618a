"""Kernels as torch.library custom ops: `tunefarm::<op>_<hash>` (functional) and `tunefarm::<op>_<hash>_out`.

The functional op returns new tensors (torch.empty of the op's output specs, on the inputs' device); the `_out`
op writes into given tensors and returns nothing (schema `Tensor(a!)`), so torch.compile functionalizes it.
Both have a fake implementation that checks shapes and dtypes and gives the outputs' specs, so torch.compile
traces them (fullgraph) without running the kernel. The name hashes the workload, the config, the target and the
generated source: equal kernels share one op (registering again returns it), different ones never collide.
"""
from __future__ import annotations

import hashlib
import json
import keyword
import re
import threading
from dataclasses import dataclass
from typing import Any

import torch

import compiler_core as cc
from tunefarm_client.torch.runner import TorchKernel

NAMESPACE = "tunefarm"
_LIBRARY: torch.library.Library | None = None
_OPS: dict[str, KernelOp] = {}
_LOCK = threading.Lock()


def op_name(kernel: cc.Kernel) -> str:
    """`<op>_<16 hex digits>`: stable across processes for the same (workload, config, target, source)."""
    parts = (kernel.workload.key, cc.config_key(kernel.config), json.dumps(kernel.target.to_dict(), sort_keys=True),
             kernel.source)
    digest = hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]
    return f"{re.sub(r'[^0-9A-Za-z_]', '_', kernel.workload.op)}_{digest}"


def _arg_names(specs) -> list[str]:
    names: list[str] = []
    for spec in specs:
        name = re.sub(r"\W", "_", spec.name)
        if not name or name[0].isdigit() or keyword.iskeyword(name):
            name = f"t_{name}"
        while name in names:
            name += "_"
        names.append(name)
    return names


def schemas(name: str, runner: TorchKernel) -> tuple[str, str]:
    """The functional op's schema and the out op's, with the spec names as argument names."""
    names = _arg_names([*runner.input_specs, *runner.output_specs])
    inputs, outputs = names[:len(runner.input_specs)], names[len(runner.input_specs):]
    args = ", ".join(f"Tensor {n}" for n in inputs)
    returns = "Tensor" if len(outputs) == 1 else f"({', '.join('Tensor' for _ in outputs)})"
    mutated = ", ".join(f"Tensor({chr(ord('a') + i)}!) {n}" for i, n in enumerate(outputs))
    return f"{name}({args}) -> {returns}", f"{name}_out({args}, {mutated}) -> ()"


def _library() -> torch.library.Library:
    global _LIBRARY
    if _LIBRARY is None:
        _LIBRARY = torch.library.Library(NAMESPACE, "FRAGMENT")
    return _LIBRARY


@dataclass(eq=False)
class KernelOp:
    """A kernel registered as custom ops. `op(*inputs)` returns the outputs (one tensor, or a tuple);
    `op(*inputs, out=tensors)` writes into `tensors` (one tensor or a sequence) and returns them.
    `default` and `out_op` are the torch OpOverloads (`torch.ops.tunefarm.<name>.default`, `..._out.default`)."""

    name: str
    runner: TorchKernel
    default: Any
    out_op: Any

    @property
    def qualname(self) -> str:
        return f"{NAMESPACE}::{self.name}"

    @property
    def kernel(self) -> cc.Kernel:
        return self.runner.kernel

    def __call__(self, *inputs: torch.Tensor, out=None):
        if out is None:
            return self.default(*inputs)
        outputs = (out,) if isinstance(out, torch.Tensor) else tuple(out)
        self.out_op(*inputs, *outputs)
        return out


def _register(name: str, runner: TorchKernel) -> KernelOp:
    lib = _library()
    functional, mutating = schemas(name, runner)
    n_out = len(runner.output_specs)

    def run(*inputs):
        device = runner.check_inputs(inputs)
        outputs = runner.empty_outputs(device)
        runner.launch((*inputs, *outputs), device)
        return outputs[0] if n_out == 1 else tuple(outputs)

    def run_out(*tensors):
        inputs, outputs = tensors[:-n_out], tensors[-n_out:]
        device = runner.check_inputs(inputs)
        runner.check_outputs(outputs, device, inputs)
        runner.launch(tensors, device)

    def fake(*inputs):
        outputs = runner.empty_outputs(runner.check_inputs(inputs, memory=False))
        return outputs[0] if n_out == 1 else tuple(outputs)

    def fake_out(*tensors):
        inputs, outputs = tensors[:-n_out], tensors[-n_out:]
        runner.check_outputs(outputs, runner.check_inputs(inputs, memory=False), inputs, memory=False)

    for schema, impl, fake_impl in ((functional, run, fake), (mutating, run_out, fake_out)):
        op = schema.split("(", 1)[0]
        lib.define(schema)
        for key in ("CPU", "CUDA"):  # the runner names a wrong device type; other backends: the dispatcher says
            lib.impl(op, impl, key)
        torch.library.register_fake(f"{NAMESPACE}::{op}", fake_impl, lib=lib)
    qualname = f"{NAMESPACE}::{name}"

    def no_backward(ctx, *grads):
        raise RuntimeError(f"{qualname} ({runner.key}) has no derivative: tuned kernels are forward-only; run it "
                           "on tensors that need no grad (torch.no_grad(), or .detach() the inputs)")

    torch.library.register_autograd(qualname, no_backward, lib=lib)
    ops = getattr(torch.ops, NAMESPACE)
    return KernelOp(name, runner, getattr(ops, name).default, getattr(ops, f"{name}_out").default)


def custom_op(kernel) -> KernelOp:
    """The custom op of a compiled kernel (a compiler_core Kernel, or load_best's LoadedKernel), registered on
    first use; the same kernel (equal workload, config, target and source) gets the same op back."""
    kernel = getattr(kernel, "kernel", kernel)  # LoadedKernel -> Kernel
    if not isinstance(kernel, cc.Kernel):
        raise TypeError(f"custom_op takes a compiler_core Kernel or a LoadedKernel, got {type(kernel).__name__}")
    name = op_name(kernel)
    with _LOCK:
        if name not in _OPS:
            _OPS[name] = _register(name, TorchKernel(kernel))
        return _OPS[name]


def load_best_op(client, op: str, params: dict[str, Any], device: str, **load_options) -> KernelOp:
    """load_best (the head schedule of (op, params) on device class `device`, built here) as a custom op.
    `load_options` go to load_best (target=, version=, predict=, allow_version_mismatch=, cache_dir=)."""
    from tunefarm_client.loader import load_best

    return custom_op(load_best(client, op, params, device, **load_options))
