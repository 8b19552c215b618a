"""Real farm processes for the tests: a tuner, its agents, and a tracker that proves none of them is left behind.

`ProcessTracker` starts every process, remembers each one and every descendant it has been seen with (sandbox
workers, build pools: psutil snapshots taken while waiting), stops them all (SIGTERM, then SIGKILL after a grace
period) and reports any that is still alive afterwards. `Farm` is one tuner process with its database, ports,
token files and agent processes.
"""
from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import psutil
from sqlalchemy import create_engine, func, select
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session
from sqlalchemy.pool import NullPool

from tests.ports import free_ports
from tunefarm_client import TunefarmClient
from tuner_server.db import Base
from tuner_server.db.models import Trial

REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 60.0
STOP_GRACE_S = 15.0
# Small kernels timed briefly: what every farm test job asks of the agents (a loose interval, a short cap, and two
# top trials re-measured head to head at the end). No cache flush: a flush costs ~10 ms per sample here, far more
# than a 64^3 kernel (~10 us).
FAST_MEASURE = {"warmup": 1, "min_repeats": 3, "min_time_s": 0.01, "max_time_s": 0.3, "target_rel_ci": 0.5,
                "flush_cache": False, "recheck_top": 2}
MATMUL = {"M": 64, "N": 64, "K": 64, "dtype": "float32"}


def base_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a farm process: ours without any TUNEFARM_* setting, the repository importable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TUNEFARM_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra or {})
    return env


def write_secret(path: Path, value: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(value + "\n")
    path.chmod(0o600)
    return path


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen
    log: Path

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def tail(self, chars: int | None = 3000) -> str:
        """The log's last `chars` characters (None: the whole log)."""
        try:
            text = self.log.read_text(errors="replace")
            return text if chars is None else text[-chars:]
        except OSError:
            return ""


class ProcessTracker:
    def __init__(self) -> None:
        self.procs: list[Proc] = []
        self.seen: dict[tuple[int, float], str] = {}  # (pid, create time) -> what it is

    def spawn(self, name: str, cmd: list[str], env: dict[str, str], log: Path) -> Proc:
        with log.open("ab") as out:
            popen = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        proc = Proc(name, popen, log)
        self.procs.append(proc)
        self._remember(psutil.Process(popen.pid), name)
        return proc

    def _remember(self, p: psutil.Process, label: str) -> None:
        try:
            self.seen.setdefault((p.pid, p.create_time()), label)
        except psutil.Error:
            pass

    def snapshot(self) -> None:
        """Remember every live descendant of the tracked processes."""
        for proc in self.procs:
            if not proc.alive():
                continue
            try:
                children = psutil.Process(proc.pid).children(recursive=True)
            except psutil.Error:
                continue
            for child in children:
                self._remember(child, f"descendant of {proc.name}")

    def signal(self, proc: Proc, sig: int) -> None:
        self.snapshot()
        if proc.alive():
            proc.popen.send_signal(sig)

    def kill(self, proc: Proc) -> None:
        """kill -9 and reap."""
        self.signal(proc, signal.SIGKILL)
        proc.popen.wait(30)

    def stop(self, procs: list[Proc], grace_s: float = STOP_GRACE_S) -> None:
        """SIGTERM each, wait up to `grace_s` for all, SIGKILL the rest; reap everything."""
        self.snapshot()
        for proc in procs:
            if proc.alive():
                proc.popen.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        for proc in procs:
            try:
                proc.popen.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.popen.kill()
                proc.popen.wait(30)

    def terminate_all(self) -> None:
        self.stop([p for p in self.procs if p.name != "tuner"] + [p for p in self.procs if p.name == "tuner"])

    def leftovers(self) -> list[str]:
        left = []
        for (pid, created), label in self.seen.items():
            try:
                p = psutil.Process(pid)
                if p.create_time() == created and p.status() != psutil.STATUS_ZOMBIE:
                    left.append(f"pid {pid} ({label}): {' '.join(p.cmdline())[:200]}")
            except psutil.Error:
                continue
        return left

    def assert_none_left(self, wait_s: float = 10.0) -> None:
        """Every process ever seen is gone (orphans of a kill -9 get `wait_s` to notice and exit); survivors are
        killed, then reported."""
        deadline = time.monotonic() + wait_s
        while (left := self.leftovers()) and time.monotonic() < deadline:
            time.sleep(0.2)
        for (pid, created), _ in self.seen.items():
            if left:
                try:
                    p = psutil.Process(pid)
                    if p.create_time() == created:
                        p.kill()
                except psutil.Error:
                    pass
        assert not left, "processes left behind:\n" + "\n".join(left)


def wait_until(predicate: Callable[[], object], what: str, timeout_s: float = 60.0, interval_s: float = 0.25,
               on_poll: Callable[[], None] | None = None, diagnostics: Callable[[], str] | None = None):
    """Poll until `predicate()` is truthy and return its value; fail naming `what` after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        if on_poll is not None:
            on_poll()
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            extra = f"\n{diagnostics()}" if diagnostics else ""
            raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}{extra}")
        time.sleep(interval_s)


def readonly_url(database_url: str) -> str:
    url = make_url(database_url)
    if url.get_backend_name() == "sqlite":
        return f"sqlite:///file:{url.database}?mode=ro&uri=true"
    return database_url


class Farm:
    """One tuner process (restartable on the same database and ports) and its agents."""

    def __init__(self, root: Path, database_url: str, tracker: ProcessTracker, *, env: dict[str, str],
                 server_plugins: tuple[str, ...] = (), agent_plugins: tuple[str, ...] = (),
                 agent_env: dict[str, str] | None = None):
        self.root, self.database_url, self.tracker = root, database_url, tracker
        self.env, self.server_plugins, self.agent_plugins = env, server_plugins, agent_plugins
        self.agent_env = agent_env or {}
        self.rest_port, self.grpc_port = free_ports(2)
        self.admin_token = "tfa_" + secrets.token_urlsafe(24)
        self.enrolment_token = "tfe_" + secrets.token_urlsafe(24)
        self.admin_token_file = write_secret(root / "secrets" / "admin_token", self.admin_token)
        self.enrolment_token_file = write_secret(root / "secrets" / "enrolment_token", self.enrolment_token)
        self.server: Proc | None = None
        self.agents: list[Proc] = []
        self._engine = None

    # ---- processes -------------------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.rest_port}"

    def server_env(self) -> dict[str, str]:
        return base_env({
            "TUNEFARM_DATABASE_URL": self.database_url, "TUNEFARM_DATA_DIR": str(self.root / "data"),
            "TUNEFARM_REST_PORT": str(self.rest_port), "TUNEFARM_GRPC_PORT": str(self.grpc_port),
            "TUNEFARM_ADMIN_TOKEN_FILE": str(self.admin_token_file),
            "TUNEFARM_ENROLMENT_TOKEN_FILE": str(self.enrolment_token_file),
            "TUNEFARM_HEARTBEAT_INTERVAL_S": "1", **self.env})

    def start_server(self, wait: bool = True) -> Proc:
        """Start (or restart) the tuner on this farm's database and ports; `wait`: until /health answers."""
        plugins = [arg for module in self.server_plugins for arg in ("--plugin", module)]
        cmd = [sys.executable, "-m", "tuner_server", *plugins]
        self.server = self.tracker.spawn("tuner", cmd, self.server_env(), self.root / "tuner.log")
        if wait:
            self.wait_healthy()
        return self.server

    def wait_healthy(self, timeout_s: float = START_TIMEOUT_S) -> None:
        def healthy() -> bool:
            if not self.server.alive():
                raise AssertionError(f"the tuner exited with {self.server.popen.returncode}:\n{self.server.tail()}")
            try:
                return httpx.get(self.url + "/health", timeout=2.0).status_code == 200
            except httpx.HTTPError:
                return False
        wait_until(healthy, "the tuner to answer /health", timeout_s, 0.1, diagnostics=self.server.tail)

    def kill_server(self) -> None:
        self.tracker.kill(self.server)

    def add_agent(self, name: str | None = None, extra_args: tuple[str, ...] = ()) -> Proc:
        name = name or f"agent-{len(self.agents)}"
        plugins = [arg for module in self.agent_plugins for arg in ("--plugin", module)]
        cmd = [sys.executable, "-m", "device_agent.main", "--server", f"127.0.0.1:{self.grpc_port}", "--device",
               "cpu", "--token-file", str(self.enrolment_token_file), "--name", name, "--grace", "5", *plugins,
               "--lock-dir", str(self.root / "locks"), "--cache-dir", str(self.root / "references"), *extra_args]
        proc = self.tracker.spawn(name, cmd, base_env(self.agent_env), self.root / f"{name}.log")
        self.agents.append(proc)
        return proc

    def kill_agent(self, proc: Proc) -> None:
        self.tracker.kill(proc)

    def active_agent_names(self) -> set[str]:
        with self.client() as c:
            return {a.name for d in c.devices().items for a in d.agents if a.status == "active"}

    def wait_for_agents(self, names: set[str] | None = None, timeout_s: float = START_TIMEOUT_S) -> None:
        names = names or {a.name for a in self.agents}
        wait_until(lambda: names <= self.active_agent_names(), f"agents {sorted(names)} to register", timeout_s,
                   on_poll=self.tracker.snapshot, diagnostics=self.logs)

    def stop(self) -> None:
        self.tracker.stop([a for a in self.agents] + ([self.server] if self.server else []))
        if self._engine is not None:
            self._engine.dispose()

    def logs(self, chars: int = 2500) -> str:
        procs = ([self.server] if self.server else []) + self.agents
        return "\n".join(f"--- {p.name} (pid {p.pid}, rc {p.popen.poll()}) ---\n{p.tail(chars)}" for p in procs)

    # ---- clients -------------------------------------------------------------------------------------------
    def client(self, token: str | None = None) -> TunefarmClient:
        return TunefarmClient(self.url, token or self.admin_token, timeout=30.0)

    def device_class(self) -> str:
        with self.client() as c:
            classes = [d.device_class for d in c.devices().items if d.kind == "cpu"]
        assert len(classes) == 1, classes
        return classes[0]

    def wait_job(self, job_id: str, timeout_s: float = 120.0, states=("done", "failed", "cancelled")):
        with self.client() as c:
            return wait_until(lambda: (j := c.job(job_id)).state in states and j, f"job {job_id} to end",
                              timeout_s, 0.3, on_poll=self.tracker.snapshot, diagnostics=self.logs)

    # ---- the database, read-only -----------------------------------------------------------------------------
    @contextmanager
    def db(self):
        if self._engine is None:
            self._engine = create_engine(readonly_url(self.database_url), poolclass=NullPool)
        with Session(self._engine) as s:
            yield s

    def rows(self) -> dict[str, int]:
        with self.db() as s:
            return {t.name: s.scalar(select(func.count()).select_from(t)) for t in Base.metadata.sorted_tables}

    def trials(self, job_id: str) -> list[Trial]:
        with self.db() as s:
            return list(s.scalars(select(Trial).where(Trial.job_id == job_id).order_by(Trial.created_at)).all())
