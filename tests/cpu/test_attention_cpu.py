"""The CPU attention template (online softmax over blocks of keys, C + OpenMP) matches the float64 reference through
every knob value (both layouts), on odd shapes, causal or not, in every dtype, on random and adversarial inputs; the
generated code never holds seq_q x seq_kv scores; every register block of the lanes layout (row vectors x key groups)
fits the target's vector registers and matches the reference; planted bugs fail (no rescale when the max grows, a
block of keys skipped; in the lanes layout also the keys past the last group, the causal mask, a second row vector
that takes the first one's probabilities)."""
from __future__ import annotations

import re

import pytest

import compiler_core as cc
from compiler_core.schedules.cpu import attention_lanes
from compiler_core.schedules.cpu.attention import SCORE_FLOATS
from tests.c_source_mutants import catching_input_sets
from tests.space_configs import covering_configs

TARGET = cc.cpu_target(cores=2)
WORKLOADS = [
    cc.make_workload("attention", dict(heads=2, seq_q=33, seq_kv=70, head_dim=13)),  # no tile or block divides
    cc.make_workload("attention", dict(heads=2, seq_q=33, seq_kv=70, head_dim=13, causal=1)),
    cc.make_workload("attention", dict(heads=1, seq_q=70, seq_kv=20, head_dim=24, causal=1, dtype="float16")),
    cc.make_workload("attention", dict(heads=3, seq_q=9, seq_kv=40, head_dim=8, dtype="bfloat16")),
    cc.make_workload("attention", dict(heads=1, seq_q=1, seq_kv=1, head_dim=1)),  # one key: the output is V
]


def _failures(w, configs):
    sets = cc.input_sets(w, seed=11)
    expected = [cc.expect(w, s.arrays) for s in sets]
    out = []
    for config in configs:
        kernel = cc.build(w, config, TARGET)
        for s, e in zip(sets, expected, strict=True):
            verdict = cc.verify(w, kernel.run(*s.arrays), e)
            if not verdict.ok:
                out.append((config, s.name, verdict.message))
    return out


@pytest.mark.parametrize("w", WORKLOADS, ids=lambda w: w.key)
def test_every_knob_value_matches_the_reference(w):
    configs = covering_configs(w, TARGET)
    failures = _failures(w, configs)
    assert not failures, f"{len(failures)} of {len(configs)} configs fail: {failures[:2]}"


def test_no_buffer_grows_with_the_sequences():
    """What a task allocates is bounded by the knobs, whatever seq_q and seq_kv are (no seq_q x seq_kv scores)."""
    w = cc.make_workload("attention", dict(heads=4, seq_q=4096, seq_kv=8192, head_dim=64))
    sizes = []
    for config in covering_configs(w, TARGET):
        source = cc.generate(w, config, TARGET)
        sizes += [int(n) for n in re.findall(r"float \w+\[(\d+)\]", source)]
        sizes += [int(lanes) * int(n) for lanes, n in re.findall(r"tf_float32x(\d+) \w+\[(\d+)\]", source)]
        assert "aligned_alloc" not in source
    assert sizes and max(sizes) <= max(SCORE_FLOATS, 8 * 64)


def _lanes_blocks(w, target, kv_block: int) -> list[dict]:
    """Every register block (q_tile row vectors, accumulators key groups) the space holds at this kv_block."""
    space = cc.get_space(w, target)
    configs = [dict(q_tile=q, kv_block=kv_block, vector="explicit", accumulators=a, layout="lanes")
               for q in (1, 2, 4, 8) for a in (1, 2, 4)]
    return [c for c in configs if space.is_valid(c)]


@pytest.mark.parametrize("w", WORKLOADS[:4], ids=lambda w: w.key)
def test_every_lanes_register_block_matches_the_reference(w):
    """Row vectors past the head's rows (seq_q 33, 70, 9), key groups past the block's valid keys and head_dims no
    group of columns divides: every block of the host's target, at a kv_block the keys do not fill."""
    configs = _lanes_blocks(w, TARGET, 16)
    assert configs, "no lanes config at kv_block 16"
    failures = _failures(w, configs)
    assert not failures, f"{len(failures)} of {len(configs)} configs fail: {failures[:2]}"


@pytest.mark.parametrize("isa", ["sse", "avx2", "avx512"])
def test_lanes_blocks_fit_the_vector_registers_and_more_than_one_is_offered(isa):
    target = cc.cpu_target(isa=isa, cores=2)
    w = cc.make_workload("attention", dict(heads=8, seq_q=512, seq_kv=512, head_dim=64))
    blocks = _lanes_blocks(w, target, 32)
    assert all(attention_lanes.registers_needed(c) <= target.vector_registers for c in blocks)
    assert max(attention_lanes.chains(c) for c in blocks) >= 8  # FMA latency x 2 ports: 8 chains at least
    space = cc.get_space(w, target)
    too_many = dict(blocks[0], q_tile=8, accumulators=4)
    assert not space.is_valid(too_many) and "vector registers" in " ".join(space.violations(too_many))


ROWS = dict(q_tile=4, vector="explicit", accumulators=1, layout="rows")
LANES = dict(q_tile=1, vector="explicit", accumulators=1, layout="lanes")
MUTANTS = {  # (workload index, config, edit of the source)
    # the running sums are not rescaled when a later block raises the max: wrong wherever the max moves
    "no rescale": (0, dict(ROWS, kv_block=16), lambda s: re.subn(r"const float (alpha\d+) = tf_expf\([^;]*\);",
                                                                 r"const float \1 = 1.0f;", s)),
    # the last block of keys is never visited (the key loop one block short)
    "last block skipped": (0, dict(ROWS, kv_block=16), lambda s: re.subn(r"kvb < 5;", "kvb < 4;", s)),
    # the same two in the lanes layout, and its own: the keys past the last group of four, the causal mask
    "lanes: no rescale": (0, dict(LANES, kv_block=16),
                          lambda s: re.subn(r"const (\w+) alpha = [^;]*;", r"const \1 alpha = (\1){0} + 1.0f;", s)),
    "lanes: last block skipped": (0, dict(LANES, kv_block=16), lambda s: re.subn(r"kvb < 5;", "kvb < 4;", s)),
    "lanes: tail keys skipped": (0, dict(LANES, kv_block=16),
                                 lambda s: re.subn(r"jt < \(valid % 4\)", "jt < 0", s)),
    "lanes: no causal mask": (1, dict(LANES, kv_block=16),
                              lambda s: re.subn(r"if \(\(i0 < \(\(j0 \+ valid\) - 1\)\)\)", "if (0)", s)),
    # two row vectors: the second one's p V takes the first one's probabilities; the key groups of two (8 keys)
    "lanes q2: second vector's p": (0, dict(LANES, q_tile=2, kv_block=16),
                                    lambda s: re.subn(r"\(p1 \*", "(p0 *", s)),
    "lanes a2: tail keys skipped": (0, dict(LANES, accumulators=2, kv_block=16),
                                    lambda s: re.subn(r"jt < \(valid % 8\)", "jt < 0", s)),
}


@pytest.mark.parametrize("mutant", list(MUTANTS))
def test_a_planted_bug_fails(mutant):
    index, config, edit = MUTANTS[mutant]
    w = WORKLOADS[index]
    assert catching_input_sets(w, cc.build(w, config, TARGET), edit, seed=11), f"{mutant} passed every input set"


def test_the_default_puts_a_query_row_in_each_lane_where_the_rows_fill_a_vector_and_the_merge_costs_most():
    def layouts(isa: str, seq_q: int) -> list[str]:
        target = cc.cpu_target(isa=isa, cores=2)
        return [cc.default_config(cc.make_workload("attention", dict(heads=8, seq_q=seq_q, seq_kv=512, head_dim=d)),
                                  target)["layout"] for d in (32, 64, 128, 256)]

    assert layouts("avx512", 512) == ["lanes"] * 4
    assert layouts("avx2", 512) == ["lanes"] * 4
    assert layouts("sse", 512) == ["lanes", "rows", "rows", "rows"]  # measured: lanes lost at 64 and 128 with 4
    assert layouts("avx512", 1) == ["rows"] * 4  # a decode step's one row would leave the other lanes idle
    prefill = cc.make_workload("attention", dict(heads=8, seq_q=512, seq_kv=512, head_dim=64))
    for w in (prefill, *WORKLOADS):
        assert cc.get_space(w, TARGET).is_valid(cc.default_config(w, TARGET))


@pytest.mark.parametrize("isa", ["sse", "avx2", "avx512"])
def test_the_default_lanes_block_keeps_eight_fma_chains_within_the_registers(isa):
    """Two ports of 4-cycle FMAs need 8 independent chains; the block is two row vectors where the rows and the
    outputs allow (one vector at head_dim 256 with 16 lanes), with as many key groups as the registers hold."""
    target = cc.cpu_target(isa=isa, cores=2)
    lanes = target.vector_lanes_f32
    for d in (16, 32, 64, 128, 256):
        for seq_q in (lanes, 2 * lanes, 100, 512):
            w = cc.make_workload("attention", dict(heads=2, seq_q=seq_q, seq_kv=300, head_dim=d))
            config = cc.default_config(w, target)
            if config["layout"] != "lanes":
                continue
            assert attention_lanes.registers_needed(config) <= target.vector_registers
            assert attention_lanes.chains(config) >= 8, (w.key, config)
            two_vectors_fit = 2 * lanes * d <= SCORE_FLOATS and seq_q > lanes
            assert config["q_tile"] == (2 if two_vectors_fit else 1), (w.key, config)


def test_a_config_stored_before_the_layout_knob_builds_the_rows_kernel():
    w = WORKLOADS[1]
    old = dict(q_tile=4, kv_block=16, vector="explicit", accumulators=2)
    assert cc.generate(w, old, TARGET) == cc.generate(w, dict(old, layout="rows"), TARGET)
    with pytest.raises(cc.ConfigError, match="layout lanes"):
        cc.lower(w, dict(old, layout="lanes"), TARGET)
