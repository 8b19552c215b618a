"""compiler_core: op definitions, schedule spaces, loop IR, lowering passes and C/CUDA codegen.

Pipeline: make_workload -> get_space -> (config) -> lower -> generate_source -> build -> Kernel.
"""
from compiler_core.build import Kernel, build, generate
from compiler_core.errors import BuildError, ConfigError, ResourceError, WorkloadError
from compiler_core.features import FEATURE_NAMES, extract_features, features
from compiler_core.lower import default_config, get_space, lower, run_passes
from compiler_core.ops import OPS, get_op
from compiler_core.space import Knob, Space, config_key
from compiler_core.target import Target, amx_permitted, cpu_target, cuda_target
from compiler_core.verify import Expected, InputSet, VerifyResult, expect, input_sets, random_inputs, reference, verify
from compiler_core.version import codegen_version
from compiler_core.workload import Workload, make_workload, parse_key

__all__ = [
    "FEATURE_NAMES", "codegen_version", "extract_features", "features",
    "OPS", "BuildError", "ConfigError", "Expected", "InputSet", "Kernel", "Knob", "ResourceError", "Space",
    "Target", "VerifyResult", "Workload", "WorkloadError", "amx_permitted", "build", "config_key", "cpu_target",
    "cuda_target",
    "default_config", "expect", "generate", "get_op", "get_space", "input_sets", "lower", "make_workload", "parse_key",
    "run_passes",
    "random_inputs", "reference", "verify",
]
