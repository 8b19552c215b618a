"""Hopper GEMM probe: what TMA + mbarrier pipelines + wgmma reach in our stack, against cuBLAS (torch.matmul).

For each knob set (compiler_core/codegen/sm90_gemm.py) and input dtype it renders the kernel, builds it for sm_90a
(nvcc -gencode=arch=compute_90a,code=sm_90a -O3 -std=c++17, ptxas -v), then on a GPU checks C against an fp32
torch.matmul of the same inputs and times kernel and torch with triton.testing.do_bench (L2 flushed, median),
for each shape. Each (knob set, dtype) runs in its own child process with a time limit, so a kernel that hangs
(a wrong mbarrier phase spins forever) costs one row, not the run.

  On the GPU machine, from the repo root:
    python3 benchmarks/hopper_gemm_probe.py --out $OUT/hopper_probe.json
  Without a GPU (generate + nvcc every knob set; registers, spills, HGMMA in the SASS):
    python3 benchmarks/hopper_gemm_probe.py --compile-only
Knobs: --knobs 'bm=128,bn=256,stages=4,consumers=2,persistent=1,group_m=8,out=float32' (repeatable), --sweep for
a small grid. Shapes: --shapes 4096x4096x4096 (MxNxK). Progress goes to stderr, the table to stdout.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from compiler_core.codegen import sm90_gemm  # noqa: E402
from compiler_core.codegen.sm90_gemm import HopperGemmConfig  # noqa: E402
from compiler_core.errors import BuildError, ConfigError  # noqa: E402
from compiler_core.runtime import cubin_params, nvcc_sm90, tensor_map  # noqa: E402
from compiler_core.runtime.sm90_gemm_launch import ARG_KINDS  # noqa: E402

DEFAULT_SHAPES = ("4096x4096x4096", "8192x8192x8192", "1024x1024x1024", "128x4096x4096", "16x4096x4096",
                  "4095x4097x1000")
DEFAULT_KNOBS = (  # what each one asks
    dict(bm=128, bn=128, stages=4, consumers=2),  # the baseline: two consumer warpgroups of 64 x 128
    dict(bm=128, bn=256, stages=4, consumers=2),  # CUTLASS's favourite 128 x 256 cooperative tile
    dict(bm=256, bn=128, stages=4, consumers=2),  # two m64 slices per consumer
    dict(bm=128, bn=256, stages=3, consumers=2, out="float32"),  # fp32 C
    dict(bm=64, bn=128, stages=6, consumers=1),  # small M: one consumer, deep ring
    dict(bm=128, bn=128, stages=4, consumers=1, persistent=False, group_m=1),  # simplest launch: a CTA per tile
    dict(bm=128, bn=128, stages=4, consumers=2, b_kmajor=True),  # B given transposed (K-major)
    dict(bm=128, bn=256, stages=4, consumers=2, cluster=2),  # 2-CTA clusters along M sharing B by TMA multicast
)
SWEEP = dict(bm=(128, 256), bn=(128, 192, 256), stages=(3, 4, 5), consumers=(2,), cluster=(1, 2))  # invalid: dropped
DTYPES = {"fp16": "float16", "bf16": "bfloat16", "float16": "float16", "bfloat16": "bfloat16"}
TOLERANCE = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 1e-4}  # max |C - ref| / max |ref|


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ---- knobs and shapes ------------------------------------------------------------------------------------------
def parse_knobs(text: str) -> dict:
    out = {}
    for item in filter(None, text.split(",")):
        key, _, value = item.partition("=")
        field = HopperGemmConfig.__dataclass_fields__.get(key.strip())
        if field is None:
            raise ConfigError(f"unknown knob {key!r}")
        kind = type(getattr(HopperGemmConfig(), key.strip()))
        out[key.strip()] = value.strip().lower() in ("1", "true", "yes") if kind is bool else kind(value.strip())
    return out


def parse_shape(text: str) -> tuple[int, int, int]:
    m, n, k = (int(v) for v in text.lower().split("x"))
    return m, n, k


def sweep_configs() -> list[dict]:
    import itertools

    keys = list(SWEEP)
    return [dict(zip(keys, values, strict=True)) for values in itertools.product(*(SWEEP[k] for k in keys))]


def valid_configs(knob_dicts, dtypes) -> list[tuple[HopperGemmConfig, str]]:
    """(config, input dtype) pairs that pass the generator's checks; the others are reported and dropped."""
    pairs = []
    for knobs in knob_dicts:
        cfg = HopperGemmConfig.of(knobs)
        for ab in dtypes:
            try:
                sm90_gemm.check(cfg, ab)
            except ConfigError as exc:
                log(f"skip {cfg.short()} {ab}: {exc}")
                continue
            pairs.append((cfg, ab))
    return pairs


# ---- build -----------------------------------------------------------------------------------------------------
def build_one(cfg: HopperGemmConfig, ab: str, disassembler) -> dict:
    name = sm90_gemm.kernel_name(cfg, ab)
    row = {"kernel": name, "knobs": cfg.as_dict(), "dtype": ab, "smem_bytes": sm90_gemm.smem_layout(cfg, ab).dynamic}
    started = time.perf_counter()
    try:
        build = nvcc_sm90.compile_sm90a(sm90_gemm.render(cfg, ab))
    except BuildError as exc:
        return {**row, "error": str(exc)}
    params = cubin_params.kernel_params(build.cubin, name)
    row["param_offsets"] = [p.offset for p in params]  # where the kernel reads tm_a, tm_b, c, M, N, K
    try:
        tensor_map.check_param_layout(ARG_KINDS, params)
    except tensor_map.TensorMapError as exc:
        row["error"] = f"parameter layout: {exc}"
    res = build.kernels.get(name)
    row.update(compile_s=round(time.perf_counter() - started, 1), warnings=list(build.warnings), cubin=build.cubin)
    if res:
        row.update(registers=res.registers, stack_frame=res.stack_frame, spill_stores=res.spill_stores,
                   spill_loads=res.spill_loads)
    text = nvcc_sm90.sass(build.cubin, disassembler) if disassembler else None
    if text is not None:
        row.update(hgmma=nvcc_sm90.count_opcode(text, "HGMMA"), hmma=nvcc_sm90.count_opcode(text, "HMMA"),
                   local_ops=nvcc_sm90.count_opcode(text, "LDL") + nvcc_sm90.count_opcode(text, "STL"))
    return row


def build_all(pairs, jobs: int) -> list[dict]:
    disassembler = nvcc_sm90.find_disassembler()
    log(f"building {len(pairs)} kernels for sm_90a with {jobs} parallel nvcc; SASS via "
        f"{disassembler[0] if disassembler else 'nothing (no cuobjdump/nvdisasm)'}")

    def one(pair):
        row = build_one(*pair, disassembler)
        log(f"  built {row['kernel']}: " + (row.get("error", "").splitlines()[0] if "error" in row else
                                             f"{row.get('registers')} regs, {row.get('compile_s')} s"))
        return row

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(one, pairs))


def print_build_table(rows: list[dict]) -> None:
    print(f"{'kernel':58} {'regs':>5} {'stack':>5} {'spill st/ld':>11} {'HGMMA':>6} {'smem':>7}  notes")
    for r in rows:
        if "error" in r:
            print(f"{r['kernel']:58} BUILD FAILED: {r['error'].splitlines()[-1][:100]}")
            continue
        hg = "n/a" if "hgmma" not in r else str(r["hgmma"])
        notes = "; ".join(w[:90] for w in r.get("warnings", []))
        print(f"{r['kernel']:58} {r.get('registers', '?'):>5} {r.get('stack_frame', '?'):>5} "
              f"{str(r.get('spill_stores', '?')) + '/' + str(r.get('spill_loads', '?')):>11} {hg:>6} "
              f"{r['smem_bytes']:>7}  {notes}")


def build_ok(row: dict) -> bool:
    return "error" not in row and not (row.get("stack_frame") or row.get("spill_stores") or row.get("spill_loads"))


# ---- GPU side (child process) ----------------------------------------------------------------------------------
def run_child(spec: dict) -> list[dict]:
    """Check and time one kernel over the shapes; returns one row per shape."""
    cfg, ab = HopperGemmConfig.of(spec["knobs"]), spec["dtype"]
    try:
        import torch
        from triton.testing import do_bench

        from compiler_core.runtime.sm90_gemm_launch import HopperGemm

        torch.backends.cuda.matmul.allow_tf32 = False
        torch.cuda.init()
        echo = _param_echo(spec.get("echo_cubin_path"))
        with open(spec["cubin_path"], "rb") as f:
            gemm = HopperGemm(cfg, ab, f.read())
    except Exception as exc:  # noqa: BLE001 - no pycuda, no device, a module the driver refuses: one row each
        return [{"shape": "x".join(map(str, s)), "kernel": spec["kernel"], "knobs": spec["knobs"], "dtype": ab,
                 "error": f"setup: {type(exc).__name__}: {exc}"} for s in spec["shapes"]]
    rows = []
    for shape in spec["shapes"]:
        m, n, k = shape
        row = {"shape": f"{m}x{n}x{k}", "kernel": spec["kernel"], "knobs": spec["knobs"], "dtype": ab,
               "param_echo": echo}
        try:
            row.update(measure_shape(gemm, cfg, ab, m, n, k, torch, do_bench, spec["warmup"], spec["rep"]))
        except Exception as exc:  # noqa: BLE001 - one shape's failure is a row, the next shape still runs
            row["error"] = f"{type(exc).__name__}: {exc}"
            if "illegal" in str(exc).lower() or "launch" in str(exc).lower():
                rows.append(row)
                break  # the context is poisoned after a device fault
        rows.append(row)
        log(f"    {row['shape']:>16} {cfg.short()} {ab}: " + (row.get("error") or
            f"{row['tflops']:.0f} TFLOP/s vs torch {row['torch_tflops']:.0f} ({row['ratio']:.2f}x), "
            f"err {row['max_rel_err']:.1e} {'ok' if row['correct'] else 'WRONG'}"))
    return rows


def _param_echo(path: str | None) -> str | None:
    """Launches the parameter echo kernel the way the GEMMs are launched: 'ok', or what arrived wrong."""
    if not path:
        return None
    from compiler_core.runtime.sm90_gemm_launch import check_param_passing

    try:
        with open(path, "rb") as f:
            result = check_param_passing(f.read())
    except Exception as exc:  # noqa: BLE001 - reported in the rows; the GEMMs still run
        result = f"FAILED: {type(exc).__name__}: {exc}"
    log(f"    parameter echo (tensor maps, M, N, K through the launcher's packing): {result}")
    return result


def _bench(fn, do_bench, warmup: int, rep: int) -> float:
    try:
        return do_bench(fn, warmup=warmup, rep=rep, return_mode="median")
    except TypeError:  # older triton: no return_mode
        return do_bench(fn, warmup=warmup, rep=rep, quantiles=[0.5])[0]


def measure_shape(gemm, cfg, ab, m, n, k, torch, do_bench, warmup, rep) -> dict:
    tdt = getattr(torch, ab)
    out = getattr(torch, cfg.out_dtype(ab))
    gen = torch.Generator(device="cuda").manual_seed(m * 7 + n * 13 + k)
    a = torch.randn((m, k), device="cuda", generator=gen).to(tdt)
    b = torch.randn((k, n), device="cuda", generator=gen).to(tdt)
    b_arg = b.t().contiguous() if cfg.b_kmajor else b
    guard = 4096  # NaN-filled elements past C: a write beyond M*N shows up here
    c_flat = torch.full((m * n + guard,), float("nan"), dtype=out, device="cuda")
    c = c_flat[: m * n].view(m, n)
    launch = gemm.bind(a, b_arg, c)
    launch()
    torch.cuda.synchronize()
    ref = torch.matmul(a.float(), b.float())
    scale = ref.abs().max().item() or 1.0
    err = ((c.float() - ref).abs().max().item()) / scale
    unwritten = int(torch.isnan(c).sum().item())
    guard_ok = bool(torch.isnan(c_flat[m * n:]).all().item())
    del ref
    correct = unwritten == 0 and guard_ok and err <= TOLERANCE[cfg.out_dtype(ab)]
    ms = _bench(launch, do_bench, warmup, rep)
    c_ref = torch.empty((m, n), dtype=tdt, device="cuda")
    torch_fn = (lambda: torch.matmul(a, b_arg.t(), out=c_ref)) if cfg.b_kmajor else \
        (lambda: torch.matmul(a, b, out=c_ref))
    torch_ms = _bench(torch_fn, do_bench, warmup, rep)
    flops = 2.0 * m * n * k
    return {"ms": ms, "tflops": flops / ms / 1e9, "torch_ms": torch_ms, "torch_tflops": flops / torch_ms / 1e9,
            "ratio": torch_ms / ms, "max_rel_err": err, "unwritten": unwritten, "guard_ok": guard_ok,
            "correct": correct, "grid": launch.grid, "padded": launch.padded}


def build_echo(tmp: str) -> str | None:
    """The parameter echo kernel's cubin (sm90_gemm_launch.check_param_passing), written to `tmp`; None if it does
    not build (logged)."""
    from compiler_core.runtime.sm90_gemm_launch import echo_kernel_source

    try:
        cubin = nvcc_sm90.compile_sm90a(echo_kernel_source()).cubin
    except BuildError as exc:
        log(f"parameter echo kernel did not build: {exc}")
        return None
    path = os.path.join(tmp, "param_echo.cubin")
    with open(path, "wb") as f:
        f.write(cubin)
    return path


def run_isolated(row: dict, shapes, args, tmp: str, echo_path: str | None = None) -> list[dict]:
    """Runs one kernel's shapes in a child process; a hang or crash becomes error rows."""
    path = os.path.join(tmp, row["kernel"] + ".cubin")
    with open(path, "wb") as f:
        f.write(row["cubin"])
    spec = {"knobs": row["knobs"], "dtype": row["dtype"], "kernel": row["kernel"], "cubin_path": path,
            "shapes": shapes, "warmup": args.warmup, "rep": args.rep, "echo_cubin_path": echo_path}
    cmd = [sys.executable, os.path.abspath(__file__), "--child", json.dumps(spec)]
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=None, text=True, timeout=args.child_timeout)
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("[")]
        if proc.returncode == 0 and lines:
            return json.loads(lines[-1])
        reason = f"child exited with {proc.returncode}"
    except subprocess.TimeoutExpired:
        reason = f"TIMEOUT after {args.child_timeout} s (a hang: mbarrier phase or expect_tx bytes?)"
    return [{"shape": "x".join(map(str, s)), "kernel": row["kernel"], "knobs": row["knobs"], "dtype": row["dtype"],
             "error": reason} for s in shapes]


def print_run_table(rows: list[dict]) -> None:
    print(f"\n{'shape':>16} {'dtype':>8} {'knobs':44} {'TFLOP/s':>8} {'torch':>7} {'ratio':>6} {'max err':>8}  ok")
    for r in rows:
        knobs = HopperGemmConfig.of(r["knobs"]).short()
        if "error" in r:
            print(f"{r['shape']:>16} {r['dtype']:>8} {knobs:44} ERROR {r['error'][:80]}")
            continue
        pad = f"  padded {', '.join(r['padded'])}" if r.get("padded") else ""
        print(f"{r['shape']:>16} {r['dtype']:>8} {knobs:44} {r['tflops']:8.1f} {r['torch_tflops']:7.1f} "
              f"{r['ratio']:6.2f} {r['max_rel_err']:8.1e}  {'yes' if r['correct'] else 'NO'}{pad}")


# ---- main ------------------------------------------------------------------------------------------------------
def _gpu_ready() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available() and torch.cuda.get_device_capability() >= (9, 0)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--shapes", nargs="+", default=list(DEFAULT_SHAPES), help="MxNxK")
    p.add_argument("--knobs", action="append", help="k=v,... (repeatable); default: a handful of sensible sets")
    p.add_argument("--sweep", action="store_true", help="the small grid in SWEEP instead of the default sets")
    p.add_argument("--dtypes", default="fp16,bf16")
    p.add_argument("--compile-only", action="store_true")
    p.add_argument("--jobs", type=int, default=max(1, min(16, os.cpu_count() or 1)))
    p.add_argument("--warmup", type=int, default=25, help="do_bench warm-up, ms")
    p.add_argument("--rep", type=int, default=100, help="do_bench repetition time, ms")
    p.add_argument("--child-timeout", type=int, default=300)
    p.add_argument("--dump", help="write each generated .cu into this folder")
    p.add_argument("--out", help="write the results as JSON here")
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(run_child(json.loads(args.child))), flush=True)
        return 0
    if not args.compile_only and not _gpu_ready():
        raise SystemExit("running the probe needs an sm_90 GPU with PyTorch (the reference) and pycuda; here, "
                         "--compile-only builds every kernel and reports registers, spills and HGMMA")
    knob_dicts = sweep_configs() if args.sweep else [parse_knobs(k) for k in args.knobs] if args.knobs else \
        [dict(d) for d in DEFAULT_KNOBS]
    dtypes = [DTYPES[d.strip()] for d in args.dtypes.split(",")]
    pairs = valid_configs(knob_dicts, dtypes)
    if args.dump:
        os.makedirs(args.dump, exist_ok=True)
        for cfg, ab in pairs:
            with open(os.path.join(args.dump, sm90_gemm.kernel_name(cfg, ab) + ".cu"), "w") as f:
                f.write(sm90_gemm.render(cfg, ab))
    builds = build_all(pairs, args.jobs)
    print_build_table(builds)
    result = {"builds": [{k: v for k, v in r.items() if k != "cubin"} for r in builds]}
    failed = [r for r in builds if not build_ok(r)]
    if not args.compile_only:
        shapes = [parse_shape(s) for s in args.shapes]
        rows = []
        with tempfile.TemporaryDirectory(prefix="tf-hopper-") as tmp:
            echo_path = build_echo(tmp)
            for i, row in enumerate(r for r in builds if "error" not in r):
                log(f"[{i + 1}/{len(builds)}] {row['kernel']}")
                rows += run_isolated(row, shapes, args, tmp, echo_path)
        print_run_table(rows)
        result["runs"] = rows
        failed += [r for r in rows if "error" in r or not r.get("correct")]
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
        log(f"wrote {args.out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
