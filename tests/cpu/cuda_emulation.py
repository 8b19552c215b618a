"""Runs generated CUDA kernels on the CPU, to check them where there is no GPU: a test harness, not a runtime.

The CUDA C that codegen writes is compiled as C++ against an emulated device (tests/cpu/cuda_emulation_device.py:
a fiber per CUDA thread, barriers, warp shuffles and tensor-core instructions as meetings, cp.async copies landing at
their wait), each tensor stored in its own dtype. Built with AddressSanitizer and UndefinedBehaviorSanitizer (fatal),
so a read or write outside any tensor, a misaligned 128-bit access or a shared-memory index out of range fails the
run. Signed-integer and pointer overflow are not checked: the emulated shapes are small, their indices cannot
overflow, and an index that goes wrong shows as an access out of range; those two checks took a third of the build
time."""
from __future__ import annotations

import atexit
import dataclasses
import functools
import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

import compiler_core as cc
from compiler_core.codegen import generate_source
from compiler_core.dtypes import numpy_dtype, raw_bytes
from compiler_core.ir import stmt as S
from compiler_core.ir.opaque import OpaqueKernel
from tests.cpu.cuda_emulation_device import PRELUDE

RUNNERS = os.cpu_count() or 1  # emulated modules run at once, a process each


def compiler_available() -> bool:
    return shutil.which("g++") is not None


def _kernel_source(module: S.Module, target, tag: str) -> str:
    """The module's CUDA source with kernels renamed by `tag` and the CUDA headers left out."""
    renamed = module.with_kernels(_renamed(k, f"{k.name}_{tag}") for k in module.kernels)
    lines = generate_source(renamed, target).splitlines()
    source = "\n".join(line for line in lines if not line.startswith("#include"))
    sizes = iter([k.dynamic_shared_bytes for k in renamed.kernels if getattr(k, "dynamic_shared_bytes", 0)])
    # a launch's dynamic shared memory becomes a static array of the size the launch asks for (blocks run in turn)
    return _DYNAMIC_SMEM.sub(lambda m: f"__shared__ __align__({m[1]}) unsigned char {m[2]}[{next(sizes)}];", source)


def _renamed(kernel, name: str):
    """`kernel` under `name`; a kernel its template rendered names its entry in its own text too."""
    if isinstance(kernel, OpaqueKernel):
        return dataclasses.replace(kernel, name=name, source=re.sub(rf"\b{kernel.name}\b", name, kernel.source))
    return dataclasses.replace(kernel, name=name)


BARRIER = "__syncthreads();"
_DYNAMIC_SMEM = re.compile(r"extern __shared__ __align__\((\d+)\) unsigned char (\w+)\[\];")


def kernel_source(module: S.Module, target) -> str:
    """The CUDA source an emulated module is built from (the first of a batch: its kernels renamed by "m0")."""
    return _kernel_source(module, target, "m0")


def mutate_kernels(monkeypatch, mutate: Callable[[str, int], str]) -> None:
    """Plants a mutation for the rest of a test: module number i of each batch is built from its source with
    `mutate(source, i)` applied."""
    real = _kernel_source
    monkeypatch.setattr(f"{__name__}._kernel_source",
                        lambda module, target, tag: mutate(real(module, target, tag), int(tag[1:])))


def drop_barrier(source: str, which: int) -> str:
    """`source` with its barrier number `which` (from 0) made an empty statement."""
    head, *rest = source.split(BARRIER)
    return head + "".join((";" if i == which else BARRIER) + part for i, part in enumerate(rest))


_NAN = {"float32": "NAN", "float16": "(uint16_t)0x7e00u", "bfloat16": "(uint16_t)0x7fc0u"}  # outputs start as NaN


def _exact_size(buf: S.Buffer) -> int:
    return max(buf.physical_elems, 1)


def _runner(module: S.Module, tag: str) -> str:
    """run_<tag>(dir): allocates every tensor at its exact size, reads the inputs, poisons the outputs with NaN,
    zeroes the workspaces (poisons them with NaN where the module says its kernels overwrite them: a workspace
    element read before it is written then shows), launches each kernel in order, writes the outputs."""
    buffers = (*module.args, *module.workspaces)
    index = {b: i for i, b in enumerate(buffers)}
    out = [f"static void run_{tag}(const char* dir) {{", "  char path[4096];",
           f"  std::vector<tf_buffer> bufs({len(buffers)});"]
    for i, b in enumerate(buffers):
        n, size = _exact_size(b), _exact_size(b) * S.dtype_bytes(b.dtype)
        out.append(f"  bufs[{i}] = tf_alloc({size});")
        if i < module.num_inputs:
            out.append(f'  snprintf(path, sizeof path, "%s/in{i}.bin", dir); tf_read(path, bufs[{i}], {size});')
        elif b in module.workspaces:
            out.append(f"  memset(bufs[{i}].p, {0 if module.zeroed_once(b) else 0xFF}, {size});")
        else:
            out.append(f"  tf_fill(bufs[{i}], {n}, {_NAN[b.dtype]});")
    for k in module.kernels:
        args = ", ".join(f"bufs[{index[p]}]" for p in k.params)
        grid, block = ", ".join(map(str, k.grid)), ", ".join(map(str, k.block))
        # a rendered kernel's entry lives in a namespace of its own (codegen.cuda.render_opaque)
        entry = f"{k.name}_{tag}_impl::{k.name}_{tag}" if isinstance(k, OpaqueKernel) else f"{k.name}_{tag}"
        out.append(f"  tf_launch([&] {{ {entry}({args}); }}, tf_dim3{{{grid}}}, tf_dim3{{{block}}});")
    for i, b in enumerate(module.args[module.num_inputs:], start=module.num_inputs):
        out.append(f'  snprintf(path, sizeof path, "%s/{tag}_out{i}.bin", dir); '
                   f"tf_write(path, bufs[{i}], {_exact_size(b) * S.dtype_bytes(b.dtype)});")
    out.append("  for (tf_buffer b : bufs) free(b.p);")
    out.append("}")
    return "\n".join(out)


def _program(modules: list[S.Module], tags: list[str], which: list[int], target) -> str:
    """One executable's source: the modules numbered `which` (of the whole batch), `argv[2]` picks the one to run."""
    parts = [_prelude()]
    for i in which:
        parts += [_kernel_source(modules[i], target, tags[i]), _runner(modules[i], tags[i])]
    parts.append("int main(int argc, char** argv) {\n  const int which = atoi(argv[2]);")
    for i in which:
        parts.append(f'  if (which == {i}) {{ fprintf(stderr, "run {tags[i]}\\n"); run_{tags[i]}(argv[1]); }}')
    parts.append("  return 0;\n}\n")
    return "\n".join(parts)


# -O0: the build is most of an emulated test's time, and at -O0 every access stays in the code ASan and UBSan
# instrument (the fibers' runs are short either way).
FLAGS = ("-std=c++20", "-O0", "-g0", "-fno-strict-aliasing", "-fsanitize=address,undefined",
         "-fno-sanitize=signed-integer-overflow,pointer-overflow", "-fno-sanitize-recover=all", "-w")
_prelude_lock = threading.Lock()


@functools.cache
def _prelude_header() -> str | None:
    """PRELUDE as a header precompiled with FLAGS (once per process: parsing it was a third of each build), its path
    for `#include`; None where the precompiled header cannot be built (the prelude is then inlined in each source).
    g++ uses the .gch only when built with the same flags, and falls back to the header's text otherwise."""
    directory = Path(tempfile.mkdtemp(prefix="tf-cuda-emu-pch-"))
    atexit.register(shutil.rmtree, directory, True)
    header = directory / "tf_emulated_device.h"
    header.write_text(PRELUDE)
    proc = subprocess.run(["g++", *FLAGS, "-x", "c++-header", str(header), "-o", f"{header}.gch"],
                          capture_output=True, text=True, timeout=600)
    return str(header) if proc.returncode == 0 else None


def _prelude() -> str:
    """The text an emulated program starts with: the precompiled prelude's #include, or the prelude itself."""
    with _prelude_lock:  # build_and_run_sets compiles from several threads: one builds the header, the others wait
        header = _prelude_header()
    return PRELUDE if header is None else f'#include "{header}"\n'


def _compile(source: str, exe: Path) -> Path:
    src = exe.with_suffix(".cpp")
    src.write_text(source)
    proc = subprocess.run(["g++", *FLAGS, str(src), "-o", str(exe)], capture_output=True, text=True, timeout=1200)
    if proc.returncode != 0:
        raise RuntimeError(f"emulation build failed:\n{proc.stderr[-4000:]}")
    return exe


def build_and_run(modules: list[S.Module], target, inputs: list[np.ndarray], timeout_s: float = 120.0):
    """Runs every module (all on the same inputs) on the CPU; returns, per module, its outputs, or a string
    saying how the run failed (sanitizer report, barrier divergence, crash, time-out). The modules are split over
    RUNNERS executables, compiled at once (g++ takes one core each)."""
    return build_and_run_sets(modules, target, [inputs], timeout_s)[0]


def build_and_run_sets(modules: list[S.Module], target, input_sets: list[list[np.ndarray]],
                       timeout_s: float = 120.0) -> list[list]:
    """`build_and_run` on each of several input sets, the executables compiled once (compiling is most of the cost:
    the sanitizers): per input set, per module, its outputs or how the run failed."""
    tags = [f"m{i}" for i in range(len(modules))]
    groups = [list(range(j, len(modules), RUNNERS)) for j in range(min(RUNNERS, len(modules)))]
    with tempfile.TemporaryDirectory(prefix="tf-cuda-emu-") as tmp, \
            ThreadPoolExecutor(max_workers=RUNNERS) as pool:  # each build and each run is its own process
        exes = list(pool.map(lambda j: _compile(_program(modules, tags, groups[j], target),
                                                Path(tmp) / f"emulated{j}"), range(len(groups))))
        exe_of = {i: exes[j] for j, group in enumerate(groups) for i in group}
        results = []
        for inputs in input_sets:
            for i, a in enumerate(inputs):
                stored = np.ascontiguousarray(a, dtype=numpy_dtype(modules[0].args[i].dtype))
                raw_bytes(stored).tofile(Path(tmp) / f"in{i}.bin")
            results.append(list(pool.map(lambda i: _run_one(exe_of[i], tmp, i, modules[i], tags[i], timeout_s),
                                         range(len(modules)))))
        return results


def emulated_failures(w, configs: list[dict], target, inputs: list[np.ndarray]) -> list[tuple[dict, str]]:
    """(config, why) for each config of workload `w` whose emulated run fails or whose outputs differ from the numpy
    reference beyond the op's error bound."""
    return emulated_failures_on_sets(w, configs, target, [inputs])


def emulated_failures_on_sets(w, configs: list[dict], target, input_sets: list[list[np.ndarray]]) \
        -> list[tuple[dict, str]]:
    """`emulated_failures` on each input set, the configs built once: (config, why) per failing run."""
    return [(config, why) for verdicts in _verdicts_on_sets(w, configs, target, input_sets)
            for config, why in zip(configs, verdicts, strict=True) if why is not None]


def emulated_verdicts(w, configs: list[dict], target, inputs: list[np.ndarray]) -> list[str | None]:
    """Per config, in order (a config may repeat, as under planted mutations): why its emulated run fails or differs
    from the numpy reference beyond the op's error bound, or None where it matches."""
    return _verdicts_on_sets(w, configs, target, [inputs])[0]


def _verdicts_on_sets(w, configs: list[dict], target, input_sets: list[list[np.ndarray]]) -> list[list[str | None]]:
    results = build_and_run_sets([cc.lower(w, c, target) for c in configs], target, input_sets)
    out = []
    for inputs, per_config in zip(input_sets, results, strict=True):
        expected = cc.expect(w, inputs)
        out.append([_why(w, result, expected) for result in per_config])
    return out


def _why(w, result, expected) -> str | None:
    if isinstance(result, str):
        return result
    verdict = cc.verify(w, [r.reshape(e.shape) for r, e in zip(result, expected.outputs, strict=True)], expected)
    return None if verdict.ok else verdict.message


def _run_one(exe: Path, tmp: str, i: int, module: S.Module, tag: str, timeout_s: float):
    try:
        proc = subprocess.run([str(exe), tmp, str(i)], capture_output=True, text=True, timeout=timeout_s,
                              env={"ASAN_OPTIONS": "detect_leaks=0", "PATH": "/usr/bin:/bin"})
    except subprocess.TimeoutExpired:
        return f"no result after {timeout_s:.0f} s"
    if proc.returncode != 0:
        return f"exit {proc.returncode}:\n{proc.stderr[-3000:]}"
    outs = []
    for k, b in enumerate(module.args[module.num_inputs:], start=module.num_inputs):
        data = np.fromfile(Path(tmp) / f"{tag}_out{k}.bin", dtype=np.uint8).view(numpy_dtype(b.dtype))
        outs.append(data[: int(np.prod(b.shape))].reshape(b.shape))
    return outs
