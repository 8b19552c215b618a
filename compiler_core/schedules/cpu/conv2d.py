"""CPU template for conv2d as an implicit GEMM on the shared GEMM builder (see `gemm`).

Per image n: Y[n] (K x P*Q) = Wt (K x C*R*S) @ patches (C*R*S x P*Q). The patches are never
materialised: packing B gathers them straight from X (im2col inside the kc x nr panels), with zeros
for the padding. The filter is A, read in place or packed like any A.

A panel row (one filter tap c, r, s over nr consecutive output pixels) is a few runs of one image row each:
per output row it touches, zeros where the tap falls in the padding and a strided copy of the image row between
(`_im2col_row`). Its bounds are worked out once per run, so the copy is a plain vector loop; decoding every
element's tap and pixel, the element form the GEMM builder's own packing takes, spent more time packing than the
GEMM spent computing.

Knob `b_source` = 'padded' packs nothing (`_schedule_padded`). With stride 1, the image is copied once into a
zero-padded float32 plane per channel (Hp x Wp), and the GEMM's columns are the output rows laid out at the padded
width Wp, so that column j of tap (c, r, s) is padded element c*Hp*Wp + r*Wp + s + j: each B row is the padded
image itself, shifted by a per-tap offset, and the microkernel loads it in place (`GemmOperands.b_direct`). The
columns q >= Q of each output row (S - 1 of every Wp) are computed and dropped when the result is copied out.
With stride st, the padded image is split into st x st phase planes (`_Phases`: plane (a, b) holds padded pixels
(i*st + a, j*st + b)); tap (r, s) reads plane (r % st, s % st) at offset (r // st, s // st), and output pixel
(p, q) is that plane's pixel (p, q) from there: the stride-1 structure again, at the planes' width.

The default takes the padded copy where it moves no more than the pack it replaces: it copies about C*H*W
elements, the im2col C*R*S*P*Q, about R*S / stride^2 times as many.
"""
from __future__ import annotations

import contextlib
import dataclasses

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.builder import IRBuilder
from compiler_core.ops.conv2d import out_size
from compiler_core.schedules.cpu import conv2d_folded, conv2d_pairs, gemm
from compiler_core.schedules.cpu import gemm_amx as amx
from compiler_core.schedules.cpu import gemm_bf16_dot as bf16_dot
from compiler_core.space import Constraint, Knob, Space

B_SOURCES = ("im2col", "padded", "folded")  # 'folded': the padded copy with the batch side by side (conv2d_folded)
# The padded path holds the whole batch twice over (the padded copy, and the result at the planes' width), where
# the im2col path packs one image per thread: bounded, and kept far lower in the default.
PADDED_MAX_BYTES = 2 << 30
PADDED_DEFAULT_MAX_BYTES = 256 << 20


def space(w, target, b_source_knob: bool = True, dot_knob: bool = True) -> Space:
    """The GEMM's knobs, bfloat16's `dot` where the target has AVX-512 BF16 (gemm_bf16_dot: the im2col panels packed
    as pairs, or the padded copy's channel pairs read in place, conv2d_pairs) and `b_source`; without
    `b_source_knob`, the space before that knob (im2col only); without `dot_knob`, float32 FMAs."""
    base = gemm.space(target, batch=w["N"], tiles=dot_knob and amx.offered(w.dtype, target))
    if dot_knob:
        base = bf16_dot.with_knob(base, w.dtype, target, packs=None, tiles=("im2col", "padded"))
    if not b_source_knob:
        return base
    held, C = padded_bytes(w), w["C"]
    tiles = [Constraint(f"dot 'amx' on the padded copy reads 16 channel pairs of one tap a tile: C ({C}) must be a "
                        f"multiple of {conv2d_pairs.TILE_CHANNELS}",
                        lambda c: c.get("dot") != "amx" or c["b_source"] != "padded" or conv2d_pairs.tiled(w))] \
        if dot_knob and amx.offered(w.dtype, target) else []
    folded = conv2d_folded.bytes_held(w)
    return base.with_knob(
        Knob("b_source", B_SOURCES, "B as im2col panels packed from the image, or read in place from a zero-padded "
                                    "copy of it split by stride phase, per image or with the images side by side"),
        Constraint(f"b_source 'padded' holds the padded batch and its wide result, {held / 2**20:.1f} MiB here: at "
                   f"most {PADDED_MAX_BYTES / 2**20:.0f} MiB",
                   lambda c: c["b_source"] != "padded" or held <= PADDED_MAX_BYTES),
        Constraint(f"b_source 'folded' holds the folded batch and its wide result, {folded / 2**20:.1f} MiB here: at "
                   f"most {PADDED_MAX_BYTES / 2**20:.0f} MiB",
                   lambda c: c["b_source"] != "folded" or folded <= PADDED_MAX_BYTES),
        Constraint("b_source 'folded' is one GEMM over the whole batch: parallel must be 'm' or 'n'",
                   lambda c: c["b_source"] != "folded" or c["parallel"] != "batch"),
        Constraint("b_source 'folded' multiplies with float32 FMAs: dot must be 'fma' (or absent)",
                   lambda c: c["b_source"] != "folded" or c.get("dot", "fma") == "fma"), *tiles)


def padded_bytes(w) -> int:
    """What the padded path allocates: the batch's phase planes and the result at their width (float32)."""
    ph, (P, Q) = _Phases.of(w), out_size(w)
    return 4 * w["N"] * (w["C"] * w["stride"] ** 2 * ph.plane + w["K"] * ((P - 1) * ph.width + Q))


def config_space(w, target, config) -> Space:
    """A config without `b_source` was stored before the knob: it is of the im2col path, in the space it came from;
    one without `dot` multiplies by float32 FMAs."""
    known = lambda name: not isinstance(config, dict) or name in config  # noqa: E731
    return space(w, target, b_source_knob=known("b_source"), dot_knob=known("dot"))


def default_config(w, target) -> dict:
    P, Q = out_size(w)
    # measured: a 1x1 conv at stride 2 was 0.96-1.02x im2col's speed
    padded = w["R"] * w["S"] >= w["stride"] ** 2 and padded_bytes(w) <= PADDED_DEFAULT_MAX_BYTES
    config = dict(gemm.default_config(target, w["K"], P * Q, batch=w["N"], dtype=w.dtype),
                  b_source="padded" if padded else "im2col")
    if amx.offered(w.dtype, target) and padded and conv2d_pairs.tiled(w):  # the padded copy's rows as tiles
        return dict(config, **amx.DEFAULT)
    if amx.offered(w.dtype, target) and w["K"] >= amx.CONV_MIN_OUT_CHANNELS:
        return dict(config, **amx.DEFAULT, b_source="im2col")
    # bfloat16 on an AVX-512 BF16 target without AMX (whose hosts are Zen 4 and 5: gemm_bf16_dot.PAIRS_DEFAULT says
    # why): pair dot products on the padded or im2col path, 1.35-1.93x the FMA default on 7 of 8 layers on a Zen 4 and
    # 1.06-1.10 on 7x7 images, where the FMA default folds the batch (one run had 0.93)
    # (benchmarks/results/2026-12-01-cpu-bf16-pairs/). A Xeon's pairs lost to its FMAs.
    if bf16_dot.offered(w.dtype, target) and not amx.offered(w.dtype, target):
        return dict(config, **bf16_dot.PAIRS)
    return fma_default(w, target, config)


def fma_default(w, target, config: dict) -> dict:
    """The default multiplying by FMAs from `config` (the padded or im2col path's): several narrow per-image GEMMs
    become one over the batch (conv2d_folded)."""
    return conv2d_folded.default(w, target, bf16_dot.with_default(config, w.dtype, target), _image_columns(w),
                                 PADDED_DEFAULT_MAX_BYTES)


def _image_columns(w) -> int:
    """The columns of one image's GEMM on the padded path: its output rows at the padded width."""
    P, Q = out_size(w)
    return (P - 1) * _Phases.of(w).width + Q




def _im2col_row(w, X: S.Buffer):
    """The GEMM builder's `b_row` for conv2d: row k (filter tap c, r, s) of the B panel of image n whose columns
    start at output pixel col0, as runs over the output rows the panel touches."""
    C, H, W, R, Sw = w["C"], w["H"], w["W"], w["R"], w["S"]
    stride, pad = w["stride"], w["pad"]
    P, Q = out_size(w)
    pixels = P * Q

    def emit(ib, Bp: S.Buffer, base, n, k, col0, nr: int) -> None:
        c, r, s = k // (R * Sw), k // Sw % R, k % Sw
        # output columns q whose tap lands inside the image row: first_q <= q < end_q
        first_q = E.select(pad - s > 0, (pad - s + stride - 1) // stride, 0)
        end_q = E.min_(E.select(W - 1 + pad - s >= 0, (W - 1 + pad - s) // stride + 1, 0), Q)
        with ib.let("p0", col0 // Q) as p0:
            with ib.loop("run", (Q + nr - 2) // Q + 1) as run:  # output rows a panel of nr pixels touches
                p = p0 + run
                h = p * stride + r - pad
                lo = E.max_(E.min_(p * Q - col0, nr), 0)  # the run's columns within the panel: [lo, hi)
                hi = E.max_(E.min_(E.min_((p + 1) * Q, pixels) - col0, nr), lo)
                inside = (h >= 0) & (h < H)
                with ib.let("lo", lo) as lo_, ib.let("hi", hi) as hi_:
                    # the copy's columns: where the tap is inside the image, none where its row is padding
                    copy_lo = E.max_(E.min_(p * Q + first_q - col0, hi_), lo_)
                    with ib.let("copy_lo", copy_lo) as c_lo:
                        copy_hi = E.select(inside, E.max_(E.min_(p * Q + end_q - col0, hi_), c_lo), c_lo)
                        with ib.let("copy_hi", copy_hi) as c_hi:
                            with ib.loop("j", c_lo - lo_) as j:
                                ib.store(Bp, base + lo_ + j, 0.0)
                            row = ((n * C + c) * H + h) * W + (col0 - p * Q) * stride + s - pad
                            with ib.loop("j", c_hi - c_lo, S.ForKind.VECTORIZED) as j:
                                ib.store(Bp, base + c_lo + j, E.widen(X[row + (c_lo + j) * stride]))
                            with ib.loop("j", hi_ - c_hi) as j:
                                ib.store(Bp, base + c_hi + j, 0.0)
        with ib.loop("j", E.max_(col0 + nr - pixels, 0)) as j:  # past the last pixel: zeros
            ib.store(Bp, base + nr - 1 - j, 0.0)

    return emit


@dataclasses.dataclass(frozen=True)
class _Phases:
    """The padded image split by stride phase: plane (a, b) of channel c holds padded pixels (i*stride + a,
    j*stride + b), `height` x `width` of them, so that each tap reads one plane at a fixed offset. With stride 1,
    one plane per channel: the padded image itself."""
    stride: int
    height: int
    width: int

    @classmethod
    def of(cls, w) -> _Phases:
        st = w["stride"]
        return cls(st, E.ceil_div(w["H"] + 2 * w["pad"], st), E.ceil_div(w["W"] + 2 * w["pad"], st))

    @property
    def plane(self) -> int:
        return self.height * self.width

    def tap_offset(self, k, R: int, Sw: int):
        """Where tap k = (c, r, s) of output pixel (0, 0) lies: its plane, then its row and column in it (with
        channel pairs, k = (c2, r, s) and the offset counts pixels, of two elements each)."""
        c, r, s, st = k // (R * Sw), k // Sw % R, k % Sw, self.stride
        return ((c * st + r % st) * st + s % st) * self.plane + r // st * self.width + s // st


    @contextlib.contextmanager
    def rows(self, b: IRBuilder, w, planes: int, plane_name: str):
        """Loops over the rows of `planes` phase planes (image-major, then channel or channel pair, then phase), in
        parallel over the planes: yields (plane, image plane index, i, h, lo, hi), plane row i holding image row h,
        its columns j in [lo, hi) image columns j*stride + pb - pad (none where h is padding), zeros elsewhere."""
        H, W, pad, st = w["H"], w["W"], w["pad"], self.stride
        with b.loop("ncab", planes * st * st, S.ForKind.PARALLEL) as ncab, \
                b.let(plane_name, ncab // (st * st)) as nc, b.let("pa", ncab // st % st) as pa, \
                b.let("pb", ncab % st) as pb, \
                b.let("lo", E.min_((E.max_(pad - pb, 0) + st - 1) // st, self.width)) as lo, \
                b.let("end", E.min_(E.select(W - 1 + pad - pb >= 0, (W - 1 + pad - pb) // st + 1, 0),
                                    self.width)) as end:
            with b.loop("i", self.height) as i, b.let("h", i * st + pa - pad) as h, \
                    b.let("hi", E.select((h >= 0) & (h < H), E.max_(end, lo), lo)) as hi:
                yield _PlaneRow(ncab, nc, i, h, pb, lo, hi)


@dataclasses.dataclass(frozen=True)
class _PlaneRow:
    """One row of one phase plane, as `_Phases.rows` loops over them: the plane, its image plane (channel or channel
    pair), the row, its image row, its phase column, and its image columns [lo, hi)."""
    plane: E.Expr
    index: E.Expr
    i: E.Expr
    h: E.Expr
    pb: E.Expr
    lo: E.Expr
    hi: E.Expr

    def pixel(self, w, row_start, j) -> E.Expr:
        """The flat index of plane column j's pixel (j in [lo, hi)), from where its image row starts."""
        return row_start + j * w["stride"] + self.pb - w["pad"]


def _padded_copy(b: IRBuilder, w, X: S.Buffer, Xp: S.Buffer, ph: _Phases, slack: int) -> None:
    """Xp = X as float32 inside a border of `pad` zeros, split into stride phases (`_Phases`), then `slack` zeros."""
    N, C, H, W = w["N"], w["C"], w["H"], w["W"]
    with ph.rows(b, w, N * C, "nc") as r:
        row = (r.plane * ph.height + r.i) * ph.width
        with b.loop("j", r.lo) as j:
            b.store(Xp, row + j, 0.0)
        with b.loop("j", r.hi - r.lo, S.ForKind.VECTORIZED) as j:
            b.store(Xp, row + r.lo + j, E.widen(X[r.pixel(w, (r.index * H + r.h) * W, r.lo + j)]))
        with b.loop("j", ph.width - r.hi) as j:
            b.store(Xp, row + r.hi + j, 0.0)
    with b.loop("j", slack) as j:
        b.store(Xp, N * C * ph.stride ** 2 * ph.plane + j, 0.0)


def _schedule_padded(w, config, target, X: S.Buffer, Wt: S.Buffer, Y: S.Buffer) -> S.Stmt:
    """B read in place from the zero-padded image's stride phases, output rows at a phase plane's width (see the
    module doc); with bfloat16 pairs, from its channel pairs interleaved (conv2d_pairs)."""
    N, C, K, R, Sw, st = (w[x] for x in ("N", "C", "K", "R", "S", "stride"))
    P, Q = out_size(w)
    ph = _Phases.of(w)
    pairs, tiles = config.get("dot") in ("bf16", "amx"), config.get("dot") == "amx"
    cols = (P - 1) * ph.width + Q  # through the last output pixel; the last row's dropped columns are not computed
    if pairs:
        dtype, image, depth, slack = "bfloat16", conv2d_pairs.image_elements(w, ph), conv2d_pairs.reduction(w), \
            2 * config["nr"]
    else:
        dtype, image, depth, slack = "float32", C * st * st * ph.plane, C * R * Sw, config["nr"]
    rows = depth // 2 if pairs else depth
    b = IRBuilder()
    with b.allocate("Xp", dtype, (N * image + slack,), S.Scope.LOCAL) as Xp, \
            b.allocate("tap", "int32", (rows,), S.Scope.LOCAL) as tap, \
            (b.allocate("Wp", "bfloat16", (K * depth,), S.Scope.LOCAL) if pairs else contextlib.nullcontext()) as Wp:
        # edge tiles read past the last column: nr - 1 elements, or pairs
        if pairs:
            conv2d_pairs.padded_copy(b, w, X, Xp, ph, slack)
            conv2d_pairs.filter_copy(b, w, Wt, Wp, tiles)
        else:
            _padded_copy(b, w, X, Xp, ph, slack)
        filt = Wp if pairs else Wt
        a = lambda n, k, j: E.widen(filt[k * depth + j])  # noqa: E731
        with b.loop("k", rows) as k:  # a pair's offset in bfloat16 elements: two per pixel
            pair = conv2d_pairs.pair_of_tile_row(w, k) if tiles else k
            b.store(tap, k, ph.tap_offset(pair, R, Sw) * 2 if pairs else ph.tap_offset(k, R, Sw))

        def gemm_into(c: S.Buffer) -> S.Stmt:
            return gemm.build_gemm(gemm.GemmOperands(
                M=K, N=cols, K=depth, batch=N,
                a=a,
                b=None,
                c=c,
                c_index=lambda n, k, j: (n * K + k) * cols + j,
                b_direct=(Xp, lambda n, k: n * image + tap[k]),
                b_pairs=pairs,
                # AMX: the pair rows of one tap are channel pairs, st^2 phase planes of two elements a pixel apart
                b_tiles=(tap, lambda n: n * image, 2 * st * st * ph.plane) if tiles else None,
            ), config, target)

        if ph.width == Q and Y.dtype == "float32":  # no dropped columns, no conversion: the GEMM writes Y
            b.emit(gemm_into(Y))
        else:
            with b.allocate("Yw", "float32", (N * K * cols,), S.Scope.LOCAL) as Yw:
                b.emit(gemm_into(Yw))
                with b.loop("nk", N * K, S.ForKind.PARALLEL) as nk, b.loop("p", P) as p, \
                        b.loop("q", Q, S.ForKind.VECTORIZED) as q:
                    b.store(Y, (nk * P + p) * Q + q, E.cast(Y.dtype, Yw[nk * cols + p * ph.width + q]))
    return b.get()


def schedule(w, config, target) -> S.Module:
    N, C, H, W, K, R, Sw = (w[x] for x in "NCHWKRS")
    P, Q = out_size(w)
    X = S.Buffer("in_X", w.dtype, (N, C, H, W))
    Wt = S.Buffer("in_Wt", w.dtype, (K, C, R, Sw))
    Y = S.Buffer("out_Y", w.dtype, (N, K, P, Q))
    if config.get("b_source") == "folded":
        func = S.PrimFunc("conv2d_cpu", (X, Wt, Y), conv2d_folded.schedule(w, config, target, X, Wt, Y))
        return S.Module("conv2d", (func,), (X, Wt, Y), (), 2)
    if config.get("b_source", "im2col") == "padded":
        func = S.PrimFunc("conv2d_cpu", (X, Wt, Y), _schedule_padded(w, config, target, X, Wt, Y))
        return S.Module("conv2d", (func,), (X, Wt, Y), (), 2)
    crs = C * R * Sw
    ops = gemm.GemmOperands(
        M=K, N=P * Q, K=crs, batch=N,
        a=lambda n, k, j: E.widen(Wt[k * crs + j]),
        b=None,
        c=Y,
        c_index=lambda n, k, pq: (n * K + k) * (P * Q) + pq,
        b_row=_im2col_row(w, X),
    )
    func = S.PrimFunc("conv2d_cpu", (X, Wt, Y), gemm.build_gemm(ops, config, target))
    return S.Module("conv2d", (func,), (X, Wt, Y), (), 2)
