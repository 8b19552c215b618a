"""The CUDA attention space: where several engines apply, each config is one engine's, with the other engines'
knobs pinned and its own knobs within that engine's choices (a WMMA config with an 8-key tile computed no scores);
the default's engine; configs stored before the mma engine keep lowering."""
from __future__ import annotations

import pytest

import compiler_core as cc
from compiler_core.schedules.cuda import attention, attention_mma, attention_wmma

SM90 = cc.cuda_target("sm_90")
SM80 = cc.cuda_target("sm_80")
SM75 = cc.cuda_target("sm_75")


def _choices(space, name):
    return next(k.choices for k in space.knobs if k.name == name)


def _pins(engine, space):
    """The engine's pinned values of the other engines' knobs that `space` has."""
    return {k: v for k, v in attention.PINNED[engine].items() if k in space.names}


@pytest.mark.parametrize("params", [dict(heads=2, seq_q=100, seq_kv=300, head_dim=64, dtype="float16"),
                                    dict(heads=1, seq_q=1, seq_kv=4096, head_dim=128, causal=1, dtype="bfloat16")])
def test_every_valid_config_is_one_engines(params):
    w = cc.make_workload("attention", params)
    own = {"wmma": attention_wmma.space(w, SM90), "mma": attention_mma.space(w, SM90)}
    valid = list(cc.get_space(w, SM90))
    assert {c["engine"] for c in valid} == {"simt", "wmma", "mma"}
    for c in valid:
        assert all(c[k] == v for k, v in _pins(c["engine"], cc.get_space(w, SM90)).items()), c
        tiles = _choices(own[c["engine"]], "kv_tile") if c["engine"] != "simt" else attention.SIMT_TILES
        assert c["kv_tile"] in tiles, c
        if c["engine"] == "mma":
            assert own["mma"].is_valid({k: c[k] for k in own["mma"].names}), c
    space = cc.get_space(w, SM90)
    assert not space.is_valid(dict(valid[0], engine="wmma", kv_tile=8, **_pins("wmma", space)))
    assert not space.is_valid(dict(valid[0], engine="mma", kv_tile=16, **_pins("mma", space)))


def test_float32_odd_head_dims_and_old_devices_have_simt_and_tiled_simt_only():
    """Where no tensor-core engine applies (float32; a head_dim tensor cores do not take; bfloat16 on Turing) the
    engines are the two SIMT ones, and the default takes the tiled one, down to a decode step's one query row."""
    for w, target in ((cc.make_workload("attention", dict(heads=1, seq_q=8, seq_kv=8, head_dim=64)), SM90),
                      (cc.make_workload("attention", dict(heads=1, seq_q=8, seq_kv=8, head_dim=24, dtype="float16")),
                       SM90),
                      (cc.make_workload("attention", dict(heads=1, seq_q=8, seq_kv=8, head_dim=64, dtype="bfloat16")),
                       SM75)):
        assert _choices(cc.get_space(w, target), "engine") == ("simt", "tiled")
        for seq_q in (1, 8, 100):
            shape = cc.make_workload("attention", dict(w.params, seq_q=seq_q))
            assert cc.default_config(shape, target)["engine"] == "tiled"
            assert cc.lower(shape, cc.default_config(shape, target), target).kernels[0].name.startswith(
                "attention_tiled")


def test_a_float32_config_stored_before_the_tiled_engine_lowers_in_the_simt_space():
    w = cc.make_workload("attention", dict(heads=2, seq_q=64, seq_kv=64, head_dim=64))
    old = dict(threads_per_row=8, rows_per_block=16, kv_tile=32)  # the SIMT space had no `engine` knob
    assert not cc.get_space(w, SM90).is_valid(old)
    assert cc.lower(w, old, SM90).kernels[0].name == "attention_cuda"


def test_turing_float16_has_simt_and_wmma_but_no_mma():
    w = cc.make_workload("attention", dict(heads=2, seq_q=64, seq_kv=64, head_dim=64, dtype="float16"))
    assert _choices(cc.get_space(w, SM75), "engine") == ("simt", "wmma")


def test_the_default_takes_mma_tensor_cores_and_splits_a_decode_steps_keys():
    prefill = cc.make_workload("attention", dict(heads=16, seq_q=2048, seq_kv=2048, head_dim=128, dtype="float16"))
    decode = cc.make_workload("attention", dict(heads=32, seq_q=1, seq_kv=4096, head_dim=128, dtype="float16"))
    for target in (SM80, SM90):
        config = cc.default_config(prefill, target)
        assert config["engine"] == "mma" and config["kv_splits"] == 1
        assert cc.lower(prefill, config, target).kernels[0].name.startswith("attention_mma")
        step = cc.default_config(decode, target)
        assert step["engine"] == "mma" and step["warps"] == 1 and step["kv_splits"] > 1
        assert [k.name.endswith("_combine") for k in cc.lower(decode, step, target).kernels] == [False, True]
    # before sm_80: WMMA for prefill, SIMT for a decode step
    assert cc.default_config(prefill, SM75)["engine"] == "wmma"
    assert cc.default_config(decode, SM75)["engine"] == "simt"


def test_a_split_is_taken_only_where_blocks_leave_sms_idle():
    w = cc.make_workload("attention", dict(heads=64, seq_q=2048, seq_kv=2048, head_dim=64, dtype="bfloat16"))
    assert {c["kv_splits"] for c in attention_mma.space(w, SM90)} == {1}


def test_a_config_stored_before_the_mma_engine_still_lowers():
    w = cc.make_workload("attention", dict(heads=2, seq_q=128, seq_kv=128, head_dim=64, dtype="float16"))
    stored = {"engine": "wmma", "threads_per_row": 32, "rows_per_block": 1, "warps": 4, "kv_tile": 64, "pad": 8,
              "max_first": 0}
    assert cc.lower(w, stored, SM90).kernels[0].name == "attention_wmma"
    assert not cc.get_space(w, SM90).is_valid(stored)  # today's space has the mma engine's knobs too


def test_the_union_lists_and_samples_through_its_engines():
    """Pins make a union's valid configs sparse in its knobs' product (194 of 276,480 here): walking the product
    is past the search's listing limit and rejection sampling finds a few dozen, which ended a farm job after 4
    trials. Through its parts it lists and samples the same configs."""
    import random

    from compiler_core.space import Space, config_key
    w = cc.make_workload("attention", dict(heads=16, seq_q=2048, seq_kv=2048, head_dim=128, dtype="float16"))
    union = cc.get_space(w, SM90)
    product = Space(union.knobs, union.constraints)
    assert product.size > 200_000 and union.size == sum(part.size for part, _ in union.parts) < 1000
    listed = [config_key(c) for c in union]
    assert len(listed) == len(set(listed)) and set(listed) == {config_key(c) for c in product}
    drawn = union.sample(random.Random(3), 100)
    assert len({config_key(c) for c in drawn}) == 100 and all(union.is_valid(c) for c in drawn)
    assert {c["engine"] for c in drawn} == {"simt", "wmma", "mma"}


@pytest.mark.parametrize("head_dim", [16, 64, 128, 256])
def test_wmma_register_rule_is_verify_resources_estimate(head_dim):
    """The WMMA space's register rule is the estimate verify_resources applies to the lowered kernel: at head_dim
    256 the space held configs (~316 and ~443 registers) that failed to build; now it holds none."""
    from compiler_core.passes.verify_resources import register_estimate
    w = cc.make_workload("attention", dict(heads=2, seq_q=1, seq_kv=300, head_dim=head_dim, dtype="float16"))
    configs = list(attention_wmma.space(w, SM90))
    assert bool(configs) == (head_dim < 256)
    for c in configs:
        lowered = cc.lower(w, dict(c, engine="wmma", **_pins("wmma", cc.get_space(w, SM90))), SM90)  # it builds
        assert attention_wmma.registers(w, c) == register_estimate(lowered.kernels[0])


def test_an_engine_without_a_valid_config_is_neither_offered_nor_the_default():
    """At head_dim 256 the WMMA space holds no config (its registers): on Turing, where mma.sync does not apply, a
    prefill's default fell to WMMA and failed on the empty space."""
    w = cc.make_workload("attention", dict(heads=2, seq_q=100, seq_kv=30, head_dim=256, dtype="float16"))
    assert _choices(cc.get_space(w, SM75), "engine") == ("simt", "tiled")
    assert cc.lower(w, cc.default_config(w, SM75), SM75).kernels[0].name.startswith("attention_tiled")
    assert _choices(cc.get_space(w, SM90), "engine") == ("simt", "mma")


SM90A = cc.cuda_target("sm_90a", sm_count=132)


def test_hopper_prefill_defaults_to_wgmma_and_a_decode_step_to_mma():
    from compiler_core.schedules.cuda import attention_wgmma
    prefill = cc.make_workload("attention", dict(heads=16, seq_q=2048, seq_kv=2048, head_dim=128, dtype="float16"))
    config = cc.default_config(prefill, SM90A)
    assert (config["engine"], config["consumers"], config["overlap"], config["pingpong"]) == ("wgmma", 2, 1, 1)
    assert cc.lower(prefill, config, SM90A).kernels[0].name.startswith("attention_wgmma_c2")
    decode = cc.make_workload("attention", dict(heads=32, seq_q=1, seq_kv=4096, head_dim=128, dtype="float16"))
    assert cc.default_config(decode, SM90A)["engine"] == "mma"
    assert "wgmma" not in _choices(cc.get_space(prefill, SM90), "engine")  # sm_90 without `a`: no wgmma
    # 4 heads x 8 tiles of 128 rows leave most of 132 SMs idle: one consumer, twice the blocks
    few = cc.make_workload("attention", dict(heads=4, seq_q=1024, seq_kv=1024, head_dim=256, dtype="bfloat16"))
    assert cc.default_config(few, SM90A)["consumers"] == 1
    # head_dim below one 64-column box: no wgmma
    small = cc.make_workload("attention", dict(heads=4, seq_q=1024, seq_kv=1024, head_dim=48, dtype="float16"))
    assert not attention_wgmma.applies(small, SM90A) and cc.default_config(small, SM90A)["engine"] == "mma"


def test_wgmma_configs_are_one_engines_and_fit_registers_and_shared_memory():
    from compiler_core.schedules.cuda import attention_wgmma
    for head_dim in (64, 80, 128, 256):
        w = cc.make_workload("attention", dict(heads=3, seq_q=333, seq_kv=517, head_dim=head_dim, causal=1,
                                               dtype="bfloat16"))
        union = cc.get_space(w, SM90A)
        own = attention_wgmma.space(w, SM90A)
        mine = [c for c in union if c["engine"] == "wgmma"]
        assert len(mine) == len(list(own)) > 0
        for c in mine:
            assert all(c[k] == v for k, v in _pins("wgmma", union).items()), c
            cfg = attention_wgmma.flash_config(w, c)
            assert cfg.accumulators + 64 <= cfg.consumer_registers and cfg.shared_bytes <= SM90A.shared_limit


def test_a_config_stored_before_the_wgmma_engine_still_lowers_on_hopper():
    w = cc.make_workload("attention", dict(heads=2, seq_q=128, seq_kv=128, head_dim=64, dtype="float16"))
    stored = {"engine": "mma", "threads_per_row": 32, "rows_per_block": 1, "pad": 0, "max_first": 0, "warps": 4,
              "row_frags": 2, "kv_tile": 64, "stages": 2, "kv_splits": 1}
    assert cc.lower(w, stored, SM90A).kernels[0].name.startswith("attention_mma")
    assert not cc.get_space(w, SM90A).is_valid(stored)  # today's space has the wgmma engine's knobs too


@pytest.mark.parametrize("head_dim,kv_tile", [(64, 128), (80, 96), (128, 128), (256, 64)])
def test_wgmma_operand_layouts_read_what_tma_wrote(head_dim, kv_tile):
    """The kernel's operand offsets (Q and K K-major, V N-major, across 64-column boxes) address, through wgmma's
    descriptor layouts, exactly the bytes where the TMA boxes put each element (cuda_sm90's address model)."""
    from compiler_core.codegen import cuda_sm90 as sm90
    from compiler_core.codegen import flash_attention_sm90 as fa3
    cfg = fa3.Sm90FlashConfig(1, 256, 256, head_dim, 0, "float16", consumers=2, kv_tile=kv_tile, stages=2)
    q_base, k_base = 1 * cfg.q_bytes, 2 * cfg.q_bytes  # consumer 1's rows; the ring's stage 0
    v_base = k_base + cfg.stages * cfg.kv_bytes + cfg.kv_bytes  # V's stage 1
    for kk in range(head_dim // 16):  # S = Q K^T, k16 step kk: the kernel's `at` and `kt` offsets
        at = q_base + (kk // 4) * 64 * 128 + (kk % 4) * 32
        kt = k_base + (kk // 4) * cfg.kv_box_bytes + (kk % 4) * 32
        for row, k in ((0, 0), (9, 15), (63, 7)):
            col = 16 * kk + k
            assert sm90.kmajor_operand_address(at, 1024, row, k) == \
                sm90.tma_box_address(q_base + (col // 64) * 64 * 128, row, col % 64)
        for n, k in ((0, 3), (kv_tile - 1, 15), (17, 8)):
            col = 16 * kk + k
            assert sm90.kmajor_operand_address(kt, 1024, n, k) == \
                sm90.tma_box_address(k_base + (col // 64) * cfg.kv_box_bytes, n, col % 64)
    for kc in range(kv_tile // 16):  # O += P V, k16 chunk kc of the keys: `stage * KV_BYTES + kc * 2048`
        start = v_base + kc * fa3.KV_STEP_BYTES
        for k, n in ((0, 0), (15, head_dim - 1), (8, 65 % head_dim)):
            key = 16 * kc + k
            assert sm90.mnmajor_operand_address(start, cfg.kv_box_bytes, 1024, k, n) == \
                sm90.tma_box_address(v_base + (n // 64) * cfg.kv_box_bytes, key, n % 64)
    text = fa3.render_kernel(cfg)  # the offsets above are the kernel's own
    for expr in ("const uint32_t at = (kk / 4) * 64 * 128 + (kk % 4) * 32;",
                 "const uint32_t kt = stage * KV_BYTES + (kk / 4) * KV_BOX + (kk % 4) * 32;",
                 "r.desc_v + ((stage * KV_BYTES + kc * 2048) >> 4)",
                 "tf_desc_sw128(tf_smem_u32(smem + SMEM_V), KV_BOX, 1024)",
                 "tf_desc_sw128(tf_smem_u32(smem + cw * Q_BYTES), 16, 1024)"):
        assert expr in text, expr
    assert fa3.KV_STEP_BYTES == 2048


def test_the_tiled_default_follows_how_its_blocks_fill_the_sms():
    from compiler_core.schedules.cuda import attention_tiled as at

    def default(**params):
        config = cc.default_config(cc.make_workload("attention", params), SM90A)
        assert config["engine"] == "tiled"
        return {k: config[k] for k in at.WIDE if k != "kv_splits"}

    def unsplit(base):
        return {k: v for k, v in base.items() if k != "kv_splits"}

    assert default(heads=32, seq_q=1024, seq_kv=1024, head_dim=64) == unsplit(at.WIDE)  # 256 blocks of 128 rows
    assert default(heads=32, seq_q=1024, seq_kv=1024, head_dim=64, causal=1) == unsplit(at.NARROW)
    # 144 blocks of 128 rows leave the second wave 12 of 132, 288 of 64 spread the rows more evenly, 564 of 32 (4 rows
    # a thread, single-buffered) most; at d 128 the 8 rows a thread stay
    assert default(heads=12, seq_q=1500, seq_kv=1500, head_dim=96) == unsplit(dict(at.FEW_BLOCKS, stages=1))
    assert default(heads=36, seq_q=512, seq_kv=512, head_dim=128) == unsplit(at.NARROW)
    # 64 blocks of 64 rows leave SMs idle: their keys split, as FEW_BLOCKS' 128 smaller blocks ran 1.2x slower
    few = cc.make_workload("attention", dict(heads=4, seq_q=1024, seq_kv=1024, head_dim=64))
    assert default(heads=4, seq_q=1024, seq_kv=1024, head_dim=64) == unsplit(at.NARROW)
    assert cc.default_config(few, SM90A)["kv_splits"] > 1
    # above head_dim 128 the 16-lane tiles of 8 rows a thread do not fit: 16 lanes of 4 rows up to d 240, else 32
    # lanes of 8 rows, in 64-row blocks where those spread the rows as evenly as 32-row ones
    d192 = default(heads=16, seq_q=1024, seq_kv=1024, head_dim=192)
    assert (d192["threads_per_row"], d192["thread_rows"], d192["rows_per_block"]) == (16, 4, 64)
    d256 = default(heads=32, seq_q=1024, seq_kv=1024, head_dim=256)
    assert (d256["threads_per_row"], d256["thread_rows"], d256["rows_per_block"]) == (32, 8, 64)
    d160 = default(heads=12, seq_q=1024, seq_kv=1024, head_dim=160)  # 384 blocks of 32 rows are more even than 192
    assert (d160["threads_per_row"], d160["thread_rows"], d160["rows_per_block"]) == (16, 4, 32)
    wide_few = default(heads=4, seq_q=1024, seq_kv=1024, head_dim=256)  # few blocks, a 32-lane head: 32 rows
    assert (wide_few["threads_per_row"], wide_few["thread_rows"], wide_few["rows_per_block"]) == (32, 8, 32)
    assert default(heads=32, seq_q=16, seq_kv=4096, head_dim=128) == unsplit(at.SHORT)
    # a decode step's 32 blocks leave 100 SMs idle: the keys split; 256 blocks fill them, unsplit
    decode = cc.make_workload("attention", dict(heads=32, seq_q=1, seq_kv=4096, head_dim=128))
    assert cc.default_config(decode, SM90A)["kv_splits"] > 1
    assert cc.default_config(cc.make_workload("attention", dict(heads=256, seq_q=1, seq_kv=4096, head_dim=128)),
                             SM90A)["kv_splits"] == 1
    assert len(cc.lower(decode, cc.default_config(decode, SM90A), SM90A).kernels) == 2  # and the combine


def test_every_tiled_config_fits_and_reads_shared_memory_without_bank_conflicts():
    from compiler_core.schedules.cuda import attention_tiled as at

    for params in (dict(heads=2, seq_q=300, seq_kv=257, head_dim=128), dict(heads=3, seq_q=77, seq_kv=130, head_dim=13),
                   dict(heads=1, seq_q=64, seq_kv=64, head_dim=256, causal=1)):
        w = cc.make_workload("attention", params)
        configs = [at.flash_config(w, c) for c in cc.get_space(w, SM90A) if c["engine"] == "tiled"]
        assert configs
        for cfg in configs:
            ldq, ldk, ldv, ldp = cfg.strides
            assert cfg.shared_bytes <= SM90A.shared_limit and cfg.accumulators <= at.MAX_ACCUMULATORS
            assert cfg.threads % 32 == 0 and cfg.kv_tile % cfg.lanes == 0
            # rows read as float4 by consecutive lanes sit an odd number of 16-byte units apart: distinct banks
            assert ldk % 8 == 4 and ldp % 8 == 4 and ldv % 4 == 0
            assert ldk >= cfg.padded_dim and ldv >= cfg.lanes * cfg.out_columns and ldp >= cfg.rows
