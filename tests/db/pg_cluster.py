"""A throwaway PostgreSQL cluster for tests: initdb + pg_ctl in a temp dir, on a free port (tests/ports.py).

As root (CI), the server runs as the `postgres` user (initdb refuses root), in a directory it owns; the
Unix socket lives inside the data directory; clients connect over TCP on 127.0.0.1.
"""
from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tests.ports import free_port


def find_bin_dir() -> Path | None:
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if candidates:
        return Path(candidates[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


@dataclass
class Cluster:
    bin_dir: Path
    root: Path
    port: int
    user: str | None  # the OS user the server runs as (None: the current one)

    @property
    def data(self) -> Path:
        return self.root / "data"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{database}"

    def run(self, *args: str) -> None:
        prefix = ["runuser", "-u", self.user, "--"] if self.user else []
        cmd = [*prefix, str(self.bin_dir / args[0]), *args[1:]]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")

    def start(self) -> None:
        self.run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8")
        self.start_server()

    def start_server(self) -> None:
        """Start the server on the initialised cluster (again, after `stop_server`), on the same port."""
        options = (f"-k {self.data} -p {self.port} -c listen_addresses=127.0.0.1 -c fsync=off "
                   "-c synchronous_commit=off -c full_page_writes=off -c max_connections=50")
        self.run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.root / "log"), "-w", "start")

    def stop_server(self, mode: str = "fast") -> None:
        """Stop the server and keep the cluster (an outage): 'fast' ends the sessions, 'immediate' is a crash."""
        self.run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def stop(self) -> None:
        try:
            self.stop_server("immediate")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def start_cluster() -> Cluster:
    """Start a cluster; RuntimeError if the binaries are missing or it will not start."""
    bin_dir = find_bin_dir()
    if bin_dir is None:
        raise RuntimeError("PostgreSQL binaries (initdb, pg_ctl) not found")
    user = None
    root = Path(tempfile.mkdtemp(prefix="tunefarm-pg-"))
    if os.geteuid() == 0:
        user = "postgres"
        entry = pwd.getpwnam(user)  # KeyError: no postgres user
        os.chown(root, entry.pw_uid, entry.pw_gid)
    cluster = Cluster(bin_dir, root, free_port(), user)
    try:
        cluster.start()
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    return cluster


def create_database(cluster: Cluster, name: str) -> str:
    """A new, empty database on `cluster`; returns its SQLAlchemy URL."""
    import psycopg  # only PostgreSQL tests need the driver

    with psycopg.connect(cluster.url().replace("+psycopg", ""), autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return cluster.url(name)
