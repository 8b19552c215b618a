"""The agent state machine's vocabulary: events in (what happened), instructions out (what to do).

The shell (main.py) turns gRPC answers, worker completions, signals and the clock into events, feeds them to
`AgentState.handle`, and carries out the instructions it gets back. Nothing here does I/O.
"""
from __future__ import annotations

from dataclasses import dataclass

from device_agent.records import Task, TrialResult

# ---- events --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Started:
    """The shell is up (worker ready): register."""


@dataclass(frozen=True)
class Registered:
    agent_id: str
    session_token: str
    lease_s: float
    heartbeat_s: float
    device_class: str = ""


@dataclass(frozen=True)
class RegisterFailed:
    error: str
    fatal: bool = False  # the server refused us (bad token, invalid fingerprint): retrying cannot help


@dataclass(frozen=True)
class Leased:
    tasks: tuple[Task, ...]


@dataclass(frozen=True)
class NothingToLease:
    retry_after_s: float


@dataclass(frozen=True)
class TaskDone:
    result: TrialResult


@dataclass(frozen=True)
class TaskReady:
    """A leased task's build and its workload's inputs are done (or failed): starting it waits for nothing."""
    task_id: str


@dataclass(frozen=True)
class Reported:
    accepted: tuple[str, ...] = ()
    duplicate: tuple[str, ...] = ()
    rejected: tuple[str, ...] = ()


@dataclass(frozen=True)
class ReportFailed:
    error: str = ""


@dataclass(frozen=True)
class HeartbeatAck:
    cancelled: tuple[str, ...] = ()
    reregister: bool = False


@dataclass(frozen=True)
class SessionExpired:
    """A call was refused because the server does not know our session (as HeartbeatAck(reregister=True))."""
    call: str


@dataclass(frozen=True)
class ConnectionLost:
    call: str  # "lease" | "heartbeat" | "report" | "register"
    error: str = ""


@dataclass(frozen=True)
class ShutdownRequested:
    """SIGTERM/SIGINT. A second one ends the grace period at once."""


@dataclass(frozen=True)
class Tick:
    now: float  # unix seconds


Event = (Started | Registered | RegisterFailed | Leased | NothingToLease | TaskDone | Reported | ReportFailed
         | HeartbeatAck | SessionExpired | ConnectionLost | ShutdownRequested | Tick)

# ---- instructions --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Register:
    pass


@dataclass(frozen=True)
class Lease:
    n: int


@dataclass(frozen=True)
class StartTask:
    task: Task


@dataclass(frozen=True)
class CancelTask:
    """Stop (or never start) this task: kill its measurement or drop its ahead-of-time build."""
    task_id: str


@dataclass(frozen=True)
class Report:
    results: tuple[TrialResult, ...]


@dataclass(frozen=True)
class Heartbeat:
    held: tuple[str, ...]


@dataclass(frozen=True)
class Sleep:
    seconds: float


@dataclass(frozen=True)
class Exit:
    code: int
    reason: str


Instruction = Register | Lease | StartTask | CancelTask | Report | Heartbeat | Sleep | Exit
