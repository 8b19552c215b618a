"""The stream-K side of the Hopper GEMM's space and schedule (schedules/cuda/gemm_sm90.py): its two knobs and their
rules, the CTAs that share the work, and the workspace of partial tiles and flags (codegen/sm90_stream_k.py holds
the kernel's text and how the work is split)."""
from __future__ import annotations

from compiler_core.codegen import sm90_stream_k
from compiler_core.codegen.sm90_gemm import HopperGemmConfig
from compiler_core.ir import stmt as S
from compiler_core.space import Constraint, Knob
from compiler_core.target import NOMINAL_SM_COUNT

STREAM_K_KNOB = Knob("stream_k", (False, True), "the partly filled rounds spread over every CTA (in the form "
                                                "sk_split names), partial tiles summed by each tile's owner: no SM "
                                                "idles in a partly filled last round (persistent, cluster 1, no "
                                                "split_k)")
# K-major pieces: 2 is the one split that beat the default anywhere (benchmarks/results/2026-12-01-sm90-stream-k/:
# 3 never did, 6 and 8 ran 2-7x slower)
SK_SPLIT_KNOB = Knob("sk_split", (0, 2), "with stream_k: 0, the partly filled rounds' K blocks in even ranges; 2, "
                                         "the partial round's tiles cut into 2 K ranges, K-major pieces whose CTAs "
                                         "share A and B panels")
KNOBS = (STREAM_K_KNOB, SK_SPLIT_KNOB)


def constraints(batch: int, sms: int, tiles_of) -> tuple:
    """stream_k's rules for a space of `batch` GEMMs on `sms` SMs, `tiles_of(config)` its CTA tiles: one GEMM on a
    persistent grid of single CTAs, and only where its tiles end in a partly filled round (elsewhere the kernel runs
    exactly as without it). Fewer tiles than SMs are spread whole, as an even split-K."""
    return (
        Constraint("stream_k only with persistent=True, cluster=1, split_k=1 and one GEMM (matmul, or a batch of "
                   "1): it spreads one GEMM's tiles over a persistent grid of single CTAs",
                   lambda c: not c["stream_k"] or (c["persistent"] and c["cluster"] == 1 and c.get("split_k", 1) == 1
                                                   and batch == 1)),
        Constraint("stream_k only where the tiles leave the last (or only) round partly filled",
                   lambda c: not c["stream_k"] or tiles_of(c) % sms != 0),
        Constraint("sk_split > 0 only with stream_k (it is the form of stream-K's pieces)",
                   lambda c: c["stream_k"] or c["sk_split"] == 0),
    )


# K blocks each half of a split tile runs at least: a piece pays a ring fill and a partial's round trip through L2
# whatever its length; at 1024 (8 blocks a half) the halves lost 3 % where the rule otherwise held
# (benchmarks/results/2026-12-01-sm90-stream-k/rule-h200.json)
HALF_MIN_K_BLOCKS = 16


# what the halves' last round costs, in whole rounds: (q + 1) / measured gain - q over the 16 selected shapes of the
# rule's two checks, median 0.80 (0.69-0.94; 0.5 were the halves free); rule-h200.json, rule-check-h200.json
HALVES_LAST_ROUND = 0.8


def rounds(tiles: int, sms: int, k_blocks: int, halves: bool) -> float:
    """Rounds of one tile's time that `tiles` tiles take on a persistent grid of `sms` CTAs: ceil(tiles / sms), the
    last one at HALVES_LAST_ROUND where `halves` (the space has stream_k) and `halves_pay`."""
    whole = -(-tiles // sms)
    return whole - 1 + HALVES_LAST_ROUND if halves and halves_pay(tiles, sms, k_blocks) else float(whole)


def halves_pay(tiles: int, sms: int, k_blocks: int) -> bool:
    """Whether K-major halves (stream_k, sk_split 2) are the default for `tiles` tiles of `k_blocks` K blocks on
    `sms` SMs: more than one round, and the partly filled last round's tiles, cut in halves, fit in one round, so
    that round takes half as long (q + 1/2 rounds instead of q + 1); each half at least HALF_MIN_K_BLOCKS long. On an
    H200 the rule picked the 3 winners of 18 shapes and none of the 15 losers, then 7 of 8 shapes drawn for it won
    (1.03-1.15x) and all 4 controls would have lost (0.82-0.92x)."""
    rest = tiles % sms
    return tiles > sms and 0 < 2 * rest <= sms and k_blocks >= 2 * HALF_MIN_K_BLOCKS


def stream_k_ctas(target) -> int:
    """CTAs that take part in stream-K: the target's SMs (a grid of more leaves the rest idle, see
    codegen/sm90_stream_k.py), or the nominal count where the target left them out. The kernel takes it as a
    parameter, so its split of the work matches the workspace sized here whatever grid the device gives it."""
    return target.sm_count or NOMINAL_SM_COUNT


def stream_k_workspaces(op: str, cfg: HopperGemmConfig, target, tiles: int, k_blocks: int) -> tuple:
    """(partial tiles, flags): per slot (sm90_stream_k.partial_slots) one float32 tile, and per slot one flag per
    consumer warpgroup."""
    ctas = stream_k_ctas(target)
    if target.sm_count:  # the grid is exactly `ctas`
        slots = sm90_stream_k.partial_slots(tiles, ctas, cfg.sk_split, k_blocks)
    else:  # the device's SMs, at most `ctas`, take part: room for the largest partial round
        slots = sm90_stream_k.partial_slots(2 * ctas - 1, ctas, cfg.sk_split, k_blocks)
    slots = max(1, slots)
    return (S.Buffer(f"ws_{op}_sk_partials", "float32", (slots * cfg.bm * cfg.bn,)),
            S.Buffer(f"ws_{op}_sk_flags", "int32", (slots * cfg.consumers,)))


def partial_bytes(cfg: HopperGemmConfig, tiles: int, k_blocks: int, target) -> int:
    """Bytes of float32 partial tiles a launch of `tiles` tiles writes (and its owners read): none without
    stream_k, or where the target is unknown."""
    if not cfg.stream_k or target is None:
        return 0
    return sm90_stream_k.partial_slots(tiles, stream_k_ctas(target), cfg.sk_split, k_blocks) * cfg.bm * cfg.bn * 4
