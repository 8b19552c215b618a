"""The docker deployment, checked without a container engine.

(a) `docker-compose config -q` (Debian's docker-compose 1.29) accepts docker/docker-compose.yml, with and without
    the gpu profile, from a temp copy that has the secret files its README asks for (nothing is written into the
    repository); a copy with a misspelt key is refused, so the check is not vacuous.
(b) The compose file's own entry points and environment, run as local processes against the throwaway PostgreSQL:
    the tuner's environment and the images' CMDs (docker/*.Dockerfile) are read from the files, so this test breaks
    when they drift. What is changed to run outside containers, and only that: service addresses (db:5432,
    tuner:50051) point at loopback ports, /run/secrets/* at temp files, the tuner listens on loopback free ports
    instead of 0.0.0.0:8080/50051. As in the compose file, PostgreSQL has a `tunefarm` role whose password is the
    db_password secret, and the cluster is made to require that password (scram-sha-256) for the role, so
    TUNEFARM_DATABASE_PASSWORD_FILE is really used. The tuner's compose healthcheck command is run too; then a small
    job completes on the compose's number of CPU agents, each with its own hostname as in its container (see
    own_hostnames), and every process exits 0 on SIGTERM.
"""
from __future__ import annotations

import json
import os
import secrets
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from sqlalchemy.engine import make_url

from tests.farm.farm_support import (
    FAST_MEASURE,
    MATMUL,
    REPO,
    Farm,
    base_env,
    free_port,
    wait_until,
    write_secret,
)

COMPOSE = REPO / "docker" / "docker-compose.yml"
SECRETS_IN_CONTAINER = "/run/secrets/"


def compose_cli() -> str:
    path = shutil.which("docker-compose")
    if path is None:
        pytest.skip("docker-compose (Debian's package) is not installed")
    return path


def compose_copy(tmp_path: Path, text: str | None = None) -> Path:
    """docker/docker-compose.yml copied under tmp_path, with the secret files docker/README.md has users create."""
    target = tmp_path / "docker" / "docker-compose.yml"
    target.parent.mkdir(parents=True)
    target.write_text(COMPOSE.read_text() if text is None else text)
    for name in ("db_password", "enrolment_token", "admin_token"):
        write_secret(target.parent / "secrets" / f"{name}.txt", secrets.token_urlsafe(24))
    return target


def compose_config(cli: str, compose_file: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([cli, "-f", str(compose_file), *extra, "config", "-q"], capture_output=True, text=True,
                          timeout=60, cwd=compose_file.parent.parent)


def test_compose_file_is_valid(tmp_path):
    cli = compose_cli()
    copy = compose_copy(tmp_path / "good")
    for profile in ((), ("--profile", "gpu")):
        done = compose_config(cli, copy, *profile)
        assert done.returncode == 0, (profile, done.stderr)
    text = COMPOSE.read_text()
    assert "    healthcheck:" in text
    broken = compose_copy(tmp_path / "broken", text.replace("    healthcheck:", "    helthcheck:", 1))
    done = compose_config(cli, broken)
    assert done.returncode != 0 and "helthcheck" in done.stdout + done.stderr


def own_hostnames() -> bool:
    """Whether each agent replica can get its own hostname, as each container has (a UTS namespace: root and
    unshare). The agents' default name is HOST/DEVICE and the tuner retires an agent when another registers
    under its name, so replicas sharing one hostname would keep replacing each other; without this, one runs."""
    return os.geteuid() == 0 and shutil.which("unshare") is not None


def dockerfile_cmd(name: str) -> list[str]:
    """The exec-form CMD of docker/<name> (the last CMD line, as Docker takes it)."""
    lines = [line for line in (REPO / "docker" / name).read_text().splitlines() if line.startswith("CMD ")]
    assert lines, f"docker/{name} has no CMD"
    return json.loads(lines[-1][4:])


def load_compose() -> dict:
    yaml = pytest.importorskip("yaml", reason="PyYAML is not installed: cannot read the compose file")
    return yaml.safe_load(COMPOSE.read_text())


def compose_role(cluster, db_service: dict, password: str) -> str:
    """As the postgres image does from POSTGRES_USER/POSTGRES_DB: the role (with the secret's password) and its
    database; then the role must log in with that password over TCP. Returns the database name."""
    user, database = db_service["environment"]["POSTGRES_USER"], db_service["environment"]["POSTGRES_DB"]
    admin = cluster.url().replace("+psycopg", "")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(database)))
        conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(user)))
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(sql.Identifier(user), sql.Literal(password)))
        conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(database), sql.Identifier(user)))
        hba = cluster.data / "pg_hba.conf"
        hba.write_text(f"host all {user} 127.0.0.1/32 scram-sha-256\n" + hba.read_text())
        conn.execute("SELECT pg_reload_conf()")
    with pytest.raises(psycopg.OperationalError, match="password"):
        psycopg.connect(f"postgresql://{user}@127.0.0.1:{cluster.port}/{database}", connect_timeout=10).close()
    return database


@pytest.mark.postgres
def test_compose_entry_points_as_local_processes(pg_cluster, process_tracker, tmp_path):
    spec = load_compose()
    services = spec["services"]
    root = tmp_path / "compose"
    secret_files = {name: write_secret(root / "secrets" / name, secrets.token_urlsafe(24))
                    for name in spec["secrets"]}
    compose_role(pg_cluster, services["db"], secret_files["db_password"].read_text().strip())
    rest_port, grpc_port = free_port(), free_port()
    addresses = {"db:5432": f"127.0.0.1:{pg_cluster.port}", "tuner:50051": f"127.0.0.1:{grpc_port}"}

    def localize(value: str) -> str:
        for address, local in addresses.items():
            value = value.replace(f"@{address}/", f"@{local}/").replace(address, local)
        return value.replace(SECRETS_IN_CONTAINER, f"{root / 'secrets'}/")

    bin_dir = root / "bin"  # `tunefarm` as `pip install .` makes it in the images
    bin_dir.mkdir()
    (bin_dir / "tunefarm").write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m tunefarm_cli \"$@\"\n")
    (bin_dir / "tunefarm").chmod(0o755)

    tuner_env = {k: localize(str(v)) for k, v in services["tuner"]["environment"].items()}
    assert {"TUNEFARM_DATABASE_URL", "TUNEFARM_DATABASE_PASSWORD_FILE", "TUNEFARM_ENROLMENT_TOKEN_FILE",
            "TUNEFARM_ADMIN_TOKEN_FILE"} <= tuner_env.keys()
    assert make_url(tuner_env["TUNEFARM_DATABASE_URL"]).password is None, "the password comes from its file"
    tuner_env.update(TUNEFARM_REST_HOST="127.0.0.1", TUNEFARM_GRPC_HOST="127.0.0.1",
                     TUNEFARM_REST_PORT=str(rest_port), TUNEFARM_GRPC_PORT=str(grpc_port),
                     TUNEFARM_DATA_DIR=str(root / "data"))
    path = {"PATH": f"{bin_dir}:{base_env()['PATH']}"}
    tuner_cmd = dockerfile_cmd("tuner.Dockerfile")
    assert tuner_cmd[0] == "tunefarm"
    server = process_tracker.spawn("tuner", tuner_cmd, base_env({**tuner_env, **path}), root / "tuner.log")

    # Farm's helpers (health, clients, waits) pointed at these processes: it starts nothing itself here.
    farm = Farm(tmp_path / "view", tuner_env["TUNEFARM_DATABASE_URL"], process_tracker, env={})
    farm.server, farm.rest_port, farm.admin_token = server, rest_port, secret_files["admin_token"].read_text().strip()
    farm.wait_healthy()
    check = [localize(part).replace(":8080/", f":{rest_port}/") for part in services["tuner"]["healthcheck"]["test"]]
    assert check[0] == "CMD"
    assert subprocess.run([sys.executable if a == "python" else a for a in check[1:]], timeout=30).returncode == 0

    agent = services["cpu-agent"]
    agent_cmd = [localize(part) for part in dockerfile_cmd("agent-cpu.Dockerfile")]
    agent_env = {k: localize(str(v)) for k, v in agent["environment"].items()}
    assert agent_env["TUNEFARM_LOCK_DIR"] in {v.split(":")[1] for v in agent["volumes"]}, "a host-wide lock dir"
    agent_env["TUNEFARM_LOCK_DIR"] = str(root / "locks")  # the host directory the containers would share
    assert agent_cmd[:2] == ["sh", "-c"] and "--token-file" in agent_cmd[2] and "--device cpu" in agent_cmd[2]
    replicas = agent["deploy"]["replicas"]
    for i in range(replicas if own_hostnames() else 1):
        name = f"cpu-agent-{i}"
        cmd = ["unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"', name, *agent_cmd] if own_hostnames() \
            else agent_cmd
        farm.agents.append(process_tracker.spawn(name, cmd, base_env({**agent_env, **path}), root / f"{name}.log"))
    wait_until(lambda: len(farm.active_agent_names()) == len(farm.agents), "the compose agents", 60,
               on_poll=process_tracker.snapshot, diagnostics=farm.logs)
    with farm.client() as c:
        job = c.create_job("matmul", MATMUL, "cpu", 4, seed=5, measure=FAST_MEASURE)
        done = farm.wait_job(job.id)
        assert done.state == "done" and c.job(job.id).progress.verified == 4, farm.logs()
        assert c.health().database == "ok"
    process_tracker.stop(farm.agents + [server])
    assert [p.popen.returncode for p in farm.agents + [server]] == [0] * (len(farm.agents) + 1), farm.logs()
