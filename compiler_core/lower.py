"""lower(workload, config, target): template -> loop IR, then the passes, in this literal order."""
from __future__ import annotations

from compiler_core.ir.stmt import Module
from compiler_core.passes.flatten_buffers import flatten_buffers
from compiler_core.passes.infer_launch import infer_launch
from compiler_core.passes.simplify import simplify
from compiler_core.passes.vectorize import vectorize
from compiler_core.passes.verify_resources import verify_resources
from compiler_core.schedules import template_for
from compiler_core.target import Target
from compiler_core.workload import Workload

PASSES = (
    flatten_buffers,
    simplify,
    vectorize,
    infer_launch,
    verify_resources,
)


def get_space(workload: Workload, target: Target, template: str = "tuned"):
    return template_for(workload.op, target.kind, template).space(workload, target)


def lower(workload: Workload, config: dict, target: Target, template: str = "tuned") -> Module:
    """Validates the config against its space, builds the IR and runs every pass."""
    tmpl = template_for(workload.op, target.kind, template)
    tmpl.space(workload, target).validate(config)
    module = tmpl.schedule(workload, config, target)
    for run_pass in PASSES:
        module = run_pass(module, target)
    return module


def default_config(workload: Workload, target: Target, template: str = "tuned") -> dict:
    """The template's own untuned default if it has one, else the first valid config of the space."""
    tmpl = template_for(workload.op, target.kind, template)
    if hasattr(tmpl, "default_config"):
        return tmpl.space(workload, target).validate(tmpl.default_config(workload, target))
    return next(iter(tmpl.space(workload, target)))
