"""The exceptions compiler_core raises, one per kind of failure a caller must tell apart."""


class WorkloadError(ValueError):
    """A workload (op name, params, dtype, elementwise expression) is invalid; the message says what and why."""


class ConfigError(ValueError):
    """A schedule config is not a member of its space (unknown knob, bad value, violated constraint)."""


class ResourceError(ValueError):
    """A lowered kernel exceeds a target limit (threads per block, shared memory, registers)."""


class BuildError(RuntimeError):
    """The host or device compiler rejected generated code, or no toolchain/device is available."""
