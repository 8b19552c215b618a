"""Synthetic replay spaces: the same table for the same spec, the structure each kind promises, a file round trip."""
from __future__ import annotations

import math

import pytest

from compiler_core.space import config_key
from tuner_server.replay import load_table
from tuner_server.search.knob_walk import neighbours
from tuner_server.synthetic_spaces import (
    FRESH,
    GROUPS,
    HELD_OUT,
    KINDS,
    LATE_GP_CHECK,
    LATER,
    NEWEST,
    PRESETS,
    SyntheticSpec,
    save_synthetic,
    spec_from_name,
    synthetic_table,
    synthetic_trials,
)


def ratios(table) -> list[float]:
    optimum = table.optimum
    return sorted(o.median_s / optimum for o in table.results.values() if o.status == "OK")


def test_same_spec_same_table_and_the_seed_matters():
    spec = SyntheticSpec("basins", seed=7, configs=600, knobs=9)
    assert synthetic_trials(spec) == synthetic_trials(SyntheticSpec("basins", seed=7, configs=600, knobs=9))
    other = synthetic_trials(SyntheticSpec("basins", seed=8, configs=600, knobs=9))[1]
    assert [t["median_s"] for t in other] != [t["median_s"] for t in synthetic_trials(spec)[1]]


@pytest.mark.parametrize("kind", ["smooth", "basins", "needle", "invalid", "noisy"])
def test_size_knobs_density_and_a_measured_optimum(kind):
    table = synthetic_table(SyntheticSpec(kind, seed=1, configs=2000, knobs=10))
    assert len(table) == 2000 and len(table.space.knobs) == 10
    assert all(2 <= len(k.choices) <= 8 for k in table.space.knobs)
    assert table.space.size > len(table)  # a constraint cuts the product: not every combination is recorded
    configs = list(table.space)[::97]
    with_neighbour = sum(bool(neighbours(table.space, c)) for c in configs)
    assert with_neighbour >= 0.9 * len(configs)  # dense: local moves stay inside the recorded space
    assert table.optimum is not None and math.isfinite(table.optimum)


def test_needle_only_the_optimum_is_within_five_percent():
    for spec in (SyntheticSpec("needle", seed=s, configs=3000, knobs=11) for s in range(3)):
        r = ratios(synthetic_table(spec))
        assert r[0] == 1.0 and r[1] >= 1.05 * 1.0 + 0.01, (spec, r[:3])


def test_invalid_kind_fails_a_third_and_the_optimum_borders_a_failing_region():
    table = synthetic_table(SyntheticSpec("invalid", seed=2, configs=3000, knobs=12))
    failed = sum(o.status != "OK" for o in table.results.values()) / len(table)
    assert 0.15 <= failed <= 0.6, failed
    best = min((o for o in table.results.values() if o.status == "OK"), key=lambda o: o.median_s).config
    assert any(table.measure(c).status == "RUNTIME_ERROR" for c, _ in neighbours(table.space, best))


def test_smooth_has_several_good_configs_and_noise_breaks_ties():
    assert sum(r <= 1.2 for r in ratios(synthetic_table(SyntheticSpec("smooth", seed=3, configs=2000)))) >= 2
    noisy = synthetic_table(SyntheticSpec("noisy", seed=3, configs=2000))
    assert len(set(o.median_s for o in noisy.results.values() if o.status == "OK")) > 1900  # noise: few ties


def test_written_table_loads_back_equal(tmp_path):
    spec = SyntheticSpec("needle", seed=4, configs=500, knobs=8)
    path = save_synthetic(spec, tmp_path / "needle.json.gz")
    loaded, built = load_table(path), synthetic_table(spec)
    assert loaded.results == built.results and loaded.meta["spec"]["kind"] == "needle"
    assert config_key(next(iter(loaded.space))) in loaded.results


def test_presets_span_the_kinds_and_sizes_the_benchmark_needs():
    kinds = {s.kind for s in PRESETS.values()}
    assert kinds == {"smooth", "basins", "needle", "invalid", "noisy"}
    assert all(5000 <= s.configs <= 20000 and 8 <= s.knobs <= 15 for s in PRESETS.values())
    held_out = set(HELD_OUT.values())
    assert {s.kind for s in held_out} == kinds and not held_out & set(PRESETS.values())
    assert len({s.name for s in held_out} | set(PRESETS)) == len(held_out) + len(PRESETS)  # names stay unique
    fresh = set(FRESH.values())
    assert {"needle", "noisy"} <= {s.kind for s in fresh} and not fresh & (held_out | set(PRESETS.values()))
    assert len(set(FRESH) | set(HELD_OUT) | set(PRESETS)) == len(fresh) + len(held_out) + len(PRESETS)


def test_the_sets_are_disjoint_and_the_later_ones_span_every_kind():
    sets = [PRESETS, HELD_OUT, FRESH, LATER, NEWEST, LATE_GP_CHECK]
    assert sum(map(len, sets)) == len(set().union(*sets))  # no space in two sets
    for named_later in (LATER, NEWEST, LATE_GP_CHECK):
        assert {s.kind for s in named_later.values()} == set(KINDS)
    for name, group in GROUPS.items():
        assert all(spec.name == key for key, spec in group.items()), name  # a group is keyed by its specs' names
    assert list(GROUPS["report"]) == [*PRESETS, *HELD_OUT, *FRESH, *LATER] and len(GROUPS["report"]) == 26


def test_bad_specs_are_refused():
    with pytest.raises(ValueError, match="known: smooth"):
        SyntheticSpec("spiky")
    with pytest.raises(ValueError, match="8-15 knobs"):
        SyntheticSpec("smooth", knobs=3)


def test_a_name_gives_back_its_spec_and_a_wrong_one_says_the_form():
    for spec in [*PRESETS.values(), *HELD_OUT.values(), *FRESH.values(), SyntheticSpec("invalid", 31, 7000, 14)]:
        assert spec_from_name(spec.name) == spec
    with pytest.raises(ValueError, match="the form is synth-KIND-<thousands of configs>k<knobs>-s<seed>.* or for a "
                                         "number of configs not whole thousands synth-KIND-<configs>x<knobs>-s<seed>"):
        spec_from_name("synth-noisy-8k10")
    with pytest.raises(ValueError, match="unknown synthetic space kind 'bumpy'; known: smooth, basins"):
        spec_from_name("synth-bumpy-8k10-s1")
    with pytest.raises(ValueError, match="8-15 knobs, got 20"):
        spec_from_name("synth-noisy-8k20-s1")


def test_every_size_has_one_name_that_reads_back_exactly():
    """Whole thousands keep their names (recorded results and tests cite them); any other size is written exactly,
    so 8,000 and 8,500 configs no longer share a name and 800 no longer reads back as 0."""
    sizes = (100, 800, 999, 1000, 1001, 8000, 8500, 12_345, 50_000)
    specs = [SyntheticSpec("noisy", seed=31, configs=n, knobs=10) for n in sizes]
    assert [s.name for s in specs] == [
        "synth-noisy-100x10-s31", "synth-noisy-800x10-s31", "synth-noisy-999x10-s31", "synth-noisy-1k10-s31",
        "synth-noisy-1001x10-s31", "synth-noisy-8k10-s31", "synth-noisy-8500x10-s31", "synth-noisy-12345x10-s31",
        "synth-noisy-50k10-s31"]
    assert [spec_from_name(s.name) for s in specs] == specs
    assert list(PRESETS) == ["synth-smooth-6k9-s1", "synth-basins-12k12-s2", "synth-needle-10k11-s3",
                             "synth-needle-20k15-s4", "synth-invalid-15k13-s5", "synth-noisy-5k8-s6"]
    for group in GROUPS.values():
        assert all(spec_from_name(name) == spec for name, spec in group.items())
    for other, written in (("synth-noisy-8000x10-s31", "synth-noisy-8k10-s31"),
                           ("synth-noisy-08k10-s31", "synth-noisy-8k10-s31"),
                           ("synth-noisy-8500x10-s031", "synth-noisy-8500x10-s31")):
        with pytest.raises(ValueError, match=f"'{other}' is not how its space is named: write '{written}'"):
            spec_from_name(other)
    with pytest.raises(ValueError, match="100-50,000 configs, got 0"):
        spec_from_name("synth-noisy-0k10-s31")
    with pytest.raises(ValueError, match="seed is at least 0, got -1"):
        SyntheticSpec("noisy", seed=-1)
    with pytest.raises(ValueError, match="configs must be an int, got float 8500.0"):
        SyntheticSpec("noisy", configs=8500.0)
