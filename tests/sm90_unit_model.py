"""The Hopper GEMM's work units (codegen/sm90_gemm_units.py) in numpy: which units each CTA walks, what its producer
loads for each, where its consumers store each partial tile, and the output that data flow gives once the split-K
partials are summed as gemm_split_k.split_k_sum sums them.

The formulas are the kernel text's (make_schedule, tile_origin, unit_of, the producer's TMA coordinates and the
epilogue's slice offset), written again in Python: tests/unit/test_sm90_units_model.py checks that they compute
the GEMM on odd shapes, tests/cpu/test_sm90_units_emulated.py that the rendered CUDA text walks exactly these units
and issues exactly these loads (compiled as host C++), tests/gpu/test_sm90_split_batch_gpu.py the kernel itself.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from compiler_core.codegen.sm90_gemm import B_BOX_COLS, HopperGemmConfig

BK = 64


@dataclass(frozen=True)
class UnitCase:
    """A kernel configuration and a launch: `grid` CTAs (0: a cluster per unit, the non-persistent grid)."""
    M: int
    N: int
    K: int
    batch: int = 1
    split_k: int = 1
    bm: int = 64
    bn: int = 64
    cluster: int = 1
    group_m: int = 1
    grid: int = 0
    split_cluster: bool = False  # the K ranges of a tile in one cluster (consecutive CTAs), summed there

    def config(self) -> HopperGemmConfig:
        return HopperGemmConfig(bm=self.bm, bn=self.bn, consumers=1, group_m=self.group_m, cluster=self.cluster,
                                split_k=self.split_k,
                                out="float32" if self.split_k > 1 and not self.split_cluster else "same",
                                batch=self.batch, persistent=not self.split_cluster,
                                split_cluster=self.split_cluster)

    @property
    def m_tiles(self) -> int:
        """Tile rows, counted in clusters of rows (make_schedule's m_tiles)."""
        return -(-self.M // (self.bm * self.cluster))

    @property
    def n_tiles(self) -> int:
        return -(-self.N // self.bn)

    @property
    def k_blocks(self) -> int:
        return -(-self.K // BK)

    @property
    def units(self) -> int:
        return self.m_tiles * self.n_tiles * self.batch * self.split_k

    @property
    def ctas(self) -> int:
        return self.grid or self.units * self.cluster

    def short(self) -> str:
        return (f"{self.M}x{self.N}x{self.K}-b{self.batch}-sk{self.split_k}-{self.bm}x{self.bn}-cl{self.cluster}"
                f"-g{self.group_m}-grid{self.grid}{'-in-cluster' if self.split_cluster else ''}")


@dataclass(frozen=True)
class Unit:
    """One unit as a CTA sees it: its rows and columns of C, batch entry, K blocks and output slice."""
    m0: int
    n0: int
    batch: int
    kb_begin: int
    kb_end: int
    c_offset: int
    split: int = 0  # the K range: which partial the unit's tile holds


def walk(case: UnitCase, cta: int) -> list[Unit]:
    """The units CTA `cta` walks, in order (make_schedule, tile_origin and unit_of)."""
    first, step, rank = cta // case.cluster, case.ctas // case.cluster, cta % case.cluster
    tiles = case.m_tiles * case.n_tiles
    out = []
    for u in range(first, case.units, step):
        if case.split_cluster:  # K range fastest: a cluster's consecutive CTAs share one tile
            split, tile, b = u % case.split_k, (u // case.split_k) % tiles, u // (case.split_k * tiles)
        else:
            tile, b, split = u % tiles, (u // tiles) % case.batch, u // (tiles * case.batch)
        group_tiles = case.group_m * case.n_tiles
        first_m = (tile // group_tiles) * case.group_m
        rows = min(case.m_tiles - first_m, case.group_m)
        in_group = tile % group_tiles
        m0 = (first_m + in_group % rows) * (case.bm * case.cluster) + rank * case.bm
        n0 = (in_group // rows) * case.bn
        slice_ = 0 if case.split_cluster else split  # in a cluster the partials never reach C
        out.append(Unit(m0, n0, b, split * case.k_blocks // case.split_k, (split + 1) * case.k_blocks // case.split_k,
                        (slice_ * case.batch + b) * case.M * case.N, split))
    return out


def producer_loads(case: UnitCase, cta: int) -> list[tuple]:
    """The TMA loads that land in CTA `cta`'s ring, per K block in order: (iteration, map, box, c0, c1, batch) with
    map 0 = A (box 0, coordinates (k, m)) and 1 = B (box j of 64 columns, coordinates (n, k)); with a cluster, B
    boxes come from whichever CTA of the cluster multicasts them."""
    loads, it = [], 0
    for unit in walk(case, cta):
        for kb in range(unit.kb_begin, unit.kb_end):
            loads.append((it, 0, 0, kb * BK, unit.m0, unit.batch))
            loads += [(it, 1, j, unit.n0 + B_BOX_COLS * j, kb * BK, unit.batch) for j in range(case.bn // B_BOX_COLS)]
            it += 1
    return sorted(loads)


def _box(X: np.ndarray, rows: slice, cols: slice, shape: tuple) -> np.ndarray:
    """X[rows, cols] where in range, zeros elsewhere (TMA's out-of-bounds fill)."""
    out = np.zeros(shape)
    part = X[rows, cols]
    out[:part.shape[0], :part.shape[1]] = part
    return out


def run(case: UnitCase, A: np.ndarray, B: np.ndarray, walk_fn=None) -> tuple[np.ndarray, np.ndarray]:
    """(C, writes): C (batch, M, N) from the units of every CTA, each partial stored into its slice of the
    split_k x batch x M x N partials and the slices summed; writes counts the stores into each partial element.
    `walk_fn(case, cta)`: the units each CTA walks (default `walk`)."""
    walk_fn = walk_fn or walk
    M, N, bm, bn = case.M, case.N, case.bm, case.bn
    size = case.batch * M * N
    partials = np.full(case.split_k * size, np.nan)
    writes = np.zeros(case.split_k * size, dtype=np.int64)
    for cta in range(case.ctas):
        for u in walk_fn(case, cta):
            ks = slice(u.kb_begin * BK, u.kb_end * BK)
            a = _box(A[u.batch], slice(u.m0, u.m0 + bm), ks, (bm, (u.kb_end - u.kb_begin) * BK))
            b = _box(B[u.batch], ks, slice(u.n0, u.n0 + bn), ((u.kb_end - u.kb_begin) * BK, bn))
            acc = a @ b
            rows, cols = min(bm, M - u.m0), min(bn, N - u.n0)
            if rows <= 0 or cols <= 0:
                continue
            at = u.c_offset + (u.m0 + np.arange(rows))[:, None] * N + (u.n0 + np.arange(cols))[None, :]
            if case.split_cluster:  # the cluster's sum, modelled as the split's own partial
                at = at + u.split * size
            partials[at] = acc[:rows, :cols]
            np.add.at(writes, at, 1)
    return partials.reshape(case.split_k, size).sum(axis=0).reshape(case.batch, M, N), writes


def operands(case: UnitCase, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Small integers: every sum is exact in float64."""
    rng = np.random.default_rng(seed)
    return (rng.integers(-3, 4, (case.batch, case.M, case.K)).astype(np.float64),
            rng.integers(-3, 4, (case.batch, case.K, case.N)).astype(np.float64))


CASES = [  # odd M, N and K past the tiles, batches, K ranges of unequal length, clusters, rasters, grids
    UnitCase(1, 264, 520, split_k=2),
    UnitCase(16, 1024, 4096, split_k=4, bn=128, grid=32),
    UnitCase(17, 40, 1032, split_k=16),  # K ranges of one and two blocks
    UnitCase(128, 200, 264, batch=3, split_k=2, bm=128, bn=128, grid=5),
    UnitCase(200, 136, 72, batch=16, bm=64, bn=128, group_m=4, grid=7),
    UnitCase(200, 264, 200, batch=2, split_k=4, bm=64, bn=64, cluster=2, group_m=2, grid=6),
    UnitCase(300, 72, 64, batch=5, bm=128, bn=64, cluster=2),
    UnitCase(136, 264, 520),  # the plain kernel: one batch entry, no split
    UnitCase(257, 520, 136, group_m=4, grid=11),
    UnitCase(16, 1024, 4096, split_k=8, bn=128, split_cluster=True),  # K ranges in a cluster, summed there
    UnitCase(200, 136, 1032, batch=3, split_k=2, bm=128, bn=64, split_cluster=True),
    UnitCase(17, 40, 1032, split_k=4, split_cluster=True),
]
