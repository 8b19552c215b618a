"""Knob values for tests, taken from a target's own space: never literals that hold for one vector width only."""
from __future__ import annotations

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
