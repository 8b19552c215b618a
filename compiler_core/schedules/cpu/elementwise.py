"""CPU template for elementwise chains: OpenMP over row tiles, column tiles vectorized by the host compiler.

A float16 chain's loads and stores convert by `half_io`: the target's cast (F16C: one instruction, but GCC 12 then
leaves the loop scalar) or the bits (c_half.F16_HELPERS, which vectorize). Measured on one host
(benchmarks/results/2026-11-30-cpu-libm/ab-f16-casts-vs-bits.txt), casts / bits: gelu and tanh chains 2.1-3.1x,
x*2 and x*w+b 0.69-0.79x. `staged` converts each tile by vector conversions into float32 on the stack, computes
there and converts back: with F16C that beats both (the default there)."""
from __future__ import annotations

import contextlib

from compiler_core.codegen import c_half
from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.builder import IRBuilder
from compiler_core.ops import expr_parser
from compiler_core.ops.elementwise import vector_names
from compiler_core.schedules.cpu.converted_copy import copy_converted
from compiler_core.space import Constraint, Knob, Space

TRANSCENDENTAL = ("exp", "log", "tanh", "erf", "sigmoid", "silu", "gelu")  # whose loop is compute-bound


STAGE_MAX = 1024  # floats per staged input tile, on the stack


def space(w, target, half_io_knob: bool = True) -> Space:
    """Tiles larger than the row are clamped to it, so every combination is valid for every shape. `half_io` for
    the half types (float16 without `cast` where the target has none: without F16C the C backend converts on the
    bits anyway); without `half_io_knob`, the space before that knob (casts)."""
    base = Space(
        knobs=(
            Knob("rows_per_task", (1, 2, 4, 8, 16, 64), "rows one OpenMP iteration handles"),
            Knob("col_tile", (64, 256, 1024, 4096, 16384), "columns per inner (vectorized) loop"),
            Knob("simd", (0, 1), "mark the inner loop `omp simd`"),
        ),
    )
    if not half_io_knob or w.dtype == "float32":
        return base
    staged = Constraint(f"half_io 'staged' keeps a col_tile of floats per input on the stack: col_tile <= {STAGE_MAX}",
                        lambda c: c["half_io"] != "staged" or c["col_tile"] <= STAGE_MAX)
    if w.dtype == "bfloat16":
        return base.with_knob(Knob("half_io", ("cast", "staged"), "bfloat16 converted element by element in the "
                                   "chain's loop, or staged: each tile converted to float32 on the stack in a loop "
                                   "of its own, computed there, converted back"), staged)
    choices = ("bits", "staged") if target.half_conversion == "bits" else ("cast", "bits", "staged")
    return base.with_knob(
        Knob("half_io", choices,
             "float16 loads and stores by the target's cast, on the bits, or staged: each tile converted to float32 "
             "on the stack by vector conversions (F16C, or on the bits), computed there, converted back"), staged)


def config_space(w, target, config) -> Space:
    """A half config without `half_io` was stored before the knob: casts, in the space it came from."""
    return space(w, target, half_io_knob=not isinstance(config, dict) or "half_io" in config)


def default_config(w, target) -> dict:
    """rows_per_task 1, col_tile 64, no `omp simd` mark (the space's first config), and for the half types:
    - float16 staged on x86, whose vectors convert by F16C's one instruction or, without F16C, on the bits by
      whole-vector operations (staged / bits 1.3-1.8x on SSE, benchmarks/results/2026-11-30-cpu-bf16/); elsewhere
      on the bits where the chain calls a transcendental function (its loop is compute-bound, and only the bits
      let it vectorize);
    - bfloat16 staged where the target converts its float32 vectors' width by x86 intrinsics
      (c_half.int16_intrinsic_lanes: staged / cast 1.8-2.6x on AVX-512, 1.2-1.4x on AVX2, 1.0-1.25x on SSE over
      seven chains, benchmarks/results/2026-11-30-cpu-bf16/half-io-staged-vs-cast.txt), elsewhere where the chain
      calls a transcendental function on a 64-byte-vector target (only the float32 loop of a staged tile runs at
      the full width there)."""
    config = {"rows_per_task": 1, "col_tile": 64, "simd": 0}
    if "half_io" not in space(w, target).names:
        return config
    compute_bound = bool(expr_parser.function_names(expr_parser.parse(w["expr"])) & set(TRANSCENDENTAL))
    if w.dtype == "bfloat16":
        by_intrinsics = target.vector_lanes_f32 in c_half.int16_intrinsic_lanes(target)
        config["half_io"] = "staged" if by_intrinsics or (compute_bound and target.vector_bytes >= 64) else "cast"
    elif target.half_conversion in ("f16c", "bits"):
        config["half_io"] = "staged"
    else:
        config["half_io"] = "bits" if compute_bound else "cast"
    return config


def schedule(w, config, target) -> S.Module:
    rows, cols, dt = w["rows"], w["cols"], w.dtype
    tree = expr_parser.parse(w["expr"])
    vectors = set(vector_names(w))
    names = expr_parser.input_names(tree)
    ins = {n: S.Buffer(f"in_{n}", dt, (cols,) if n in vectors else (rows, cols)) for n in names}
    out = S.Buffer("out_Y", dt, (rows, cols))
    rpt, ct = config["rows_per_task"], min(config["col_tile"], cols)
    inner_kind = S.ForKind.VECTORIZED if config["simd"] else S.ForKind.SERIAL
    half_io = config.get("half_io", "cast")
    b = IRBuilder()

    def at(n, i, j) -> tuple:
        """Input n's element of output (i, j): a row vector's is its column's."""
        return (j,) if n in vectors else (i, j)

    def address(buf, idx) -> E.Address:
        return E.Address(buf, tuple(E.as_expr(k) for k in idx))

    def load(buf, idx):
        return E.call("f16_load", address(buf, idx)) if half_io == "bits" else E.cast("float32", buf[idx])

    def store_at(i, j) -> None:
        value = expr_parser.to_ir(tree, {n: load(buf, at(n, i, j)) for n, buf in ins.items()})
        if half_io == "bits":
            b.evaluate(E.call("f16_store", address(out, (i, j)), value, dtype="void"))
        else:
            b.store(out, (i, j), E.cast(dt, value))

    def tiles(i, body) -> None:
        """body(i, column start, width) over whole column tiles, then the row's tail in a loop of its own: a bound
        check inside the tile loop kept GCC from vectorizing it (333 columns ran 14x slower per element than 320)."""
        full_tiles, tail = divmod(cols, ct)
        if full_tiles:
            with b.loop("jt", full_tiles) as jt:
                body(i, jt * ct, ct)
        if tail:
            body(i, full_tiles * ct, tail)

    def direct(i, j0, width) -> None:
        with b.loop("ji" if width == ct else "jr", width, inner_kind) as ji:
            store_at(i, j0 + ji)

    with b.loop("rt", E.ceil_div(rows, rpt), S.ForKind.PARALLEL) as rt:
        with b.loop("ri", rpt) as ri:
            i = rt * rpt + ri
            with b.if_(i < rows):
                if half_io == "staged":
                    _staged(b, tree, ins, out, at, ct, target.vector_lanes_f32, inner_kind,
                            lambda body: tiles(i, body))
                else:
                    tiles(i, direct)
    func = S.PrimFunc("elementwise_cpu", (*ins.values(), out), b.get())
    return S.Module("elementwise", (func,), (*ins.values(), out), (), len(ins))


def _staged(b, tree, ins, out, at, ct, lanes, inner_kind, over_tiles) -> None:
    """half_io="staged": per tile, each input converted into a float32 stack buffer `lanes` values at a time (a
    vector cast: F16C's one instruction, bfloat16's zero-extension and shift) and the rest one by one, the chain
    computed there in float32 (the loop GCC vectorizes), and the result converted back the same way."""
    with contextlib.ExitStack() as scope:
        staged = {n: scope.enter_context(b.allocate(f"s_{n}", "float32", (ct,), S.Scope.LOCAL)) for n in ins}
        result = scope.enter_context(b.allocate("s_Y", "float32", (ct,), S.Scope.LOCAL))

        def tile(i, j0, width) -> None:
            for n, buf in ins.items():
                copy_converted(b, staged[n], lambda k: (k,), buf, lambda k, n=n: at(n, i, j0 + k), width, lanes)
            with b.loop("ji" if width == ct else "jr", width, inner_kind) as ji:
                b.store(result, (ji,), expr_parser.to_ir(tree, {n: staged[n][ji] for n in ins}))
            copy_converted(b, out, lambda k: (i, j0 + k), result, lambda k: (k,), width, lanes)

        over_tiles(tile)
