"""Knob values for tests, taken from a target's own space: never literals that hold for one vector width only."""
from __future__ import annotations

import random

import compiler_core as cc


def knob_choices(space: cc.Space, name: str) -> tuple:
    return next(k.choices for k in space.knobs if k.name == name)


def one_vector_microkernel(workload: cc.Workload, target: cc.Target) -> dict:
    """A valid config other than the GEMM default: the default with the narrowest microkernel of the target's
    space (nr = one vector of B, whatever the vector width)."""
    space = cc.get_space(workload, target)
    default = cc.default_config(workload, target)
    config = space.validate({**default, "nr": knob_choices(space, "nr")[0]})
    assert config != default
    return config


def covering_configs(w, target, seed: int = 0) -> list[dict]:
    """The default config, then valid configs until every value of every knob is in one (each drawn at random among
    the valid configs that hold the value still missing); a value no valid config holds is skipped."""
    space = cc.get_space(w, target)
    valid = list(space)
    rng = random.Random(seed)
    chosen = [cc.default_config(w, target)]
    for knob in space.knobs:
        for value in knob.choices:
            if any(c[knob.name] == value for c in chosen):
                continue
            holding = [c for c in valid if c[knob.name] == value]
            if holding:
                chosen.append(rng.choice(holding))
    return list({cc.config_key(c): c for c in chosen}.values())
