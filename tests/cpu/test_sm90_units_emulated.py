"""The Hopper GEMM's scheduling text, compiled for the host (tests/cpu/sm90_unit_emulation.py: the kernel's own
constants, tile scheduler, work units and producer with stubbed TMA and mbarriers, and its consumer's loop), walks
exactly the units of tests/sm90_unit_model and loads exactly the boxes that model reads, into the ring stage it
expects: batched kernels through 3-D coordinates, split-K kernels over their K ranges into their own slices,
clusters multicasting B, persistent and one-unit-per-CTA grids. The model computes A @ B on the same cases
(tests/unit/test_sm90_units_model.py), so this ties the rendered CUDA to a checked data flow. Planted mistakes in
the text must fail. Needs g++."""
from __future__ import annotations

import shutil

import pytest

from compiler_core.codegen import sm90_gemm
from tests.cpu import sm90_unit_emulation as emu
from tests.sm90_unit_model import CASES, UnitCase, producer_loads, walk

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not on PATH")


def received(case: UnitCase, loads: dict) -> dict:
    """Per CTA: (iteration, map, box, c0, c1, batch) of every box landing in its ring, multicasts delivered to each
    CTA of the mask; asserts each lands in the stage and box slot the ring says."""
    cfg = case.config()
    lay, stages, box_bytes = sm90_gemm.smem_layout(cfg, "float16"), cfg.stages, cfg.bk * sm90_gemm.ROW_BYTES
    out = {cta: [] for cta in range(case.ctas)}
    for cta, rows in loads.items():
        base = cta - cta % case.cluster
        for it, which, dst, c0, c1, c2, mask in rows:
            if which == 0:
                assert dst == lay.a + (it % stages) * lay.a_stage, (cta, it, dst)
                box = 0
            else:
                box, rest = divmod(dst - lay.b - (it % stages) * lay.b_stage, box_bytes)
                assert rest == 0 and 0 <= box < case.bn // 64, (cta, it, dst)
            for target in [base + r for r in range(case.cluster) if mask >> r & 1] if mask else [cta]:
                out[target].append((it, which, box, c0, c1, c2))
    return {cta: sorted(rows) for cta, rows in out.items()}


@pytest.mark.parametrize("case", CASES, ids=UnitCase.short)
def test_the_rendered_scheduler_walks_the_models_units_and_loads(case):
    loads, units = emu.run(case.config(), case.M, case.N, case.K, case.ctas)
    for cta in range(case.ctas):
        want = [(u.m0, u.n0, u.kb_begin, u.kb_end, u.c_offset) for u in walk(case, cta)]
        assert units[cta] == want, f"CTA {cta}: the consumer walks {units[cta][:4]}..., the model {want[:4]}..."
    got = received(case, loads)
    for cta in range(case.ctas):
        assert got[cta] == producer_loads(case, cta), f"CTA {cta}: loads differ from the model's"


PLANTED = {  # (case index, text in the kernel, its replacement): each must be caught
    "k range one block short": (2, "w.kb_end = (w.split + 1) * s.k_blocks / SPLIT_K;",
                                "w.kb_end = (w.split + 1) * s.k_blocks / SPLIT_K - (w.split == 0);"),
    "slice without the batch": (3, "(static_cast<size_t>(w.split) * BATCH + w.batch) * M * N",
                                "static_cast<size_t>(w.split) * M * N"),
    "batch coordinate dropped": (4, "kb * BK, t.m0, unit.batch);", "kb * BK, t.m0, 0);"),
    "units stop at the tiles": (1, "tile < sc.m_tiles * sc.n_tiles * BATCH * SPLIT_K;",
                                "tile < sc.m_tiles * sc.n_tiles * BATCH;"),
    "cluster split with tiles fastest": (9, "w.split = u % SPLIT_K;\n  w.tile = (u / SPLIT_K) % tiles;",
                                         "w.split = u / tiles;\n  w.tile = u % tiles;"),
    "cluster split stores into a partial slice": (10, "w.c_offset = static_cast<size_t>(w.batch) * M * N;",
                                                  "w.c_offset = (static_cast<size_t>(w.split) * BATCH + w.batch) * M "
                                                  "* N;"),
}


@pytest.mark.parametrize("name", PLANTED)
def test_planted_mistakes_are_caught(name):
    index, old, new = PLANTED[name]
    case = CASES[index]
    kernel = sm90_gemm.render_kernel(case.config(), "float16")
    assert kernel.count(old) >= 1, f"the planted text {old!r} is not in the kernel any more"
    loads, units = emu.run(case.config(), case.M, case.N, case.K, case.ctas, kernel=kernel.replace(old, new))
    same_units = all(units[c] == [(u.m0, u.n0, u.kb_begin, u.kb_end, u.c_offset) for u in walk(case, c)]
                     for c in range(case.ctas))
    got = received(case, loads)
    same_loads = all(got[c] == producer_loads(case, c) for c in range(case.ctas))
    assert not (same_units and same_loads), f"{name}: the harness did not notice"
