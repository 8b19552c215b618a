"""Stream-K's split of the work (codegen/sm90_stream_k.py), checked on the rendered kernel's own text: its schedule
and cursor functions compiled for the host by the C++ compiler and walked for every CTA of a grid. Each K block of
each tile is computed exactly once, every tile has one owner that stores it, a CTA publishes at most one partial and
only from its first stream-K piece (so it waits for nothing first), and the peers an owner waits for are exactly the
CTAs that publish a piece of its tile."""
from __future__ import annotations

import random
import re
import shutil
import subprocess
from collections import defaultdict

import pytest

from compiler_core.codegen import sm90_gemm, sm90_stream_k
from compiler_core.codegen.sm90_gemm import HopperGemmConfig
from compiler_core.errors import ConfigError

CXX = shutil.which("g++") or shutil.which("c++")
pytestmark = pytest.mark.skipif(CXX is None, reason="needs a host C++ compiler")

MAIN = r"""
#include <cstdio>
int main(int argc, char** argv) {
  int m_tiles, n_tiles, k_blocks, grid, ctas;
  if (std::sscanf(argv[1], "%d,%d,%d,%d,%d", &m_tiles, &n_tiles, &k_blocks, &grid, &ctas) != 5) return 2;
  for (int g = 0; g < grid; ++g) {
    Schedule s;
    s.m_tiles = m_tiles; s.n_tiles = n_tiles; s.k_blocks = k_blocks; s.first = g; s.step = grid; s.rank = 0;
    const StreamK k = stream_k(s, ctas);
    for (Cursor c = cursor_start(s, k); cursor_more(c, k);) {
      const Unit u = cursor_unit(c, s, k);
      cursor_next(c, u, k);
      const bool publishes = sk_publishes(k, u);
      std::printf("U %d %d %d %d %d %d %d\n", g, u.tile, u.kb_begin, u.kb_end, u.piece < 0 ? 1 : 0, publishes ? 1 : 0,
                  publishes ? sk_publish_slot(k, s, u) : -1);
      if (!publishes) {
        for (int slot = sk_next_slot(k, s, u, -1); slot >= 0; slot = sk_next_slot(k, s, u, slot)) {
          std::printf("W %d %d %d\n", g, u.tile, slot);
        }
      }
    }
  }
  return 0;
}
"""

QUANTA = (0, 2, 4, 8)  # ranges at any K block, or at halves, quarters, eighths of a tile's K
SPLITS = (2, 3, 5)  # K-major pieces of the partial round
MODES = [("linear", q) for q in QUANTA] + [("split", s) for s in SPLITS]


def host_source(mode: str, value: int) -> str:
    """The kernel's Schedule and stream-K work functions (no device code) as host C++."""
    knobs = dict(sk_quanta=value) if mode == "linear" else dict(sk_split=value)
    text = sm90_gemm.render_kernel(HopperGemmConfig(bm=128, bn=192, stages=5, consumers=2, stream_k=True, **knobs))
    schedule = re.search(r"struct Schedule \{.*?\n\};", text, re.S).group(0)
    head = text[text.index("constexpr int SK_"):text.index("__device__ __forceinline__ float4* sk_partial")]
    walk = text[text.index("// A CTA's walk"):text.index("// ---- producer")]
    return ("#include <algorithm>\n#include <cstdint>\nusing std::min;\n#define __device__\n"
            f"#define __forceinline__ inline\n{schedule}\n{head}\n{walk}\n{MAIN}")


@pytest.fixture(scope="module", params=MODES, ids=lambda m: f"{m[0]}{m[1]}")
def walker(request, tmp_path_factory):
    d = tmp_path_factory.mktemp("stream_k")
    (d / "walk.cpp").write_text(host_source(*request.param))
    subprocess.run([CXX, "-std=c++17", "-O1", "-o", str(d / "walk"), str(d / "walk.cpp")], check=True)
    return d / "walk", request.param


def walk(walker, m_tiles: int, n_tiles: int, k_blocks: int, grid: int, ctas: int):
    out = subprocess.run([str(walker[0]), f"{m_tiles},{n_tiles},{k_blocks},{grid},{ctas}"], check=True,
                         capture_output=True, text=True).stdout.split("\n")
    units = [tuple(map(int, line.split()[1:])) for line in out if line.startswith("U")]
    waits = [tuple(map(int, line.split()[1:])) for line in out if line.startswith("W")]
    return units, waits


def check_walk(walker, m_tiles, n_tiles, k_blocks, grid, ctas) -> None:
    units, waits = walk(walker, m_tiles, n_tiles, k_blocks, grid, ctas)
    (mode, value), tiles, active = walker[1], m_tiles * n_tiles, min(grid, ctas)
    pieces, owners, published = defaultdict(list), defaultdict(list), defaultdict(set)
    by_cta, slot_uses = defaultdict(list), defaultdict(int)
    for g, tile, kb0, kb1, dp, publishes, slot in units:
        assert 0 <= tile < tiles and 0 <= kb0 < kb1 <= k_blocks and g < active
        pieces[tile].append((kb0, kb1))
        by_cta[g].append((tile, kb0, kb1, dp, publishes))
        if publishes:
            published[tile].add(slot)
            slot_uses[slot] += 1
        else:
            owners[tile].append(g)
    for tile in range(tiles):  # every K block of every tile exactly once, and one owner that stores it
        covered = sorted(pieces[tile])
        assert covered[0][0] == 0 and covered[-1][1] == k_blocks, (tile, covered)
        assert all(a[1] == b[0] for a, b in zip(covered, covered[1:], strict=False)), (tile, covered)
        assert len(owners[tile]) == 1, (tile, owners[tile])
    # each slot written once, inside the workspace the schedule sizes
    assert all(n == 1 for n in slot_uses.values()), slot_uses
    room = sm90_stream_k.partial_slots(tiles, active, 0 if mode == "linear" else value, k_blocks)
    assert all(0 <= slot < room for slot in slot_uses), (sorted(slot_uses), room)
    waited = defaultdict(set)
    for _g, tile, slot in waits:
        waited[tile].add(slot)
    assert dict(waited) == {t: p for t, p in published.items() if p}, "owners wait for exactly their tile's partials"
    waiting = {(g, tile) for g, tile, _slot in waits}
    for g, work in by_cta.items():
        dp = [w for w in work if w[3]]
        assert work[:len(dp)] == dp, "data-parallel tiles come first"
        # a CTA publishes everything it publishes before it waits for anything: nothing waits on a waiter
        first_wait = next((i for i, w in enumerate(work) if (g, w[0]) in waiting and not w[4]), len(work))
        assert not any(w[4] for w in work[first_wait:]), (g, work)
        if mode == "linear":  # at most one published piece: the first after the data-parallel tiles
            assert [w for w in work if w[4]] in ([], work[len(dp):len(dp) + 1]), (g, work)
    shares = [len([w for w in by_cta.get(g, []) if not w[3]]) if mode == "split"
              else sum(kb1 - kb0 for _t, kb0, kb1, dp, _p in by_cta.get(g, []) if not dp) for g in range(active)]
    if mode == "split" or value in (0, 1) or value >= k_blocks:  # even shares: to a piece, or to a K block
        assert max(shares) - min(shares) <= 1, f"shares per CTA {min(shares)}..{max(shares)}"
    else:  # to a quantum, whose sizes differ by a block
        assert max(shares) - min(shares) <= -(-k_blocks // value) + max(len(w) for w in by_cta.values())
        starts = {kb0 for w in by_cta.values() for _t, kb0, _e, dp, _p in w if not dp}
        assert starts <= {q * k_blocks // value for q in range(value)}, sorted(starts)


@pytest.mark.parametrize("case", [
    (18, 11, 32, 132, 132),  # 2304 x 2048 in 128 x 192 tiles: 198 tiles, all stream-K
    (12, 12, 24, 132, 132),  # 144 tiles: one round and 12
    (25, 12, 16, 132, 132),  # 300 tiles: a data-parallel round, then 168 tiles spread
    (11, 12, 8, 132, 132),  # 132 tiles: whole rounds, no stream-K
    (3, 4, 2, 132, 132),  # 12 tiles of 2 K blocks: fewer K blocks than CTAs, empty ranges
    (1, 1, 1, 132, 132),
    (20, 20, 5, 132, 100),  # a grid wider than the workspace's slots: the CTAs past them do nothing
])
def test_every_k_block_once_and_owners_wait_for_publishers(walker, case):
    check_walk(walker, *case)


def test_random_grids(walker):
    rng = random.Random(11)
    for _ in range(25):
        grid = rng.choice((8, 16, 78, 114, 132))
        check_walk(walker, rng.randint(1, 30), rng.randint(1, 30), rng.randint(1, 70), grid,
                   rng.choice((grid, grid, grid - 3 if grid > 3 else grid)))


def test_stream_k_rules():
    sm90_gemm.check(HopperGemmConfig(bm=128, bn=256, stream_k=True))
    for knobs in (dict(persistent=False), dict(cluster=2), dict(split_k=2, out="float32"), dict(batch=4)):
        with pytest.raises(ConfigError, match="stream_k"):
            sm90_gemm.check(HopperGemmConfig(stream_k=True, **knobs))
    cfg = HopperGemmConfig(stream_k=True)
    assert sm90_gemm.kernel_name(cfg, "float16").endswith("_sk")
    assert "stream_k=True" in cfg.knob_text() and "stream_k" not in HopperGemmConfig().knob_text()
