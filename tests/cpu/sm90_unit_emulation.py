"""Runs the Hopper GEMM's own scheduling text on the CPU: the rendered kernel's constants, tile scheduler, work units
and producer (codegen/sm90_gemm.py, sm90_gemm_units.py) compiled as host C++ with g++, the TMA loads, mbarriers and
cluster rank replaced by stubs that print what they were asked, plus a walk built from the consumer's own loop head,
tile origin, K loop bounds and output pointer (cut from its text). A test harness, not a runtime: what it prints is
what each CTA of a launch would load and where it would store, for tests/sm90_unit_model to check.

Output lines: `L cta iteration map dst c0 c1 c2 mask` per TMA load (map 0 = A, 1 = B; dst: bytes from the shared
base; mask 0 for a plain load) and `U cta m0 n0 kb_begin kb_end c_offset` per unit a consumer warpgroup walks.
"""
from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

from compiler_core.codegen import sm90_gemm

STUBS = r"""
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
using std::min;
#define __device__
#define __forceinline__ inline
struct __half { uint16_t x; };
struct __nv_bfloat16 { uint16_t x; };
struct tf_tensor_map { int id; };
struct tf_dim3 { unsigned x, y, z; };
static tf_dim3 blockIdx, gridDim;
static int tf_iteration = -1;  // the producer's K block, counted by its expect_tx arrivals
static unsigned char* tf_smem_base;
static void tf_prefetch_tensor_map(const tf_tensor_map*) {}
static void tf_mbar_wait(uint64_t*, uint32_t) {}
static void tf_mbar_arrive_expect_tx(uint64_t*, uint32_t) { ++tf_iteration; }
static void tf_load(void* dst, const tf_tensor_map* map, unsigned mask, int c0, int c1, int c2) {
  printf("L %u %d %d %ld %d %d %d %u\n", blockIdx.x, tf_iteration, map->id,
         static_cast<long>(static_cast<unsigned char*>(dst) - tf_smem_base), c0, c1, c2, mask);
}
static void tf_tma_load_2d(void* d, const tf_tensor_map* m, uint64_t*, int c0, int c1) { tf_load(d, m, 0, c0, c1, 0); }
static void tf_tma_load_3d(void* d, const tf_tensor_map* m, uint64_t*, int c0, int c1, int c2) {
  tf_load(d, m, 0, c0, c1, c2);
}
static void tf_tma_load_2d_multicast(void* d, const tf_tensor_map* m, uint64_t*, uint16_t mask, int c0, int c1) {
  tf_load(d, m, mask, c0, c1, 0);
}
static void tf_tma_load_3d_multicast(void* d, const tf_tensor_map* m, uint64_t*, uint16_t mask, int c0, int c1,
                                     int c2) {
  tf_load(d, m, mask, c0, c1, c2);
}
"""

MAIN = r"""
int main(int argc, char** argv) {
  const int M = atoi(argv[1]), N = atoi(argv[2]), K = atoi(argv[3]);
  static unsigned char smem[SMEM_TOTAL];
  tf_smem_base = smem;
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + SMEM_BARS);
  tf_tensor_map tm_a{0}, tm_b{1};
  gridDim = {static_cast<unsigned>(atoi(argv[4])), 1, 1};
  for (unsigned cta = 0; cta < gridDim.x; ++cta) {
    blockIdx = {cta, 0, 0};
    tf_iteration = -1;
    run_producer(&tm_a, &tm_b, smem, full, full + STAGES, M, N, K);
    consumer_walk(M, N, K);
  }
  return 0;
}
"""


def consumer_walk(kernel: str) -> str:
    """`consumer_walk(M, N, K)`: run_consumer's unit loop with its own head, unit and tile lines, K loop bounds and
    output pointer, printing each unit instead of computing it."""
    consumer = kernel[kernel.index("void run_consumer("):]
    head = re.search(r"for \(int tile = sc\.first; tile < (.+?); tile \+= sc\.step\) \{\n(.*?)\n\s*float acc",
                     consumer, re.S)
    k_loop = re.search(r"for \(int kb = (.+?); kb < (.+?); \+\+kb\)", consumer)
    store = re.search(r"(?:store_tile\(acc, staging|reduce_split\(acc, smem), (.+?), t\.m0", consumer)
    if not (head and k_loop and store):
        raise ValueError("run_consumer's text no longer has the loop this harness cuts out")
    return f"""
static void consumer_walk(int M, int N, int K) {{
  out_t* const c = nullptr;
  const Schedule sc = make_schedule(M, N, K);
  for (int tile = sc.first; tile < {head[1]}; tile += sc.step) {{
{head[2]}
    printf("U %u %d %d %d %d %lld\\n", blockIdx.x, t.m0, t.n0, int({k_loop[1]}), int({k_loop[2]}),
           static_cast<long long>(({store[1]}) - c));
  }}
}}
"""


def host_source(kernel: str) -> str:
    """The harness around `kernel` (sm90_gemm.render_kernel's text)."""
    constants, body = kernel.split("\n// Where the ring stands", 1)
    scheduling = "// Where the ring stands" + body.split("// ---- epilogue")[0]
    rank = "static uint32_t tf_cluster_rank() { return blockIdx.x % CLUSTER; }\n"
    return STUBS + constants + rank + scheduling + consumer_walk(kernel) + MAIN


def run(cfg, M: int, N: int, K: int, grid: int, kernel: str | None = None, timeout_s: float = 120.0):
    """(loads, units) per CTA from the harness around `kernel` (default: the kernel `cfg` renders):
    loads[cta] = [(iteration, map, dst, c0, c1, c2, mask)], units[cta] = [(m0, n0, kb_begin, kb_end, c_offset)]."""
    kernel = kernel if kernel is not None else sm90_gemm.render_kernel(cfg, "float16")
    with tempfile.TemporaryDirectory(prefix="tf-sm90-units-") as tmp:
        src, exe = Path(tmp) / "units.cpp", Path(tmp) / "units"
        src.write_text(host_source(kernel))
        build = subprocess.run(["g++", "-std=c++17", "-O0", "-w", str(src), "-o", str(exe)], capture_output=True,
                               text=True, timeout=600)
        if build.returncode != 0:
            raise RuntimeError(f"harness build failed:\n{build.stderr[-4000:]}")
        proc = subprocess.run([str(exe), str(M), str(N), str(K), str(grid)], capture_output=True, text=True,
                              timeout=timeout_s)
    if proc.returncode != 0:
        raise RuntimeError(f"harness exit {proc.returncode}:\n{proc.stderr[-2000:]}")
    loads = {cta: [] for cta in range(grid)}
    units = {cta: [] for cta in range(grid)}
    for line in proc.stdout.splitlines():
        kind, cta, *values = line.split()
        (loads if kind == "L" else units)[int(cta)].append(tuple(int(v) for v in values))
    return loads, units
