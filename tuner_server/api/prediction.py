"""GET /v1/best?predict=true: the answer for a key with no head (tuner_server/predict.py), and its schema."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

import compiler_core as cc
from tuner_server.api import schemas as s

if TYPE_CHECKING:  # the client and the loader read PredictedBest: they need no cost model (lightgbm, scipy)
    from tuner_server.predict import Prediction


class PredictionModel(BaseModel):
    """The class model that ranked the candidates."""

    version: int = Field(description="the device class's model version (GET /v1/devices lists the models)")
    trained_on: int = Field(description="trials the model was fitted on")
    workloads: int = Field(description="distinct workloads among them")
    feature_set: str


class PredictedBest(BaseModel):
    """No head yet: the config the device class's cost model ranks best among `candidates_scored` (never a
    measurement; tune the key to get one)."""

    predicted: Literal[True] = True
    workload: str
    op: str
    params: dict[str, Any]
    device_class: str
    config: dict[str, Any]
    codegen_version: str = Field(description="the compiler_core that lowered and generated it")
    model: PredictionModel
    candidates_scored: int = Field(description="configs ranked: heads of other shapes of the op on this class "
                                               "(candidates_from_heads of them), the default, random samples")
    candidates_from_heads: int
    space_size: int = Field(description="configs in the space's knob product (the valid ones are a subset)")
    target: s.TargetPublic
    source: str | None = Field(None, description="the generated kernel source, with include_source=true")
    enqueued_job: s.JobPublic | None = Field(None, description="the tuning job for this key, with enqueue=true "
                                                               "(an open one if there was one)")


def predicted_public(workload: cc.Workload, device_class: str, p: Prediction, target: cc.Target,
                     source: str | None, job: s.JobPublic | None) -> PredictedBest:
    return PredictedBest(
        workload=workload.key, op=workload.op, params=workload.param_dict, device_class=device_class,
        config=p.config, codegen_version=cc.codegen_version(),
        model=PredictionModel(version=p.model_version, trained_on=p.trained_on, workloads=p.trained_workloads,
                              feature_set=p.feature_set),
        candidates_scored=p.scored, candidates_from_heads=p.from_peer_heads, space_size=p.space_size,
        target=s.TargetPublic(**target.to_dict()), source=source, enqueued_job=job)
