"""The variants of ../2026-11-27-additive-gp/, patched into the model strategy by `run_variant.py` (VARIANT=name):

- smoothmid: from `joint_until` to `gp_until` the smooth GP keeps SMOOTH_MID (0.25) of the acquisition's slots;
- sweepmid: no one-knob sweeps from `joint_until` until SWEEP_OFF_UNTIL (`gp_until`) observations;
- jointmid: the fitted GP's share is picked by the joint EI until JOINT_MID (128) observations;
- stallsmooth: once STALL (24) observations in a row found nothing faster, the smooth GP takes STALL_SHARE (0.75) of
  the acquisition's slots (from `joint_until` on) until a faster config is found;
- addswap / addthird: in the joint rounds, an additive GP (linear kernel on each knob's one-hot code, coordinate and
  squared coordinate; log-runtimes) replaces the smooth GP, or joins the two (addhalf: joins them with the fitted
  GP's EI weighing a half, the smooth and the additive one a quarter each);
- addlate: from `joint_until` on, ADD_SLOTS (1) slot of each batch goes to the additive GP's expected improvement.

smoothmid, sweepmid, jointmid and stallsmooth ran on the two-GP joint rounds (add "joint_additive": false to --options
to run them so again); the add* variants set the joint rounds' models themselves; addlate ran on the additive GP's
joint rounds, the strategy's default since.
"""
import os

from tuner_server.search import portfolio
from tuner_server.search.additive_gp import AdditiveGP
from tuner_server.search.gaussian_process import GaussianProcess, joint_ei_batch, one_blas_thread
from tuner_server.search.knob_walk import config_id
from tuner_server.search.model_guided import ModelGuided
from tuner_server.search.portfolio import Portfolio


def smoothmid() -> None:
    """From `joint_until` to `gp_until` observations the smooth GP (BO's) keeps SMOOTH_MID (0.25) of the acquisition's
    slots, as it does from `gp_until` on; the fitted GP and the ensemble share the rest by trust."""
    shares, share = Portfolio.shares, float(os.environ.get("SMOOTH_MID", "0.25"))

    def mid(self, observed):
        out = shares(self, observed)
        if self.options["joint_until"] <= observed < self.options["gp_until"]:
            out = {"gp": out["gp"] * (1 - share), "smooth": share}
        return out
    Portfolio.shares = mid


def sweepmid() -> None:
    """No one-knob sweeps from `joint_until` until SWEEP_OFF_UNTIL (`gp_until`) observations."""
    sweeps = ModelGuided._sweeps

    def off(self, model, slots, budget):
        until = int(os.environ.get("SWEEP_OFF_UNTIL", self.options["gp_until"]))
        return [] if self.options["joint_until"] <= len(self._own) < until else sweeps(self, model, slots, budget)
    ModelGuided._sweeps = off


def jointmid() -> None:
    """The fitted GP's share of the slots is picked by the joint EI (with the smooth GP) until JOINT_MID (128)
    observations, past `joint_until`, where the shares by trust begin."""
    until = int(os.environ.get("JOINT_MID", "128"))

    def batch(self, observations, indices, codes, k):
        if len(observations) >= until:
            return self._gp.ei_batch(self._frame(codes).at(indices), k, portfolio.XI)
        return self._joint_batch(observations, indices, codes, k)
    Portfolio._gp_batch = batch


def stallsmooth() -> None:
    """Once STALL (24) observations in a row found nothing faster (and from `joint_until` on), the smooth GP (BO's)
    takes STALL_SHARE (0.75) of the acquisition's slots until a faster config is found."""
    shares, batch = Portfolio.shares, ModelGuided._model_batch
    stall, share = int(os.environ.get("STALL", "24")), float(os.environ.get("STALL_SHARE", "0.75"))

    def stalled_batch(self, model, n):
        self._portfolio.stalled = self._since_best >= stall
        return batch(self, model, n)

    def stalled_shares(self, observed):
        out = shares(self, observed)
        if getattr(self, "stalled", False) and observed >= self.options["joint_until"]:
            out = {"gp": out["gp"] * (1 - share), "smooth": share}
        return out
    ModelGuided._model_batch, Portfolio.shares = stalled_batch, stalled_shares


def additive(mode: str) -> None:
    """The joint rounds' models as they ran before `joint_additive` was the strategy's: the additive GP instead of the
    smooth one ("swap"), beside both with equal weights ("third"), or beside both with the fitted GP's EI weighing a
    half and the other two a quarter each ("half": the strategy's own since, `portfolio.JOINT_WEIGHTS`)."""

    def joint(self, observations, indices, codes, k, combine=None):
        ran, y = self._ran(observations, self.options["gp_points"])
        add = AdditiveGP(self.additive.at(ran), y)
        frames = [self._frame(codes).at(indices), self.coords.at(indices), self.additive.at(indices)]
        if mode == "swap":
            return joint_ei_batch([self._gp, add], frames[::2], k, portfolio.XI, combine)
        smooth = GaussianProcess(self.coords.at(ran), y, self.options["gp_lengthscale"])
        weights = portfolio.JOINT_WEIGHTS if mode == "half" else None  # None: equal, each EI over its largest
        return joint_ei_batch([self._gp, smooth, add], frames, k, portfolio.XI, combine, weights)
    Portfolio._joint_batch = joint


def addlate() -> None:
    """From `joint_until` observations on, ADD_SLOTS (1) acquisition slot of each batch goes to the additive GP's
    expected improvement over unseen configs: a move that changes every knob to its best value at once, where a
    settled search looks only near its basins."""
    picks, slots_each = Portfolio.picks, int(os.environ.get("ADD_SLOTS", "1"))

    def with_additive(self, observations, slots, seen, taken, pool):
        if len(observations) < self.options["joint_until"] or slots <= slots_each:
            return picks(self, observations, slots, seen, taken, pool)
        with one_blas_thread():
            ran, y = self._ran(observations, self.options["gp_points"])
            skip = seen | {config_id(c) for c in taken}
            candidates, indices = self._candidates(skip, pool, self.options["smooth_candidates"])
            if len(candidates) <= slots_each:
                return picks(self, observations, slots, seen, taken, pool)
            add = AdditiveGP(self.additive.at(ran), y)
            mine = [candidates[j] for j in add.ei_batch(self.additive.at(indices), slots_each, portfolio.XI)]
        return mine + picks(self, observations, slots - len(mine), seen, taken + mine, pool)
    Portfolio.picks = with_additive


PATCHES = {"smoothmid": smoothmid, "sweepmid": sweepmid, "jointmid": jointmid, "stallsmooth": stallsmooth,
           "addswap": lambda: additive("swap"), "addthird": lambda: additive("third"),
           "addhalf": lambda: additive("half"), "addlate": addlate}
