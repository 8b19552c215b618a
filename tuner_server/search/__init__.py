"""Search strategies behind one ask/tell interface (`propose(n)` / `observe(results)`), picked by name.

STRATEGIES is the one table from a job's strategy name to the class that builds it from a `StrategyContext`; each
class carries its module's OPTIONS table. A new strategy is a module plus one entry here.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tuner_server.search.base import (
    STATUSES,
    Observation,
    Option,
    SearchStrategy,
    StrategyContext,
    TransferTrial,
    best,
    describe_options,
    parse_options,
)
from tuner_server.search.bayes_opt import BayesOpt
from tuner_server.search.genetic import GeneticAlgorithm
from tuner_server.search.grid_search import GridSearch
from tuner_server.search.model_guided import ModelGuided
from tuner_server.search.random_search import RandomSearch

STRATEGIES: dict[str, Callable[[StrategyContext], SearchStrategy]] = {
    "random": RandomSearch,
    "grid": GridSearch,
    "model": ModelGuided,
    "ga": GeneticAlgorithm,  # reference strategies (Kernel Tuner's), for benchmarks/search_efficiency.py
    "bo": BayesOpt,
}


def _factory(name: str):
    if name not in STRATEGIES:
        raise ValueError(f"unknown search strategy {name!r}; known: {', '.join(sorted(STRATEGIES))}")
    return STRATEGIES[name]


def make_strategy(name: str, context: StrategyContext) -> SearchStrategy:
    """The strategy `name` built from `context`; ValueError for an unknown name or bad options."""
    return _factory(name)(context)


def check_options(name: str, options: Mapping[str, Any] | None) -> dict[str, Any]:
    """Validate a job's strategy options without a space (e.g. when the job is submitted); returns them parsed."""
    return parse_options(_factory(name).OPTIONS, options)


def describe_strategies() -> dict[str, dict]:
    """Each strategy's one-line description and options, for the REST API's documentation."""
    return {name: {"doc": " ".join((factory.__doc__ or "").strip().partition("\n\n")[0].split()),  # 1st paragraph
                   "options": describe_options(factory.OPTIONS)}
            for name, factory in STRATEGIES.items()}


__all__ = [
    "STATUSES", "STRATEGIES", "Observation", "Option", "SearchStrategy", "StrategyContext", "TransferTrial", "best",
    "check_options", "describe_strategies", "make_strategy", "parse_options",
]
