"""Jobs measure the template default first, exactly once, and the inner strategy still covers the space."""
from __future__ import annotations

from compiler_core.space import Knob, Space, config_key
from tuner_server.search import Observation, StrategyContext, make_strategy
from tuner_server.search.default_first import DefaultFirst

SPACE = Space(knobs=(Knob("a", (1, 2, 3)), Knob("b", (0, 1))))
DEFAULT = {"a": 2, "b": 1}


def _drain(strategy, batch=4):
    seen = []
    while out := strategy.propose(batch):
        seen.extend(out)
        strategy.observe([Observation(c, 1.0) for c in out])
    return seen


def test_default_is_proposed_first_and_never_again():
    strategy = DefaultFirst(make_strategy("random", StrategyContext(SPACE, seed=3)), [DEFAULT], [])
    proposals = _drain(strategy)
    assert proposals[0] == DEFAULT
    keys = [config_key(c) for c in proposals]
    assert len(keys) == len(set(keys)) == 6


def test_history_with_the_default_skips_it():
    history = [Observation(DEFAULT, 2.0)]
    inner = make_strategy("grid", StrategyContext(SPACE, history=history))
    proposals = _drain(DefaultFirst(inner, [DEFAULT], history))
    assert DEFAULT not in proposals and len(proposals) == 5


STALE_HEAD = {"a": 3, "b": 0}  # the head's config, measured by another code generator: re-validated first


def test_several_firsts_come_in_order_even_one_per_batch():
    inner = make_strategy("random", StrategyContext(SPACE, seed=5))
    strategy = DefaultFirst(inner, [STALE_HEAD, DEFAULT, STALE_HEAD], [])
    assert strategy.propose(1) == [STALE_HEAD]
    strategy.observe([Observation(STALE_HEAD, 1.0)])
    assert strategy.propose(1) == [DEFAULT]
    strategy.observe([Observation(DEFAULT, 1.0)])
    rest = _drain(strategy)
    assert STALE_HEAD not in rest and DEFAULT not in rest and len(rest) == 4


def test_a_first_observed_before_it_was_proposed_is_dropped():
    strategy = DefaultFirst(make_strategy("grid", StrategyContext(SPACE)), [STALE_HEAD, DEFAULT], [])
    strategy.observe([Observation(DEFAULT, 1.0)])  # e.g. queued by an earlier driver before a restart
    first = strategy.propose(3)
    assert first[0] == STALE_HEAD and DEFAULT not in first and len(first) == 3
