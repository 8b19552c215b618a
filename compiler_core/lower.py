"""lower(workload, config, target): template -> loop IR, then the target backend's literal list of passes."""
from __future__ import annotations

from compiler_core.backends import backend
from compiler_core.ir.stmt import Module
from compiler_core.schedules import template_for
from compiler_core.target import Target
from compiler_core.workload import Workload


def get_space(workload: Workload, target: Target, template: str = "tuned"):
    return template_for(workload.op, target.kind, template).space(workload, target)


def lower(workload: Workload, config: dict, target: Target, template: str = "tuned") -> Module:
    """Validates the config against its space, builds the IR and runs every pass."""
    tmpl = template_for(workload.op, target.kind, template)
    # a template that kept an older family of configs buildable says which space a config belongs to
    space = tmpl.config_space(workload, target, config) if hasattr(tmpl, "config_space") else \
        tmpl.space(workload, target)
    space.validate(config)
    return run_passes(tmpl.schedule(workload, config, target), target)


def run_passes(module: Module, target: Target) -> Module:
    """The target backend's passes over a template's module, in their literal order."""
    for run_pass in backend(target.kind).passes:
        module = run_pass(module, target)
    return module


def default_config(workload: Workload, target: Target, template: str = "tuned") -> dict:
    """The template's own untuned default if it has one, else the first valid config of the space."""
    tmpl = template_for(workload.op, target.kind, template)
    if hasattr(tmpl, "default_config"):
        return tmpl.space(workload, target).validate(tmpl.default_config(workload, target))
    return next(iter(tmpl.space(workload, target)))
