"""The model-guided strategy's options: the one table of their names, types, defaults and meanings, and the
defaults that follow the featurizer's cost (LIMITS) and whether a job starts from a transfer model
(`resolve_defaults`)."""
from __future__ import annotations

from tuner_server.cost_model.model import OBJECTIVES, REGRESSION
from tuner_server.search.base import Option

ACQUISITIONS = ("ucb", "ei", "thompson", "mean")
MAX_DISTANCE = 64  # knobs a distance option counts at most: more than any space has (at use, a distance is also
# clamped to the space's knobs, which is what any larger one means)
OPTIONS: dict[str, tuple] = {
    "acquisition": Option(str, "ucb", "how the ensemble's mean and spread rank candidates", choices=ACQUISITIONS),
    "kappa": Option(float, 1.0, "UCB's weight on the spread (100: the spread alone ranks)", minimum=0.0,
                    maximum=100.0),
    "members": Option(int, None, "models in the ensemble (None: 5 with cheap features, 2 with lowered)", minimum=1,
                      maximum=32),
    "basins": Option(int, 4, "distinct basins whose best configs are swept", minimum=1, maximum=64),
    "anchors": Option(int, None, "basin bests whose knob distances join the features (None: 4 with cheap "
                                 "features, 0 with lowered ones)", minimum=0, maximum=16),
    "late_basins": Option(int, 8, "distinct basins swept in the last phase (from `late_from` observations on)",
                          minimum=1, maximum=64),
    "late_basin_pool": Option(int, 256, "fastest measured configs among which the last phase's basin bests are found "
                                        "(before it: the fastest 64)", minimum=1, maximum=4096),
    "basin_distance": Option(int, None, "knobs in which basin bests differ at least (None: half the knobs)",
                             minimum=1, maximum=MAX_DISTANCE),
    "sweep": Option(float, 0.25, "share of a batch spent on one-knob neighbours of basin bests", minimum=0.0,
                    maximum=1.0),
    "sweep_pairs": Option(int, 0, "two-knob neighbours swept at most per basin best whose one-knob neighbours are "
                                  "all measured, among those the model rates above that best (a local optimum only "
                                  "because the config between it and a better one is not in the space; 0: never). "
                                  "With lowered features the ring's hundreds of configs spend the round's lowering "
                                  "budget", minimum=0, maximum=1024),
    "stall": Option(int, None, "observations in a row without a faster config after which `explore` of each batch "
                               "looks away from every basin (None: never)", minimum=1),
    "explore": Option(float, 0.25, "share of a batch, once stalled, spent on configs at least `basin_distance` "
                                   "knobs from every basin best (the best of a random draw by acquisition)",
                      minimum=0.0, maximum=1.0),
    "epsilon": Option(float, 0.05, "chance that a batch slot is a random unseen config", minimum=0.0, maximum=1.0),
    "min_distance": Option(int, 2, "knobs in which two configs of one batch must differ (the GP's picks: spread by "
                                   "its kriging believer instead; more than the space's knobs counts as all of them)",
                           minimum=0, maximum=MAX_DISTANCE),
    "fastest_first": Option(bool, True, "each batch goes out with the configs the fitted Gaussian process predicts "
                                        "fastest first (agents lease a job's tasks in that order); off: in the order "
                                        "its parts proposed them"),
    "patience": Option(int, None, "stop after this many observations without a better runtime", minimum=1),
    "transfer": Option(bool, True, "start from a model of the device class's other workloads when given"),
    "objective": Option(str, "rank_xendcg", "LightGBM ranking objective", choices=OBJECTIVES),
    "own_features": Option(str, "lowered", "features of a job without a transfer model: lowered-IR features (knob "
                                           "values where there is no workload), knob values, or both",
                           choices=("lowered", "knobs", "both")),
    "own_objective": Option(str, "regression", "objective of the job's own rankers: regression on -log(runtime) "
                                               "or a ranking objective", choices=(*OBJECTIVES, REGRESSION)),
    "rounds": Option(int, 40, "boosting rounds of each member", minimum=1, maximum=1000),
    "refit_rounds": Option(int, 20, "rounds added to the transfer model on the job's own trials", minimum=1,
                           maximum=1000),
    "refit_rate": Option(float, 0.1, "learning rate of the rounds added to the transfer model", minimum=0.0),
    "own_weight_at": Option(int, 4, "own observations at which the job's own ensemble weighs as much as the "
                                     "transfer model", minimum=1),
    "refit_growth": Option(float, None, "refit when observations grew by this fraction (None: every round with "
                                        "cheap features, 0.2 with lowered ones, 0.4 in a job with a transfer "
                                        "model)", minimum=0.0),
    "min_train": Option(int, 8, "own observations before the job's own ensemble is fitted", minimum=2),
    "chains": Option(int, 16, "annealing chains per round", minimum=1, maximum=256),
    "steps": Option(int, 16, "annealing steps per round", minimum=0, maximum=256),
    "feature_budget": Option(int, None, "new configs featurized per proposed config per round (None: 16 with "
                                        "lowered features, unbounded with cheap ones)", minimum=1, maximum=1 << 30),
    "pool_size": Option(int, None, "unmeasured scored candidates kept (None: 4096 lowered, 65536 cheap)",
                        minimum=1, maximum=1 << 18),
    "gp_until": Option(int, None, "observations until which a Gaussian process on knob coordinates proposes a share "
                                  "of each batch (0: never; None: 256 for a job without a transfer model, `gp_settle` "
                                  "for one with it, whose ensemble knows the device class from the first batch)",
                       minimum=0),
    "gp_settle": Option(int, 128, "observations from which the fitted Gaussian process's round stops growing in "
                                  "cost (it scores `gp_candidates` configs, with n fewer (gp_settle / n)^2 times as "
                                  "many, up to 8 times, and refits its kernel only every `gp_refit` observations) "
                                  "and the smooth Gaussian process keeps at least `smooth` of the slots", minimum=1),
    "gp_refit": Option(int, 32, "observations between fits of the fitted kernel's hyperparameters from `gp_settle` "
                                "on (its posterior takes in every observation every round)", minimum=1),
    "gp_regrow": Option(float, None, "growth of the observations (a fraction) after which the fitted kernel's "
                                     "hyperparameters are fitted again before `gp_settle` (0: every round; None: 0 "
                                     "for a job without a transfer model, 0.25 for one with it)", minimum=0.0),
    "gp_points": Option(int, 256, "observations the Gaussian process is fitted on at most (the fastest half, then "
                                  "the latest)", minimum=2, maximum=1024),
    "gp_lengthscale": Option(float, 1.5, "Matérn 3/2 length scale of the Gaussian process on [0, 1] coordinates",
                             minimum=1e-3),
    "gp_kernel": Option(str, "fitted", "the Gaussian process's kernel: per-knob length scales, amplitude and noise "
                                       "fitted to the job's measurements, or one fixed length scale "
                                       "(`gp_lengthscale`, as the BO reference strategy)", choices=("fitted", "fixed")),
    "codes_from": Option(int, 48, "observations from which the fitted Gaussian process sees each knob's one-hot "
                                  "code beside its coordinate (a knob as a category as well as a value; 0: from the "
                                  "start, `gp_until` or more: never)", minimum=0),
    "joint_until": Option(int, None, "observations until which every acquisition slot goes to the GPs' expected "
                                     "improvements together (the fitted GP's, the smooth GP's and with "
                                     "`joint_additive` the additive GP's, each over its largest, weighed and "
                                     "summed; 0: never; None: 48 for a job without a transfer model, 0 for one with "
                                     "it, whose ensemble ranks well from the first batch)", minimum=0),
    "joint_additive": Option(bool, True, "the joint rounds also weigh, at a quarter, the expected improvement of an "
                                         "additive GP (one effect per knob value and a quadratic trend per knob: its "
                                         "best config takes each knob's best value; the fitted GP's then weighs a "
                                         "half, the smooth GP's a quarter)"),
    "gp_targets": Option(str, "log", "what the Gaussian process models: the logarithms of runtimes or runtimes",
                         choices=("runtime", "log")),
    "smooth": Option(float, 0.25, "least share of the acquisition's slots, from `gp_settle` observations on, picked by "
                                 "expected improvement under a smooth Gaussian process (the BO reference's fixed "
                                 "kernel on runtimes)", minimum=0.0, maximum=1.0),
    "late_from": Option(int, 256, "observations from which, once the fitted Gaussian process has retired "
                                  "(`gp_until`), the smooth Gaussian process fills exactly `late_smooth` of the "
                                  "acquisition's slots and picks `late_batch` configs at a time (0: never)", minimum=0),
    "late_smooth": Option(float, 0.75, "share of the acquisition's slots the smooth Gaussian process fills from "
                                      "`late_from` on (more than 1 counts as 1)", minimum=0.0),
    "late_batch": Option(int, 3, "configs the smooth Gaussian process picks at once from `late_from` on, and "
                                 "wherever it scores every config of the listing (fresh picks every round, as BO "
                                 "makes)", minimum=1, maximum=64),
    "late_candidates": Option(int, 16384, "unmeasured configs of a listed space the smooth Gaussian process scores "
                                          "per pick from `late_from` (or `listed_from`) on at most, by a posterior "
                                          "that grows with the observations (a sample of the listing drawn once "
                                          "when it has more; 0: `smooth_candidates` drawn afresh each pick, as "
                                          "before the last phase)",
                              minimum=0, maximum=1 << 15),
    "listed_from": Option(int, None, "observations from which the smooth Gaussian process scores every unseen config "
                                     "of a listed space (up to `late_candidates`) by the growing posterior and picks "
                                     "`late_batch` at a time, before the last phase too (None: from `late_from` on)",
                          minimum=0),
    "smooth_trust": Option(bool, False, "the smooth Gaussian process also competes for slots by its trust before "
                                        "`gp_settle`"),
    "smooth_points": Option(int, 512, "observations the smooth Gaussian process is fitted on at most", minimum=2,
                            maximum=1024),
    "smooth_candidates": Option(int, 2048, "unmeasured configs the smooth Gaussian process scores per batch at most",
                                minimum=1, maximum=1 << 16),
    "smooth_batch": Option(int, 8, "configs the smooth Gaussian process picks at once (a kriging-believer batch), "
                                   "handed out over the next rounds", minimum=1, maximum=64),
    "gp_candidates": Option(int, 2048, "unmeasured configs the Gaussian process scores per round at most once it "
                                       "has `gp_settle` observations; with n fewer, (gp_settle / n)^2 times as "
                                       "many, up to 8 times", minimum=1, maximum=1 << 16),
    "trust_memory": Option(float, 0.5, "weight of earlier batches in each surrogate's rank correlation",
                           minimum=0.0, maximum=1.0),
    "trust_temperature": Option(float, 1.0, "GP share = logistic((trust of GP - trust of ensemble) / this): how "
                                            "sharply the better-predicting surrogate takes the slots", minimum=1e-3),
}
JOINT_UNTIL = 48  # `joint_until` of a job without a transfer model
GP_UNTIL = 256  # `gp_until` of a job without a transfer model
GP_REGROW_TRANSFER = 0.25  # `gp_regrow` of a job with a transfer model
REFIT_GROWTH_TRANSFER = 0.4  # `refit_growth` of a job with a transfer model
LIMITS = {  # featurizer cost -> defaults of the options that bound a round's work
    True: {"members": 5, "feature_budget": 1 << 30, "pool_size": 65_536, "anchors": 4, "refit_growth": 0.0},
    False: {"members": 2, "feature_budget": 16, "pool_size": 4096, "anchors": 0, "refit_growth": 0.2},
}


def resolve_defaults(o: dict, cheap: bool, transferring: bool) -> None:
    """Fill the options left None (in place) with the defaults that follow the featurizer's cost (LIMITS) and
    whether the job starts from a transfer model. Such a job's model ranks well from the first batch: it keeps its
    slots from the start (no joint rounds), its GP retires at `gp_settle`, and its refits (of the GP's kernel and of
    the rankers) are spaced further apart, which left the recorded tables' runs as they were
    (benchmarks/results/2026-11-28-gp-regrow/, 2026-11-28-overhead-xeon/)."""
    if transferring and o["refit_growth"] is None:
        o["refit_growth"] = REFIT_GROWTH_TRANSFER
    for name, default in LIMITS[cheap].items():
        if o[name] is None:
            o[name] = default
    if o["joint_until"] is None:
        o["joint_until"] = 0 if transferring else JOINT_UNTIL
    if o["gp_regrow"] is None:
        o["gp_regrow"] = GP_REGROW_TRANSFER if transferring else 0.0
    if o["gp_until"] is None:  # the late GP paid on jobs from nothing; one with a transfer model has shown no gain
        o["gp_until"] = o["gp_settle"] if transferring else GP_UNTIL
