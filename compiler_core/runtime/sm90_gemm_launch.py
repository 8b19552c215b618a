"""Load a compiled Hopper GEMM (compiler_core/codegen/sm90_gemm.py) through pycuda on the primary context shared
with PyTorch, and bind it to torch tensors: tensor maps encoded once, dynamic shared memory opted in, the grid
sized for persistent or one-tile-per-CTA launches. Returns a zero-argument launcher for timing loops.

TMA needs every row stride (and the base address) to be a multiple of 16 bytes. An operand whose row length in
bytes is not (K or N not a multiple of 8 for 16-bit inputs) is copied once into a buffer with a padded leading
dimension; the map keeps the true dims, so the padding reads as out of bounds (zeros) and the result is exact.
The launcher records which operands it padded; the copy happens at bind time, outside any timed launch.

Arguments go to the kernel as one buffer laid out like its parameter space, at the offsets the cubin names
(compiler_core/runtime/cubin_params.py; tensor_map.py says why natural packing from 0 is wrong for tensor maps).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from compiler_core.codegen.sm90_gemm import B_BOX_COLS, HopperGemmConfig, kernel_name, smem_layout
from compiler_core.errors import BuildError
from compiler_core.runtime import cubin_params, tensor_map
from compiler_core.runtime.cuda_runtime import driver

ARG_KINDS = ("tensor_map", "tensor_map", "pointer", "int32", "int32", "int32")  # tm_a, tm_b, c, M, N, K
TORCH_DTYPES = {"float16": "float16", "bfloat16": "bfloat16", "float32": "float32"}


@dataclass
class BoundGemm:
    """A launch of one kernel on fixed tensors: call it to enqueue the kernel on the default stream."""
    launch_args: tuple  # (the packed parameter buffer,)
    grid: int
    threads: int
    smem: int
    padded: list = field(default_factory=list)
    keepalive: list = field(default_factory=list)  # padded copies: the maps point into them
    fn: object = None

    def __call__(self) -> None:
        self.fn.prepared_call((self.grid, 1, 1), (self.threads, 1, 1), *self.launch_args, shared_size=self.smem)


class HopperGemm:
    """A loaded kernel of `cfg` for `ab` inputs (float16 | bfloat16)."""

    def __init__(self, cfg: HopperGemmConfig, ab: str, cubin: bytes, sm_count: int | None = None) -> None:
        if cfg.split_k != 1 or cfg.batch != 1:
            raise BuildError(f"{kernel_name(cfg, ab)}: this launcher binds one 2-D GEMM; split-K and batched kernels "
                             "run through the farm's path (schedules/cuda/gemm_sm90.py, runtime/opaque_launch.py)")
        drv = driver()
        self.cfg, self.ab = cfg, ab
        self.smem = smem_layout(cfg, ab).dynamic
        try:
            self._module = drv.module_from_buffer(cubin)
            self.fn = self._module.get_function(kernel_name(cfg, ab))
            self.fn.set_attribute(drv.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, self.smem)
        except Exception as exc:  # noqa: BLE001 - driver errors become BuildError with their text
            raise BuildError(f"loading {kernel_name(cfg, ab)} failed: {exc}") from None
        params = cubin_params.kernel_params(cubin, kernel_name(cfg, ab))
        self.param_offsets = tensor_map.check_param_layout(ARG_KINDS, params)
        self.param_bytes = cubin_params.param_space_bytes(params)
        self.fn.prepare(tensor_map.param_buffer_format(self.param_bytes))
        if sm_count is None:
            sm_count = drv.Context.get_device().get_attribute(drv.device_attribute.MULTIPROCESSOR_COUNT)
        self.sm_count = sm_count

    def grid(self, m: int, n: int) -> int:
        """CTAs to launch: a cluster (of cfg.cluster CTAs stacked along M) per tile, or, persistent, as many
        clusters as the SMs hold at once (one CTA per SM), each striding over the tiles."""
        cluster = self.cfg.cluster
        tiles = -(-m // (self.cfg.bm * cluster)) * -(-n // self.cfg.bn)
        clusters = min(tiles, self.sm_count // cluster) if self.cfg.persistent else tiles
        return clusters * cluster

    def bind(self, a, b, c) -> BoundGemm:
        """a: (M, K); b: (K, N), or (N, K) when cfg.b_kmajor; c: (M, N) of the output dtype; all contiguous
        CUDA tensors. Raises ValueError on mismatched shapes or dtypes."""
        m, k = a.shape
        n = b.shape[0] if self.cfg.b_kmajor else b.shape[1]
        kb = b.shape[1] if self.cfg.b_kmajor else b.shape[0]
        out = self.cfg.out_dtype(self.ab)
        _expect(kb == k and tuple(c.shape) == (m, n), f"shapes a{tuple(a.shape)} b{tuple(b.shape)} "
                                                      f"c{tuple(c.shape)} do not form a GEMM")
        _expect(min(m, n, k) >= 1, "M, N and K must be at least 1")
        _expect(str(a.dtype) == f"torch.{self.ab}" and str(b.dtype) == f"torch.{self.ab}",
                f"a and b must be {self.ab}, got {a.dtype} and {b.dtype}")
        _expect(str(c.dtype) == f"torch.{out}", f"c must be {out}, got {c.dtype}")
        _expect(all(t.is_cuda and t.is_contiguous() for t in (a, b, c)), "a, b and c must be contiguous CUDA tensors")
        bound = BoundGemm((), self.grid(m, n), self.cfg.threads, self.smem, fn=self.fn)
        a_t, lda = _tma_ready(a, "A", bound)
        b_t, ldb = _tma_ready(b, "B", bound)
        cfg = self.cfg
        map_a = tensor_map.encode(tensor_map.row_major(self.ab, (m, k), cfg.bm, cfg.bk, ld=lda), a_t.data_ptr())
        if cfg.b_kmajor:
            spec_b = tensor_map.row_major(self.ab, (n, k), cfg.bn, cfg.bk, ld=ldb)
        else:
            spec_b = tensor_map.row_major(self.ab, (k, n), cfg.bk, B_BOX_COLS, ld=ldb)
        map_b = tensor_map.encode(spec_b, b_t.data_ptr())
        bound.launch_args = (tensor_map.pack_params(ARG_KINDS, (map_a, map_b, c.data_ptr(), m, n, k),
                                                    self.param_offsets, self.param_bytes),)
        return bound


def _expect(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)


def _tma_ready(t, name: str, bound: BoundGemm):
    """(tensor, leading dimension): `t` itself, or a copy whose rows start 16-byte aligned."""
    rows, cols = t.shape
    esize = t.element_size()
    if (cols * esize) % 16 == 0 and t.data_ptr() % 16 == 0:
        return t, cols
    import torch

    ld = -(-cols * esize // 16) * 16 // esize
    padded = torch.zeros((rows, ld), dtype=t.dtype, device=t.device)
    padded[:, :cols] = t
    bound.padded.append(f"{name} (ld {cols} -> {ld})")
    bound.keepalive.append(padded)
    return padded, ld


# ---- a check of the launch path itself: the kernel reads back what the launcher packed -------------------------
ECHO_KERNEL = "tf_sm90_param_echo"


def echo_kernel_source() -> str:
    """A kernel with the GEMM's parameter list that copies what it receives (both maps, M, N, K) to `out`."""
    from compiler_core.codegen.cuda_sm90 import prelude

    return prelude(["base"]) + f"""
extern "C" __global__ void {ECHO_KERNEL}(const __grid_constant__ tf_tensor_map tm_a,
                                        const __grid_constant__ tf_tensor_map tm_b,
                                        unsigned long long* out, int M, int N, int K) {{
  const int i = threadIdx.x;
  if (i < 16) {{
    out[i] = tm_a.opaque[i];
    out[16 + i] = tm_b.opaque[i];
  }}
  if (i == 0) {{
    out[32] = static_cast<unsigned long long>(M);
    out[33] = static_cast<unsigned long long>(N);
    out[34] = static_cast<unsigned long long>(K);
  }}
}}
"""


def check_param_passing(cubin: bytes) -> str:
    """Launches the echo kernel (built from echo_kernel_source) exactly as the GEMMs are launched and compares what
    it read with what was packed: 'ok', or a BuildError that says which parameter arrived wrong."""
    import struct

    import torch

    drv = driver()
    module = drv.module_from_buffer(cubin)
    fn = module.get_function(ECHO_KERNEL)
    params = cubin_params.kernel_params(cubin, ECHO_KERNEL)
    offsets = tensor_map.check_param_layout(ARG_KINDS, params)
    size = cubin_params.param_space_bytes(params)
    fn.prepare(tensor_map.param_buffer_format(size))
    map_a, map_b = bytes(range(1, 129)), bytes(range(255, 127, -1))
    out = torch.zeros(35, dtype=torch.int64, device="cuda")
    fn.prepared_call((1, 1, 1), (32, 1, 1),
                     tensor_map.pack_params(ARG_KINDS, (map_a, map_b, out.data_ptr(), 4095, 4097, 1000), offsets, size))
    torch.cuda.synchronize()
    got = out.cpu().numpy().tobytes()
    del module
    names = ("tm_a", "tm_b", "M", "N", "K")
    want = (map_a, map_b, *(struct.pack("<q", v) for v in (4095, 4097, 1000)))
    at = 0
    for name, w in zip(names, want, strict=True):
        if got[at:at + len(w)] != w:
            raise BuildError(f"parameter {name} arrived as {got[at:at + len(w)].hex()}, packed {w.hex()} "
                             f"(offsets {offsets}, {size} bytes)")
        at += len(w)
    return "ok"
