"""conv2d's padded path with the batch folded into the GEMM's columns (b_source 'folded', float32 FMAs).

The padded path (conv2d.py, b_source 'padded') runs one GEMM per image whose columns are that image's output rows
at the padded width. With a small image that GEMM is narrow: 7x7 gives 63 columns, one 64-wide panel, and 14x14
gives 222, four panels of which the last is mostly padding; the filter (A, 4.7-9.4 MiB on ResNet's last layers) is
streamed again for every image.

Here the images of the batch lie side by side in every row of one padded copy, so one GEMM covers the whole
batch: its columns are the output rows of all the images, the filter is read once per block for all of them, and
the panels are full but for the last one. Per channel and stride phase (a, b) the copy is a plane of `height` rows
of `row` elements; image n's phase row starts at column n * pitch:

    Xf[c][a][b][i][n * pitch + t] = padded X[n, c] at pixel (i * stride + a, t * stride + b),  t < pitch
    tap (c, r, s):           row offset ((c * st + r % st) * st + s % st) * plane + (r // st) * row + s // st
    output pixel (n, p, q):  GEMM column p * row + n * pitch + q

Neighbouring images share their border: the columns an image's outputs read past `pitch` are the next image's
first ones, and `pitch` is the least width at which all of those are zero padding in both images (`_pitch`). With a
3x3 window and pad 1 an image takes W + 1 columns, not W + 2, so fewer computed columns are dropped (1 of every
W + 1 per output row, not 2 of W + 2). The GEMM's columns past the last image are computed and dropped, as in the
padded path.
"""
from __future__ import annotations

import dataclasses

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.builder import IRBuilder
from compiler_core.ops.conv2d import out_size
from compiler_core.schedules.cpu import gemm


@dataclasses.dataclass(frozen=True)
class Fold:
    """The folded copy's geometry (module doc): phase planes of `height` rows of `row` elements, image n's columns
    from n * `pitch`, each image `width` phase columns of its padded row (the last image's all there)."""
    stride: int
    images: int
    height: int
    width: int
    pitch: int
    Q: int

    @classmethod
    def of(cls, w) -> Fold:
        st, pad = w["stride"], w["pad"]
        width = E.ceil_div(w["W"] + 2 * pad, st)
        return cls(st, w["N"], E.ceil_div(w["H"] + 2 * pad, st), width, _pitch(w, width), out_size(w)[1])

    @property
    def row(self) -> int:
        return (self.images - 1) * self.pitch + self.width

    @property
    def plane(self) -> int:
        return self.height * self.row

    def elements(self, C: int) -> int:
        """Elements of the copy (before the edge tiles' slack)."""
        return C * self.stride ** 2 * self.plane

    def columns(self, P: int) -> int:
        """The GEMM's columns: through the last image's last output pixel."""
        return (P - 1) * self.row + (self.images - 1) * self.pitch + self.Q

    def tap_offset(self, k, R: int, Sw: int):
        """Where tap k = (c, r, s) of output pixel (0, 0, 0) lies in the copy."""
        c, r, s, st = k // (R * Sw), k // Sw % R, k % Sw, self.stride
        return ((c * st + r % st) * st + s % st) * self.plane + r // st * self.row + s // st


def _pitch(w, width: int) -> int:
    """The least image pitch >= Q (so that no two images' output columns overlap) at which every column that an
    image's outputs read at or past the pitch is zero padding both in that image and, at the same place, in the
    next one; `width` (no column shared) always is."""
    st, pad, W, S = w["stride"], w["pad"], w["W"], w["S"]
    Q = out_size(w)[1]

    def zero(t: int, b: int) -> bool:  # phase b's column t is padding
        return not pad <= t * st + b < pad + W

    reads = {(q + s // st, s % st) for q in range(Q) for s in range(S)}
    return next(p for p in range(Q, width + 1)
                if all(t < p or (zero(t, b) and zero(t - p, b)) for t, b in reads))


# The default folds the batch where each image's own GEMM has at most this many columns (at the padded width) and
# the folded copy with its result (`bytes_held`) takes at most FOLD_MAX_BYTES. Folded / per image on a 2-core Zen 4
# and 2 cores of a Sapphire Rapids Xeon: mostly 1.03-1.6x from 63 to 3,246 columns and 1.3-7 MiB (ResNet's 3x3 and
# 1x1 layers at batch 3-8, float32 and half types); 0.93-0.96x at 12,652 columns (2x64x112^2) and on the 7x7 stem
# (12,877), whose GEMMs are wide already; 0.90-0.93x on 8x128x56^2 at stride 2 (17 MiB: every thread streams the
# whole copy, where an image's fits in L2), ~1.0x on 8x64x56^2 (13 MiB) (benchmarks/results/2026-12-01-cpu-conv-small/).
FOLD_MAX_IMAGE_COLUMNS = 4096
FOLD_MAX_BYTES = 8 << 20
# The folded GEMM splits rows (filters) between the threads where each gets at least this many, else columns: with
# 32 rows a thread (K = 64) the row split ran 0.7x the column split, as each thread reads all of B for few rows; from
# 64 rows on, rows ran as fast or faster (1.0-1.1x).
ROW_SPLIT_MIN_ROWS = 64


def default(w, target, config: dict, image_columns: int, max_bytes: int) -> dict:
    """conv2d's default `config` with the batch folded where that measured faster: a padded-path config that
    multiplies with FMAs, several images, narrow per-image GEMMs (`image_columns`) and a copy of at most
    `max_bytes`; else `config` unchanged."""
    if (config["b_source"] != "padded" or config.get("dot", "fma") != "fma" or w["N"] < 2
            or image_columns > FOLD_MAX_IMAGE_COLUMNS or bytes_held(w) > min(max_bytes, FOLD_MAX_BYTES)):
        return config
    K, cols = w["K"], Fold.of(w).columns(out_size(w)[0])
    parallel = "m" if -(-K // max(1, target.cores)) >= ROW_SPLIT_MIN_ROWS else "n"
    return dict(config, **gemm.default_config(target, K, cols, dtype=w.dtype, parallel=parallel), b_source="folded")


def bytes_held(w) -> int:
    """What the path allocates: the folded copy and the GEMM's result at its width (float32)."""
    fold = Fold.of(w)
    return 4 * (fold.elements(w["C"]) + w["K"] * fold.columns(out_size(w)[0]))


def _folded_copy(b: IRBuilder, w, X: S.Buffer, Xf: S.Buffer, fold: Fold, slack: int) -> None:
    """Xf = X as float32 in the folded layout (module doc), then `slack` zeros. Image n writes its phase columns
    [0, pitch) of each row (the last image all `width`); the columns it reads past its pitch are the next image's."""
    N, C, H, W, pad, st = w["N"], w["C"], w["H"], w["W"], w["pad"], fold.stride
    with b.loop("cab", C * st * st, S.ForKind.PARALLEL) as cab, \
            b.let("c", cab // (st * st)) as c, b.let("pa", cab // st % st) as pa, b.let("pb", cab % st) as pb, \
            b.loop("i", fold.height) as i, b.let("h", i * st + pa - pad) as h, \
            b.loop("n", N) as n, b.let("extent", E.select(n < N - 1, fold.pitch, fold.width)) as extent:
        # the image columns j*st + pb - pad of phase columns [lo, hi) (none where row h is padding)
        lo = E.min_((E.max_(pad - pb, 0) + st - 1) // st, extent)
        end = E.min_(E.select(W - 1 + pad - pb >= 0, (W - 1 + pad - pb) // st + 1, 0), extent)
        with b.let("lo", lo) as lo, b.let("hi", E.select((h >= 0) & (h < H), E.max_(end, lo), lo)) as hi, \
                b.let("dst", (cab * fold.height + i) * fold.row + n * fold.pitch) as dst:
            with b.loop("j", lo) as j:
                b.store(Xf, dst + j, 0.0)
            src = ((n * C + c) * H + h) * W + pb - pad
            with b.loop("j", hi - lo, S.ForKind.VECTORIZED) as j:
                b.store(Xf, dst + lo + j, E.widen(X[src + (lo + j) * st]))
            with b.loop("j", extent - hi) as j:
                b.store(Xf, dst + hi + j, 0.0)
    with b.loop("j", slack) as j:
        b.store(Xf, fold.elements(C) + j, 0.0)


def schedule(w, config, target, X: S.Buffer, Wt: S.Buffer, Y: S.Buffer) -> S.Stmt:
    """One GEMM over the folded copy (module doc), its result copied out per image."""
    N, C, K, R, Sw = (w[x] for x in ("N", "C", "K", "R", "S"))
    P, Q = out_size(w)
    fold = Fold.of(w)
    depth, cols = C * R * Sw, fold.columns(P)
    b = IRBuilder()
    # edge tiles read up to nr - 1 elements past a row's last column
    with b.allocate("Xf", "float32", (fold.elements(C) + config["nr"],), S.Scope.LOCAL) as Xf, \
            b.allocate("tap", "int32", (depth,), S.Scope.LOCAL) as tap, \
            b.allocate("Yw", "float32", (K * cols,), S.Scope.LOCAL) as Yw:
        _folded_copy(b, w, X, Xf, fold, config["nr"])
        with b.loop("k", depth) as k:
            b.store(tap, k, fold.tap_offset(k, R, Sw))
        b.emit(gemm.build_gemm(gemm.GemmOperands(
            M=K, N=cols, K=depth, batch=1,
            a=lambda _, k, j: E.widen(Wt[k * depth + j]),
            b=None,
            c=Yw,
            c_index=lambda _, k, j: k * cols + j,
            b_direct=(Xf, lambda _, k: tap[k]),
        ), config, target))
        with b.loop("nk", N * K, S.ForKind.PARALLEL) as nk, b.let("n", nk // K) as n, b.let("k", nk % K) as k, \
                b.loop("p", P) as p, b.loop("q", Q, S.ForKind.VECTORIZED) as q:
            b.store(Y, (nk * P + p) * Q + q, E.cast(Y.dtype, Yw[k * cols + p * fold.row + n * fold.pitch + q]))
    return b.get()
