"""Genetic algorithm: a reference strategy re-implemented after Kernel Tuner 1.5's `genetic_algorithm` (not a default).

As there, a generation of `popsize` configs is measured, sorted by runtime (failures last), and the next one is bred:
two distinct parents are selected (rank-biased: index = int(Beta(1, 2.5) * popsize), so the head of the sorted
generation is picked most; or a binary tournament), crossed over (single-point, two-point, uniform or disruptive
uniform), each child is repaired when invalid (replaced by a random valid one-knob neighbour, adjacent choices
first) and mutated with chance 1/`mutation_chance` (replaced by a random valid one-knob neighbour); children already
in the new generation are dropped. The first generation is a uniform sample of valid configs. A config measured
before is never measured again: its runtime is reused, as Kernel Tuner's cache does, and costs no evaluation.

What the ask/tell interface changes: `propose(n)` hands out the generation's unmeasured members (a batch may end at
the generation's end, so it can be shorter than n); the next generation is bred once the current one is in, or, when
asked before that, from the members measured so far. Where Kernel Tuner stops (after `maxiter` generations, or when
STALL generations in a row breed nothing new), this strategy adds popsize / 4 random unseen configs to the
generation (immigrants), so it walks the whole space within a job's budget. Kernel Tuner's population-size
adjustment for small spaces is kept.

Its options, with their defaults and meanings, are OPTIONS below (GET /v1/ops lists them under `strategies`).
"""
from __future__ import annotations

import math
import random

from tuner_server.search.base import OK, Observation, Option, StrategyContext, check_batch_size, parse_options
from tuner_server.search.knob_walk import config_id, neighbours
from tuner_server.search.listing import UnseenDraws, listing_cost

OPTIONS: dict[str, tuple] = {
    "popsize": Option(int, 26, "configs per generation", minimum=2, maximum=4096),
    "maxiter": Option(int, 90, "generations before immigrants join every generation", minimum=1),
    "method": Option(str, "single_point", "crossover method",
                     choices=("single_point", "two_point", "uniform", "disruptive_uniform")),
    "mutation_chance": Option(int, 55, "a child mutates with chance 1 / mutation_chance", minimum=1),
    "selection": Option(str, "rank", "parent selection", choices=("rank", "tournament")),
}
BREED_TRIES = 20  # pairs of parents tried per child slot
NEAR_CACHE = 65_536  # children whose valid one-knob neighbours are kept (the cache starts over when full)
STALL = 10  # generations bred in a row with nothing new before immigrants join


def single_point(a: list, b: list, rng: random.Random) -> tuple[list, list]:
    pos = int(rng.random() * len(a))
    return a[:pos] + b[pos:], b[:pos] + a[pos:]


def two_point(a: list, b: list, rng: random.Random) -> tuple[list, list]:
    start, end = (0, len(a)) if len(a) < 5 else (1, len(a) - 1)
    if end - start < 2:
        return single_point(a, b, rng)
    p, q = sorted(rng.sample(range(start, end), 2))
    return a[:p] + b[p:q] + a[q:], b[:p] + a[p:q] + b[q:]


def uniform(a: list, b: list, rng: random.Random) -> tuple[list, list]:
    take = [rng.random() > 0.5 for _ in a]
    return [x if t else y for x, y, t in zip(a, b, take, strict=True)], \
        [y if t else x for x, y, t in zip(a, b, take, strict=True)]


def disruptive_uniform(a: list, b: list, rng: random.Random) -> tuple[list, list]:
    """Uniform crossover that swaps half of the differing genes (rounded up), so children differ from both parents
    when the parents differ in more than one gene."""
    differing = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
    c, d = list(a), list(b)
    for i in rng.sample(differing, (len(differing) + 1) // 2):
        c[i], d[i] = b[i], a[i]
    return c, d


CROSSOVERS = {"single_point": single_point, "two_point": two_point, "uniform": uniform,
              "disruptive_uniform": disruptive_uniform}


class GeneticAlgorithm:
    """Kernel Tuner's genetic algorithm (reference strategy): rank-biased selection, crossover, repair, mutation."""

    OPTIONS = OPTIONS

    def __init__(self, context: StrategyContext):
        self.options = parse_options(OPTIONS, context.options)
        self.space = context.space
        self.names = context.space.names
        self.rng = random.Random(context.seed)
        self._seen: set[tuple] = set()
        self._runtime: dict[tuple, float] = {}  # config id -> measured runtime (inf: failed)
        self._draws = UnseenDraws(context.space, self._seen, self.rng)
        size = listing_cost(context.space)
        popsize, maxiter = self.options["popsize"], self.options["maxiter"]
        if popsize > size // 2:  # Kernel Tuner's adjustment for small spaces
            popsize = min(max(round(size / maxiter * 3), 2), popsize)
        self.popsize = popsize
        self.generation_no = 0
        self._generation: list[dict] = []  # the current generation, in breeding order
        self._pending: list[dict] = []  # its members not proposed yet
        # A child's valid one-knob neighbours never change. In a sparse space (a replay table recording a sliver of its
        # knobs' product) most children need repair, the same few crossovers recur, and walking their neighbours again
        # took 85 % of a job's time (300 of 2^24 configs: 25 s to measure them all, 4.8 s with the cache).
        self._near: dict[tuple, list[tuple[dict, bool]]] = {}
        self.observe(list(context.history))

    def propose(self, n: int) -> list[dict]:
        out: list[dict] = []
        while len(out) < check_batch_size(n):
            if not self._pending:
                if out:
                    break  # the generation's end: breed the next one when its results are in
                if not self._next_generation():
                    break
            config = self._pending.pop(0)
            if config_id(config) not in self._seen:  # a member measured before keeps its runtime
                self._seen.add(config_id(config))
                out.append(config)
        return out

    def observe(self, results: list[Observation]) -> None:
        for r in results:
            key = config_id(r.config)
            self._seen.add(key)
            self._runtime[key] = r.median_s if r.status == OK and r.median_s is not None else math.inf

    # ---- breeding -----------------------------------------------------------------------------------------------
    def _next_generation(self) -> bool:
        """Breed (or, first, sample) the next generation; False once no unseen valid config is left. A generation
        of configs all measured before costs nothing, so up to STALL of them are bred in a row (as Kernel Tuner
        does, reading its cache) before immigrants join."""
        fresh: list[dict] = []
        for _ in range(STALL):
            members = self._bred() if self._generation else self._draws.draw(self.popsize)
            self.generation_no += 1
            if members:
                self._generation = members
            fresh = [c for c in members if config_id(c) not in self._seen]
            if fresh or not members:
                break
        if not fresh or self.generation_no > self.options["maxiter"]:
            # Kernel Tuner would stop here; immigrants keep the job going until its budget or the space ends
            ids = {config_id(c) for c in self._generation}
            immigrants = [c for c in self._draws.draw(max(2, self.popsize // 4)) if config_id(c) not in ids]
            self._generation = self._generation + immigrants
            fresh += immigrants
        self._pending = list(fresh)
        return bool(fresh)

    def _ranked(self) -> list[dict]:
        """The current generation's measured members, fastest first, failures last (unmeasured ones left out)."""
        known = [c for c in self._generation if config_id(c) in self._runtime]
        return sorted(known, key=lambda c: self._runtime[config_id(c)])

    def _bred(self) -> list[dict]:
        ranked = self._ranked()
        if len(ranked) < 2:
            return []
        crossover = CROSSOVERS[self.options["method"]]
        out: list[dict] = []
        ids: set[tuple] = set()
        tries = 0
        while len(out) < self.popsize and tries < BREED_TRIES * self.popsize:
            tries += 1
            a, b = self._parents(ranked)
            genes = crossover([a[k] for k in self.names], [b[k] for k in self.names], self.rng)
            for child in map(self._repair, (dict(zip(self.names, g, strict=True)) for g in genes)):
                if child is None:
                    continue
                child = self._mutate(child)
                if config_id(child) not in ids:
                    ids.add(config_id(child))
                    out.append(child)
                if len(out) >= self.popsize:
                    break
        return out

    def _parents(self, ranked: list[dict]) -> tuple[dict, dict]:
        def pick() -> int:
            if self.options["selection"] == "tournament":
                return min(self.rng.randrange(len(ranked)), self.rng.randrange(len(ranked)))
            return int(self.rng.betavariate(1, 2.5) * len(ranked))

        first = pick()
        second = pick()
        while second == first:
            second = pick()
        return ranked[first], ranked[second]

    def _repair(self, child: dict) -> dict | None:
        """`child` if valid, else a random valid one-knob neighbour of it (adjacent choices first), else None."""
        if self._draws.is_valid(child):
            return child
        near = self._neighbours(child)
        adjacent = [c for c, adj in near if adj]
        pool = adjacent or [c for c, _ in near]
        return self.rng.choice(pool) if pool else None

    def _mutate(self, child: dict) -> dict:
        if int(self.rng.random() * self.options["mutation_chance"]) != 0:
            return child
        near = self._neighbours(child)
        return self.rng.choice(near)[0] if near else child

    def _neighbours(self, child: dict) -> list[tuple[dict, bool]]:
        """`knob_walk.neighbours` of `child` in this space, walked once per child."""
        key = config_id(child)
        near = self._near.get(key)
        if near is None:
            if len(self._near) >= NEAR_CACHE:
                self._near.clear()
            near = self._near[key] = neighbours(self.space, child, self._draws.is_valid)
        return near
