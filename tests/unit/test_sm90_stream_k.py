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

from compiler_core.codegen import sm90_gemm
from compiler_core.codegen.sm90_gemm import HopperGemmConfig
from compiler_core.errors import ConfigError

CXX = shutil.which("g++") or shutil.which("c++")
pytestmark = pytest.mark.skipif(CXX is None, reason="needs a host C++ compiler")

MAIN = r"""
#include <cstdio>
int main(int argc, char** argv) {
  int m_tiles, n_tiles, k_blocks, grid, slots;
  if (std::sscanf(argv[1], "%d,%d,%d,%d,%d", &m_tiles, &n_tiles, &k_blocks, &grid, &slots) != 5) return 2;
  for (int g = 0; g < grid; ++g) {
    Schedule s;
    s.m_tiles = m_tiles; s.n_tiles = n_tiles; s.k_blocks = k_blocks; s.first = g; s.step = grid; s.rank = 0;
    const StreamK k = stream_k(s, slots);
    for (Cursor c = cursor_start(s, k); cursor_more(c, k);) {
      const bool dp = c.dp < k.dp_tiles;
      const Unit u = cursor_unit(c, s, k);
      cursor_next(c, u, k);
      std::printf("U %d %d %d %d %d\n", g, u.tile, u.kb_begin, u.kb_end, dp ? 1 : 0);
      if (!dp && u.kb_begin == 0 && u.kb_end < k_blocks) {
        const int end = (u.tile - k.dp_tiles + 1) * k_blocks;
        for (int j = sk_peer_after(k, g, end); j >= 0; j = sk_peer_after(k, j, end)) {
          std::printf("W %d %d\n", u.tile, j);
        }
      }
    }
  }
  return 0;
}
"""


QUANTA = (0, 2, 4, 8)  # ranges at any K block, or at halves, quarters, eighths of a tile's K


def host_source(quanta: int) -> str:
    """The kernel's Schedule and stream-K work functions (no device code) as host C++."""
    text = sm90_gemm.render_kernel(HopperGemmConfig(bm=128, bn=192, stages=5, consumers=2, stream_k=True,
                                                    sk_quanta=quanta))
    schedule = re.search(r"struct Schedule \{.*?\n\};", text, re.S).group(0)
    work = text[text.index("constexpr int SK_QUANTA"):text.index("__device__ __forceinline__ float4* sk_partial")]
    peers = re.search(r"__device__ __forceinline__ int sk_peer_after\(.*?\n\}", text, re.S).group(0)
    return ("#include <algorithm>\n#include <cstdint>\nusing std::min;\n#define __device__\n"
            f"#define __forceinline__ inline\n{schedule}\n{work}\n{peers}\n{MAIN}")


@pytest.fixture(scope="module", params=QUANTA, ids=lambda q: f"quanta{q}")
def walker(request, tmp_path_factory):
    d = tmp_path_factory.mktemp("stream_k")
    (d / "walk.cpp").write_text(host_source(request.param))
    subprocess.run([CXX, "-std=c++17", "-O1", "-o", str(d / "walk"), str(d / "walk.cpp")], check=True)
    return d / "walk", request.param


def walk(walker, m_tiles: int, n_tiles: int, k_blocks: int, grid: int, slots: int):
    out = subprocess.run([str(walker[0]), f"{m_tiles},{n_tiles},{k_blocks},{grid},{slots}"], check=True,
                         capture_output=True, text=True).stdout.split("\n")
    units = [tuple(map(int, line.split()[1:])) for line in out if line.startswith("U")]
    waits = [tuple(map(int, line.split()[1:])) for line in out if line.startswith("W")]
    return units, waits


def check_walk(walker, m_tiles, n_tiles, k_blocks, grid, slots) -> None:
    units, waits = walk(walker, m_tiles, n_tiles, k_blocks, grid, slots)
    tiles = m_tiles * n_tiles
    pieces, owners, publishers = defaultdict(list), defaultdict(list), defaultdict(set)
    by_cta = defaultdict(list)
    for g, tile, kb0, kb1, dp in units:
        assert 0 <= tile < tiles and 0 <= kb0 < kb1 <= k_blocks and g < slots
        pieces[tile].append((kb0, kb1))
        by_cta[g].append((tile, kb0, kb1, dp))
        (owners[tile].append(g) if kb0 == 0 else publishers[tile].add(g))
    for tile in range(tiles):  # every K block of every tile exactly once
        covered = sorted(pieces[tile])
        assert covered[0][0] == 0 and covered[-1][1] == k_blocks, (tile, covered)
        assert all(a[1] == b[0] for a, b in zip(covered, covered[1:], strict=False)), (tile, covered)
        assert len(owners[tile]) == 1, (tile, owners[tile])
    for g, work in by_cta.items():  # at most one published piece: the first after the data-parallel tiles
        sk = [w for w in work if not w[3]]
        assert [w for w in work if w[1] > 0] in ([], sk[:1]), (g, work)
        assert all(w[3] for w in work[:len(work) - len(sk)]), "data-parallel tiles come first"
    waited = defaultdict(set)
    for tile, j in waits:
        waited[tile].add(j)
    assert dict(waited) == {t: p for t, p in publishers.items() if p}, "owners wait for exactly the publishers"
    active, quanta = min(grid, slots), walker[1]
    loads = [sum(kb1 - kb0 for _t, kb0, kb1, _d in by_cta.get(g, [])) for g in range(active)]
    # the point of it: even shares, to a K block, or to a quantum (whose sizes differ by one block)
    quantum = 1 if quanta in (0, k_blocks) or quanta > k_blocks else -(-k_blocks // quanta)
    spread = 1 if quantum == 1 else quantum + max(len(w) for w in by_cta.values())
    assert max(loads) - min(loads) <= spread, f"K blocks per CTA {min(loads)}..{max(loads)}"
    if quanta:  # ranges start at quantum boundaries of a tile's K
        starts = {kb0 for w in by_cta.values() for _t, kb0, _e, dp in w if not dp}
        allowed = {q * k_blocks // min(quanta, k_blocks) for q in range(min(quanta, k_blocks))}
        assert starts <= allowed, (sorted(starts), sorted(allowed))


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
