"""conv2d's padded path with bfloat16 pair dot products (b_source 'padded', dot 'bf16'): the zero-padded copy of the
image holds channel pairs interleaved, so that each pair of K steps the pair microkernel multiplies (gemm_bf16_dot) is
one row of that copy, read in place like the float32 path's shifted rows, and nothing is packed per panel.

The GEMM's K runs over (channel pair c2, r, s, t) with t the channel within its pair, c = 2*c2 + t:

    Xp[n][c2][phase a][phase b][i][j][t] = padded X[n, 2*c2 + t] at stride phase (a, b), pixel (i, j)   (zero past C)
    pair p = (c2, r, s):  B[n, 2p + t, col] = Xp[n * image + tap(p) + 2*col + t]

A (the filter) is copied into that order once per call (`filter_copy`), zero for the channel past an odd C; the pair
kernel packs it as pairs from there.
The im2col pairs packed every panel from the image through a staging row each call: on 3x3 layers PyTorch ran 1.7-2x
faster than that (benchmarks/results/2026-11-30-cpu-bf16-dot/).
"""
from __future__ import annotations

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.builder import IRBuilder


def pair_channels(w) -> int:
    """Channel pairs: C rounded up to even, halved."""
    return -(-w["C"] // 2)


def image_elements(w, ph) -> int:
    """bfloat16 elements of one image's pair-interleaved phase planes."""
    return pair_channels(w) * ph.stride ** 2 * ph.plane * 2


def reduction(w) -> int:
    """The GEMM's K: every (channel pair, tap) twice."""
    return 2 * pair_channels(w) * w["R"] * w["S"]


def tap_offset(p, w, ph) -> E.Expr:
    """Where pair p = (c2, r, s) of output pixel (0, 0) lies in an image's planes, in bfloat16 elements."""
    R, Sw, st = w["R"], w["S"], ph.stride
    c2, r, s = p // (R * Sw), p // Sw % R, p % Sw
    return ((((c2 * st + r % st) * st + s % st) * ph.plane) + r // st * ph.width + s // st) * 2


def filter_copy(b: IRBuilder, w, Wt: S.Buffer, Wp: S.Buffer) -> None:
    """Wp[row][k] = the filter in the pair order of K (zero for the channel past an odd C), once per call: the pair
    kernel packs A per image and block, and read from Wt each K step there is a gather across channels and taps."""
    C, R, Sw = w["C"], w["R"], w["S"]
    rs, depth = R * Sw, reduction(w)
    with b.loop("fk", w["K"], S.ForKind.PARALLEL) as row, b.loop("fc", pair_channels(w)) as c2, \
            b.loop("ft", rs) as tap:
        for t in (0, 1):
            c = c2 * 2 + t
            src = (row * C + E.min_(c, C - 1)) * rs + tap
            value = Wt[src] if C % 2 == 0 else E.select(c < C, Wt[src], E.FloatImm(0.0, Wt.dtype))
            b.store(Wp, row * depth + (c2 * rs + tap) * 2 + t, value)


def padded_copy(b: IRBuilder, w, X: S.Buffer, Xp: S.Buffer, ph, slack: int) -> None:
    """Xp = X inside a border of `pad` zeros, split into stride phases, channel pairs interleaved (see the module
    doc), then `slack` zeros."""
    N, C, H, W, pad, st = w["N"], w["C"], w["H"], w["W"], w["pad"], ph.stride
    C2 = pair_channels(w)
    with b.loop("ncab", N * C2 * st * st, S.ForKind.PARALLEL) as ncab, \
            b.let("nc2", ncab // (st * st)) as nc2, b.let("pa", ncab // st % st) as pa, \
            b.let("pb", ncab % st) as pb, \
            b.let("lo", E.min_((E.max_(pad - pb, 0) + st - 1) // st, ph.width)) as lo, \
            b.let("end", E.min_(E.select(W - 1 + pad - pb >= 0, (W - 1 + pad - pb) // st + 1, 0), ph.width)) as end:
        # plane columns j in [lo, end) hold image columns j*st + pb - pad, inside [0, W)
        with b.loop("i", ph.height) as i, b.let("h", i * st + pa - pad) as h, \
                b.let("hi", E.select((h >= 0) & (h < H), E.max_(end, lo), lo)) as hi:
            row = (ncab * ph.height + i) * ph.width * 2
            with b.loop("j", lo * 2) as j:
                b.store(Xp, row + j, 0.0)
            with b.loop("j", hi - lo, S.ForKind.VECTORIZED) as j:
                for t in (0, 1):
                    c = nc2 % C2 * 2 + t
                    pixel = ((nc2 // C2 * C + E.min_(c, C - 1)) * H + h) * W + (lo + j) * st + pb - pad
                    value = X[pixel] if C % 2 == 0 else E.select(c < C, X[pixel], E.FloatImm(0.0, X.dtype))
                    b.store(Xp, row + (lo + j) * 2 + t, value)
            with b.loop("j", (ph.width - hi) * 2) as j:
                b.store(Xp, row + hi * 2 + j, 0.0)
    with b.loop("j", slack) as j:
        b.store(Xp, N * image_elements(w, ph) + j, 0.0)
