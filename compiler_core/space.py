"""Schedule spaces: knobs with choices plus named constraints; a config is a plain dict knob -> value."""
from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from compiler_core.errors import ConfigError

MAX_SAMPLE_TRIES = 20000


@dataclass(frozen=True)
class Knob:
    name: str
    choices: tuple
    doc: str = ""


@dataclass(frozen=True)
class Constraint:
    """`check(config) -> bool`; `why` is the message shown when a config violates it."""
    why: str
    check: Callable[[dict], bool]


@dataclass(frozen=True)
class Space:
    """`parts`, for a union of spaces (one template's engines, each with knobs of its own): (space, pins) pairs, each
    part's configs completed by its pins (the other parts' knobs at fixed values, and the knob naming the part).
    A union's valid configs are sparse in its knobs' product, so it lists and samples through its parts."""
    knobs: tuple
    constraints: tuple = ()
    parts: tuple = ()

    @property
    def names(self) -> list[str]:
        return [k.name for k in self.knobs]

    def with_knob(self, knob: Knob, *constraints: Constraint) -> Space:
        """This space and one more knob with its constraints: a knob added after configs were stored, whose
        template's `config_space` keeps the space without it for them."""
        assert not self.parts, "a union's parts would not know the new knob"
        return dataclasses.replace(self, knobs=(*self.knobs, knob), constraints=(*self.constraints, *constraints))

    @property
    def size(self) -> int:
        """Size of the unconstrained product (valid configs are a subset); for a union, the sum of its parts'."""
        if self.parts:
            return sum(part.size for part, _pins in self.parts)
        n = 1
        for k in self.knobs:
            n *= len(k.choices)
        return n

    def _completed(self, part_config: dict, pins: dict) -> dict:
        full = {**pins, **part_config}
        return {name: full[name] for name in self.names}

    def _draw(self, rng: random.Random) -> dict:
        """One config from the knobs' choices (for a union: a part drawn by its size, then its knobs' choices)."""
        if not self.parts:
            return {k.name: rng.choice(k.choices) for k in self.knobs}
        part, pins = rng.choices(self.parts, weights=[p.size for p, _ in self.parts])[0]
        return self._completed({k.name: rng.choice(k.choices) for k in part.knobs}, pins)

    def violations(self, config: dict) -> list[str]:
        """Every reason the config is not a member of the space (empty if it is). Values must have their
        choices' exact type: True == 1 and 4.0 == 4 in Python, but neither is a valid int knob value."""
        if not isinstance(config, dict):
            return [f"a config must be a dict of knob values ({', '.join(self.names)}), got {type(config).__name__}"]
        problems = []
        missing = [k.name for k in self.knobs if k.name not in config]
        extra = sorted(set(config) - set(self.names))
        if missing:
            problems.append(f"missing knob(s) {', '.join(missing)}")
        if extra:
            problems.append(f"unknown knob(s) {', '.join(extra)}; knobs: {', '.join(self.names)}")
        for k in self.knobs:
            if k.name in config and not _is_choice(config[k.name], k.choices):
                problems.append(f"{k.name}={config[k.name]!r} not in {list(k.choices)}")
        if problems:
            return problems
        return [c.why for c in self.constraints if not c.check(config)]

    def is_valid(self, config: dict) -> bool:
        try:  # the common case, a dict of exactly the knobs with hashable values, without building `violations`
            members = type(config) is dict and len(config) == len(self.knobs) and \
                all((type(config[name]), config[name]) in choices for name, choices in self._typed_choices)
        except (KeyError, TypeError):  # a knob missing, or an unhashable value: `violations` says what is wrong
            members = False
        return self.admits(config) if members else not self.violations(config)

    @functools.cached_property
    def _typed_choices(self) -> tuple[tuple[str, frozenset], ...]:
        """Each knob's choices as (type, value) pairs: membership as `_is_choice` decides it (True is not 1)."""
        return tuple((k.name, frozenset((type(c), c) for c in k.choices)) for k in self.knobs)

    def admits(self, config: dict) -> bool:
        """`is_valid` for a config drawn from the knobs' own choices (every knob, nothing else): only the
        constraints are checked, since such a config passes the rest by construction. The samplers' hot path (a
        third of the cost of `is_valid`); anything else goes through `is_valid`."""
        return all(c.check(config) for c in self.constraints)

    def validate(self, config: dict) -> dict:
        problems = self.violations(config)
        if problems:
            raise ConfigError("invalid config: " + "; ".join(problems))
        return config

    def __iter__(self) -> Iterator[dict]:
        """Every valid config, in a deterministic order (a union's: part by part)."""
        if self.parts:
            for part, pins in self.parts:
                for config in part:
                    full = self._completed(config, pins)
                    if self.admits(full):
                        yield full
            return
        for values in itertools.product(*(k.choices for k in self.knobs)):
            config = dict(zip(self.names, values, strict=True))
            if all(c.check(config) for c in self.constraints):
                yield config

    def sample(self, rng: random.Random, n: int = 1, unique: bool = True) -> list[dict]:
        """Up to n valid configs by rejection sampling (fewer if the space has fewer)."""
        out, seen = [], set()
        for _ in range(MAX_SAMPLE_TRIES):
            if len(out) >= n:
                break
            config = self._draw(rng)
            key = config_key(config)
            if (unique and key in seen) or not self.admits(config):
                continue
            seen.add(key)
            out.append(config)
        if len(out) < n and self.size <= 200_000:
            rest = [c for c in self if config_key(c) not in seen]
            rng.shuffle(rest)
            out.extend(rest[: n - len(out)])
        return out

    def describe(self) -> dict:
        return {"knobs": [{"name": k.name, "choices": list(k.choices), "doc": k.doc} for k in self.knobs],
                "constraints": [c.why for c in self.constraints]}


def _is_choice(value, choices: tuple) -> bool:
    return any(type(value) is type(c) and value == c for c in choices)


def config_key(config: dict) -> str:
    """Stable string of a config: how trials and caches identify it."""
    return json.dumps(config, sort_keys=True, separators=(",", ":"))


def config_id(config: dict) -> tuple:
    """A hashable identity of a config, cheaper than `config_key` (for in-memory sets and caches) and the same
    identity: each value with its type, since True == 1 and 1.0 == 1 in Python but config keys and `Space.is_valid`
    tell them apart (a config with True is not the config with 1)."""
    return tuple([(name, type(value).__name__, value) for name, value in sorted(config.items())])


def config_id_by(config: dict, names: list[str]) -> tuple:
    """`config_id` given the config's knob names already sorted: a loop over many configs of one space sorts once.
    The same tuple, built apart so that `config_id` (on every search's hot path) keeps its one pass over the items
    (tests/unit/test_knob_walk.py holds `draw_unseen`, its user, to `config_id`'s identity)."""
    return tuple([(name, type(config[name]).__name__, config[name]) for name in names])
