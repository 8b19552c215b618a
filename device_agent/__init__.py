"""device_agent: leases tasks from a tuner, builds them ahead in a process pool, verifies and measures each in
an isolated worker process, and reports trial results.

Modules, in the order a task meets them: `fingerprint` (what device this is), `main` (the CLI and the shell
that drives `state`, the pure agent state machine, through `events`), `rpc_client` (the only protobuf-aware
module), `runner` (one task at a time), `prebuild` (parallel compilation), `sandbox` (the worker process,
timeouts and crash recovery), `worker` (build, verify, measure inside it), `measure` (timers and statistics),
`records` (Task, TrialResult, Status).
"""
from device_agent.records import MeasureOptions, Registration, Status, Task, TrialResult
from device_agent.settings import AgentSettings

__all__ = ["AgentSettings", "MeasureOptions", "Registration", "Status", "Task", "TrialResult"]
