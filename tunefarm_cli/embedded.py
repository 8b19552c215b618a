"""The embedded farm (`tunefarm up`): a tuner process on SQLite plus one agent process per local device."""
from __future__ import annotations

import ctypes
import fcntl
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tunefarm_cli.farm_dir import FARM_FILE, LOCK_FILE

PR_SET_PDEATHSIG = 1  # linux/prctl.h
START_TIMEOUT_S = 60.0
STOP_GRACE_S = 20.0  # agents finish or return their leases, then the tuner stops; later, they are killed
TUNER_NICENESS = 10


FAILED_START_S = 15.0  # an agent that exits this soon after its start, twice in a row, is not started again


@dataclass
class Child:
    """How one of the farm's processes is started (again, after it exited) and where it logs."""
    name: str
    cmd: list[str]
    env: dict
    niceness: int
    log: Path
    process: subprocess.Popen | None = None  # the latest start's
    started_at: float = 0.0
    failed_starts: int = 0  # exits in a row within FAILED_START_S of their start
    given_up: bool = False

    def start(self) -> None:
        out = open(self.log, "ab")  # noqa: SIM115 - owned by the child for its lifetime
        parent, niceness = os.getpid(), self.niceness
        self.started_at = time.monotonic()
        try:
            self.process = subprocess.Popen(self.cmd, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                                            preexec_fn=lambda: die_with_parent(parent, niceness))
        finally:
            out.close()  # the child holds its own descriptor

    def last_log_line(self) -> str:
        """The last non-empty line of the log (what an exiting process said last), at most 300 characters."""
        try:
            with open(self.log, "rb") as f:
                f.seek(max(0, f.seek(0, os.SEEK_END) - 4096))
                lines = [line.strip() for line in f.read().decode(errors="replace").splitlines() if line.strip()]
        except OSError:
            return ""
        return lines[-1][:300] if lines else ""


class FarmBusy(RuntimeError):
    """Another embedded farm runs on this data directory."""


def lock_data_dir(data_dir: Path) -> int:
    """An exclusive flock on DATA_DIR/farm.lock, held for the farm's lifetime (the kernel drops it if the holder
    dies): two farms on one directory would share its SQLite database and run two agents measuring on the same
    cores at once. Returns the file descriptor to keep."""
    path = data_dir / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
        os.close(fd)
        raise FarmBusy(f"another tunefarm farm (pid {holder}) is running on {data_dir}: stop it first, or use "
                       "another --data-dir") from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, str(os.getpid()).encode(), 0)
    return fd


def die_with_parent(parent_pid: int, niceness: int = 0) -> None:
    """preexec_fn of the farm's children: SIGTERM when the farm's process dies (Linux PR_SET_PDEATHSIG, so even a
    kill -9 of `tunefarm up` stops them; each child also watches its parent through --parent-pid, the fallback
    where prctl does not exist)."""
    if niceness:
        os.nice(niceness)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os.kill(os.getpid(), signal.SIGTERM)


def free_ports(n: int) -> list[int]:
    """n distinct free loopback ports: every socket stays bound until all are (a port just closed may be handed out
    again, so two single calls can give the tuner one port for both REST and gRPC)."""
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def local_devices() -> list[str]:
    """'cpu' plus 'cuda:N' for every GPU pycuda can see."""
    devices = ["cpu"]
    try:
        import pycuda.driver as drv

        drv.init()
        devices += [f"cuda:{i}" for i in range(drv.Device.count())]
    except Exception:  # noqa: BLE001 - no pycuda or no driver: a CPU-only farm
        pass
    return devices


@dataclass
class EmbeddedFarm:
    """Starts and stops the processes; `url`/`admin_token` are what clients need (also written to farm.json)."""
    data_dir: Path
    devices: list[str] = field(default_factory=local_devices)
    rest_port: int = 0
    grpc_port: int = 0
    quiet: bool = True
    log_level: str = "WARNING"  # of the tuner and agent processes (their logs are DATA_DIR/*.log)
    children: list[Child] = field(default_factory=list)  # the tuner, then the agents: how each runs and restarts
    _lock_fd: int | None = field(default=None, repr=False)

    @property
    def processes(self) -> list[subprocess.Popen]:
        """The tuner's process, then each agent's (its latest, after a restart)."""
        return [child.process for child in self.children]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.rest_port}"

    def _credentials(self) -> dict:
        path = self.data_dir / "credentials.json"
        if path.exists():
            creds = json.loads(path.read_text())
            # a bare token_urlsafe starts with "-" one time in 64, and `--token -x…` is an option to argparse,
            # so a farm made before the prefixes gets new tokens (the server and agents read them at each start)
            if not any(token.startswith("-") for token in creds.values()):
                return creds
        creds = {"admin_token": "tfa_" + secrets.token_urlsafe(24),
                 "enrolment_token": "tfe_" + secrets.token_urlsafe(24)}
        path.write_text(json.dumps(creds))
        path.chmod(0o600)
        return creds

    def start(self) -> EmbeddedFarm:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if self._lock_fd is None:
            self._lock_fd = lock_data_dir(self.data_dir)
        try:
            return self._start_processes()
        except BaseException:
            self.stop(grace_s=5.0)
            raise

    def _start_processes(self) -> EmbeddedFarm:
        creds = self._credentials()
        self.admin_token = creds["admin_token"]
        if not (self.rest_port and self.grpc_port):  # two ports that differ, and differ from one given
            spare = (port for port in free_ports(2) if port not in (self.rest_port, self.grpc_port))
            self.rest_port = self.rest_port or next(spare)
            self.grpc_port = self.grpc_port or next(spare)
        env = dict(os.environ, TUNEFARM_DATABASE_URL=f"sqlite:///{(self.data_dir / 'tunefarm.db').resolve()}",
                   TUNEFARM_DATA_DIR=str(self.data_dir), TUNEFARM_REST_PORT=str(self.rest_port),
                   TUNEFARM_GRPC_PORT=str(self.grpc_port), TUNEFARM_ADMIN_TOKEN=creds["admin_token"],
                   TUNEFARM_ENROLMENT_TOKEN=creds["enrolment_token"])
        # The tuner shares this host's cores with the agents' measurements: its refits and featurizing yield to them.
        self._spawn([sys.executable, "-m", "tuner_server", "--log-level", self.log_level,
                     "--parent-pid", str(os.getpid())], env, "tuner", niceness=TUNER_NICENESS)
        self._wait_healthy()
        token_file = self.data_dir / "enrolment_token"
        token_file.write_text(creds["enrolment_token"])
        token_file.chmod(0o600)
        for device in self.devices:
            self._spawn([sys.executable, "-m", "device_agent.main", "--server", f"127.0.0.1:{self.grpc_port}",
                         "--device", device, "--token-file", str(token_file), "--log-level", self.log_level,
                         "--parent-pid", str(os.getpid())],
                        env, f"agent-{device.replace(':', '')}")
        (self.data_dir / FARM_FILE).write_text(json.dumps({"url": self.url, "token": self.admin_token}))
        return self

    def _spawn(self, cmd: list[str], env: dict, name: str, niceness: int = 0) -> None:
        child = Child(name, cmd, env, niceness, self.data_dir / f"{name}.log")
        self.children.append(child)
        child.start()

    def supervise(self) -> list[str]:
        """One look at the processes (`tunefarm up` calls it every second): an agent that exited is started again,
        unless it exited within FAILED_START_S of its start twice in a row (a device it cannot use: no pycuda, no
        GPU), which is then left down. Returns a line for each thing a person should know. Raises RuntimeError
        when the tuner has exited: the farm is gone."""
        lines = []
        for i, child in enumerate(self.children):
            code = child.process.poll()
            if code is None or child.given_up:
                continue
            last = child.last_log_line()
            said = f": {last}" if last else ""
            if i == 0:
                raise RuntimeError(f"the tuner exited with {code}{said} (see {child.log})")
            failed = time.monotonic() - child.started_at < FAILED_START_S
            child.failed_starts = child.failed_starts + 1 if failed else 0
            if child.failed_starts >= 2:
                child.given_up = True
                lines.append(f"{child.name} exited with {code} twice within {FAILED_START_S:.0f} s of its start"
                             f"{said}; not restarted (see {child.log})")
                continue
            lines.append(f"{child.name} exited with {code}{said}; restarting it (see {child.log})")
            child.start()
        return lines

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.processes[0].poll() is not None:
                code = self.processes[0].returncode
                raise RuntimeError(f"the tuner exited with {code}; see {self.data_dir}/tuner.log")
            try:
                if httpx.get(f"{self.url}/health", timeout=1.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"the tuner did not become healthy in {START_TIMEOUT_S:.0f} s")

    def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        for p in reversed(self.processes):  # agents first: they return or finish their leases
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        for p in reversed(self.processes):
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
        (self.data_dir / FARM_FILE).unlink(missing_ok=True)
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # releases the flock
            self._lock_fd = None

    def __enter__(self) -> EmbeddedFarm:
        return self if self.children else self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
