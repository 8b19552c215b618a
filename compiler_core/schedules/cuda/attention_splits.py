"""FlashDecoding's split of an attention block's keys over several blocks, shared by the engines that offer it
(mma.sync, tiled SIMT): the choices, the split a launch's rounds say is fastest, and the module of a main kernel and
the kernel that combines its splits."""
from __future__ import annotations

from collections.abc import Callable

from compiler_core.codegen.flash_attention import COMBINE_THREADS
from compiler_core.ir import stmt as S
from compiler_core.ir.opaque import OpaqueKernel
from compiler_core.schedules.cuda.attention_tensors import attention_tensors
from compiler_core.space import Constraint
from compiler_core.target import NOMINAL_SM_COUNT

SPLIT_CHOICES = (1, 2, 4, 8, 16, 32)
SPLIT_OVERHEAD_TILES = 2  # a block's fixed time in key tiles: staging the query rows, the epilogue
COMBINE_TILES = 4  # the combine kernel's launch (a few microseconds) in key tiles of one block


def sms(target) -> int:
    """The target's SMs (a nominal count where it does not say)."""
    return target.sm_count or NOMINAL_SM_COUNT


def block_slots(target, shared_bytes: int, threads: int, registers: int) -> int:
    """Blocks all SMs hold at once, by a block's shared memory and its threads' registers (at least one an SM)."""
    by_smem = target.shared_limit // max(shared_bytes, 1)
    by_regs = target.register_file // (threads * registers) if target.register_file else by_smem
    return sms(target) * max(1, min(by_smem, by_regs))


def split_constraints(w, target, cfg: Callable) -> tuple[Constraint, Constraint]:
    """The space's rules for `kv_splits`; `cfg(config)` has the config's `kv_tiles` and `q_tiles`."""
    return (Constraint("kv_splits > 1 must leave each split at least one key tile",
                       lambda c: c["kv_splits"] <= cfg(c).kv_tiles),
            Constraint("kv_splits > 1 only where the blocks (heads x query tiles) are fewer than the SMs",
                       lambda c: c["kv_splits"] == 1 or w["heads"] * cfg(c).q_tiles < sms(target)))


def fewest_rounds(units: int, tiles: int, slots: int, valid: Callable[[int], bool]) -> int:
    """The split the occupancy says is fastest: `units` blocks of `tiles` key tiles take ceil(units s / slots)
    rounds of tiles / s + SPLIT_OVERHEAD_TILES tiles each, `slots` the blocks all SMs hold at once, plus the
    combine's launch (COMBINE_TILES) where s > 1; ties go to the smaller split. `valid(split)`: the space takes it."""
    def rounds(split: int) -> float:
        return -(-units * split // slots) * (tiles / split + SPLIT_OVERHEAD_TILES) + (COMBINE_TILES if split > 1 else 0)

    return min((k for k in SPLIT_CHOICES if k == 1 or valid(k)), key=lambda k: (rounds(k), k))


def split_module(w, target, splits: int, main: Callable[[tuple], OpaqueKernel],
                 combine: Callable[[], tuple[str, str, tuple]]) -> S.Module:
    """An attention module whose keys may split: `main(params)` is the main kernel over Q, K, V and what it writes
    (O, or with splits > 1 the float32 partial rows and (max, sum) statistics of each split); then
    `combine()`'s kernel (name, source, prelude: flash_attention's COMBINE_BODY, one thread an output element)
    rescales and sums the splits into O."""
    H, Sq, D = w["heads"], w["seq_q"], w["head_dim"]
    Q, K, V, O = attention_tensors(w)
    if splits == 1:
        return S.Module("attention", (main((Q, K, V, O)),), (Q, K, V, O), (), 3)
    part = S.Buffer("ws_attention_partials", "float32", (splits * H * Sq * D,))
    stats = S.Buffer("ws_attention_stats", "float32", (splits * H * Sq * 2,))
    name, source, prelude = combine()
    summed = OpaqueKernel(name=name, source=source, prelude=prelude, params=(part, stats, O),
                          block=(COMBINE_THREADS, 1, 1), dynamic_shared_bytes=0,
                          units=-(-H * Sq * D // COMBINE_THREADS), sm_count=target.sm_count, requires=())
    # every split writes all its rows and statistics before the combine reads them: no memset
    return S.Module("attention", (main((Q, K, V, part, stats)), summed), (Q, K, V, O), (part, stats), 3,
                    overwrites_workspaces=True)
