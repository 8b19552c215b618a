"""The Hopper GEMM probe's building blocks: the generated kernel pinned by a golden file, tensor-map rules and
kernel-argument packing (unit), every default knob set builds for sm_90a without spills and with HGMMA in the SASS
(nvcc), and small and odd shapes are exact on a GPU (gpu). The layout and pipeline models: tests/unit/
test_sm90_layout_model.py."""
from __future__ import annotations

import ctypes
import os
import re
import struct
import sys

import pytest

from compiler_core.codegen import cuda_sm90 as sm90
from compiler_core.codegen import sm90_gemm
from compiler_core.codegen.sm90_gemm import HopperGemmConfig
from compiler_core.errors import BuildError, ConfigError
from compiler_core.runtime import cubin_params, nvcc_sm90, tensor_map
from compiler_core.runtime.sm90_gemm_launch import ARG_KINDS

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
import hopper_gemm_probe as probe  # noqa: E402

DEFAULTS = [HopperGemmConfig.of(k) for k in probe.DEFAULT_KNOBS]


# ---- unit: the generated kernel is pinned ------------------------------------------------------------------------
GOLDEN = os.path.join(os.path.dirname(__file__), "..", "golden", "sm90_gemm_128x128_f16.cu")


def test_generated_kernel_matches_golden(request):
    """Drift in the Hopper kernel must be intended: rerun with --update-golden after a deliberate change."""
    source = sm90_gemm.render(DEFAULTS[0], "float16")
    if request.config.getoption("--update-golden"):
        with open(GOLDEN, "w") as f:
            f.write(source)
    with open(GOLDEN) as f:
        assert source == f.read(), "the generated sm90 GEMM drifted from tests/golden/sm90_gemm_128x128_f16.cu"


def test_setmaxnreg_counts_obey_ptx_and_roles_are_warpgroup_uniform():
    """setmaxnreg: counts in 24..256, multiples of 8; dec at or below and inc at or above the count the launch
    bounds give every thread at entry (65536 / threads, rounded down to 8); the moved registers fit the file. Each
    is the first statement of its role's branch, and the branch is on the warpgroup index (uniform per warpgroup)."""
    producer, consumer = sm90_gemm.REGS_PRODUCER, sm90_gemm.REGS_CONSUMER
    for cfg in (c for c in DEFAULTS if c.consumers == 2):
        entry = 65536 // cfg.threads // 8 * 8
        for r in (producer, consumer):
            assert 24 <= r <= 256 and r % 8 == 0
        assert producer <= entry <= consumer and 128 * (producer + cfg.consumers * consumer) <= 65536
        src = sm90_gemm.render(cfg)
        assert re.search(rf"const int warpgroup = threadIdx\.x / 128;\s*if \(warpgroup == 0\) \{{\s*"
                         rf"tf_setmaxnreg_dec<{producer}>\(\);[^{{}}]*\}} else \{{\s*"
                         rf"tf_setmaxnreg_inc<{consumer}>\(\);",
                         src), "setmaxnreg must open each warpgroup-uniform role branch"
    assert "setmaxnreg_" not in sm90_gemm.render(HopperGemmConfig(consumers=1)).split("extern \"C\"")[1]


# ---- unit: config rules, tensor maps and kernel arguments --------------------------------------------------------
@pytest.mark.parametrize("knobs, rule", [
    (dict(bk=32), "bk must be 64"),
    (dict(bm=64, consumers=2), "whole m64 slices"),
    (dict(bm=128, bn=256, consumers=1), "accumulators"),
    (dict(bn=96), "bn must be"),
    (dict(bm=128, bn=256, stages=6), "shared memory"),
    (dict(cluster=4), "cluster must be 1 or 2"),
    (dict(cluster=2, b_kmajor=True), "N-major"),
])
def test_bad_knobs_name_their_rule(knobs, rule):
    with pytest.raises(ConfigError, match=rule):
        sm90_gemm.check(HopperGemmConfig(**knobs))


def test_expect_tx_bytes_are_the_boxes_the_producer_loads():
    for cfg in DEFAULTS:
        lay = sm90_gemm.smem_layout(cfg, "float16")
        a = tensor_map.row_major("float16", (4095, 1000), cfg.bm, cfg.bk)
        if cfg.b_kmajor:
            b, b_loads = tensor_map.row_major("float16", (4097, 1000), cfg.bn, cfg.bk), 1
        else:
            b, b_loads = tensor_map.row_major("float16", (1000, 4104), cfg.bk, 64), cfg.bn // 64
        assert a.box_bytes == lay.a_stage and b.box_bytes * b_loads == lay.b_stage
        src = sm90_gemm.render(cfg)
        assert f"A_STAGE_BYTES = {lay.a_stage};" in src and f"B_STAGE_BYTES = {lay.b_stage};" in src


@pytest.mark.parametrize("args, rule", [
    (("float16", (1000, 4097), 64, 64), "multiple of 16"),  # N = 4097 halves: rows not 16-byte aligned
    (("float16", (1000, 4096), 64, 128), "inner extent"),  # 256-byte box rows exceed the 128B swizzle
    (("float32", (64, 64), 300, 16), "box"),
    (("int4", (64, 64), 64, 64), "dtype"),
])
def test_tensor_map_rules(args, rule):
    with pytest.raises(tensor_map.TensorMapError, match=rule):
        tensor_map.row_major(*args)


def test_batched_map_and_alignment():
    spec = tensor_map.row_major("bfloat16", (3, 100, 72), 128, 64)
    assert spec.dims == (72, 100, 3) and spec.strides == (144, 14400) and spec.box == (64, 128, 1)
    with pytest.raises(tensor_map.TensorMapError, match="16-byte aligned"):
        spec.check(address=0x1008)


def test_kernel_arguments_pack_where_the_kernel_reads_them():
    """sm_90's parameter space starts at constant bank offset 0x210, and a tensor map's 64-byte alignment holds at
    its bank address: the maps sit at 0x30 and 0xb0, not where natural packing from 0 puts them (0 and 128), which
    is what the first H100 run did (TMA read half of one map and half of the next: illegal instruction; M, N, K
    came from past the end of the buffer)."""
    cuda = tensor_map.cuda_param_offsets(ARG_KINDS)
    assert cuda == [0x30, 0xB0, 0x130, 0x138, 0x13C, 0x140]
    assert tensor_map.packed_param_offsets(ARG_KINDS) == [0, 128, 256, 264, 268, 272] != cuda
    assert tensor_map.cuda_param_offsets(("pointer", "int32", "int32")) == [0, 8, 12]  # nothing over 16: as packed
    map_a, map_b = bytes(range(128)), bytes(range(128, 256))
    buf = tensor_map.pack_params(ARG_KINDS, (map_a, map_b, 0x7F0012345600, 4095, 4097, 1000), cuda, 0x144)
    assert len(buf) == 0x144 and buf[:0x30] == bytes(0x30)
    assert buf[0x30:0xB0] == map_a and buf[0xB0:0x130] == map_b
    assert struct.unpack_from("<Qiii", buf, 0x130) == (0x7F0012345600, 4095, 4097, 1000)
    assert tensor_map.param_buffer_format(0x144) == ["324s"]


def test_param_layout_check_names_the_mismatch():
    params = [cubin_params.KernelParam(i, o, s) for i, (o, s) in
              enumerate(((0x30, 128), (0xB0, 128), (0x130, 8), (0x138, 4), (0x13C, 4), (0x140, 4)))]
    assert tensor_map.check_param_layout(ARG_KINDS, params) == tensor_map.cuda_param_offsets(ARG_KINDS)
    with pytest.raises(tensor_map.TensorMapError, match="5 parameters"):
        tensor_map.check_param_layout(ARG_KINDS, params[:5])
    with pytest.raises(tensor_map.TensorMapError, match="parameter 2"):
        tensor_map.check_param_layout(ARG_KINDS, params[:2] + [cubin_params.KernelParam(2, 0x130, 4)] + params[3:])


def test_kernel_signature_matches_the_argument_kinds():
    src = sm90_gemm.render(HopperGemmConfig())
    params = re.search(r"tf_sm90_gemm_\w+\(([^)]*)\)\s*\{", src).group(1)
    kinds = {"tf_tensor_map": "tensor_map", "out_t*": "pointer", "int": "int32"}
    got = tuple(kinds[p.replace("const __grid_constant__", "").split()[0]] for p in params.split(","))
    assert got == ARG_KINDS


def test_encode_without_libcuda_is_a_build_error(monkeypatch):
    def no_driver(name, *a, **k):
        raise OSError(f"{name}: cannot open shared object file")

    tensor_map.load_libcuda.cache_clear()
    monkeypatch.setattr(ctypes, "CDLL", no_driver)
    with pytest.raises(BuildError, match="libcuda.so.1"):
        tensor_map.encode(tensor_map.row_major("float16", (64, 64), 64, 64), 0x10000)
    tensor_map.load_libcuda.cache_clear()


def test_probe_parses_knobs_and_shapes():
    assert probe.parse_knobs("bm=256,persistent=0,out=float32") == dict(bm=256, persistent=False, out="float32")
    assert probe.parse_shape("4095x4097x1000") == (4095, 4097, 1000)
    with pytest.raises(ConfigError):
        probe.parse_knobs("bq=1")
    assert all(sm90_gemm.check(c, ab) is None for c in DEFAULTS for ab in ("float16", "bfloat16"))


# ---- nvcc: every default knob set builds for sm_90a, no spills, HGMMA --------------------------------------------
@pytest.mark.nvcc
def test_default_knob_sets_build_without_spills():
    pairs = [(c, "float16") for c in DEFAULTS] + [(DEFAULTS[1], "bfloat16")]
    rows = probe.build_all(pairs, jobs=2)
    for row in rows:
        assert "error" not in row, row.get("error")
        assert row.get("registers"), f"no ptxas report for {row['kernel']}"
        assert not (row["stack_frame"] or row["spill_stores"] or row["spill_loads"]), row
        assert not any("C7508" in w or "serialized" in w for w in row["warnings"]), row["warnings"]
        if "hgmma" in row:  # a disassembler is installed
            assert row["hgmma"] > 0 and row["local_ops"] == 0, row
        # the launcher packs its buffer where this cubin's kernel reads each parameter (KPARAM_INFO), which is
        # where the sm_90 model puts them; 0 and 128 for the maps (natural packing) was the first H100 run's fault
        params = cubin_params.kernel_params(row["cubin"], row["kernel"])
        assert tensor_map.check_param_layout(ARG_KINDS, params) == tensor_map.cuda_param_offsets(ARG_KINDS), params
        assert cubin_params.param_space_bytes(params) == 0x144
        cfg = HopperGemmConfig.of(row["knobs"])
        text = nvcc_sm90.sass(row["cubin"])
        if text is not None:
            _check_sass_rules(text, cfg, row["registers"])


def _check_sass_rules(text: str, cfg: HopperGemmConfig, registers: int) -> None:
    """No trap or breakpoint; setmaxnreg as PTX allows it: counts in 24..256, multiples of 8, dec below and inc above
    the count at entry, and the CTA's warpgroups within the 64K-register file after the move."""
    assert not re.search(r"\b(BPT|TRAP)\b", text), "a trap/breakpoint instruction in the kernel"
    dec = [int(v, 16) for v in re.findall(r"USETMAXREG\.DEALLOC\S*\s+(0x[0-9a-f]+)", text)]
    inc = [int(v, 16) for v in re.findall(r"USETMAXREG\.TRY_ALLOC\S*\s+\w+,\s*(0x[0-9a-f]+)", text)]
    if cfg.consumers == 1:
        assert not dec and not inc
        return
    assert dec == [sm90_gemm.REGS_PRODUCER] and inc == [sm90_gemm.REGS_CONSUMER], (dec, inc)
    for r in dec + inc:
        assert 24 <= r <= 256 and r % 8 == 0, r
    assert dec[0] <= registers <= inc[0], (dec, registers, inc)
    assert 128 * dec[0] + 128 * cfg.consumers * inc[0] <= 65536


@pytest.mark.nvcc
@pytest.mark.parametrize("kinds", [("int32", "tensor_map"), ("pointer", "tensor_map", "int32"),
                                   ("pointer", "int32", "int32"), ARG_KINDS,
                                   ("tensor_map", "int32", "tensor_map", "pointer")])
def test_param_offset_model_matches_ptxas(kinds):
    """cuda_param_offsets (alignment at the constant-bank address, the space starting at 0x210) is what ptxas
    records for sm_90a, for tensor maps anywhere in the signature."""
    types = {"int32": "int", "pointer": "float*", "tensor_map": "const __grid_constant__ tf_tensor_map"}
    args = ", ".join(f"{types[k]} p{i}" for i, k in enumerate(kinds))
    uses = " ".join(f"tf_prefetch_tensor_map(&p{i});" for i, k in enumerate(kinds) if k == "tensor_map")
    src = sm90.prelude(["tma"]) + f'extern "C" __global__ void probe_params({args}) {{ {uses} }}\n'
    build = nvcc_sm90.compile_sm90a(src)
    params = cubin_params.kernel_params(build.cubin, "probe_params")
    assert [p.offset for p in params] == tensor_map.cuda_param_offsets(kinds)
    assert [p.size for p in params] == [tensor_map.PARAM_KINDS[k][0] for k in kinds]


# ---- gpu: small and odd shapes are exact -------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("ab", ["float16", "bfloat16"])
def test_small_and_odd_shapes(ab):
    import torch

    from compiler_core.runtime.sm90_gemm_launch import HopperGemm

    torch.backends.cuda.matmul.allow_tf32 = False
    for cfg in (DEFAULTS[0], DEFAULTS[3], DEFAULTS[6]):
        gemm = HopperGemm(cfg, ab, nvcc_sm90.compile_sm90a(sm90_gemm.render(cfg, ab)).cubin)
        out = getattr(torch, cfg.out_dtype(ab))
        for m, n, k in ((256, 384, 320), (131, 197, 77), (16, 64, 8)):
            a = torch.randn((m, k), device="cuda").to(getattr(torch, ab))
            b = torch.randn((k, n), device="cuda").to(getattr(torch, ab))
            c = torch.full((m, n), float("nan"), dtype=out, device="cuda")
            gemm.bind(a, b.t().contiguous() if cfg.b_kmajor else b, c)()
            torch.cuda.synchronize()
            ref = a.float() @ b.float()
            err = (c.float() - ref).abs().max().item() / ref.abs().max().item()
            assert not torch.isnan(c).any(), f"{cfg.short()} {ab} {m}x{n}x{k}: elements left unwritten"
            assert err <= probe.TOLERANCE[cfg.out_dtype(ab)], f"{cfg.short()} {ab} {m}x{n}x{k}: error {err:.2e}"


# ---- nvcc: the probe's parameter echo check, against an emulated launch ----------------------------------------
class _FakeOut:
    def __init__(self) -> None:
        self.data = bytearray(35 * 8)

    def data_ptr(self) -> int:
        return 0x7F0000001000

    def cpu(self):
        return self

    def numpy(self):
        return self

    def tobytes(self) -> bytes:
        return bytes(self.data)


def _emulated_echo(monkeypatch, read_offsets):
    """check_param_passing with pycuda and torch replaced: the 'kernel' reads tm_a, tm_b, out, M, N, K from the
    packed buffer at `read_offsets` (None: the offsets the cubin names) and writes what the echo kernel writes."""
    import types

    from compiler_core.runtime import sm90_gemm_launch as launch

    cubin = nvcc_sm90.compile_sm90a(launch.echo_kernel_source()).cubin
    offsets = read_offsets or [p.offset for p in cubin_params.kernel_params(cubin, launch.ECHO_KERNEL)]
    out = _FakeOut()

    class Fn:
        def prepare(self, fmt):
            self.size = int(fmt[0][:-1])

        def prepared_call(self, grid, block, buf):
            assert len(buf) == self.size
            a, b = buf[offsets[0]:offsets[0] + 128], buf[offsets[1]:offsets[1] + 128]
            m, n, k = (struct.unpack_from("<i", buf.ljust(512, b"\0"), o)[0] for o in offsets[3:])
            out.data[:] = a + b + struct.pack("<qqq", m, n, k)

    fake_drv = types.SimpleNamespace(module_from_buffer=lambda c: types.SimpleNamespace(get_function=lambda n: Fn()))
    fake_torch = types.SimpleNamespace(zeros=lambda *a, **k: out, int64=None,
                                       cuda=types.SimpleNamespace(synchronize=lambda: None))
    monkeypatch.setattr(launch, "driver", lambda: fake_drv)
    monkeypatch.setitem(sys.modules, "torch", fake_torch)
    return launch.check_param_passing(cubin)


@pytest.mark.nvcc
def test_param_echo_passes_when_the_kernel_reads_where_we_pack(monkeypatch):
    assert _emulated_echo(monkeypatch, None) == "ok"


@pytest.mark.nvcc
def test_param_echo_catches_natural_packing(monkeypatch):
    """Had the kernel read at the offsets natural packing uses (or we packed there), the echo says so."""
    with pytest.raises(BuildError, match="tm_a arrived"):
        _emulated_echo(monkeypatch, tensor_map.packed_param_offsets(ARG_KINDS))
