"""Every strategy, driven the way the job driver drives it, reaches the optimum of a small space.

`RecordedRuntimes` is a test double for the measuring side of the farm: it answers each proposed config from a
dict config_key -> runtime (None: the config failed to compile; a config outside the dict: runtime error).
"""
from __future__ import annotations

import math
import zlib

import pytest

from compiler_core import config_key, cpu_target, get_space, make_workload
from compiler_core.space import Constraint, Knob, Space
from tuner_server.search import STRATEGIES, Observation, StrategyContext, best, make_strategy

SPACE = Space(
    knobs=(Knob("tile", (4, 8, 16, 32, 64)), Knob("unroll", (1, 2, 4, 8)), Knob("vec", (1, 4))),
    constraints=(Constraint("tile x unroll <= 128", lambda c: c["tile"] * c["unroll"] <= 128),),
)
REAL = get_space(make_workload("elementwise", rows=64, cols=64, expr="relu(x)"), cpu_target(isa="avx2"))
VARIANTS = [("random", {}), ("grid", {}), ("grid", {"stride": 4}), ("grid", {"shuffle_seed": 11})]


class RecordedRuntimes:
    """Test double: replays recorded runtimes instead of measuring on a device."""

    def __init__(self, runtimes: dict[str, float | None], wrong: frozenset[str] = frozenset()):
        self.runtimes, self.wrong, self.measured = runtimes, wrong, []

    def measure(self, configs: list[dict]) -> list[Observation]:
        out = []
        for config in configs:
            key = config_key(config)
            self.measured.append(key)
            if key in self.wrong:
                out.append(Observation(config, self.runtimes[key], "WRONG_ANSWER"))
            elif key not in self.runtimes:
                out.append(Observation(config, None, "RUNTIME_ERROR"))
            elif self.runtimes[key] is None:
                out.append(Observation(config, None, "COMPILE_ERROR"))
            else:
                out.append(Observation(config, self.runtimes[key]))
        return out


def run_job(strategy, replay, budget, batch=4, history=()):
    """The job driver's loop: ask for a batch, measure it, tell the results; stop at the budget or exhaustion."""
    observations = list(history)
    while len(observations) < budget:
        configs = strategy.propose(min(batch, budget - len(observations)))
        if not configs:
            break
        results = replay.measure(configs)
        strategy.observe(results)
        observations.extend(results)
    return observations


def synthetic_runtime(config: dict) -> float:
    """A deterministic bumpy landscape: best near tile 16, unroll 4, plus a per-config bump from the config's CRC."""
    bump = zlib.crc32(config_key(config).encode()) % 100_003 * 1e-10
    return 1e-3 + abs(math.log2(config.get("tile", 16) / 16)) * 1e-4 + abs(math.log2(config.get("unroll", 4) / 4)) \
        * 3e-4 + bump


def recorded(space: Space) -> dict[str, float | None]:
    return {config_key(c): synthetic_runtime(c) for c in space}


def optimum(runtimes: dict[str, float | None], exclude=frozenset()) -> str:
    """The key of the unique fastest runtime (asserted unique, so `best` cannot pick a tied twin)."""
    ranked = sorted((v, k) for k, v in runtimes.items() if v is not None and k not in exclude)
    assert ranked[0][0] < ranked[1][0]
    return ranked[0][1]


@pytest.mark.parametrize("variant", VARIANTS, ids=str)
@pytest.mark.parametrize("space", [SPACE, REAL], ids=["small", "real"])
def test_each_strategy_reaches_the_optimum_and_measures_each_config_once(variant, space):
    runtimes = recorded(space)
    replay = RecordedRuntimes(runtimes)
    name, options = variant
    observations = run_job(make_strategy(name, StrategyContext(space, seed=1, options=options)), replay, 10_000)
    assert len(observations) == len(runtimes) == len(set(replay.measured))
    assert config_key(best(observations).config) == optimum(runtimes)


@pytest.mark.parametrize("variant", VARIANTS, ids=str)
def test_failures_are_measured_once_and_never_best(variant):
    runtimes = recorded(SPACE)
    fastest = optimum(runtimes)
    runtimes[fastest] = 1e-9  # fast but wrong
    broken = sorted(set(runtimes) - {fastest})[:5]
    for key in broken[:3]:
        runtimes[key] = None  # compile errors
    for key in broken[3:]:
        del runtimes[key]  # runtime errors
    replay = RecordedRuntimes(runtimes, wrong=frozenset({fastest}))
    name, options = variant
    observations = run_job(make_strategy(name, StrategyContext(SPACE, seed=2, options=options)), replay, 10_000)
    assert len(observations) == len(list(SPACE)) == len(set(replay.measured))
    assert config_key(best(observations).config) == optimum(runtimes, exclude={fastest})


@pytest.mark.parametrize("variant", VARIANTS, ids=str)
def test_a_tuner_restart_mid_job_loses_and_repeats_nothing(variant):
    runtimes = recorded(SPACE)
    replay = RecordedRuntimes(runtimes)
    name, options = variant
    before = run_job(make_strategy(name, StrategyContext(SPACE, seed=3, options=options)), replay, 13)
    restarted = make_strategy(name, StrategyContext(SPACE, seed=3, options=options, history=before))
    after = run_job(restarted, replay, 10_000, history=before)
    assert len(before) == 13 and len(after) == len(runtimes) == len(set(replay.measured))
    assert config_key(best(after).config) == optimum(runtimes)


@pytest.mark.parametrize("name", STRATEGIES)
def test_budget_smaller_than_the_space_stops_at_the_budget(name):
    replay = RecordedRuntimes(recorded(SPACE))
    observations = run_job(make_strategy(name, StrategyContext(SPACE, seed=4)), replay, 9, batch=4)
    assert len(observations) == 9 == len(set(replay.measured))
