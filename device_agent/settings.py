"""AgentSettings: everything an agent process is configured with, built once by the CLI (main.py)."""
from __future__ import annotations

import os
import socket
from dataclasses import dataclass

from device_agent.state import StateConfig


@dataclass(frozen=True)
class AgentSettings:
    server: str  # HOST:PORT of the tuner's gRPC endpoint
    device: str = "cpu"  # 'cpu' or 'cuda:N'
    token: str = ""  # enrolment token
    name: str = ""  # shown by the server; defaults to HOST/DEVICE
    max_parallel_builds: int = 2
    plugins: tuple[str, ...] = ()  # modules imported by the worker and builders (custom ops)
    tls_ca_file: str | None = None  # a CA bundle: use TLS; None: plaintext
    tls_server_name: str | None = None  # the name the server's certificate must carry (default: the server's host)
    lease_batch: int = 4
    shutdown_grace_s: float = 20.0
    call_timeout_s: float = 10.0  # each kind of call's deadline until its first answer (device_agent/deadlines.py)
    seed: int = 0  # backoff jitter
    ready_wait_s: float = 30.0  # start no task while none is built and prepared, for at most this long
    health_port: int | None = None  # serve grpc.health.v1 on this port (0: any free port); None: off
    cpus: frozenset[int] = frozenset()  # CPU agents: the cores measured on (empty: all this process may use)
    lock_dir: str = "/tmp"  # host-wide measurement locks: one directory for every agent of the host
    cache_dir: str | None = None  # references cached on disk (None: in memory only)
    cache_bytes: int = 8 << 30  # inputs and references of recent workloads kept in the worker's memory

    @property
    def agent_name(self) -> str:
        # the pid keeps two unnamed agents of one host and device apart (same-name registrations retire each other)
        return self.name or f"{socket.gethostname()}/{self.device}/{os.getpid()}"

    def state_config(self) -> StateConfig:
        return StateConfig(lease_batch=self.lease_batch, shutdown_grace_s=self.shutdown_grace_s, seed=self.seed,
                           ready_wait_s=self.ready_wait_s)
