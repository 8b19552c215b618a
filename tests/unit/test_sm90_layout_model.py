"""The Hopper GEMM's shared-memory and pipeline models, no compiler: what wgmma's descriptors read is what TMA's
128-byte swizzle wrote, the prelude pulls in what its pieces need, and the producer/consumer mbarrier handshake
neither deadlocks nor races under random interleavings (and the models fail on planted mistakes)."""
from __future__ import annotations

import os
import random
import re
import sys

import pytest

from compiler_core.codegen import cuda_sm90 as sm90
from compiler_core.codegen import sm90_gemm
from compiler_core.codegen.sm90_gemm import HopperGemmConfig

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
import hopper_gemm_probe as probe  # noqa: E402

DEFAULTS = [HopperGemmConfig.of(k) for k in probe.DEFAULT_KNOBS]


# ---- unit: descriptors read what TMA wrote -----------------------------------------------------------------------
def _a_reads_match(cfg: HopperGemmConfig, base: int, lbo_sbo=None) -> bool:
    """Every element (row, k) of every m64 x k16 slice the consumers issue, read through the A descriptor fields
    the generator uses, sits where TMA's 128B swizzle put A[row, k] of the stage's box."""
    _, sbo, kstep = sm90_gemm.a_descriptor_fields()
    sbo = lbo_sbo[1] if lbo_sbo else sbo
    for cw in range(cfg.consumers):
        for s in range(cfg.slices):
            for kk in range(cfg.bk // 16):
                start = base + (cw * cfg.slices + s) * 64 * 128 + kk * kstep
                for row in range(64):
                    for k in range(16):
                        box_row = (cw * cfg.slices + s) * 64 + row
                        if sm90.kmajor_operand_address(start, sbo, row, k) != \
                                sm90.tma_box_address(base, box_row, kk * 16 + k):
                            return False
    return True


def _b_reads_match(cfg: HopperGemmConfig, base: int, swap: bool = False) -> bool:
    """The same for B: N-major across 64-column boxes, or K-major like A."""
    lbo, sbo, kstep = sm90_gemm.b_descriptor_fields(cfg)
    if swap:
        lbo, sbo = sbo, lbo
    box_bytes = cfg.bk * 128
    for kk in range(cfg.bk // 16):
        start = base + kk * kstep
        for k in range(16):
            for n in range(cfg.bn):
                if cfg.b_kmajor:
                    got = sm90.kmajor_operand_address(start, sbo, n, k)
                    want = sm90.tma_box_address(base, n, kk * 16 + k)
                else:
                    got = sm90.mnmajor_operand_address(start, lbo, sbo, k, n)
                    want = sm90.tma_box_address(base + (n // 64) * box_bytes, kk * 16 + k, n % 64)
                if got != want:
                    return False
    return True


@pytest.mark.parametrize("cfg", DEFAULTS, ids=lambda c: c.short())
def test_descriptors_read_what_tma_wrote(cfg):
    lay = sm90_gemm.smem_layout(cfg, "float16")
    for stage in range(cfg.stages):
        assert _a_reads_match(cfg, lay.a + stage * lay.a_stage + 1024 * 7)
        assert _b_reads_match(cfg, lay.b + stage * lay.b_stage + 1024 * 7)


def test_the_layout_model_can_fail():
    """LBO and SBO swapped, or a wrong SBO, read the wrong bytes."""
    cfg = HopperGemmConfig(bm=128, bn=256)
    assert not _b_reads_match(cfg, 0, swap=True)
    assert not _a_reads_match(cfg, 0, lbo_sbo=(1024, 2048))
    assert not _b_reads_match(HopperGemmConfig(bn=128, b_kmajor=True), 0, swap=True)


@pytest.mark.parametrize("cfg", DEFAULTS, ids=lambda c: c.short())
def test_every_descriptor_start_keeps_base_offset_zero(cfg):
    """The descriptors leave the base offset 0, which is right only where each start address sits at row 0 of a
    1024-byte swizzle period (address bits 7-9 zero) -- true of every stage, slice and k step the kernel uses."""
    lay = sm90_gemm.smem_layout(cfg, "float16")
    assert lay.a % 1024 == lay.b % 1024 == lay.a_stage % 1024 == lay.b_stage % 1024 == 0
    _, _, a_step = sm90_gemm.a_descriptor_fields()
    _, _, b_step = sm90_gemm.b_descriptor_fields(cfg)
    for stage in range(cfg.stages):
        for kk in range(cfg.bk // 16):
            for s in range(cfg.slices * cfg.consumers):
                assert (lay.a + stage * lay.a_stage + s * 64 * 128 + kk * a_step) >> 7 & 7 == 0
            assert (lay.b + stage * lay.b_stage + kk * b_step) >> 7 & 7 == 0


def test_descriptor_bits():
    desc = sm90.smem_descriptor(0x1230, 16, 1024)
    assert desc == 0x123 | 1 << 16 | 64 << 32 | 1 << 62
    assert sm90.decode_descriptor(desc) == {"start": 0x1230, "lbo": 16, "sbo": 1024, "base_offset": 0,
                                            "swizzle": "128B"}
    assert sm90.decode_descriptor(sm90.smem_descriptor(0x3FFF0, 8192, 1024, base_offset=3))["base_offset"] == 3
    with pytest.raises(ValueError):
        sm90.smem_descriptor(1 << 18, 16, 1024)  # past the 14-bit start field
    with pytest.raises(ValueError):
        sm90.smem_descriptor(8, 16, 1024)  # not 16-byte aligned


@pytest.mark.parametrize("cfg", DEFAULTS, ids=lambda c: c.short())
def test_moving_the_start_address_never_carries_out(cfg):
    """The kernel adds (offset >> 4) to a stage-0 descriptor; that must equal the descriptor built at the offset,
    also with the tiles as high in the 228 KiB shared window as they can sit."""
    lay = sm90_gemm.smem_layout(cfg, "float16")
    base = (228 * 1024 - lay.total) // 1024 * 1024
    for (lbo, sbo, kstep), first, stride in ((sm90_gemm.a_descriptor_fields(), lay.a, lay.a_stage),
                                             (sm90_gemm.b_descriptor_fields(cfg), lay.b, lay.b_stage)):
        desc0 = sm90.smem_descriptor(base + first, lbo, sbo)
        for stage in range(cfg.stages):
            for kk in range(cfg.bk // 16):
                offset = stage * stride + kk * kstep
                assert desc0 + (offset >> 4) == sm90.smem_descriptor(base + first + offset, lbo, sbo)


def test_wgmma_operand_lists():
    for n in (64, 128, 192, 256):
        text = sm90.wgmma_function(sm90.Wgmma(n, "bfloat16"))
        assert text.count('"+f"') == n // 2
        assert f"m64n{n}k16.f32.bf16.bf16" in text
        assert f"%{n // 2 + 2}, 0" in text  # setp reads scale_d, the operand after the two descriptors
        assert re.search(rf"%{n // 2}, %{n // 2 + 1}, p, 1, 1, 0, 1;", text)
        assert f"d[{n // 2 - 1}]" in text and f"d[{n // 2}]" not in text
    with pytest.raises(ValueError):
        sm90.Wgmma(100)


def test_prelude_pulls_in_what_pieces_need():
    text = sm90.prelude(["tma"])
    assert "tf_smem_u32" in text and "tf_tma_load_3d" in text and "mbarrier.init" not in text
    with pytest.raises(ValueError):
        sm90.prelude(["tmem"])


# ---- unit: the pipeline protocol under random interleavings -----------------------------------------------------
class _Barrier:
    """An mbarrier: a phase completes when its arrivals and its transaction bytes are both used up."""

    def __init__(self, count: int) -> None:
        self.count, self.pending, self.tx, self.phase = count, count, 0, 0

    def arrive(self, expect_tx: int = 0) -> None:
        self.tx += expect_tx
        self.pending -= 1
        self._complete()

    def complete_tx(self, n: int) -> None:
        self.tx -= n
        self._complete()

    def _complete(self) -> None:
        if self.pending == 0 and self.tx == 0:
            self.phase, self.pending = self.phase + 1, self.count

    def done(self, parity: int) -> bool:  # try_wait.parity: the phase of that parity has completed
        return self.phase & 1 != parity


def _run_pipeline(seed, stages, consumers, cluster, boxes, empty_count=None, first_parity=1, tiles=3, k_blocks=5):
    """The kernel's handshake (full[s]: 1 arrival + A and B bytes; empty[s]: an arrival per consumer warpgroup of
    the cluster; producers start on parity 1, consumers on 0; a stage is released one K block later, as after
    wgmma.wait_group 1) with TMA copies landing at random times. Returns 'ok', 'deadlock' or 'overwrite'."""

    rnd = random.Random(seed)
    a_bytes, box_bytes = 100, 7
    full = [[_Barrier(1) for _ in range(stages)] for _ in range(cluster)]
    empty = [[_Barrier(empty_count or consumers * cluster) for _ in range(stages)] for _ in range(cluster)]
    smem = [[{} for _ in range(stages)] for _ in range(cluster)]
    copies, bad = [], []

    def producer(r):
        stage, phase = 0, 0
        for tile in range(tiles):
            for kb in range(k_blocks):
                yield lambda s=stage, p=phase: empty[r][s].done(p ^ first_parity)
                full[r][stage].arrive(a_bytes + boxes * box_bytes)
                copies.append(([r], stage, "A", (tile, kb), a_bytes))
                copies.extend((list(range(cluster)), stage, j, (tile, kb), box_bytes) for j in range(boxes)
                               if j % cluster == r)
                stage, phase = (0, phase ^ 1) if stage + 1 == stages else (stage + 1, phase)

    def consumer(r):
        stage, phase, held = 0, 0, None
        for tile in range(tiles):
            for kb in range(k_blocks):
                yield lambda s=stage, p=phase: full[r][s].done(p)
                want = {"A": (tile, kb), **{j: (tile, kb) for j in range(boxes)}}
                if smem[r][stage] != want:
                    bad.append((r, stage, tile, kb))
                if held is not None:
                    release(r, *held)
                held = (stage, want)
                stage, phase = (0, phase ^ 1) if stage + 1 == stages else (stage + 1, phase)
            release(r, *held)
            held = None

    def release(r, stage, want):
        if smem[r][stage] != want:  # overwritten while the wgmma group could still be reading it
            bad.append(("overwrite", r, stage))
        for q in range(cluster):
            empty[q][stage].arrive()

    threads = [producer(r) for r in range(cluster)] + [consumer(r) for r in range(cluster) for _ in range(consumers)]
    waits = [None] * len(threads)
    while True:
        ready = [i for i, t in enumerate(threads) if t is not None and (waits[i] is None or waits[i]())]
        if not ready and not copies:
            return "ok" if all(t is None for t in threads) and not bad else "deadlock" if not bad else "overwrite"
        if copies and (not ready or rnd.random() < 0.4):
            dests, stage, part, tag, n = copies.pop(rnd.randrange(len(copies)))
            for q in dests:
                smem[q][stage][part] = tag
                full[q][stage].complete_tx(n)
            continue
        i = rnd.choice(ready)
        try:
            waits[i] = next(threads[i])
        except StopIteration:
            threads[i] = None


@pytest.mark.parametrize("stages, consumers, cluster, boxes", [(2, 1, 1, 2), (4, 2, 1, 4), (3, 2, 2, 4),
                                                               (2, 2, 2, 1), (5, 1, 2, 3)])
def test_pipeline_handshake_under_random_timing(stages, consumers, cluster, boxes):
    for seed in range(60):
        assert _run_pipeline(seed, stages, consumers, cluster, boxes) == "ok", seed


def test_pipeline_model_catches_wrong_parity_and_counts():
    assert _run_pipeline(0, 3, 2, 1, 2, first_parity=0) == "deadlock"  # producers waiting on the fresh phase
    outcomes = {_run_pipeline(seed, 2, 2, 2, 2, empty_count=2) for seed in range(60)}  # peers not counted
    assert outcomes - {"ok"}, outcomes
