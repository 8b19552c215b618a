"""The cost model: a LightGBM ranker over config features; a higher score means a faster config (same workload).

One model per device class, trained on every trial of that class across workloads (queries = workloads, see
`grades`). Three ways to train, all bounded in boosting rounds:

- `CostModel.fit(data)`: from scratch;
- `base.fine_tuned(data)`: a new model that starts from `base`'s trees and adds a few rounds on `data` (a job's own
  trials on top of the device-class model: transfer), leaving `base` as it was;
- `model.update(data)`: keeps boosting this model on new data (warm start, in place); `max_trees` bounds its size,
  past which the caller refits.

`Blend` sums standardized scores of several models (a strategy's transfer model and its own).

`to_bytes()`/`from_bytes()` give a compact, versioned blob to store beside the trials (the tuner's database has no
table for it yet: the caller decides where it lives). The blob records the feature layout; loading one made for
another layout raises ModelFormatError, so a model never scores features it was not trained on.
"""
from __future__ import annotations

import hashlib
import json
import time
import zlib
from collections.abc import Sequence

import lightgbm as lgb
import numpy as np

from tuner_server.cost_model.grades import MAX_GRADE, RankingData

OBJECTIVES = ("rank_xendcg", "lambdarank")  # ranking: what a device-class model of many workloads trains on
REGRESSION = "regression"  # one workload's trials: labels are -log(runtime) (`tuner_server.cost_model.ensemble`)
FORMAT = "tunefarm-cost-model/1"
DEFAULT_PARAMS = {
    "learning_rate": 0.1,
    "num_leaves": 31,
    "min_data_in_leaf": 2,
    "min_sum_hessian_in_leaf": 1e-6,
    "feature_fraction": 0.9,
    "lambda_l2": 1.0,
    "max_bin": 63,
    "verbosity": -1,
    "deterministic": True,
    "force_row_wise": True,
    "num_threads": 1,
}


class ModelFormatError(ValueError):
    """A serialized model that cannot be loaded here (another format or another feature layout)."""


def layout_id(feature_names: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(feature_names).encode()).hexdigest()[:16]


class CostModel:
    """A ranking model over features named `feature_names`; see the module docstring."""

    def __init__(self, feature_names: Sequence[str], objective: str = "rank_xendcg", seed: int = 0,
                 params: dict | None = None, booster: lgb.Booster | None = None):
        if objective not in (*OBJECTIVES, REGRESSION):
            raise ValueError(f"objective {objective!r} not in {(*OBJECTIVES, REGRESSION)}")
        self.feature_names = tuple(feature_names)
        self.objective, self.seed = objective, seed
        self.params = {**DEFAULT_PARAMS, **(params or {}), "objective": objective, "seed": seed}
        if objective == "lambdarank":
            self.params.setdefault("label_gain", [float(2 ** g - 1) for g in range(MAX_GRADE + 1)])
        self.booster = booster
        self.fit_s = 0.0  # wall time of the last training call

    @property
    def trained(self) -> bool:
        return self.booster is not None

    @property
    def num_trees(self) -> int:
        return self.booster.num_trees() if self.booster is not None else 0

    # ---- training -------------------------------------------------------------------------------------------
    def _dataset(self, data: RankingData) -> lgb.Dataset:
        if data.X.ndim != 2 or data.X.shape[1] != len(self.feature_names):
            raise ValueError(f"features have shape {data.X.shape}, the model expects {len(self.feature_names)} columns")
        return lgb.Dataset(data.X, label=data.y, group=data.queries, params={"max_bin": self.params["max_bin"]},
                           free_raw_data=False)

    def _train(self, data: RankingData, rounds: int, init: lgb.Booster | None) -> lgb.Booster | None:
        if len(data) == 0 or len(np.unique(data.y)) < 2:
            return init  # nothing to rank: all rows equal
        t0 = time.perf_counter()
        booster = lgb.train(self.params, self._dataset(data), num_boost_round=max(1, rounds), init_model=init,
                            keep_training_booster=True)
        self.fit_s = time.perf_counter() - t0
        return booster

    def fit(self, data: RankingData, rounds: int = 60) -> CostModel:
        """Train from scratch (replacing any trees); returns self."""
        self.booster = self._train(data, rounds, None)
        return self

    def fine_tuned(self, data: RankingData, rounds: int = 20, params: dict | None = None) -> CostModel:
        """A new model: this one's trees plus `rounds` more trained on `data` (this model is unchanged); `params`
        override this model's for the new rounds (e.g. a larger learning_rate, so few rounds can correct it)."""
        # LightGBM merges the init model's trees into a new booster and leaves the init model as it was (tested),
        # so no copy is made (one cost 3 ms of a 12 ms fine-tune with a class model of 60 trees)
        out = CostModel(self.feature_names, self.objective, self.seed, {**self._own_params(), **(params or {})})
        out.booster = out._train(data, rounds, self.booster)
        out.fit_s = out.fit_s if out.booster is not self.booster else 0.0
        return out

    def update(self, data: RankingData, rounds: int = 10) -> CostModel:
        """Keep boosting this model on `data` (warm start, in place); returns self."""
        self.booster = self._train(data, rounds, self.booster)
        return self

    def _own_params(self) -> dict:
        skip = {"objective", "seed"}
        return {k: v for k, v in self.params.items() if k not in skip}

    # ---- scoring --------------------------------------------------------------------------------------------
    def predict(self, X: np.ndarray) -> np.ndarray:
        """Scores (higher = predicted faster) of feature rows; zeros before any training."""
        X = np.asarray(X, dtype=np.float32)
        if self.booster is None or len(X) == 0:
            return np.zeros(len(X))
        return self.booster.predict(X, num_threads=1)

    # ---- persistence ----------------------------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        header = {"format": FORMAT, "objective": self.objective, "seed": self.seed, "params": self._own_params(),
                  "feature_names": list(self.feature_names), "layout": layout_id(self.feature_names)}
        model = self.booster.model_to_string() if self.booster is not None else ""
        return zlib.compress(json.dumps(header).encode() + b"\n" + model.encode(), 6)

    @classmethod
    def from_bytes(cls, blob: bytes, feature_names: Sequence[str] | None = None) -> CostModel:
        """Load a blob; with `feature_names`, raise ModelFormatError unless the model was trained on them."""
        try:
            head, _, model = zlib.decompress(blob).partition(b"\n")
            header = json.loads(head)
        except (zlib.error, ValueError) as exc:
            raise ModelFormatError(f"not a cost model blob: {exc}") from None
        if header.get("format") != FORMAT:
            raise ModelFormatError(f"cost model format {header.get('format')!r}, expected {FORMAT!r}")
        if feature_names is not None and header["layout"] != layout_id(feature_names):
            raise ModelFormatError("the cost model was trained on another feature layout (compiler_core changed)")
        booster = lgb.Booster(model_str=model.decode()) if model else None
        return cls(header["feature_names"], header["objective"], header["seed"], header["params"], booster)


class Blend:
    """A weighted sum of models' scores, each standardized by its spread over the training rows."""

    def __init__(self, parts: list[tuple[CostModel, float]], X: np.ndarray):
        self.parts = []
        for model, weight in parts:
            scores = model.predict(X)
            self.parts.append((model, weight / (float(np.std(scores)) or 1.0), float(np.mean(scores))))

    def predict(self, X: np.ndarray) -> np.ndarray:
        return sum(w * (m.predict(X) - mu) for m, w, mu in self.parts)
