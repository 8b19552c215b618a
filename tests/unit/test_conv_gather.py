"""The implicit-GEMM gather (gemm_simt_gather) on conv2d, without a compiler: the table the kernel fills holds,
per k, the X offset of (c, r, s) and (r, s); the split of the address into a k part and a j part equals the
direct im2col address for every (k, j); the space counts the table's shared memory, rejects entries that do not
fit 31 bits, keeps matmul's space unchanged and still lowers configs from before the knob; and in table mode
the k loop's B loads do no integer division."""
from __future__ import annotations

import dataclasses
import itertools

import pytest

import compiler_core as cc
from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.visitor import walk
from compiler_core.ops.conv2d import out_size
from compiler_core.schedules.cuda import conv2d, gemm_simt
from compiler_core.schedules.cuda.gemm_simt_gather import Gather, table_entries
from tests.conv_gather_cases import SHAPES

SM90 = cc.cuda_target("sm_90")
BIG = cc.make_workload("conv2d", dict(N=32, C=256, H=14, W=14, K=256, R=3, S=3, stride=1, pad=1))
FAST = dict(BM=64, BN=64, BK=8, TM=8, TN=8, pad=4, vec=4, double_buffer=1, unroll_k=8, split_k=1)


def _window(w, kk, j):
    """(image, c, input row, input column) of im2col element (kk, j), written out independently."""
    P, Q = out_size(w)
    c, rs = divmod(kk, w["R"] * w["S"])
    r, s = divmod(rs, w["S"])
    img, pq = divmod(j, P * Q)
    p, q = divmod(pq, Q)
    return img, c, p * w["stride"] + r - w["pad"], q * w["stride"] + s - w["pad"]


@pytest.mark.parametrize("w", SHAPES, ids=lambda w: w.key)
def test_table_entries_hold_offset_and_filter_position(w):
    g = conv2d.problem(w).b.gather
    R, S_, H, W = w["R"], w["S"], w["H"], w["W"]
    entries = table_entries(g, 0, w["C"] * R * S_)
    for kk, entry in enumerate(entries):
        c, rs = divmod(kk, R * S_)
        r, s = divmod(rs, S_)
        assert entry >> g.shift_bits == (c * H + r) * W + s
        if w["pad"]:
            assert (entry >> g.field_bits[1] & (1 << g.field_bits[0]) - 1, entry & (1 << g.field_bits[1]) - 1) == (r, s)
        offset, shifts = g.unpack(E.IntImm(entry))  # the kernel's decoding, folded on constants
        assert offset.value == entry >> g.shift_bits and [x.value for x in shifts] == ([r, s] if w["pad"] else [])
    assert 0 <= min(entries) and max(entries) < 1 << 31


@pytest.mark.parametrize("w", SHAPES, ids=lambda w: w.key)
def test_k_part_plus_j_part_is_the_im2col_address(w):
    gemm = conv2d.problem(w)
    g, C, H, W = gemm.b.gather, w["C"], w["H"], w["W"]
    for kk, j in itertools.product(range(gemm.K), range(0, gemm.N, max(1, gemm.N // 97))):
        (offset, shifts), (base, starts) = g.k_parts(kk), g.x_parts(0, j)
        img, c, h, x = _window(w, kk, j)
        inside = 0 <= h < H and 0 <= x < W
        assert (g.inside(starts, shifts) is None) == (not w["pad"])
        if w["pad"]:
            bounds = zip(starts, shifts, (0, 0), (H, W), strict=True)
            assert all(lo <= st + sh < hi for st, sh, lo, hi in bounds) == inside
        if inside:
            assert offset + base == ((img * C + c) * H + h) * W + x
        else:
            assert w["pad"], "a window reads outside X without padding"


def test_a_split_table_covers_its_own_k_range():
    w = SHAPES[3]
    g = conv2d.problem(w).b.gather
    assert table_entries(g, 40, 8) == table_entries(g, 0, 48)[40:]


def test_table_costs_shared_memory_and_counts_against_the_limit():
    g = conv2d.problem(BIG)
    div, table = gemm_simt.Tiling.of(g, dict(FAST, gather="div")), gemm_simt.Tiling.of(g, dict(FAST, gather="table"))
    assert table.shared_bytes - div.shared_bytes == 4 * 256 * 9  # one int32 per k of C*R*S
    split = gemm_simt.Tiling.of(g, dict(FAST, gather="table", split_k=4))
    assert split.table_length == 2304 // 4  # each split's table covers its own k tiles
    tiny = dataclasses.replace(SM90, max_shared_bytes=div.shared_bytes + 4 * 2304 - 4)
    space = cc.get_space(BIG, tiny)
    implicit = dict(FAST, im2col="implicit")
    assert space.is_valid(dict(implicit, gather="div")) and space.is_valid(dict(implicit, gather="hoist"))
    assert not space.is_valid(dict(implicit, gather="table"))


def test_entries_that_do_not_fit_31_bits_rule_the_table_out():
    huge = Gather(lambda k: (k, (0, 0)), lambda b, x: (x, (x, x)), (4, 4), (16, 16), 1 << 24)
    assert huge.shift_bits == 8 and not huge.table_fits
    assert Gather(huge.k_parts, huge.x_parts, (4, 4), (16, 16), 1 << 23).table_fits
    gemm = conv2d.problem(BIG)
    b = gemm_simt.Operand(gemm.b.buffer, gemm.b.index, "mn", False, gemm.b.guard, huge)
    space = gemm_simt.space(gemm_simt.Gemm("conv2d", 1, gemm.M, gemm.N, gemm.K, gemm.a, b, gemm.out, gemm.inputs),
                            SM90)
    assert space.is_valid(dict(FAST, gather="hoist")) and not space.is_valid(dict(FAST, gather="table"))


def test_matmul_has_no_gather_knob_and_old_conv_configs_still_lower():
    mm = cc.make_workload("matmul", dict(M=256, N=256, K=256))
    assert "gather" not in cc.get_space(mm, SM90).names
    assert {"gather", "im2col"} <= set(cc.get_space(BIG, SM90).names)
    old = cc.generate(BIG, FAST, SM90)  # a config stored before the knobs: the implicit form, the division gather
    assert old == cc.generate(BIG, dict(FAST, gather="div"), SM90) and "_tab" not in old
    assert old == cc.generate(BIG, dict(FAST, gather="div", im2col="implicit"), SM90)
    explicit = cc.generate(BIG, dict(FAST, gather="div", im2col="explicit", split_k=1), SM90)
    assert "conv2d_im2col" in explicit and "conv2d_im2col" not in old


def test_the_explicit_copy_is_offered_only_where_its_workspace_fits():
    huge = cc.make_workload("conv2d", dict(N=64, C=512, H=56, W=56, K=64, R=3, S=3, stride=1, pad=1))
    assert "im2col" not in cc.get_space(huge, SM90).names  # 4.6e9 bytes of im2col
    assert cc.default_config(BIG, SM90)["im2col"] == "implicit"  # the model ranks the gather + split-K first
    pointwise = cc.make_workload("conv2d", dict(N=2, C=16, H=14, W=14, K=32, R=1, S=1))
    assert cc.default_config(pointwise, SM90)["im2col"] == "implicit"  # B is X itself
    space = cc.get_space(BIG, SM90)
    assert space.is_valid(dict(FAST, gather="div", im2col="explicit", split_k=2))
    assert not space.is_valid(dict(FAST, gather="table", im2col="explicit", split_k=1))


def _divisions_in_k_loop_loads(w, config) -> int:
    """Integer divisions and modulos in the index or condition of X's loads inside the k loop."""
    func = cc.lower(w, config, SM90).kernels[0]
    loops = [n for n in _nodes(func.body, S.For) if n.var.name == "kt"]
    count = 0
    for st in (st for loop in loops for st in _nodes(loop.body, S.Store) if st.buffer.name == "b_ld"):
        count += sum(b.op in ("//", "%") for b in _nodes(st.value, E.BinOp))
    return count


def _nodes(node, kind) -> list:
    found = []
    walk(node, lambda n: found.append(n) if isinstance(n, kind) else None)
    return found


def test_table_mode_leaves_no_division_in_the_k_loop_gather():
    assert _divisions_in_k_loop_loads(BIG, dict(FAST, gather="div")) > 0
    assert _divisions_in_k_loop_loads(BIG, dict(FAST, gather="hoist")) > 0  # the k part still divides
    assert _divisions_in_k_loop_loads(BIG, dict(FAST, gather="table")) == 0


def test_the_implicit_default_takes_the_table():
    """The default itself copies im2col explicitly on this layer; the implicit form's own default reads the table."""
    from compiler_core.schedules.cuda import gemm_simt_default

    h100 = cc.cuda_target("sm_90a", sm_count=132)
    assert gemm_simt_default.default_config(conv2d.problem(BIG), h100)["gather"] == "table"


def test_the_default_form_follows_the_model(monkeypatch):
    """With the copy's traffic free and the gather's latency dear, the explicit form (a plain GEMM) ranks first."""
    from compiler_core.schedules.cuda import gemm_simt_default

    monkeypatch.setattr(gemm_simt_default, "DRAM_BYTES_S", 1e30)
    monkeypatch.setattr(gemm_simt_default, "GATHER_WARPS_PER_SCHEDULER", 16)
    assert cc.default_config(BIG, SM90)["im2col"] == "explicit"
