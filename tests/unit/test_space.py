"""Schedule spaces: validation messages, deterministic sampling, iteration."""
from __future__ import annotations

import itertools
import json
import random

import pytest

from compiler_core import ConfigError, config_key, cpu_target, cuda_target, get_space, make_workload
from compiler_core.space import Constraint, Knob, Space

SPACE = Space(
    knobs=(Knob("tile", (8, 16, 32, 64)), Knob("unroll", (1, 2, 4)), Knob("simd", (0, 1))),
    constraints=(Constraint("tile x unroll must be at most 128", lambda c: c["tile"] * c["unroll"] <= 128),
                 Constraint("simd needs tile >= 16", lambda c: not c["simd"] or c["tile"] >= 16)),
)
VALID = [c for c in (dict(zip(("tile", "unroll", "simd"), v, strict=True))
                     for v in itertools.product((8, 16, 32, 64), (1, 2, 4), (0, 1)))
         if c["tile"] * c["unroll"] <= 128 and (not c["simd"] or c["tile"] >= 16)]
ELEMENTWISE = make_workload("elementwise", rows=64, cols=128, expr="relu(a+b)")


# ---- validation ------------------------------------------------------------------------------
def test_valid_config_passes_through():
    config = {"tile": 16, "unroll": 4, "simd": 1}
    assert SPACE.validate(config) is config and SPACE.is_valid(config) and SPACE.violations(config) == []


def test_missing_knob_is_named():
    with pytest.raises(ConfigError, match=r"invalid config: missing knob\(s\) unroll, simd"):
        SPACE.validate({"tile": 16})


def test_unknown_knob_is_named_with_the_known_ones():
    with pytest.raises(ConfigError, match=r"unknown knob\(s\) bogus; knobs: tile, unroll, simd"):
        SPACE.validate({"tile": 16, "unroll": 1, "simd": 0, "bogus": 3})


def test_value_outside_choices_lists_them():
    with pytest.raises(ConfigError, match=r"tile=12 not in \[8, 16, 32, 64\]"):
        SPACE.validate({"tile": 12, "unroll": 1, "simd": 0})


def test_all_structural_problems_reported_together():
    problems = SPACE.violations({"tile": 12, "bogus": 1})
    assert len(problems) == 3
    assert any("missing" in p for p in problems) and any("bogus" in p for p in problems)
    assert any("tile=12" in p for p in problems)


def test_violated_constraints_report_their_reason():
    assert SPACE.violations({"tile": 64, "unroll": 4, "simd": 0}) == ["tile x unroll must be at most 128"]
    assert SPACE.violations({"tile": 8, "unroll": 4, "simd": 1}) == ["simd needs tile >= 16"]
    with pytest.raises(ConfigError, match="simd needs tile >= 16"):
        SPACE.validate({"tile": 8, "unroll": 1, "simd": 1})


def test_real_template_space_validates():
    space = get_space(ELEMENTWISE, cuda_target())
    assert space.names == ["threads", "items"]
    with pytest.raises(ConfigError, match=r"threads=100 not in"):
        space.validate({"threads": 100, "items": 1})
    cpu = get_space(ELEMENTWISE, cpu_target(isa="avx2", cores=2))
    with pytest.raises(ConfigError, match=r"missing knob\(s\) simd"):
        cpu.validate({"rows_per_task": 1, "col_tile": 4096})
    transpose = get_space(make_workload("transpose", rows=64, cols=64), cuda_target())
    assert transpose.constraints and not all(transpose.is_valid(c) for c in _product(transpose))


# ---- iteration -------------------------------------------------------------------------------
def test_iteration_yields_exactly_the_valid_configs_in_product_order():
    assert list(SPACE) == VALID
    assert SPACE.size == 24 and len(VALID) < SPACE.size
    assert list(SPACE) == list(SPACE)


def test_iteration_of_template_spaces_is_valid_and_complete():
    space = get_space(ELEMENTWISE, cuda_target())
    configs = list(space)
    assert len(configs) == 5 * 4 and all(space.is_valid(c) for c in configs)
    assert len({config_key(c) for c in configs}) == len(configs)


# ---- sampling --------------------------------------------------------------------------------
def test_sample_is_unique_valid_and_deterministic_by_seed():
    a = SPACE.sample(random.Random(7), n=10)
    b = SPACE.sample(random.Random(7), n=10)
    assert a == b
    assert len(a) == 10 and len({config_key(c) for c in a}) == 10
    assert all(SPACE.is_valid(c) for c in a)


def test_different_seeds_give_different_samples():
    samples = {tuple(config_key(c) for c in SPACE.sample(random.Random(seed), n=5)) for seed in range(6)}
    assert len(samples) > 1


def test_sample_more_than_the_space_returns_every_valid_config_once():
    got = SPACE.sample(random.Random(0), n=1000)
    assert sorted(map(config_key, got)) == sorted(map(config_key, VALID))


def test_sample_without_uniqueness_may_repeat():
    tiny = Space(knobs=(Knob("a", (1, 2)),))
    got = tiny.sample(random.Random(0), n=20, unique=False)
    assert len(got) == 20 and {c["a"] for c in got} == {1, 2}


def test_sample_of_an_empty_space():
    impossible = Space(knobs=(Knob("a", (1, 2)),), constraints=(Constraint("never", lambda c: False),))
    assert impossible.sample(random.Random(0), n=3) == [] and list(impossible) == []


def test_knobless_space_has_one_empty_config():
    empty = Space(knobs=())
    assert list(empty) == [{}] and empty.sample(random.Random(0), n=5) == [{}]


# ---- configs are data ------------------------------------------------------------------------
def test_config_key_is_stable_json():
    assert config_key({"b": 1, "a": 2}) == config_key({"a": 2, "b": 1}) == '{"a":2,"b":1}'
    assert json.loads(config_key({"x": [1, 2]})) == {"x": [1, 2]}


def test_describe_lists_knobs_and_constraints():
    d = SPACE.describe()
    assert [k["name"] for k in d["knobs"]] == ["tile", "unroll", "simd"]
    assert d["knobs"][0]["choices"] == [8, 16, 32, 64]
    assert d["constraints"] == ["tile x unroll must be at most 128", "simd needs tile >= 16"]
    json.dumps(d)


def _product(space):
    import itertools

    choices = (k.choices for k in space.knobs)
    return [dict(zip(space.names, values, strict=True)) for values in itertools.product(*choices)]


# ---- type-strict validation -------------------------------------------------------------------
@pytest.mark.parametrize("value", [16.0, True, None, "16", 16.5])
def test_int_knobs_take_only_real_ints(value):
    """16.0 == 16 and True == 1 in Python; as knob values they reach codegen as the wrong type."""
    with pytest.raises(ConfigError, match=rf"tile={value!r} not in \[8, 16, 32, 64\]"):
        SPACE.validate({"tile": value, "unroll": 1, "simd": 0})
    assert not SPACE.is_valid({"tile": value, "unroll": 1, "simd": 0})


def test_bool_is_not_an_int_choice():
    with pytest.raises(ConfigError, match=r"simd=True not in \[0, 1\]"):
        SPACE.validate({"tile": 16, "unroll": 1, "simd": True})


@pytest.mark.parametrize("config", [None, [16, 1, 0], "tile=16", (("tile", 16),)])
def test_a_config_must_be_a_dict(config):
    with pytest.raises(ConfigError, match=r"a config must be a dict of knob values \(tile, unroll, simd\)"):
        SPACE.validate(config)


def test_string_knobs_take_only_strings():
    space = get_space(make_workload("matmul", M=64, N=64, K=64), cpu_target(cores=2))
    config = next(iter(space))
    with pytest.raises(ConfigError, match=r"order=1 not in \['jr_ir', 'ir_jr'\]"):
        space.validate({**config, "order": 1})


def test_build_refuses_a_float_knob_before_codegen():
    from compiler_core import lower

    w = make_workload("softmax", rows=4, cols=8)
    target = cpu_target(cores=2)
    config = next(iter(get_space(w, target)))
    with pytest.raises(ConfigError, match=r"rows_per_task=1.0 not in"):
        lower(w, {**config, "rows_per_task": 1.0}, target)


# ---- admits: the samplers' constraint-only check -------------------------------------------------
ADMIT_WORKLOADS = [
    make_workload("matmul", M=192, N=384, K=320), make_workload("batch_matmul", batch=3, M=17, N=33, K=45),
    make_workload("conv2d", N=1, C=16, H=14, W=14, K=32, R=3, S=3, pad=1),
    make_workload("softmax", rows=1024, cols=4096), make_workload("transpose", rows=64, cols=64), ELEMENTWISE,
]
ADMIT_TARGETS = [cpu_target(isa="avx2", cores=2), cpu_target(isa="avx512", cores=4), cuda_target("sm_80"),
                 cuda_target("sm_90a")]


@pytest.mark.parametrize("target", ADMIT_TARGETS, ids=lambda t: t.name if hasattr(t, "name") else str(t))
def test_admits_agrees_with_is_valid_on_configs_drawn_from_the_choices(target):
    rng = random.Random(3)
    checked = rejected = 0
    for workload in ADMIT_WORKLOADS:
        space = get_space(workload, target)
        for _ in range(400):
            config = {k.name: rng.choice(k.choices) for k in space.knobs}
            assert space.admits(config) == space.is_valid(config), (workload.key, config)
            checked, rejected = checked + 1, rejected + (not space.is_valid(config))
    assert checked == 400 * len(ADMIT_WORKLOADS) and rejected > 0  # the constraints did reject some


def test_admits_exactly_the_valid_configs_of_the_product():
    product = [dict(zip(SPACE.names, v, strict=True)) for v in itertools.product(*(k.choices for k in SPACE.knobs))]
    assert [c for c in product if SPACE.admits(c)] == VALID


# ---- is_valid's fast path: the same answer as `violations` on every kind of config --------------------------------
ODD_CONFIGS = [
    {"tile": 16, "unroll": 4, "simd": 1}, {"tile": 64, "unroll": 4, "simd": 1}, {"tile": 16, "unroll": 4},
    {"tile": 16, "unroll": 4, "simd": 1, "extra": 0}, {"tile": 16, "unroll": 4, "vector": 1},
    {"tile": 16.0, "unroll": 4, "simd": 1}, {"tile": 16, "unroll": 4, "simd": True}, {"tile": [16], "unroll": 4,
                                                                                      "simd": 1},
    {"tile": None, "unroll": 4, "simd": 1}, {}, None, [16, 4, 1], "tile=16",
]


@pytest.mark.parametrize("config", ODD_CONFIGS, ids=repr)
def test_is_valid_is_exactly_no_violations(config):
    assert SPACE.is_valid(config) == (not SPACE.violations(config))


def test_is_valid_agrees_with_violations_on_every_product_config():
    for config in _product(SPACE):
        assert SPACE.is_valid(config) == (not SPACE.violations(config)) == (config in VALID)
