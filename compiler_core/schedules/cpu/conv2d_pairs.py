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

AMX's tiles (dot 'amx') read B in place too, 16 pair rows a tile, which must be evenly spaced: there K runs over
(r, s, channel pair c2, t) instead, so that a tile's rows are 16 channel pairs of one tap, a pair plane apart; C is a
multiple of 32 (TILE_CHANNELS), so no tile straddles two taps. The filter is copied in that order, and the `tap`
offsets of the GEMM's pair rows follow it (`pair_of_tile_row`).
"""
from __future__ import annotations

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.builder import IRBuilder

TILE_CHANNELS = 32  # channels of one tap an AMX tile of B holds: 16 pairs


def tiled(w) -> bool:
    """Whether AMX's tiles can read this conv2d's padded copy in place."""
    return w["C"] % TILE_CHANNELS == 0


def pair_of_tile_row(w, k):
    """The pair (c2, r, s) that pair row k of the tiles' order (r, s, c2) is."""
    C2, rs = pair_channels(w), w["R"] * w["S"]
    return k % C2 * rs + k // C2


def pair_channels(w) -> int:
    """Channel pairs: C rounded up to even, halved."""
    return -(-w["C"] // 2)


def image_elements(w, ph) -> int:
    """bfloat16 elements of one image's pair-interleaved phase planes."""
    return pair_channels(w) * ph.stride ** 2 * ph.plane * 2


def reduction(w) -> int:
    """The GEMM's K: every (channel pair, tap) twice."""
    return 2 * pair_channels(w) * w["R"] * w["S"]


def filter_copy(b: IRBuilder, w, Wt: S.Buffer, Wp: S.Buffer, tiles: bool = False) -> None:
    """Wp[row][k] = the filter in the pair order of K (zero for the channel past an odd C), once per call: the pair
    kernel packs A per image and block, and read from Wt each K step there is a gather across channels and taps.
    `tiles`: in AMX's order, (tap, channel pair) (module doc)."""
    C, R, Sw = w["C"], w["R"], w["S"]
    rs, depth = R * Sw, reduction(w)
    with b.loop("fk", w["K"], S.ForKind.PARALLEL) as row, b.loop("fc", pair_channels(w)) as c2, \
            b.loop("ft", rs) as tap:
        for t in (0, 1):
            c = c2 * 2 + t
            src = (row * C + E.min_(c, C - 1)) * rs + tap
            value = Wt[src] if C % 2 == 0 else E.select(c < C, Wt[src], E.FloatImm(0.0, Wt.dtype))
            pair = tap * pair_channels(w) + c2 if tiles else c2 * rs + tap
            b.store(Wp, row * depth + pair * 2 + t, value)


def padded_copy(b: IRBuilder, w, X: S.Buffer, Xp: S.Buffer, ph, slack: int) -> None:
    """Xp = X inside a border of `pad` zeros, split into stride phases, channel pairs interleaved (see the module
    doc), then `slack` zeros. `ph` is conv2d's phase planes, whose `rows` loop this shares with the float32 copy."""
    N, C, H, W = w["N"], w["C"], w["H"], w["W"]
    C2 = pair_channels(w)
    with ph.rows(b, w, N * C2, "nc2") as r:
        row = (r.plane * ph.height + r.i) * ph.width * 2
        with b.loop("j", r.lo * 2) as j:
            b.store(Xp, row + j, 0.0)
        with b.loop("j", r.hi - r.lo, S.ForKind.VECTORIZED) as j:
            for t in (0, 1):
                c = r.index % C2 * 2 + t
                pixel = r.pixel(w, ((r.index // C2 * C + E.min_(c, C - 1)) * H + r.h) * W, r.lo + j)
                value = X[pixel] if C % 2 == 0 else E.select(c < C, X[pixel], E.FloatImm(0.0, X.dtype))
                b.store(Xp, row + (r.lo + j) * 2 + t, value)
        with b.loop("j", (ph.width - r.hi) * 2) as j:
            b.store(Xp, row + r.hi * 2 + j, 0.0)
    with b.loop("j", slack) as j:
        b.store(Xp, N * image_elements(w, ph) + j, 0.0)
