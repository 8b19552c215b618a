"""How this folder's variant runs were made: benchmarks/search_efficiency.py, model strategy only, with the variants
named in VARIANT (comma-separated) patched into the strategy before the worker processes fork. From the repository
root, e.g. (the device runs: 16 jobs on the lent machine's Xeon cores; runs are the same per seed on every host):

    VARIANT=jointei JOINT_UNTIL=48 python3 benchmarks/results/2026-11-27-surrogate-diagnosis/run_variant.py \
        --tables 'benchmarks/data/*.json.gz' --synthetic "every,$UNSEEN" --seeds 20 --jobs 16 \
        --strategies model --checkpoint joint_ei_until_48-20seeds.jsonl

where UNSEEN names the eight spaces of ../2026-11-27-search_efficiency-unseen-20seeds.md:
synth-smooth-7k11-s31,synth-basins-11k12-s32,synth-needle-9k11-s33,synth-needle-14k12-s34,
synth-invalid-10k11-s35,synth-noisy-8k10-s36,synth-noisy-12k13-s37,synth-basins-6k10-s38 (one comma-separated word).

The variants' runs in this folder predate the options `codes_from` and `joint_until`: add "codes_from": 128,
"joint_until": 0 to --options to reproduce them with a later strategy.

Variants (experiments, not strategy options):
- pure_gp: the fitted GP fills every acquisition slot while the job is young (with options sweep 0, epsilon 0 and
  gp_kernel/gp_targets/min_train, a BO-like search inside the model strategy); with PURE_UNTIL, only while the job
  has fewer observations than that;
- dimprior: the length scales' prior centre is PRIOR_SCALE * sqrt(knobs) instead of 0.5;
- jointei / jointei_pareto: the fitted GP's slots are picked by the mean of its EI and the fixed-kernel GP's EI (each
  over its largest value), or by the better of their two ranks, with one believer batch under both; only while the
  job has fewer than JOINT_UNTIL observations when that is set;
- unitcube: the portfolio's GPs see each knob's choices spread over [0, 1] (not Kernel Tuner's common step);
- crossover: from gp_until on, an eighth of each batch is uniform crossovers of two of the 16 fastest configs;
- sumkernel: the fitted kernel becomes (1 - f) ARD + f the fixed long kernel, f in SUM_F by marginal likelihood;
- looselect: each fit, the fixed kernel on runtimes replaces the fitted one when its leave-one-out predictions rank
  the fitted points better;
- lateeps: from gp_until on, `epsilon` (the chance that a slot is a random unseen config) is LATE_EPS; with
  EPS_STALL, only once that many observations in a row found nothing faster;
- race: each batch's acquisition is split between BO's mode (expected improvement under the fixed kernel on
  runtimes) and the default mixture; BO's share is logistic((mean credit of its picks - the mixture's) / 0.05)
  within [1/8, 7/8], one half until each has 4 measured picks; a pick's credit is q^4, q the fraction of the job's
  configs that ran slower (0 for a failure), over each mode's last 24 picks. With RACE_CREDIT=improve a pick's
  credit is instead log(the job's best runtime when it was proposed / its runtime), at least 0, the temperature
  0.005, and BO's share starts at RACE_PRIOR (the logistic is shifted by the prior's log-odds);
- tiedcodes: once the fitted GP sees the one-hot codes (option `codes_from`), a knob's code columns share one length
  scale (fitted as one);
- mcmc: the fitted GP's slots are picked by expected improvement averaged over its MAP kernel and MCMC_S (4)
  elliptical-slice samples of the length scales and noise under gp_fit's priors, every MCMC_THIN-th (3) step from the
  MAP, while the job has fewer than MCMC_UNTIL observations (../2026-11-27-rank-tests/);
- jointnosweep: no one-knob sweeps while the joint rounds last (`joint_until`);
- smoothmid, sweepmid, jointmid, stallsmooth, addswap, addthird, addhalf, addlate: the variants of
  ../2026-11-27-additive-gp/, in `late_variants.py` beside this file.

The runs of this folder and of ../2026-11-27-rank-tests/ predate `joint_additive` (2026-11-27, the joint rounds'
additive GP, ../2026-11-27-additive-gp/): add "joint_additive": false to --options to reproduce them.

Since the option `joint_until` (2026-11-27) the strategy itself gives every slot of its first 48 observations to the
joint EI: `VARIANT=pure_gp,jointei PURE_UNTIL=48 JOINT_UNTIL=48` reproduces it seed for seed (checked on nine runs),
and the variants above run on top of it unless given `"joint_until": 0` in --options.
"""
import os
import sys

import numpy as np
from scipy.linalg import cho_factor, cho_solve

sys.path[:0] = ["benchmarks", "."]  # run from the repository root
import late_variants  # noqa: E402 - this folder's (the script's directory is on the path)
import search_efficiency  # noqa: E402

import tuner_server.search.gaussian_process as gaussian_process  # noqa: E402
import tuner_server.search.gp_fit as gp_fit  # noqa: E402
import tuner_server.search.model_guided as model_guided  # noqa: E402
import tuner_server.search.portfolio as portfolio  # noqa: E402
import tuner_server.search.surrogate_trust as surrogate_trust  # noqa: E402
from tuner_server.search.gaussian_process import (  # noqa: E402
    GaussianProcess,
    KnobCoordinates,
    matern32,
    one_blas_thread,
    standardised,
)

VARIANTS = set(filter(None, os.environ.get("VARIANT", "").split(",")))
Portfolio, ModelGuided = portfolio.Portfolio, model_guided.ModelGuided


def pure_gp() -> None:
    shares, until = Portfolio.shares, int(os.environ.get("PURE_UNTIL", "1000000"))

    def only_gp(self, observed):
        young = observed < min(self.options["gp_until"], until)
        return {"gp": 1.0, "smooth": 0.0} if young else shares(self, observed)
    Portfolio.shares = only_gp


def dimprior() -> None:
    fit, scale = gp_fit.fit_hyperparameters, float(os.environ.get("PRIOR_SCALE", "0.5"))

    def scaled(X, z, start=None):
        gp_fit.PRIOR_LENGTHSCALE = scale * np.sqrt(max(X.shape[1], 1))
        return fit(X, z, start)
    portfolio.fit_hyperparameters = scaled


def pareto_ranks(eis: list[np.ndarray]) -> np.ndarray:
    """The better of the GPs' EI ranks (ties broken by their sum): the Pareto form of joint EI."""
    ranks = [np.argsort(np.argsort(-e)) for e in eis]
    return -np.minimum.reduce(ranks).astype(float) - 1e-3 * sum(ranks)


def jointei(pareto: bool) -> None:
    until = int(os.environ.get("JOINT_UNTIL", "1000000"))

    def batch(self, observations, indices, codes, k):
        if len(observations) >= until:
            return self._gp.ei_batch(self._frame(codes).at(indices), k, portfolio.XI)
        return self._joint_batch(observations, indices, codes, k, pareto_ranks if pareto else None)
    Portfolio._gp_batch = batch


def unitcube() -> None:
    class UnitCoordinates(KnobCoordinates):
        def __init__(self, space, onehot=0.0):
            super().__init__(space, onehot)
            self._spans = np.array([len(index) - 1 for _, index in self._index], dtype=np.float64)

        def at(self, indices):
            out = super().at(indices)
            out[:, :len(self._spans)] = indices / self._spans
            return out
    portfolio.KnobCoordinates = UnitCoordinates


def crossover() -> None:
    batch = ModelGuided._model_batch

    def with_kids(self, model, n):
        kids: list[dict] = []
        if len(self._own) >= self.options["gp_until"]:
            top = sorted((o for o in self._own.values() if o.status == model_guided.OK and o.median_s is not None),
                         key=lambda o: o.median_s)[:16]
            for _ in range(64):
                if len(kids) >= max(1, round(0.125 * n)) or len(top) < 2:
                    break
                a, b = (top[i].config for i in sorted(self.rng.sample(range(len(top)), 2)))  # a: the faster
                if model_guided.hamming(a, b) < 2:
                    continue
                kid = {k: (a[k] if self.rng.random() < 0.5 else b[k]) for k in a}
                if model_guided.config_id(kid) not in self._seen and kid not in (a, b) \
                        and self._draws.is_valid(kid) and kid not in kids:
                    kids.append(kid)
        self._seen.update(model_guided.config_id(c) for c in kids)
        return kids + batch(self, model, n - len(kids))
    ModelGuided._model_batch = with_kids


def sum_kernel(a, b, lengthscales, amplitude, fraction, long):
    """amplitude * ((1 - fraction) * ARD Matern + fraction * isotropic Matern of length scale `long`)."""
    return amplitude * ((1 - fraction) * matern32(a, b, lengthscales) + fraction * matern32(a, b, long))


class SumGP(GaussianProcess):
    """A GP whose kernel is `sum_kernel`, plus noise on the diagonal."""

    def __init__(self, X, y, lengthscales, amplitude, noise, fraction, long):
        self.X, self.lengthscale, self.amplitude, self.fraction, self.long = X, lengthscales, amplitude, fraction, long
        self.z, self.mu, self.sd = standardised(y)
        self.factor = cho_factor(self._kernel(X, X) + noise * np.eye(len(X)), lower=True)

    def _kernel(self, a, b):
        return sum_kernel(a, b, self.lengthscale, self.amplitude, self.fraction, self.long)


def sumkernel() -> None:
    fractions = [float(f) for f in os.environ.get("SUM_F", "0,0.25,0.5,0.75").split(",")]
    fit = Portfolio._fit

    def evidence(X, z, h, f, long):
        try:
            factor = cho_factor(sum_kernel(X, X, h.lengthscales, h.amplitude, f, long) + h.noise * np.eye(len(X)),
                                lower=True)
        except np.linalg.LinAlgError:
            return -np.inf
        return float(-0.5 * z @ cho_solve(factor, z) - np.log(np.diag(factor[0])).sum())

    def summed(self, observations):
        fit(self, observations)
        gp, h, long = self._gp, self._hyper, self.options["gp_lengthscale"]
        if gp is None or h is None or isinstance(gp, SumGP) or self.options["gp_kernel"] != "fitted":
            return
        f = max(fractions, key=lambda f: evidence(gp.X, gp.z, h, f, long))
        if f > 0:
            self._gp = SumGP(gp.X, gp.z * gp.sd + gp.mu, h.lengthscales, h.amplitude, h.noise, f, long)
    Portfolio._fit = summed


def looselect() -> None:
    fit = Portfolio._fit

    def loo_rank(gp):
        inverse = cho_solve(gp.factor, np.eye(len(gp.z)))
        return surrogate_trust.rank_correlation(gp.z - (inverse @ gp.z) / np.maximum(np.diag(inverse), 1e-12), gp.z)

    def selected(self, observations):
        before = self._gp
        fit(self, observations)
        gp = self._gp
        if gp is None or gp is before or len(gp.z) < 2 * surrogate_trust.MIN_RANKED:
            return
        targets = gp.z * gp.sd + gp.mu
        runtimes = np.exp(targets) if self.options["gp_targets"] == "log" else targets
        smooth = GaussianProcess(gp.X, runtimes, self.options["gp_lengthscale"])
        if loo_rank(smooth) > loo_rank(gp):
            self._gp = smooth
    Portfolio._fit = selected


def lateeps() -> None:
    batch, late = ModelGuided._model_batch, float(os.environ.get("LATE_EPS", "0.2"))
    stalled = int(os.environ.get("EPS_STALL", "0"))

    def exploring(self, model, n):
        early = self.options["epsilon"]
        if len(self._own) >= self.options["gp_until"] and self._since_best >= stalled:
            self.options["epsilon"] = late
        try:
            return batch(self, model, n)
        finally:
            self.options["epsilon"] = early
    ModelGuided._model_batch = exploring


def race() -> None:
    batch, observe = ModelGuided._model_batch, ModelGuided.observe

    improve = os.environ.get("RACE_CREDIT") == "improve"
    prior, temperature = float(os.environ.get("RACE_PRIOR", "0.5")), 0.005 if improve else 0.05

    def bo_share(self) -> float:
        credit = self.__dict__.setdefault("_credit", {"bo": [], "model": []})
        if min(len(credit["bo"]), len(credit["model"])) < 4:
            return prior
        gap = np.mean(credit["bo"][-24:]) - np.mean(credit["model"][-24:])
        odds = np.log(prior / (1 - prior)) + gap / temperature
        return min(max(1 / (1 + np.exp(-odds)), 0.125), 0.875)

    def raced(self, model, n):
        own, k, picks = list(self._own.values()), round(bo_share(self) * n), []
        if k > 0:
            ran, y = self._portfolio._ran(own, self.options["smooth_points"])
            X = self._portfolio.coords.at(ran)
            if len(y) >= 2:
                with one_blas_thread():
                    gp = GaussianProcess(X, y, self.options["gp_lengthscale"])
                    candidates, indices = self._portfolio._candidates(
                        set(self._seen), self._pool.values(),
                        self._portfolio._scorable(self.options["gp_candidates"], len(y)))
                    picks = candidates if len(candidates) <= k else \
                        [candidates[j] for j in gp.ei_batch(self._portfolio.coords.at(indices), k, portfolio.XI)]
        who, proposed_at = self.__dict__.setdefault("_who", {}), self.__dict__.setdefault("_proposed_at", {})
        best = min((o.median_s for o in own if o.status == model_guided.OK and o.median_s), default=None)
        for config in picks:
            self._seen.add(model_guided.config_id(config))
            who[model_guided.config_id(config)] = "bo"
        rest = batch(self, model, n - len(picks))
        for config in rest:
            who.setdefault(model_guided.config_id(config), "model")
        for config in picks + rest:
            proposed_at[model_guided.config_id(config)] = best
        return picks + rest

    def credited(self, results):
        observe(self, results)
        who, credit = self.__dict__.get("_who", {}), self.__dict__.setdefault("_credit", {"bo": [], "model": []})
        ran = None if improve else \
            np.array([o.median_s for o in self._own.values() if o.status == model_guided.OK and o.median_s])
        proposed_at = self.__dict__.get("_proposed_at", {})
        for result in results:
            key = model_guided.config_id(result.config)
            mode = who.pop(key, None)
            if mode is None:
                continue
            ok = result.status == model_guided.OK and result.median_s
            if improve:
                before = proposed_at.pop(key, None)
                credit[mode].append(max(0.0, float(np.log(before / result.median_s))) if ok and before else 0.0)
            else:
                credit[mode].append(float((ran > result.median_s).mean()) ** 4 if ok and len(ran) else 0.0)
    ModelGuided._model_batch, ModelGuided.observe = raced, credited


def tiedcodes() -> None:
    groups = [np.zeros(0, dtype=int)]  # the length-scale group of each column the codes GP sees: its knob's, twice
    init = Portfolio.__init__

    def stash(self, space, options, rng, draws):
        init(self, space, options, rng, draws)
        d, offsets = self.codes.knobs, self.codes._offsets
        groups[0] = np.concatenate([np.arange(d)] + [np.full(offsets[j + 1] - offsets[j], d + j) for j in range(d)])
    fit = portfolio.fit_hyperparameters

    def tied(X, z, start=None):
        return tied_fit(X, z, start, groups[0]) if X.shape[1] == len(groups[0]) else fit(X, z, start)
    Portfolio.__init__, portfolio.fit_hyperparameters = stash, tied


def tied_fit(X, z, start, group):
    """`gp_fit.fit_hyperparameters` with the length scales of the columns in one group tied together."""
    n_groups, columns = int(group.max()) + 1, len(group)
    counts = np.bincount(group, minlength=n_groups)

    def expand(theta):
        return np.concatenate([theta[:n_groups][group], theta[n_groups:]])

    def objective(theta):
        nll, grad = gp_fit._objective(expand(theta), X, z)
        return nll, np.concatenate([np.bincount(group, grad[:columns], minlength=n_groups), grad[columns:]])

    if start is None or len(start.lengthscales) != columns:
        start = gp_fit.Hyperparameters.default(columns)
    if len(X) < 3:
        return start
    packed = start.packed()
    theta0 = np.concatenate([np.bincount(group, packed[:columns], minlength=n_groups) / counts, packed[columns:]])
    bounds = gp_fit._bounds(n_groups)
    theta0 = np.clip(theta0, [lo for lo, _ in bounds], [hi for _, hi in bounds])
    result = gp_fit.minimize(objective, theta0, jac=True, method="L-BFGS-B", bounds=bounds,
                             options={"maxiter": gp_fit.STEPS})
    theta = result.x if np.all(np.isfinite(result.x)) else theta0
    return gp_fit.Hyperparameters.unpacked(expand(theta))


def hyper_samples(X, z, h, count, thin, rng):
    """`count` elliptical-slice samples (every `thin`-th step from the MAP `h`) of the log length scales and log noise
    under gp_fit's log-normal priors and the marginal likelihood, the amplitude held at its MAP value."""
    d = len(h.lengthscales)
    mean = np.concatenate([np.full(d, np.log(gp_fit.PRIOR_LENGTHSCALE)), [np.log(gp_fit.PRIOR_NOISE)]])
    spread = np.concatenate([np.full(d, gp_fit.PRIOR_LOG_SD), [gp_fit.PRIOR_NOISE_LOG_SD]])
    bounds = gp_fit._bounds(d)
    lo = np.array([b[0] for i, b in enumerate(bounds) if i != d])
    hi = np.array([b[1] for i, b in enumerate(bounds) if i != d])

    def loglik(v):
        theta = mean + v
        if np.any(theta < lo) or np.any(theta > hi):
            return -np.inf
        K = h.amplitude * matern32(X, X, np.exp(theta[:d])) + np.exp(theta[d]) * np.eye(len(X))
        try:
            factor = cho_factor(K, lower=True)
        except np.linalg.LinAlgError:
            return -np.inf
        return float(-0.5 * z @ cho_solve(factor, z) - np.log(np.diag(factor[0])).sum())

    f = np.concatenate([np.log(h.lengthscales), [np.log(h.noise)]]) - mean
    here, out = loglik(f), []
    for step in range(count * thin):
        nu = rng.normal(0.0, spread)
        level = here + np.log(rng.random())
        angle = rng.uniform(0, 2 * np.pi)
        low, high = angle - 2 * np.pi, angle
        for _ in range(60):
            proposal = f * np.cos(angle) + nu * np.sin(angle)
            value = loglik(proposal)
            if value > level:
                f, here = proposal, value
                break
            low, high = (angle, high) if angle < 0 else (low, angle)
            angle = rng.uniform(low, high)
        if (step + 1) % thin == 0:
            theta = mean + f
            out.append(gp_fit.Hyperparameters(np.exp(theta[:d]), h.amplitude, float(np.exp(theta[d]))))
    return out


def mcmc() -> None:
    """The fitted GP's slots are picked by EI averaged over the MAP kernel and MCMC_S elliptical-slice samples of its
    hyperparameters (every MCMC_THIN-th step), while the job has fewer than MCMC_UNTIL observations."""
    count, thin = int(os.environ.get("MCMC_S", "4")), int(os.environ.get("MCMC_THIN", "3"))
    until = int(os.environ.get("MCMC_UNTIL", "1000000"))
    fit = Portfolio._fit

    def sampled(self, observations):
        before = self._gp
        fit(self, observations)
        gp, h = self._gp, self._hyper
        if gp is before:
            return
        self._samples = []
        if gp is None or h is None or self.options["gp_kernel"] != "fitted" or len(observations) >= until \
                or len(gp.z) < 3:
            return
        rng = np.random.default_rng([len(observations), 5])
        y = gp.z * gp.sd + gp.mu
        for s in hyper_samples(gp.X, gp.z, h, count, thin, rng):
            try:
                self._samples.append(GaussianProcess(gp.X, y, s.lengthscales, s.amplitude, s.noise))
            except np.linalg.LinAlgError:
                pass

    def batch(self, observations, indices, codes, k):  # the mean of the GPs' EIs, each believing the picks
        gps = [self._gp] + getattr(self, "_samples", [])
        C = self._frame(codes).at(indices)
        return gaussian_process.joint_ei_batch(gps, [C] * len(gps), k, portfolio.XI, lambda eis: sum(eis))
    Portfolio._fit, Portfolio._gp_batch = sampled, batch


def jointnosweep() -> None:
    """No one-knob sweeps while the joint rounds last (`joint_until`): every slot but random ones to the joint EI."""
    sweeps = ModelGuided._sweeps

    def later(self, model, slots, budget):
        return [] if len(self._own) < self.options["joint_until"] else sweeps(self, model, slots, budget)
    ModelGuided._sweeps = later


PATCHES = {"pure_gp": pure_gp, "dimprior": dimprior, "jointei": lambda: jointei(False),
           "jointei_pareto": lambda: jointei(True), "unitcube": unitcube, "crossover": crossover,
           "sumkernel": sumkernel, "looselect": looselect, "lateeps": lateeps,
           "race": race, "tiedcodes": tiedcodes, "mcmc": mcmc,
           "jointnosweep": jointnosweep, **late_variants.PATCHES}

if __name__ == "__main__":
    if "ONEHOT_SCALE" in os.environ:  # the height of the one-hot codes the fitted GP sees from `codes_from` on
        portfolio.ONEHOT = float(os.environ["ONEHOT_SCALE"])
    unknown = VARIANTS - set(PATCHES)
    if unknown:
        raise SystemExit(f"unknown variants {sorted(unknown)}; known: {', '.join(PATCHES)}")
    for name in sorted(VARIANTS):
        PATCHES[name]()
    search_efficiency.main(sys.argv[1:])
