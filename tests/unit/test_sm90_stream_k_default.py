"""The Hopper GEMM default's stream-K halves (gemm_sm90_stream_k.halves_pay, rounds) and the tile choice that
costs them: halves exactly where the rule says they pay and the space allows them, and a tile changed for them
only where its own last round is halved. CPU tier: rules on shapes, no kernel."""
from __future__ import annotations

import random

import pytest

import compiler_core as cc
from compiler_core.schedules.cuda import gemm_sm90
from compiler_core.schedules.cuda import gemm_sm90_stream_k as sk

SMS = 132


@pytest.fixture(scope="module")
def target():
    return cc.cuda_target("sm_90a", sm_count=SMS)


@pytest.mark.parametrize(("tiles", "k_blocks", "pays"), [
    (196, 64, True),    # 64 left over, 128 halves fit in a round
    (198, 64, True),    # 66 left over: 132 halves fill the round exactly
    (200, 64, False),   # 68 left over: 136 halves overflow the round
    (264, 64, False),   # two full rounds
    (100, 64, False),   # one partly filled round: the ranges' form, not the halves'
    (196, 31, False),   # halves of 15.5 K blocks
    (196, 32, True),
])
def test_halves_pay_where_the_halved_rest_fits_a_round(tiles, k_blocks, pays):
    assert sk.halves_pay(tiles, SMS, k_blocks) is pays


def test_rounds_cost_a_halved_last_round_less_than_a_whole_one():
    for tiles in range(1, 800):
        whole = -(-tiles // SMS)
        for halves in (False, True):
            r = sk.rounds(tiles, SMS, 64, halves)
            if halves and sk.halves_pay(tiles, SMS, 64):
                assert whole - 1 < r < whole
            else:
                assert r == whole


def shapes(n: int, seed: int):
    rng = random.Random(seed)
    for _ in range(n):
        yield (rng.randrange(256, 8193, 64) + rng.choice((0, 0, 8, 40)), rng.randrange(256, 8193, 64),
               rng.choice((512, 1024, 1536, 2048, 4096, 8192)), rng.choice(("float16", "bfloat16")))


def test_the_default_takes_halves_exactly_where_they_pay_and_are_valid(target):
    taken = 0
    for m, n, k, dtype in shapes(400, seed=3):
        w = cc.make_workload("matmul", dict(M=m, N=n, K=k, dtype=dtype))
        config, space = cc.default_config(w, target), cc.get_space(w, target)
        assert space.is_valid(config)
        pays = sk.halves_pay(gemm_sm90.cta_tiles(m, n, config), SMS, -(-k // gemm_sm90.K_BLOCK))
        if config["stream_k"]:
            taken += 1
            assert config["sk_split"] == 2 and pays, (w.key, config)
        else:
            assert config["sk_split"] == 0
            assert not (pays and space.is_valid(dict(config, stream_k=True, sk_split=2))), (w.key, config)
    assert taken > 0  # the draw holds shapes the rule selects (about 8 % of such shapes on 132 SMs)


def test_a_tile_changes_for_the_halves_only_where_its_own_last_round_is_halved():
    changed = 0
    for m, n, k, _dtype in shapes(3000, seed=4):
        k_blocks = -(-k // gemm_sm90.K_BLOCK)
        whole = gemm_sm90.wave_tile(m, n, 1, SMS, gemm_sm90.TILE_CHOICES, k_blocks, halves=False)
        halved = gemm_sm90.wave_tile(m, n, 1, SMS, gemm_sm90.TILE_CHOICES, k_blocks, halves=True)
        if halved is not whole:
            changed += 1
            rows, cols = gemm_sm90.tiles(m, n, halved)
            assert sk.halves_pay(rows * cols, SMS, k_blocks), (m, n, k, halved)
    assert changed > 0


def test_batches_and_convolutions_never_take_stream_k(target):
    for m, n, k, dtype in shapes(60, seed=5):
        w = cc.make_workload("batch_matmul", dict(batch=2, M=m, N=n, K=k, dtype=dtype))
        assert not cc.default_config(w, target).get("stream_k")
    conv = cc.make_workload("conv2d", dict(N=8, C=256, H=28, W=28, K=512, R=3, S=3, stride=1, pad=1,
                                           dtype="float16"))
    assert "stream_k" not in cc.default_config(conv, target)
