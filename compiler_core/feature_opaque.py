"""The features of a kernel its template rendered (ir.opaque.OpaqueKernel), which has no loop IR to walk: the
template's KernelProfile fills the same totals the IR walk gives other kernels (flops, bytes per memory level,
matrix instructions, barriers), and the `tile.*` group says how its tiles meet the SMs (waves, the last wave's
fill, CTAs per SM, the tile's arithmetic intensity, K steps, stages, raster group, split-K). IR kernels leave it at 0.
"""
from __future__ import annotations

import math

from compiler_core.feature_walk import KernelWalk
from compiler_core.ir.opaque import OpaqueKernel
from compiler_core.passes.verify_resources import BASE_REGISTERS
from compiler_core.target import NOMINAL_SM_COUNT

TILE_FEATURES = ("tile.lg_m", "tile.lg_n", "tile.lg_k", "tile.stages", "tile.lg_k_steps", "tile.waves",
                 "tile.last_wave_fill", "tile.ctas_per_sm", "tile.lg_intensity", "tile.persistent", "tile.cluster",
                 "tile.lg_raster_group", "tile.lg_split_k")
TMA_ACCESS_BYTES = 16  # TMA boxes and the epilogue's stores move 16-byte vectors, whole sectors


def sm_count(target) -> int:
    return target.sm_count or NOMINAL_SM_COUNT


def opaque_summary(k: OpaqueKernel, target) -> dict:
    """What features._kernel_summary gives an IR kernel, from the declared profile: a KernelWalk holding no loops,
    only totals (all global traffic coalesced: TMA boxes and 16-byte stores)."""
    walker = KernelWalk(target)
    p = k.profile
    if p is not None:
        global_bytes = p.global_load_bytes + p.global_store_bytes
        walker.c.update({
            "flops": p.flops, "global.load": p.global_load_bytes, "global.store": p.global_store_bytes,
            "shared.load": p.shared_load_bytes, "shared.store": p.shared_store_bytes, "mma": p.mma,
            "global.accesses": p.global_accesses, "global.coalesced": global_bytes, "global.vector": global_bytes,
            "barriers": p.barriers, "max_access_bytes": float(TMA_ACCESS_BYTES),
        })
        walker.pattern.update(bytes=global_bytes, eff=global_bytes)
    blocks, threads = math.prod(k.grid_for(sm_count(target))), math.prod(k.block)
    c = walker.c
    return {"walk": walker, "blocks": blocks, "threads": threads, "units": max(blocks * threads, 1),
            "cost": c.get("global.load", 0.0) + c.get("global.store", 0.0) + c.get("flops", 0.0),
            "registers": p.registers if p is not None else BASE_REGISTERS,
            "shared": k.shared_bytes + k.dynamic_shared_bytes}


def ctas_per_sm(k: OpaqueKernel, target) -> int:
    """CTAs of `k` one SM holds at once, by shared memory and registers (at least one: it launched)."""
    threads = math.prod(k.block)
    registers = k.profile.registers if k.profile else BASE_REGISTERS
    by_smem = target.shared_limit // max(k.shared_bytes + k.dynamic_shared_bytes, 1)
    by_regs = target.register_file // max(threads * registers, 1) if target.register_file else by_smem
    return max(1, min(by_smem, by_regs))


def tile_features(k: OpaqueKernel, target, dtype_bytes: float) -> dict:
    """The tile group (and the vector widths the walk would have read off the accesses)."""
    p = k.profile
    lanes = TMA_ACCESS_BYTES / max(dtype_bytes, 1.0)
    out = {"vec.max_load_lanes": lanes, "vec.max_store_lanes": lanes}
    if p is None:
        return out
    slots = sm_count(target) * ctas_per_sm(k, target)
    waves = p.tiles / slots
    bm, bn, bk = p.tile
    out.update({
        "tile.lg_m": math.log2(bm), "tile.lg_n": math.log2(bn), "tile.lg_k": math.log2(bk),
        "tile.stages": float(p.stages), "tile.lg_k_steps": math.log2(max(p.k_steps, 1)),
        "tile.waves": waves,
        # 1: the last wave is full, as stream-K makes it
        "tile.last_wave_fill": 1.0 if p.balanced_rounds else (p.tiles - (math.ceil(waves) - 1) * slots) / slots,
        "tile.ctas_per_sm": float(ctas_per_sm(k, target)),
        # flops per byte a K step brings into shared memory: 2*bm*bn*bk / ((bm + bn) * bk * dtype_bytes)
        "tile.lg_intensity": math.log2(2.0 * bm * bn / ((bm + bn) * max(dtype_bytes, 1.0))),
        "tile.persistent": float(k.persistent), "tile.cluster": float(k.cluster),
        "tile.lg_raster_group": math.log2(max(p.raster_group, 1)),
        "tile.lg_split_k": math.log2(max(p.split_k, 1)),
    })
    return out
