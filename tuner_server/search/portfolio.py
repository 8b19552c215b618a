"""The model-guided strategy's surrogate portfolio: a Gaussian process on knob coordinates beside the bagged GBM
ensemble, each given a share of a batch by how well it ranked the latest measured batches.

With a few dozen observations a GBM ensemble is weak: trees split on single knobs and bootstrap members of 20 rows
agree on little. A Gaussian process with a fixed Matérn kernel (the surrogate of Bayesian optimisation) interpolates
smoothly between its points and knows where it has not looked, which is what finds good configs in the first rounds;
the trees take over once they have seen enough to learn interactions, invalid regions and needles. Neither is right
everywhere, so both predict every config of every batch before it is measured, and each surrogate's Spearman rank
correlation with the measured speeds (failures slowest) is kept as an exponential average over batches
(`trust_memory`). The GP's share of the batch slots the acquisition fills is the logistic function of the difference of
the two averages over `trust_temperature` (one half while nothing is known). Its slots are filled by expected
improvement with the kriging believer, over a uniform sample of the unseen configs (all of them when fewer). Its
posterior costs about n^2 per candidate with n observations, so the sample is `gp_candidates` from `gp_settle`
observations on and (gp_settle / n)^2 times that before, up to `EARLY_GROWTH` times: an early round costs at most what
the one at `gp_settle` does, and the first rounds, where the GP finds most, see up to 16,384 configs instead of 2,048.
On spaces of thousands of configs a sample of 2,048 often leaves out the few configs within 5 % of the optimum (on fresh
noisy 10k, four of 10,000). At 40 seeds, the model strategy went from 26 to 28 of 33 spaces at least as good as the best
of GA and a BO that scores a sample of 2,048
(benchmarks/results/2026-11-27-search_efficiency-early-gp-candidates-40seeds.md; against a BO that scores every config,
25: benchmarks/results/2026-11-27-bo-faithful/).

Unlike the BO reference strategy's fixed kernel, the portfolio's GP fits its kernel to the job (`gp_kernel`
"fitted", `tuner_server.search.gp_fit`: a length scale per knob, amplitude, noise) and models log-runtimes
(`gp_targets`). With the fixed kernel, logarithms had done worse on the recorded matmul tables (the slow tail then
weighs as much as the fast end); with per-knob length scales they did better (CPU matmul 256^3: 29.5 -> 25
measurements to 5 %, median of 20 seeds). Against the fixed kernel on runtimes, the 20 spaces of
benchmarks/search_efficiency.py moved where BO had won: CPU matmul 256^3 41.5 -> 25, 384x192x256 27.5 -> 18, H100
softmax 1024x4096 12 -> 10.5, noisy 47.5 -> 43.5 (BO: 35.5, 18.5, 10.5, 43).

The cost is bounded: the GP is fitted on at most `gp_points` observations (the fastest half, then the latest), and
only while the job has fewer than `gp_until` observations; from `gp_settle` on, its kernel's hyperparameters are
fitted again only every `gp_refit` observations (its posterior takes in every observation every round). Before
`gp_settle` they are fitted every round in a job from nothing, and in a job with a transfer model once the
observations grew by `gp_regrow` (a quarter): there the fits were two thirds of a proposal's GP time, and spacing them
left 18 of 21 recorded tables' runs to 5 % as they were and the other three's medians equal
(benchmarks/results/2026-11-28-gp-regrow/).

The fitted GP keeps proposing past `gp_settle` (128), by its trust against the ensemble's, until `gp_until` (256 for a
job without a transfer model). On a needle space the few configs within 5 % of the optimum share some knob values; the
ensemble's trees learn that late, and the fitted GP, whose per-knob length scales and one-hot codes say which knobs and
values matter, gets there sooner. At 40 seeds on the 34 synthetic spaces of benchmarks/search_efficiency.py
(benchmarks/results/2026-11-28-late-gp/), against the GP retired at 128: the 8k needle went from >400 measurements to 5
% (19 of 40 seeds reaching it) to 161 (40 of 40), the 14k from 397 (20 seeds) to 230.5 (36), the 13k from 295.5 (28) to
189 (38), the 15k from 236 to 173 and the 10k from 203.5 to 158.5; the spaces at the medians' bar went from 25 to 28 of
34, and from 5 to 6 of 8 on spaces named before it ran. A run that reaches 5 % within 128 measurements is unchanged, and
so is every recorded table. Screened and not kept: the kernel frozen at 128 points (noisy 7k's reach 36 -> 26 of 40
seeds, while the smooth GP still waited for `gp_until`), refits every 8 observations (as good, at more cost), and
(gp_settle / n)^2 times `gp_candidates` past `gp_settle` too (the 13k and 14k needles' reach back to 0.88 and 0.70).

From `gp_settle` on a second GP, the BO reference's (one fixed, long length scale on runtimes: a smooth model of the
whole space), keeps at least `smooth` of the slots, more when its trust beats the ensemble's. Late in a job the ensemble
and the basin sweeps look where the measurements already are; on spaces whose best basin lies far from the first
good one (many basins, needles, noise) BO, slow as it is, ends in the best basin on more seeds, and its expected
improvement over a smooth model is what a settled search lacks. On the 18 synthetic spaces of
benchmarks/search_efficiency.py (20 seeds) `smooth` 0.25 raised the fraction of seeds reaching 5 % of the optimum on
6 (held-out noisy 0.70 -> 0.90, fresh basins 0.75 -> 1.00, 10k needle 0.85 -> 1.00, 15k needle 0.80 -> 0.95) and
lowered it on none; medians moved both ways on the needles (10k: 283 -> 307, 20k: 353.5 -> 385, 15k: 136.5 -> 149.5).
The first `gp_settle` observations, where every seed on every recorded table reached 5 %, are unchanged. Its cost is
bounded as the first GP's: at most `smooth_points` observations and `smooth_candidates` candidates per batch of
`smooth_batch` picks. Before `gp_settle` the smooth GP may compete for slots by its trust too (`smooth_trust`): that
helped two synthetic spaces but cost four recorded tables (CPU matmul 128x512x384 16.5 -> 19.5 measurements to 5 %),
so it is off.

From `codes_from` observations on, the fitted GP sees each knob's one-hot code (height `ONEHOT`) beside its
coordinate, each column with its own fitted length scale (the coordinates' scales go on from the last fit). Knob
coordinates order a knob's values, which suits tile sizes and unroll factors; but where a knob's values have no
order (an algorithm, a layout), or a good region is a set of knob values (a needle), a changed value costs the same
whichever value it changes to, and only a code says so. The first rounds, where the recorded kernels are mostly decided
(their medians to 5 % are 8-37.5 measurements), keep the coordinates alone:
with the codes from the start the GPU GEMM tables lost (f16 20.5 -> 27, f32 37.5 -> 48 measurements) while the
needles gained. From 48 on, at 20 seeds on the 41 spaces of benchmarks/search_efficiency.py
(benchmarks/results/2026-11-27-categorical-codes/), the spaces at least as good as the best of GA and BO went from 30
to 32 (8k needle: 7 of 20 seeds within 5 %, GA 6, before 2; 10k needle 257 -> 232 measurements, BO 249.5), the
recorded tables were unchanged, and no space was lost; basins 11k (205.5 -> 273) and the 12k and 15k needles
(105.5 -> 121, 154 -> 178) paid for it, still within the bar on the needles.

Before `joint_until` observations the shares are not split: every acquisition slot goes to the GPs together
(`gaussian_process.joint_ei_batch`). That is 48 for a job that starts from nothing; a job with a transfer model (the
device class's) gets none, since its ensemble ranks well from the first batch and should keep the slots it earns. Each
candidate's expected improvement under each GP, over that GP's largest at the round's first pick, is weighed and summed,
and every GP believes every pick. The fitted kernel knows which knobs matter; the smooth one sees the bowl of the whole
space, which is what BO finds first on many basins; with `joint_additive` (default) the additive GP
(`tuner_server.search.additive_gp`: one effect per knob value) proposes the config that takes each knob's best value,
which neither of the others proposes before it is measured near. The fitted GP's EI weighs a half, the other two a
quarter each (`JOINT_WEIGHTS`; with equal thirds the recorded GPU GEMM tables paid). At 40 seeds on the 41 spaces of
benchmarks/search_efficiency.py the two-GP joint rounds had left 2 spaces where the strategy was slower than GA or BO
by a one-sided rank test (p < 0.05: noisy 10k and needle 9k s33; benchmarks/results/2026-11-27-rank-tests/); with the
additive GP there are none, it is faster than both on 21 (before 20), and the medians' bar holds on 33 (before 31):
noisy 10k 40.5 -> 29 measurements to 5 % (BO 31), invalid 15k 47 -> 36, needle 15k 251 -> 137, smooth 6k 34.5 -> 27,
no space slower at p < 0.1 against the two-GP rounds (benchmarks/results/2026-11-27-additive-gp/). The two-GP rounds
themselves had moved basins 11k 240.5 -> 115 (BO 83.5) against the trust-shared first rounds; joint EI only in the GP's
share of the slots, or in every slot until `gp_until`, had moved losses between spaces instead (20 seeds).

The last phase (`late_from`, 256 observations, once the fitted GP has retired): the smooth GP fills exactly
`late_smooth` (three quarters) of the acquisition's slots whatever the trusts say, picks `late_batch` (3) configs at a
time, fresh every round as BO's are, and on a listed space scores every unseen config (up to `late_candidates`) by a
posterior that grows with the observations (`tuner_server.search.growing_gp`: a tenth of the cost of one computed
afresh, the same picks). On basin and noisy spaces BO's chance per measurement of reaching 5 % of the optimum rises
late in a run while the strategy's had stayed flat (noisy 7k: BO 0.67 % over measurements 257-400, the strategy
0.42 %). At 160 seeds on all 72 spaces of benchmarks/search_efficiency.py (benchmarks/results/2026-11-28-late-phase/),
against half the slots from a sample of 2,048 (itself no slower anywhere than no last phase, and faster on three), it
slowed no space at p < 0.1 and sped up five at p < 0.05 (basins 11k, reaching 5 % on 0.93 -> 0.96 of seeds; basins
12k s76 0.92 -> 0.96; invalid 12k s74; needles 12k s61 and 15k). Three quarters from the sample slowed the 14k needle
(p = 0.06: its late hits come through the ensemble's slots, and sampled picks waste the ones they take). Every run
decided before 256 is as it was.
"""
from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping

import numpy as np

from compiler_core.space import Space
from tuner_server.search.additive_gp import AdditiveFeatures, AdditiveGP
from tuner_server.search.base import OK, Observation
from tuner_server.search.gaussian_process import (
    GaussianProcess,
    KnobCoordinates,
    joint_ei_batch,
    one_blas_thread,
    standardised,
)
from tuner_server.search.gp_fit import Hyperparameters, fit_hyperparameters
from tuner_server.search.growing_gp import ListedPicks
from tuner_server.search.knob_walk import config_id
from tuner_server.search.listing import UnseenDraws
from tuner_server.search.surrogate_trust import SurrogateTrust

XI = 0.01  # EI's exploration offset in spreads of the targets (as the BO reference strategy)
UNLISTED_POOL = 512  # the strategy's pool candidates the GP scores per round when the space is not listed ...
UNLISTED_DRAWS = 128  # ... and random configs drawn beside them (drawing checks validity: ~10 us a config)
EARLY_GROWTH = 8  # the fitted GP scores up to this many times `gp_candidates` configs in its first rounds
JOINT_WEIGHTS = (0.5, 0.25, 0.25)  # the fitted GP's EI keeps half the say; the two models of the whole space share half
ONEHOT = 0.18  # height of the one-hot codes: a changed value lies about two steps of an 8-choice knob away


class Portfolio:
    """The two GP surrogates, their picks and each surrogate's share of a batch (see the module docstring), by the
    trust that `judge` (`SurrogateTrust`) keeps; options from the model-guided strategy's OPTIONS table."""

    def __init__(self, space: Space, options: dict, rng: random.Random, draws: UnseenDraws):
        self.options, self.rng, self.draws = options, rng, draws
        self.coords = KnobCoordinates(space)
        self.codes = KnobCoordinates(space, ONEHOT)  # what the fitted GP sees from `codes_from` observations on
        self.additive = AdditiveFeatures(space)  # what the additive GP of the joint rounds sees
        self.judge = SurrogateTrust(options["trust_memory"])  # every surrogate's predictions, and the trust in each
        self._gp: GaussianProcess | None = None  # the fitted kernel's GP, while the job is young
        self._smooth: GaussianProcess | None = None  # the BO reference's GP, when it has slots
        self._fitted_on = self._smoothed_on = -1  # observations each GP was fitted on
        self._kernel_fitted_on = -1  # observations the fitted kernel's hyperparameters were last fitted on
        self._queue: list[dict] = []  # the smooth GP's picks not handed out yet
        self._hyper: Hyperparameters | None = None  # the kernel's last fitted hyperparameters (the next fit's start)
        self._listed: tuple[list[dict], list[tuple], np.ndarray] | None = None  # configs, ids, choice indices
        self._growing: ListedPicks | None = None  # the listing picks (`_listed_picks`), by a posterior that grows

    def _sees_codes(self, observed: int) -> bool:
        """Whether the fitted GP on `observed` observations sees the one-hot codes beside the coordinates (a fitted
        kernel only: the fixed one is the BO reference's, on coordinates)."""
        return observed >= self.options["codes_from"] and self.options["gp_kernel"] == "fitted"

    def _frame(self, codes: bool) -> KnobCoordinates:
        """How a GP sees configs: coordinates and one-hot codes, or coordinates alone."""
        return self.codes if codes else self.coords

    @property
    def trust(self) -> dict[str, float]:
        """The trust in each surrogate (`SurrogateTrust.trust`), by SURROGATES name."""
        return self.judge.trust

    # ---- shares -----------------------------------------------------------------------------------------------
    def shares(self, observed: int) -> dict[str, float]:
        """Share of the acquisition's slots each GP fills after `observed` observations: every slot to the fitted GP
        before `joint_until` (picked jointly with the other GPs, `_joint_batch`); else a softmax of the trusts over the
        surrogates in play (the fitted GP before `gp_until`; the smooth GP before `gp_settle` when `smooth_trust`,
        from then on (or from `gp_until`, when sooner) when `smooth` > 0, then with at least that share); the
        ensemble fills the rest. In the last phase (`late`) the smooth GP fills exactly `late_smooth`."""
        early = observed < self.options["gp_until"]
        if early and observed < self.options["joint_until"]:
            return {"gp": 1.0, "smooth": 0.0}
        if self.late(observed):
            return {"gp": 0.0, "smooth": min(self.options["late_smooth"], 1.0)}
        playing = ["ensemble"] + (["gp"] if early else [])
        settled = observed >= min(self.options["gp_settle"], self.options["gp_until"])
        if (not settled and self.options["smooth_trust"]) or (settled and self.options["smooth"] > 0):
            playing.append("smooth")
        top = max(self.trust[name] for name in playing)
        weights = {name: math.exp(max((self.trust[name] - top) / self.options["trust_temperature"], -50.0))
                   for name in playing}
        total = sum(weights.values())
        out = {name: weights.get(name, 0.0) / total for name in ("gp", "smooth")}
        if settled and "smooth" in playing:
            out["smooth"] = max(out["smooth"], self.options["smooth"])
            out["gp"] = min(out["gp"], 1.0 - out["smooth"])
        return out

    def late(self, observed: int) -> bool:
        """Whether the last phase has begun: `late_from` observations (when not 0), and the fitted GP retired."""
        return 0 < self.options["late_from"] <= observed and observed >= self.options["gp_until"]

    def _scores_listing(self, observed: int) -> bool:
        """Whether the smooth GP's picks score every config of the listing by the growing posterior: on a listed
        space (with `late_candidates`), from `listed_from` observations when it is set, else in the last phase."""
        if not (self.options["late_candidates"] and self.draws.valid is not None):
            return False
        start = self.options["listed_from"]
        return self.late(observed) if start is None else observed >= start

    def _smooth_batch(self, observed: int) -> int:
        """Configs the smooth GP picks at once: `late_batch` in the last phase and wherever it scores the listing (a
        fresh pick there costs a tenth of one computed afresh), else `smooth_batch`."""
        return self.options["late_batch" if self.late(observed) or self._scores_listing(observed) else "smooth_batch"]

    def predicted(self, batch: list[dict], ensemble: np.ndarray) -> None:
        """Remember every surrogate's scores of a proposed batch (compared with its measurements later)."""
        if (self._gp is None and self._smooth is None) or not batch:
            return
        fitted_codes = self._sees_codes(self._fitted_on)
        points = {codes: self._frame(codes).points(batch) for codes in (False, fitted_codes)}
        with one_blas_thread():
            gp, smooth = (-model.posterior(points[codes])[0] if model is not None else np.full(len(batch), np.nan)
                          for model, codes in ((self._gp, fitted_codes), (self._smooth, False)))
        for config, *scores in zip(batch, gp, smooth, ensemble, strict=True):
            self.judge.remember(config, tuple(float(v) for v in scores))

    def fastest_first(self, batch: list[dict]) -> list[dict]:
        """`batch` (just `predicted`) reordered so the configs the fitted GP predicts fastest come first, the others
        after them in their order; as it is once the GP has retired (`gp_until`). Agents lease a job's tasks in
        the order they were queued: within a batch the fastest-looking configs are measured first (the fitted GP
        orders a batch better than the ensemble or the smooth GP do: benchmarks/results/2026-11-27-batch-order/)."""
        scores = [self.judge.predicted.get(config_id(c), (math.nan,))[0] for c in batch]
        if all(math.isnan(v) for v in scores):
            return batch
        order = sorted(range(len(batch)), key=lambda i: (math.isnan(scores[i]), -scores[i]))  # stable: ties keep order
        return [batch[i] for i in order]

    def measured(self, result: Observation) -> None:
        self.judge.measured(result)

    # ---- the GPs' picks -----------------------------------------------------------------------------------------
    def picks(self, observations: list[Observation], slots: int, seen: set[tuple], taken: list[dict],
              pool: Mapping[tuple, dict]) -> list[dict]:
        """The GPs' shares of `slots` (unseen configs not in `taken`, by each one's expected improvement); fits
        them first. `pool`: the strategy's own candidates by config id, scored when the space is not listed."""
        with one_blas_thread():
            return self._picks(observations, slots, seen, taken, pool)

    def _picks(self, observations: list[Observation], slots: int, seen: set[tuple], taken: list[dict],
               pool: Mapping[tuple, dict]) -> list[dict]:
        self._fit(observations)
        shares = self.shares(len(observations))
        skip = seen | {config_id(c) for c in taken}
        out = self._smooth_picks(observations, round(shares["smooth"] * max(slots, 0)), skip, pool,
                                 shares["smooth"] > 0)  # in play (`shares` gives every surrogate in play a share)
        k = round(shares["gp"] * slots)
        if self._gp is None or slots <= 0 or k <= 0:
            return out
        codes = self._sees_codes(len(observations))
        candidates, indices = self._candidates(skip | {config_id(c) for c in out}, pool,
                                               self._scorable(self.options["gp_candidates"], len(self._gp.X)))
        if len(candidates) <= k:
            return out + candidates
        return out + [candidates[j] for j in self._gp_batch(observations, indices, codes, k)]

    def _gp_batch(self, observations: list[Observation], indices: np.ndarray, codes: bool, k: int) -> list[int]:
        """Which k of the candidates (choice indices; the fitted GP sees them with the one-hot codes when `codes`) the
        fitted GP picks: by its expected improvement, or before `joint_until` observations by the joint one."""
        if len(observations) >= self.options["joint_until"]:
            return self._gp.ei_batch(self._frame(codes).at(indices), k, XI)
        return self._joint_batch(observations, indices, codes, k)

    def _joint_batch(self, observations: list[Observation], indices: np.ndarray, codes: bool, k: int,
                     combine: Callable[[list[np.ndarray]], np.ndarray] | None = None) -> list[int]:
        """k candidates (choice indices) by the expected improvements of the fitted GP, the smooth GP (the BO
        reference's, on coordinates) and, with `joint_additive`, the additive GP together (`joint_ei_batch`, with its
        `combine`); the last two are fitted on the same observations as the first."""
        ran, y = self._ran(observations, self.options["gp_points"])
        gps = [self._gp, GaussianProcess(self.coords.at(ran), y, self.options["gp_lengthscale"])]
        frames = [self._frame(codes).at(indices), self.coords.at(indices)]
        weights = None  # two: each EI over its largest, summed
        if self.options["joint_additive"]:
            gps.append(AdditiveGP(self.additive.at(ran), y))
            frames.append(self.additive.at(indices))
            weights = JOINT_WEIGHTS
        return joint_ei_batch(gps, frames, k, XI, combine, weights)

    def _smooth_picks(self, observations: list[Observation], k: int, skip: set[tuple], pool: Mapping[tuple, dict],
                      playing: bool) -> list[dict]:
        """k configs of the smooth GP's queue: a kriging-believer batch of `smooth_batch` by expected improvement,
        picked when the queue runs short and handed out over the next rounds (its posterior over the candidates,
        the costly part, is computed once per batch, as a BO of that batch size would)."""
        if not playing:
            self._smooth, self._smoothed_on, self._queue = None, -1, []
            return []
        self._queue = [c for c in self._queue if config_id(c) not in skip]
        refill = 0 < k and len(self._queue) < k
        # refitted for each batch it picks, and between batches often enough for its trust (its predictions of
        # the configs others proposed) to follow the job
        if refill or self._smooth is None or \
                len(observations) - self._smoothed_on >= 4 * self._smooth_batch(len(observations)):
            self._smoothed_on = len(observations)
            ran, y = self._ran(observations, self.options["smooth_points"])
            self._smooth = GaussianProcess(self.coords.at(ran), y, self.options["gp_lengthscale"]) if len(y) >= 2 \
                else None
        if k <= 0 or self._smooth is None:
            return []
        if refill:
            n = max(k, self._smooth_batch(len(observations)))
            listed = self._listed_picks(observations, skip, n)
            if listed is not None:
                self._queue = listed
            else:
                candidates, indices = self._candidates(skip, pool, self.options["smooth_candidates"])
                self._queue = candidates if len(candidates) <= n else [
                    candidates[j] for j in self._smooth.ei_batch(self.coords.at(indices), n, XI)]
        out, self._queue = self._queue[:k], self._queue[k:]
        return out

    def _listed_picks(self, observations: list[Observation], skip: set[tuple], n: int) -> list[dict] | None:
        """n configs by the smooth GP's expected improvement over every unseen config of a listed space (up to
        `late_candidates` of them, a sample of the listing drawn once when it has more), in the last phase or from
        `listed_from` on; its posterior grows with the observations (`ListedPicks`). None where this does not apply:
        before then, with `late_candidates` 0, on a space not listed, once the smooth GP's points are no longer the
        observations in order (past `smooth_points` of them), or when rounding left the grown factor singular: the
        sampled picks take over."""
        cap = self.options["late_candidates"]
        if not self._scores_listing(len(observations)):
            return None
        ran, y = self._ran(observations, self.options["smooth_points"])
        if len(y) < 2:
            return None
        if self._growing is None:
            configs, ids, indices = self._listing()
            rows = np.arange(len(configs)) if len(configs) <= cap else np.array(sorted(self.rng.sample(
                range(len(configs)), cap)))
            self._growing = ListedPicks(configs, ids, rows, self.coords.at(indices[rows]),
                                        self.options["gp_lengthscale"], self.options["smooth_points"])
        try:
            return self._growing.picks(self.coords.at(ran), y, skip, n, XI)
        except np.linalg.LinAlgError:  # rounding made the new points' block singular: start afresh next round
            self._growing = None
            return None

    def _fit(self, observations: list[Observation]) -> None:
        if len(observations) >= self.options["gp_until"]:
            self._gp = None
            return
        if len(observations) == self._fitted_on:
            return
        self._fitted_on = len(observations)
        codes = self._sees_codes(len(observations))
        ran, y = self._ran(observations, self.options["gp_points"])
        X = self._frame(codes).at(ran)
        if len(y) < 2:
            self._gp = None
            return
        if self.options["gp_targets"] == "log":
            y = np.log(y)
        if self.options["gp_kernel"] == "fixed":
            self._gp = GaussianProcess(X, y, self.options["gp_lengthscale"])
            return
        if self._refits(len(observations), X.shape[1]):
            start = self._hyper.widened(X.shape[1]) if self._hyper is not None else None  # codes joining: scales go on
            self._hyper = fit_hyperparameters(X, standardised(y)[0], start)
            self._kernel_fitted_on = len(observations)
        self._gp = GaussianProcess(X, y, self._hyper.lengthscales, self._hyper.amplitude, self._hyper.noise)

    def _refits(self, observed: int, dims: int) -> bool:
        """Whether the fitted kernel's hyperparameters are fitted again on `observed` observations seen in `dims`
        coordinates: before `gp_settle` once the observations grew by `gp_regrow` (0: every round), then every
        `gp_refit` observations (and whenever the coordinates change)."""
        if self._hyper is None or len(self._hyper.lengthscales) != dims:
            return True
        if observed < self.options["gp_settle"]:
            return observed >= self._kernel_fitted_on * (1 + self.options["gp_regrow"])
        return observed - self._kernel_fitted_on >= self.options["gp_refit"]

    def _scorable(self, cap: int, points: int) -> int:
        """Candidates the fitted GP on `points` observations scores per round: `cap` from `gp_settle` points on, and
        cap * (gp_settle / points)^2 before, at most EARLY_GROWTH * cap (a posterior costs about points^2 per
        candidate, so an early round costs at most what the one at `gp_settle` does; past it, scoring fewer found
        fewer needles: benchmarks/results/2026-11-28-late-gp/)."""
        grown = cap * (self.options["gp_settle"] / max(points, 1)) ** 2
        return int(min(max(grown, cap), EARLY_GROWTH * cap))

    def _ran(self, observations: list[Observation], cap: int) -> tuple[np.ndarray, np.ndarray]:
        """Choice indices (`KnobCoordinates.indices`; each GP takes its own view of them) and runtimes of at most
        `cap` configs that ran: the fastest half and the latest (where the optimum is sought, and where the search
        looks now)."""
        ok = [o for o in observations if o.status == OK and o.median_s is not None and o.median_s > 0]
        if len(ok) > cap:
            fastest = set(sorted(range(len(ok)), key=lambda i: ok[i].median_s)[: cap // 2])
            latest = [i for i in range(len(ok) - 1, -1, -1) if i not in fastest][: cap - len(fastest)]
            ok = [ok[i] for i in sorted(fastest.union(latest))]
        return self.coords.indices([o.config for o in ok]), np.array([o.median_s for o in ok])

    def _listing(self) -> tuple[list[dict], list[tuple], np.ndarray]:
        """The listed space's configs, their ids and choice indices (made once)."""
        if self._listed is None:
            listed = self.draws.valid
            self._listed = (listed, [config_id(c) for c in listed], self.coords.indices(listed))
        return self._listed

    def _candidates(self, skip: set[tuple], pool: Mapping[tuple, dict], cap: int) -> tuple[list[dict], np.ndarray]:
        """Unseen configs to score, at most `cap`, and their choice indices (`KnobCoordinates.indices`)."""
        if self.draws.valid is not None:
            configs, ids, indices = self._listing()
            rows = [i for i, key in enumerate(ids) if key not in skip]
            if len(rows) > cap:
                rows = sorted(self.rng.sample(rows, cap))
            return [configs[i] for i in rows], indices[rows]
        candidates, keys = [], set(skip)
        for key, config in pool.items():  # the ensemble's candidates (annealed towards what it predicts best)
            if len(candidates) >= min(cap, UNLISTED_POOL):
                break
            if key not in keys:
                candidates.append(config)
                keys.add(key)
        fresh = self.draws.draw(min(cap - len(candidates), UNLISTED_DRAWS))
        candidates += [c for c in fresh if config_id(c) not in keys]
        return candidates, self.coords.indices(candidates)
