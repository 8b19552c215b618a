"""Runs generated CUDA kernels on the CPU, to check them where there is no GPU: a test harness, not a runtime.

The CUDA C that codegen writes is compiled as C++ with a small prelude: each block runs as one std::thread per
CUDA thread, `__syncthreads()` is a std::barrier of the block, `__shared__` arrays are statics (blocks run one
after another), and 128-bit moves are 16-byte-aligned structs. Built with AddressSanitizer and
UndefinedBehaviorSanitizer (fatal), so a read or write outside any tensor, a misaligned 128-bit access or a
shared-memory index out of range fails the run; a barrier that some threads of a block never reach deadlocks,
which the caller's timeout turns into a failure. Threads of a block really run concurrently, so a missing
barrier tends to show as a wrong result. Warp-level intrinsics (shuffles, wmma, cp.async) are not emulated:
this is for the SIMT templates.
"""
from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from compiler_core.codegen import generate_source
from compiler_core.ir import stmt as S

RUNNERS = os.cpu_count() or 1  # emulated modules run at once, a process each
PRELUDE = r"""
#include <barrier>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>
struct tf_dim3 { int x, y, z; };
static thread_local tf_dim3 threadIdx;
static tf_dim3 blockIdx;  // set before a block's threads start; read-only while they run
static std::barrier<>* tf_block_barrier;
#define __syncthreads() tf_block_barrier->arrive_and_wait()
#define __global__
#define __launch_bounds__(n)
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
#define CUDART_INF_F INFINITY
struct __attribute__((aligned(16))) uint4 { unsigned x, y, z, w; };
struct __attribute__((aligned(8))) uint2 { unsigned x, y; };
// One thread per CUDA thread of a block, kept for every block of the grid (creating threads per block cost most
// of a run under ASan): after a block, the last thread to arrive moves blockIdx on while the others wait.
struct tf_next_block {
  tf_dim3 grid;
  void operator()() noexcept {
    if (++blockIdx.x == grid.x) { blockIdx.x = 0; if (++blockIdx.y == grid.y) { blockIdx.y = 0; ++blockIdx.z; } }
  }
};
template <class F> static void tf_launch(F kernel, tf_dim3 grid, tf_dim3 block) {
  const int n = block.x * block.y * block.z;
  const long blocks = (long)grid.x * grid.y * grid.z;
  blockIdx = {0, 0, 0};
  std::barrier<> bar(n);
  std::barrier<tf_next_block> next(n, tf_next_block{grid});
  tf_block_barrier = &bar;
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t)
    threads.emplace_back([&, t] {
      threadIdx = {t % block.x, t / block.x % block.y, t / (block.x * block.y)};
      for (long b = 0; b < blocks; ++b) {
        kernel();
        next.arrive_and_wait();
      }
    });
  for (auto& th : threads) th.join();
}
static float* tf_alloc(size_t elems) {  // 256-byte aligned like cudaMalloc, exact size: red zones right after
  void* p = nullptr;
  if (posix_memalign(&p, 256, elems * 4) != 0) { fprintf(stderr, "out of memory\n"); exit(2); }
  return static_cast<float*>(p);
}
static void tf_read(const char* path, float* dst, size_t elems) {
  FILE* f = fopen(path, "rb");
  if (!f || fread(dst, 4, elems, f) != elems) { fprintf(stderr, "cannot read %s\n", path); exit(2); }
  fclose(f);
}
static void tf_write(const char* path, const float* src, size_t elems) {
  FILE* f = fopen(path, "wb");
  if (!f || fwrite(src, 4, elems, f) != elems) { fprintf(stderr, "cannot write %s\n", path); exit(2); }
  fclose(f);
}
"""


def compiler_available() -> bool:
    return shutil.which("g++") is not None


def _kernel_source(module: S.Module, target, tag: str) -> str:
    """The module's CUDA source with kernels renamed by `tag` and the CUDA headers left out."""
    renamed = module.with_kernels(dataclasses.replace(k, name=f"{k.name}_{tag}") for k in module.kernels)
    lines = generate_source(renamed, target).splitlines()
    return "\n".join(line for line in lines if not line.startswith("#include"))


def _exact_size(buf: S.Buffer) -> int:
    return max(buf.physical_elems, 1)


def _runner(module: S.Module, tag: str) -> str:
    """run_<tag>(dir): allocates every tensor at its exact size, reads the inputs, poisons the outputs with NaN,
    zeroes the workspaces (poisons them with NaN where the module says its kernels overwrite them: a workspace
    element read before it is written then shows), launches each kernel in order, writes the outputs."""
    buffers = (*module.args, *module.workspaces)
    index = {b: i for i, b in enumerate(buffers)}
    out = [f"static void run_{tag}(const char* dir) {{", "  char path[4096];",
           f"  std::vector<float*> bufs({len(buffers)});"]
    for i, b in enumerate(buffers):
        n = _exact_size(b)
        out.append(f"  bufs[{i}] = tf_alloc({n});")
        if i < module.num_inputs:
            out.append(f'  snprintf(path, sizeof path, "%s/in{i}.bin", dir); tf_read(path, bufs[{i}], {n});')
        elif b in module.workspaces:
            out.append(f"  memset(bufs[{i}], {0xFF if module.overwrites_workspaces else 0}, {n} * 4);")
        else:
            out.append(f"  for (size_t e = 0; e < {n}; ++e) bufs[{i}][e] = NAN;")
    for k in module.kernels:
        args = ", ".join(f"bufs[{index[p]}]" for p in k.params)
        grid, block = ", ".join(map(str, k.grid)), ", ".join(map(str, k.block))
        out.append(f"  tf_launch([&] {{ {k.name}_{tag}({args}); }}, tf_dim3{{{grid}}}, tf_dim3{{{block}}});")
    for i, b in enumerate(module.args[module.num_inputs:], start=module.num_inputs):
        out.append(f'  snprintf(path, sizeof path, "%s/{tag}_out{i}.bin", dir); '
                   f"tf_write(path, bufs[{i}], {_exact_size(b)});")
    out.append("  for (float* p : bufs) free(p);")
    out.append("}")
    return "\n".join(out)


def _program(modules: list[S.Module], tags: list[str], which: list[int], target) -> str:
    """One executable's source: the modules numbered `which` (of the whole batch), `argv[2]` picks the one to run."""
    parts = [PRELUDE]
    for i in which:
        parts += [_kernel_source(modules[i], target, tags[i]), _runner(modules[i], tags[i])]
    parts.append("int main(int argc, char** argv) {\n  const int which = atoi(argv[2]);")
    for i in which:
        parts.append(f'  if (which == {i}) {{ fprintf(stderr, "run {tags[i]}\\n"); run_{tags[i]}(argv[1]); }}')
    parts.append("  return 0;\n}\n")
    return "\n".join(parts)


def _compile(source: str, exe: Path) -> Path:
    src = exe.with_suffix(".cpp")
    src.write_text(source)
    proc = subprocess.run(["g++", "-std=c++20", "-O1", "-g0", "-pthread", "-fno-strict-aliasing",
                           "-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-w",
                           str(src), "-o", str(exe)], capture_output=True, text=True, timeout=1200)
    if proc.returncode != 0:
        raise RuntimeError(f"emulation build failed:\n{proc.stderr[-4000:]}")
    return exe


def build_and_run(modules: list[S.Module], target, inputs: list[np.ndarray], timeout_s: float = 120.0):
    """Runs every module (all on the same inputs) on the CPU; returns, per module, its outputs, or a string
    saying how the run failed (sanitizer report, deadlock, crash). The modules are split over RUNNERS
    executables, compiled at once (g++ takes one core each)."""
    tags = [f"m{i}" for i in range(len(modules))]
    groups = [list(range(j, len(modules), RUNNERS)) for j in range(min(RUNNERS, len(modules)))]
    with tempfile.TemporaryDirectory(prefix="tf-cuda-emu-") as tmp:
        for i, a in enumerate(inputs):
            np.ascontiguousarray(a, dtype=np.float32).tofile(Path(tmp) / f"in{i}.bin")
        with ThreadPoolExecutor(max_workers=RUNNERS) as pool:  # each build and each run is its own process
            exes = list(pool.map(lambda j: _compile(_program(modules, tags, groups[j], target),
                                                    Path(tmp) / f"emulated{j}"), range(len(groups))))
            exe_of = {i: exes[j] for j, group in enumerate(groups) for i in group}
            return list(pool.map(lambda i: _run_one(exe_of[i], tmp, i, modules[i], tags[i], timeout_s),
                                 range(len(modules))))


def _run_one(exe: Path, tmp: str, i: int, module: S.Module, tag: str, timeout_s: float):
    try:
        proc = subprocess.run([str(exe), tmp, str(i)], capture_output=True, text=True, timeout=timeout_s,
                              env={"ASAN_OPTIONS": "detect_leaks=0", "PATH": "/usr/bin:/bin"})
    except subprocess.TimeoutExpired:
        return f"no result after {timeout_s:.0f} s (a barrier some threads never reach deadlocks)"
    if proc.returncode != 0:
        return f"exit {proc.returncode}:\n{proc.stderr[-3000:]}"
    outs = []
    for k, b in enumerate(module.args[module.num_inputs:], start=module.num_inputs):
        data = np.fromfile(Path(tmp) / f"{tag}_out{k}.bin", dtype=np.float32)
        outs.append(data[: int(np.prod(b.shape))].reshape(b.shape))
    return outs
