"""Cost-model features read from the LOWERED loop IR (after `lower`), never from knob names.

`extract_features(module, target, workload)` returns one float32 vector of `len(FEATURE_NAMES)`;
`features(workload, config, target)` lowers first. Dynamic counts weight every load, store, operation
and barrier by the product of the extents of ALL enclosing loops, thread- and block-bound ones included,
so they estimate totals over the whole launch; a non-constant extent counts at its upper bound (from the
ranges of the loop and let variables it reads); both branches of a guard are counted in full.
Magnitudes are logarithmic (names with `lg_`): log2(x) for extents and launch sizes,
log2(1 + x) for counts and bytes, which may be 0. On C targets a "block" is one iteration of the parallel
(OpenMP) loops and a block has one thread.

| group    | features                                   | meaning                                                 |
|----------|--------------------------------------------|---------------------------------------------------------|
| launch   | num_kernels                                | kernels in the module                                   |
|          | blocks, threads_per_block, lg_blocks,      | of the dominant kernel (most global bytes + flops);     |
|          | lg_threads, lg_block_{x,y,z}               | and its block shape                                     |
|          | lg_blocks_max, lg_threads_max,             | over all kernels: max, max, sum of blocks x threads     |
|          | lg_total_threads                           |                                                         |
|          | warp_utilization                           | threads / (threads rounded up to whole warps), dominant |
| loop.<k> | count, lg_max_extent, lg_path_product      | per kind k (serial, parallel, unrolled, vectorized,     |
|          |                                            | thread, block): static count, largest extent, largest   |
|          |                                            | product of k-extents on one root-to-leaf path; so       |
|          |                                            | loop.unrolled.* are the unroll factors (max, product)   |
| loop     | max_depth, dynamic_extents                 | deepest nest; loops with a non-constant extent          |
|          | lg_innermost_extent, innermost.<k|none>    | innermost loop around the most executed store (one-hot) |
| mem      | <scope>.lg_{load,store}_bytes              | dynamic bytes per scope: global, shared, local          |
|          |                                            | (registers, stack, wmma fragments); all lanes counted   |
|          | global.lg_accesses                         | dynamic global load/store instructions                  |
|          | lg_global_per_compulsory                   | global bytes / the op's compulsory bytes (re-reads)     |
|          | global.{coalesced,strided,invariant,       | share of global bytes whose lanes (a warp on CUDA, a    |
|          | unknown}_frac                              | vector of innermost iterations on C) touch no more      |
|          |                                            | sectors than needed, more, one address, or cannot be    |
|          |                                            | evaluated (data-dependent index); see feature_walk      |
|          | global.sector_efficiency                   | bytes-weighted mean of needed / touched 32 B sectors    |
|          |                                            | (64 B lines on C) over evaluated, non-invariant access  |
|          | shared.lg_bank_conflict                    | bytes-weighted mean log2 of bank-conflict ways (CUDA)   |
|          | lg_global_bytes_per_thread                 | global bytes / (blocks x threads), max over kernels     |
| ops      | lg_flops, lg_int_ops                       | float arithmetic (x lanes), integer/index arithmetic    |
|          | lg_special, lg_casts                       | math-function calls (exp, erf, ...), float conversions  |
|          | lg_mma, lg_shuffles, lg_atomics            | warp-wide wmma mma_sync (+8192 flops each; wmma loads/  |
|          |                                            | stores count once per warp), shuffles, atomic adds      |
|          | lg_arith_intensity                         | (flops + special) / global bytes                        |
|          | lg_flops_per_thread                        | flops / (blocks x threads), max over kernels            |
| res      | lg_shared_bytes, shared_frac               | shared bytes per block (max), / target limit            |
|          | registers, registers_frac                  | verify_resources.register_estimate (max), / limit; on C |
|          |                                            | every local array counts (a stack/heap size proxy)      |
|          | lg_local_bytes                             | local (register/stack) array bytes per thread (max)     |
| vec      | max_load_lanes, max_store_lanes,           | widest vector access, in lanes and bytes                |
|          | max_access_bytes                           |                                                         |
|          | global_vector_frac                         | share of global bytes moved by accesses of > 1 lane     |
| sync     | lg_barriers, lg_barriers_per_thread,       | barriers executed in total, per thread (max kernels),   |
|          | static_barriers                            | and written in the IR                                   |
| ctrl     | lg_guards, static_guards                   | guard (IfThenElse) evaluations in total; in the IR      |
| wl       | lg_flops, lg_bytes, lg_intensity           | OpDef.flops, OpDef.bytes_moved (compulsory), ratio      |
|          | dtype_bytes, op.<name>, dtype.<t>          | element size; one-hot over sorted(ops.OPS); one-hot     |
|          |                                            | over the float dtypes (float16 and bfloat16: same size) |
| tgt      | is_cuda, lg_vector_bytes, lg_cores         | target kind and limits                                  |
| tile     | lg_m, lg_n, lg_k, stages, lg_k_steps,      | kernels a template rendered (OpaqueKernel): its tile,   |
|          | waves, last_wave_fill, ctas_per_sm,        | pipeline depth, work units (tiles x batch x K ranges) / |
|          | lg_intensity, persistent, cluster,         | (SMs x CTAs per SM), the last wave's share of the       |
|          | lg_raster_group, lg_split_k                | slots, flops per shared byte, the raster group's rows,  |
|          |                                            | K ranges per tile; 0 for IR kernels (feature_opaque)    |

An OpaqueKernel has no loop IR: its template's KernelProfile stands in for the walk's totals (feature_opaque.py);
its loop features stay 0.

The layout changes only with compiler_core's source, which `codegen_version()` hashes.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from compiler_core.feature_opaque import TILE_FEATURES, opaque_summary, tile_features
from compiler_core.feature_walk import KINDS, KernelWalk
from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.opaque import OpaqueKernel
from compiler_core.ops import OPS, get_op
from compiler_core.passes.verify_resources import BASE_REGISTERS

SCOPES = ("global", "shared", "local")
PATTERNS = ("coalesced", "strided", "invariant", "unknown")
OP_NAMES = tuple(sorted(OPS))

FEATURE_NAMES: tuple[str, ...] = (
    "launch.num_kernels", "launch.blocks", "launch.threads_per_block", "launch.lg_blocks", "launch.lg_threads",
    "launch.lg_block_x", "launch.lg_block_y", "launch.lg_block_z", "launch.lg_blocks_max", "launch.lg_threads_max",
    "launch.lg_total_threads", "launch.warp_utilization",
    *(f"loop.{k}.{s}" for k in KINDS for s in ("count", "lg_max_extent", "lg_path_product")),
    "loop.max_depth", "loop.dynamic_extents", "loop.lg_innermost_extent",
    *(f"loop.innermost.{k}" for k in (*KINDS, "none")),
    *(f"mem.{s}.lg_{d}_bytes" for s in SCOPES for d in ("load", "store")),
    "mem.global.lg_accesses", "mem.lg_global_per_compulsory",
    *(f"mem.global.{p}_frac" for p in PATTERNS), "mem.global.sector_efficiency",
    "mem.shared.lg_bank_conflict", "mem.lg_global_bytes_per_thread",
    "ops.lg_flops", "ops.lg_int_ops", "ops.lg_special", "ops.lg_casts", "ops.lg_mma", "ops.lg_shuffles",
    "ops.lg_atomics", "ops.lg_arith_intensity", "ops.lg_flops_per_thread",
    "res.lg_shared_bytes", "res.shared_frac", "res.registers", "res.registers_frac", "res.lg_local_bytes",
    "vec.max_load_lanes", "vec.max_store_lanes", "vec.max_access_bytes", "vec.global_vector_frac",
    "sync.lg_barriers", "sync.lg_barriers_per_thread", "sync.static_barriers",
    "ctrl.lg_guards", "ctrl.static_guards",
    "wl.lg_flops", "wl.lg_bytes", "wl.lg_intensity", "wl.dtype_bytes", *(f"wl.op.{n}" for n in OP_NAMES),
    *(f"wl.dtype.{t}" for t in E.FLOAT_TYPES),
    "tgt.is_cuda", "tgt.lg_vector_bytes", "tgt.lg_cores",
    *TILE_FEATURES,
)
_INDEX = {name: i for i, name in enumerate(FEATURE_NAMES)}


def lg(x: float) -> float:
    """log2(1 + x): counts and bytes, which may be 0."""
    return math.log2(1.0 + max(x, 0.0))


def log2_dim(x: float) -> float:
    """log2(x) of an extent or launch size (0 for 1, and for 0: no such loop)."""
    return math.log2(max(x, 1))


@functools.lru_cache(maxsize=1024)
def _workload_values(workload) -> dict[str, float]:
    opdef = get_op(workload.op)
    flops, nbytes = float(opdef.flops(workload)), float(opdef.bytes_moved(workload))
    dtype = workload.get("dtype", "float32")
    out = {"wl.lg_flops": lg(flops), "wl.lg_bytes": lg(nbytes), "wl.lg_intensity": lg(flops / max(nbytes, 1.0)),
           "wl.dtype_bytes": float(S.DTYPE_BYTES.get(dtype, 4)), "compulsory": nbytes}
    if workload.op in OPS:
        out[f"wl.op.{workload.op}"] = 1.0
    if dtype in E.FLOAT_TYPES:  # float16 and bfloat16 share a size, not their conversion costs
        out[f"wl.dtype.{dtype}"] = 1.0
    return out


def _kernel_summary(func, target) -> dict:
    if isinstance(func, OpaqueKernel):
        return opaque_summary(func, target)
    walker = KernelWalk(target)
    walker.stmt(func.body, 1.0)
    c = walker.c
    if target.kind == "cuda":
        blocks, threads = math.prod(func.grid), math.prod(func.block)
    else:
        blocks, threads = walker.max_path[KINDS.index("parallel")], 1
    return {"walk": walker, "blocks": blocks, "threads": threads, "units": max(blocks * threads, 1),
            "cost": c.get("global.load", 0.0) + c.get("global.store", 0.0) + c.get("flops", 0.0),
            "registers": func.attrs.get("registers_estimate", BASE_REGISTERS + walker.register_words),
            "shared": func.shared_bytes + func.dynamic_shared_bytes}


def extract_features(module: S.Module, target, workload) -> np.ndarray:
    """The feature vector (float32, `len(FEATURE_NAMES)`) of a lowered module; see the module docstring."""
    kernels = [_kernel_summary(f, target) for f in module.kernels]
    out = dict(_workload_values(workload))
    total: dict[str, float] = {}
    for k in kernels:
        for name, value in k["walk"].c.items():
            total[name] = max(total.get(name, 0.0), value) if name.startswith("max_") else total.get(name, 0.0) + value
    _launch(out, kernels, module, target)
    _loops(out, [k["walk"] for k in kernels])
    _memory_and_ops(out, total, kernels, target)
    out.update({"tgt.is_cuda": float(target.kind == "cuda"), "tgt.lg_vector_bytes": lg(target.vector_bytes),
                "tgt.lg_cores": lg(target.cores)})
    for k in module.kernels:
        if isinstance(k, OpaqueKernel):
            out.update(tile_features(k, target, out["wl.dtype_bytes"]))
    vec = np.zeros(len(FEATURE_NAMES), dtype=np.float32)
    for name, value in out.items():
        i = _INDEX.get(name)
        if i is not None:
            vec[i] = value
    return vec


def _launch(out: dict, kernels: list, module: S.Module, target) -> None:
    if not kernels:
        return
    dom = max(kernels, key=lambda k: k["cost"])
    block = module.kernels[kernels.index(dom)].block if target.kind == "cuda" else (1, 1, 1)
    warp = max(target.warp_size, 1)
    out.update({
        "launch.num_kernels": float(len(kernels)), "launch.blocks": float(dom["blocks"]),
        "launch.threads_per_block": float(dom["threads"]), "launch.lg_blocks": log2_dim(dom["blocks"]),
        "launch.lg_threads": log2_dim(dom["threads"]),
        **{f"launch.lg_block_{a}": log2_dim(b) for a, b in zip("xyz", block, strict=True)},
        "launch.lg_blocks_max": log2_dim(max(k["blocks"] for k in kernels)),
        "launch.lg_threads_max": log2_dim(max(k["threads"] for k in kernels)),
        "launch.lg_total_threads": lg(sum(k["blocks"] * k["threads"] for k in kernels)),
        "launch.warp_utilization": dom["threads"] / (-(-dom["threads"] // warp) * warp),
        "res.lg_shared_bytes": lg(max(k["shared"] for k in kernels)),
        "res.shared_frac": max(k["shared"] for k in kernels) / max(target.shared_limit, 1),
        "res.registers": float(max(k["registers"] for k in kernels)),
        "res.registers_frac": max(k["registers"] for k in kernels) / max(target.max_registers_per_thread, 1),
    })
    leaf = max((k["walk"].leaf for k in kernels), key=lambda leaf: leaf[0])
    out["loop.lg_innermost_extent"] = log2_dim(leaf[1])
    out[f"loop.innermost.{(*KINDS, 'none')[leaf[2]]}"] = 1.0


def _loops(out: dict, walks: list) -> None:
    for i, kind in enumerate(KINDS):
        out[f"loop.{kind}.count"] = float(sum(w.loop_count[i] for w in walks))
        out[f"loop.{kind}.lg_max_extent"] = log2_dim(max((w.max_extent[i] for w in walks), default=1))
        out[f"loop.{kind}.lg_path_product"] = log2_dim(max((w.max_path[i] for w in walks), default=1))
    out["loop.max_depth"] = float(max((w.max_depth for w in walks), default=0))
    out["loop.dynamic_extents"] = float(sum(w.c.get("dynamic_extents", 0.0) for w in walks))


def _memory_and_ops(out: dict, c: dict, kernels: list, target) -> None:
    for scope in SCOPES:
        for d in ("load", "store"):
            out[f"mem.{scope}.lg_{d}_bytes"] = lg(c.get(f"{scope}.{d}", 0.0))
    global_bytes = c.get("global.load", 0.0) + c.get("global.store", 0.0)
    analysed = sum(c.get(f"global.{p}", 0.0) for p in PATTERNS)
    for p in PATTERNS:
        out[f"mem.global.{p}_frac"] = c.get(f"global.{p}", 0.0) / analysed if analysed else 0.0
    pattern = {key: sum(k["walk"].pattern[key] for k in kernels) for key in kernels[0]["walk"].pattern} \
        if kernels else {}
    flops = c.get("flops", 0.0)
    out.update({
        "mem.global.lg_accesses": lg(c.get("global.accesses", 0.0)),
        "mem.lg_global_per_compulsory": lg(global_bytes / max(out.pop("compulsory"), 1.0)),
        "mem.global.sector_efficiency": pattern["eff"] / pattern["bytes"] if pattern.get("bytes") else 1.0,
        "mem.shared.lg_bank_conflict": (pattern["conflict"] / pattern["conflict_bytes"]
                                        if pattern.get("conflict_bytes") else 0.0),
        "mem.lg_global_bytes_per_thread": lg(max((_kernel_global(k) / k["units"] for k in kernels), default=0.0)),
        "ops.lg_flops": lg(flops), "ops.lg_int_ops": lg(c.get("int_ops", 0.0)),
        "ops.lg_special": lg(c.get("special", 0.0)), "ops.lg_casts": lg(c.get("casts", 0.0)),
        "ops.lg_mma": lg(c.get("mma", 0.0)), "ops.lg_shuffles": lg(c.get("shuffles", 0.0)),
        "ops.lg_atomics": lg(c.get("atomics", 0.0)),
        "ops.lg_arith_intensity": lg((flops + c.get("special", 0.0)) / global_bytes) if global_bytes else 0.0,
        "ops.lg_flops_per_thread": lg(max((k["walk"].c.get("flops", 0.0) / k["units"] for k in kernels),
                                          default=0.0)),
        "res.lg_local_bytes": lg(max((k["walk"].c.get("local_bytes", 0.0) for k in kernels), default=0.0)),
        "vec.max_load_lanes": c.get("max_load_lanes", 0.0), "vec.max_store_lanes": c.get("max_store_lanes", 0.0),
        "vec.max_access_bytes": c.get("max_access_bytes", 0.0),
        "vec.global_vector_frac": c.get("global.vector", 0.0) / global_bytes if global_bytes else 0.0,
        "sync.lg_barriers": lg(c.get("barriers", 0.0)),
        "sync.lg_barriers_per_thread": lg(max((k["walk"].c.get("barriers", 0.0) / k["units"] for k in kernels),
                                              default=0.0)),
        "sync.static_barriers": c.get("static_barriers", 0.0),
        "ctrl.lg_guards": lg(c.get("guards", 0.0)), "ctrl.static_guards": c.get("static_guards", 0.0),
    })


def _kernel_global(k: dict) -> float:
    c = k["walk"].c
    return c.get("global.load", 0.0) + c.get("global.store", 0.0)


def features(workload, config: dict, target, template: str = "tuned") -> np.ndarray:
    """Lower (workload, config, target) and extract its features; raises what `lower` raises."""
    from compiler_core.lower import lower

    return extract_features(lower(workload, config, target, template), target, workload)
