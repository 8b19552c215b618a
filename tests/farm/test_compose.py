"""The docker deployment, checked without a container engine.

(a) `docker-compose config -q` (Debian's docker-compose 1.29) accepts docker/docker-compose.yml, with and without
    the gpu profile, with the TLS override and with a docker/gpu_agents.py file for four GPUs, from a temp copy that
    has the secret files its README asks for (nothing is written into the repository); a copy with a misspelt key is
    refused, so the check is not vacuous. The generated GPU agents are the compose file's gpu-agent but for their
    name and GPU; the two tuner replicas are the same service but for their name, and only the balancer in front
    of them (`tuner`) publishes ports. Every service has a healthcheck and a restart policy; images are pinned and
    run as a user; the roles of pyproject.toml add up to its dependencies.
(b) The compose file's own entry points and environment, run as local processes against the throwaway PostgreSQL:
    the images' ENV, USER, WORKDIR, CMD (docker/*.Dockerfile) and the services' environment and healthchecks are
    read from the files, so this test breaks when they drift. Each process runs as a non-root user (image_support:
    `nobody` when the tests run as root) from an unwritable stand-in for /app, and an agent cannot import what its
    image does not install (the web stack, tuner_server), nor the tuner device_agent. What is changed to run
    outside containers, and only that: service addresses (db:5432, tuner:50051) point at loopback ports,
    /run/secrets/* at temp files the user can read, volumes at directories the user owns (the lock directory is
    shared like /tmp), each tuner replica listens on loopback free ports instead of 0.0.0.0:8080/50051/9090, the
    balancer (HAProxy with docker/haproxy.cfg, its addresses localized by balancer_support.py) binds free loopback
    ports and points at the replicas' ports, each agent's health port is a free one. As in the compose file,
    PostgreSQL has a `tunefarm` role whose password is the db_password secret, and the cluster is made to require
    that password (scram-sha-256) for the role, so TUNEFARM_DATABASE_PASSWORD_FILE is really used. The replicas
    start together (one leads, one follows); every service's compose healthcheck passes (the tuners' and agents'
    run as the user); each replica's metrics port answers without a token; requests through the balancer reach
    both replicas; a small job completes through the balancer on the compose's number of CPU agents, each with its
    own hostname as in its container (see own_hostnames). Then the leader is killed (-9): the balancer answers from
    the survivor, which leads, and a second job completes through it; every remaining process exits 0 on SIGTERM.
"""
from __future__ import annotations

import os
import re
import secrets
import shlex
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import httpx
import psycopg
import pytest
from packaging.requirements import Requirement
from psycopg import sql
from sqlalchemy.engine import make_url

from tests.farm.balancer_support import haproxy_binary, start_balancer
from tests.farm.farm_support import (
    FAST_MEASURE,
    MATMUL,
    REPO,
    Farm,
    base_env,
    wait_until,
    write_secret,
)
from tests.farm.image_support import ImageUser, dockerfile_spec, role_blocker, role_modules_missing
from tests.ports import free_port, free_ports

COMPOSE = REPO / "docker" / "docker-compose.yml"
TLS_COMPOSE = REPO / "docker" / "docker-compose.tls.yml"
SECRETS_IN_CONTAINER = "/run/secrets/"


def compose_cli() -> str:
    path = shutil.which("docker-compose")
    if path is None:
        pytest.skip("docker-compose (Debian's package) is not installed")
    return path


def compose_copy(tmp_path: Path, text: str | None = None) -> Path:
    """docker/docker-compose*.yml copied under tmp_path, with the secret files docker/README.md has users create."""
    target = tmp_path / "docker" / "docker-compose.yml"
    target.parent.mkdir(parents=True)
    target.write_text(COMPOSE.read_text() if text is None else text)
    shutil.copy(TLS_COMPOSE, target.parent)
    shutil.copy(REPO / "docker" / "haproxy.cfg", target.parent)  # the balancer's configuration, mounted
    for name in ("db_password", "enrolment_token", "admin_token"):
        write_secret(target.parent / "secrets" / f"{name}.txt", secrets.token_hex(24))
    for name in ("cert", "key", "ca"):  # docker-compose config only needs them to exist
        write_secret(target.parent / "secrets" / f"grpc_tls_{name}.pem", "placeholder")
    return target


def compose_config(cli: str, compose_file: Path, *extra: str, quiet: bool = True) -> subprocess.CompletedProcess:
    files = [arg for name in extra if name.endswith(".yml") for arg in ("-f", str(compose_file.parent / name))]
    options = [arg for arg in extra if not arg.endswith(".yml")]
    return subprocess.run([cli, "-f", str(compose_file), *files, *options, "config", *(["-q"] if quiet else [])],
                          capture_output=True, text=True, timeout=60, cwd=compose_file.parent.parent)


def test_compose_file_is_valid(tmp_path):
    cli = compose_cli()
    copy = compose_copy(tmp_path / "good")
    subprocess.run([sys.executable, str(REPO / "docker" / "gpu_agents.py"), "--gpus", "0,1,2,3", "--tls", "-o",
                    str(copy.parent / "docker-compose.gpus.yml")], check=True, capture_output=True, timeout=60)
    for extra in ((), ("--profile", "gpu"), ("docker-compose.tls.yml",),
                  ("docker-compose.gpus.yml", "docker-compose.tls.yml", "--profile", "gpu")):
        done = compose_config(cli, copy, *extra)
        assert done.returncode == 0, (extra, done.stderr)
    text = COMPOSE.read_text()
    assert "    healthcheck:" in text
    broken = compose_copy(tmp_path / "broken", text.replace("    healthcheck:", "    helthcheck:", 1))
    done = compose_config(cli, broken)
    assert done.returncode != 0 and "helthcheck" in done.stdout + done.stderr

    yaml = pytest.importorskip("yaml", reason="PyYAML is not installed: cannot read the merged compose file")
    merged = compose_config(cli, copy, "docker-compose.gpus.yml", "docker-compose.tls.yml", "--profile", "gpu",
                            quiet=False)
    services = yaml.safe_load(merged.stdout)["services"]
    assert set(services) == {"db", "tuner", "tuner-1", "tuner-2", "cpu-agent", "gpu-agent", "gpu-agent-1",
                             "gpu-agent-2", "gpu-agent-3"}
    assert services["tuner-1"] == services["tuner-2"], "the replicas differ"
    assert services["tuner"]["image"].startswith("haproxy:") and "ports" not in services["tuner-1"]
    for name, service in services.items():
        assert service.get("restart") == "unless-stopped" and service["healthcheck"]["test"], name
        assert re.search(r":\d+\.\d+", service["image"]), f"{name}: image {service['image']} is not pinned"
    base = services["gpu-agent"]
    assert base["deploy"]["resources"]["reservations"]["devices"][0]["device_ids"] == ["0"]
    for index in (1, 2, 3):  # one agent per GPU: the base service but for its GPU (and its image, built once)
        generated = dict(services[f"gpu-agent-{index}"])
        devices = generated["deploy"]["resources"]["reservations"]["devices"]
        assert [d["device_ids"] for d in devices] == [[str(index)]]
        assert {k: v for k, v in generated.items() if k not in ("deploy", "build")} == \
            {k: v for k, v in base.items() if k not in ("deploy", "build")}
        assert generated["deploy"] == {**base["deploy"], "resources": {"reservations": {"devices": [
            {**base["deploy"]["resources"]["reservations"]["devices"][0], "device_ids": [str(index)]}]}}}
    tls = {"TUNEFARM_GRPC_TLS_CERT_FILE", "TUNEFARM_GRPC_TLS_KEY_FILE"}
    assert all(tls <= services[name]["environment"].keys() for name in ("tuner-1", "tuner-2"))
    assert all("TUNEFARM_GRPC_TLS_CA_FILE" in s["environment"] for n, s in services.items() if "agent" in n)


def test_gpu_agents_file_without_other_gpus_adds_nothing(tmp_path):
    out = tmp_path / "gpus.yml"
    done = subprocess.run([sys.executable, str(REPO / "docker" / "gpu_agents.py"), "--gpus", "0", "-o", str(out)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and out.read_text().rstrip().endswith("services: {}"), done.stderr


def test_images_are_pinned_non_root_and_split_by_role():
    for name in ("tuner.Dockerfile", "agent-cpu.Dockerfile", "agent-gpu.Dockerfile"):
        spec = dockerfile_spec(name)
        assert re.search(r":\d+\.\d+\.\d+", spec.base) or "@sha256:" in spec.base, f"{name}: {spec.base} floats"
        assert spec.user not in ("", "root", "0") and spec.healthcheck, name
        text = (REPO / "docker" / name).read_text()
        assert "--no-deps ." in text and "role_requirements.py" in text, name
        if name.startswith("agent"):
            assert "COPY tuner_server" not in text and "TUNEFARM_HEALTH_PORT" in spec.env, name
    tuner = dockerfile_spec("tuner.Dockerfile")
    assert f"VOLUME {tuner.env['TUNEFARM_DATA_DIR']}" in (REPO / "docker" / "tuner.Dockerfile").read_text()
    ignore = (REPO / ".dockerignore").read_text().splitlines()
    assert ignore[ignore.index("**") if "**" in ignore else 0] == "**" and "!docker/secrets" not in ignore
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    roles = project["optional-dependencies"]
    assert set(roles["agent"]) | set(roles["tuner"]) == set(project["dependencies"])
    assert not {"fastapi", "uvicorn", "sqlalchemy", "lightgbm"} & {Requirement(r).name for r in roles["agent"]}
    assert not any(Requirement(r).name == "scipy" for r in project["dependencies"])


def own_hostnames() -> bool:
    """Whether each agent replica can get its own hostname, as each container has (a UTS namespace: root and
    unshare). The agents' default name is HOST/DEVICE and the tuner retires an agent when another registers
    under its name, so replicas sharing one hostname would keep replacing each other; without this, one runs."""
    return os.geteuid() == 0 and shutil.which("unshare") is not None


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


@pytest.fixture
def image_root():
    """A directory every user can enter (pytest's tmp_path is private to root when the tests run as root)."""
    root = Path(tempfile.mkdtemp(prefix="tunefarm-compose-"))
    root.chmod(0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def healthy(user: ImageUser, check: list[str], env: dict[str, str]) -> bool:
    """A compose healthcheck (["CMD", ...]) run as the image's user, as Docker runs it in the container."""
    assert check[0] == "CMD"
    return subprocess.run(user.command(check[1:]), env=env, capture_output=True, timeout=30).returncode == 0


def replica_names(services: dict) -> list[str]:
    """The tuner replicas: the services running the tuner image (`tuner` itself is the balancer in front)."""
    return sorted(n for n, s in services.items() if s.get("image", "").startswith("tunefarm/tuner:"))


def answers_health(proc, port: int) -> bool:
    """The process is alive and its /health says 200 (False while it is starting)."""
    assert proc.alive(), f"{proc.name} exited with {proc.popen.returncode}:\n{proc.tail()}"
    try:
        return httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def get_health(port: int) -> dict:
    answer = httpx.get(f"http://127.0.0.1:{port}/health", timeout=10)
    assert answer.status_code == 200, answer.text
    return answer.json()


@pytest.mark.postgres
def test_compose_entry_points_as_local_processes(pg_cluster, process_tracker, image_root):
    spec = load_compose()
    services = spec["services"]
    root = image_root
    user = ImageUser(root)
    if not user.usable():
        pytest.skip("running as root without setpriv/unshare: cannot run the entry points as a non-root user")
    haproxy_binary()
    secret_files = {name: user.own(write_secret(root / "secrets" / name, secrets.token_hex(24)))
                    for name in spec["secrets"]}  # secrets the image's user can read
    user.own(root / "secrets")
    compose_role(pg_cluster, services["db"], secret_files["db_password"].read_text().strip())
    replicas = replica_names(services)
    assert replicas == ["tuner-1", "tuner-2"]
    ports = iter(free_ports(3 * len(replicas) + 3))
    replica_ports = {name: {"8080": next(ports), "50051": next(ports), "9090": next(ports)} for name in replicas}
    balancer_ports = {"8080": next(ports), "50051": next(ports), "8404": next(ports)}
    addresses = {"db:5432": f"127.0.0.1:{pg_cluster.port}", "tuner:50051": f"127.0.0.1:{balancer_ports['50051']}"}
    volumes = {"tunerdata": user.own(root / "volumes" / "tunerdata"),
               "/tmp": user.own(root / "volumes" / "host-tmp", 0o1777)}  # shared like the host's /tmp

    def mounts(service: dict) -> dict[str, str]:
        """Container path -> the local directory standing in for its volume."""
        return {target: str(volumes[source]) for source, _, target in (v.partition(":") for v in
                                                                       service.get("volumes", ()))}

    def localize(value: str, service: dict, ports: dict[str, str] | None = None) -> str:
        for address, local in addresses.items():
            value = value.replace(f"@{address}/", f"@{local}/").replace(address, local)
        for target, local in mounts(service).items():
            value = value.replace(target, local)
        for port, local in (ports or {}).items():
            value = re.sub(rf"(?<![\d.]){port}(?!\d)", str(local), value)
        return value.replace(SECRETS_IN_CONTAINER, f"{root / 'secrets'}/")

    bin_dir = root / "bin"  # `tunefarm` as `pip install .` makes it in the images
    bin_dir.mkdir()
    (bin_dir / "tunefarm").write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m tunefarm_cli \"$@\"\n")
    (bin_dir / "tunefarm").chmod(0o755)
    (bin_dir / "python").symlink_to(sys.executable)

    def environment(image: str, service: dict, blocked: set[str], ports: dict[str, str]) -> dict[str, str]:
        """The image's ENV under the service's environment, localized; PATH finds our `tunefarm` and `python`;
        what the image does not install cannot be imported; HOME is the user's own (the image's user has one)."""
        image_spec = dockerfile_spec(image)
        assert image_spec.user == "tunefarm" and image_spec.workdir == "/app"
        env = {k: localize(str(v), service, ports) for k, v in
               {**{k: v for k, v in image_spec.env.items() if k != "PATH"}, **service["environment"]}.items()}
        home = user.own(root / "home" / image.split(".")[0])
        blocker = role_blocker(root / "blockers" / image.split(".")[0], blocked)
        env = base_env({**env, "PATH": f"{bin_dir}:{base_env()['PATH']}", "HOME": str(home)})
        env["PYTHONPATH"] = f"{blocker}:{env['PYTHONPATH']}"
        return env

    tuner_cmd = dockerfile_spec("tuner.Dockerfile").cmd
    assert tuner_cmd[0] == "tunefarm"
    servers, tuner_envs = {}, {}
    for name in replicas:  # started together, as compose does: they race for the migrations and the tokens
        service, ports = services[name], replica_ports[name]
        env = environment("tuner.Dockerfile", service, {"device_agent"}, ports)
        assert {"TUNEFARM_DATABASE_URL", "TUNEFARM_DATABASE_PASSWORD_FILE", "TUNEFARM_ENROLMENT_TOKEN_FILE",
                "TUNEFARM_ADMIN_TOKEN_FILE", "TUNEFARM_DATA_DIR"} <= env.keys()
        assert make_url(env["TUNEFARM_DATABASE_URL"]).password is None, "the password comes from its file"
        assert env["TUNEFARM_DATA_DIR"] == str(volumes["tunerdata"]), "the tuner writes to its volume"
        env.update(TUNEFARM_REST_HOST="127.0.0.1", TUNEFARM_GRPC_HOST="127.0.0.1", TUNEFARM_METRICS_HOST="127.0.0.1",
                   TUNEFARM_REST_PORT=str(ports["8080"]), TUNEFARM_GRPC_PORT=str(ports["50051"]))
        servers[name] = process_tracker.spawn(name, user.command(tuner_cmd), env, root / f"{name}.log")
        tuner_envs[name] = env
    balancer = services["tuner"]
    assert [v.partition(":")[0] for v in balancer["volumes"]] == ["./haproxy.cfg"]
    assert sorted(balancer["ports"]) == ["50051:50051", "8080:8080"]
    assert not any("ports" in services[name] for name in replicas), "only the balancer is published"
    lb = start_balancer(process_tracker, root, balancer_ports, replica_ports)

    # Farm's helpers (health, clients, waits) pointed at the balancer: it starts nothing itself here.
    farm = Farm(root / "view", tuner_envs["tuner-1"]["TUNEFARM_DATABASE_URL"], process_tracker, env={})
    farm.server, farm.rest_port, farm.admin_token = lb, balancer_ports["8080"], \
        secret_files["admin_token"].read_text().strip()
    for name in replicas:
        wait_until(lambda n=name: answers_health(servers[n], replica_ports[n]["8080"]), f"{name} to answer /health",
                   60, 0.2, diagnostics=lambda n=name: servers[n].tail())
        check = [localize(a, services[name], replica_ports[name]) for a in services[name]["healthcheck"]["test"]]
        assert healthy(user, check, tuner_envs[name])
        scrape = httpx.get(f"http://127.0.0.1:{replica_ports[name]['9090']}/metrics", timeout=10)  # no token
        assert scrape.status_code == 200 and "tunefarm_leader" in scrape.text
    roles = {name: get_health(replica_ports[name]["8080"])["role"] for name in replicas}
    assert sorted(roles.values()) == ["follower", "leader"], roles
    farm.wait_healthy()
    balancer_check = [localize(a, {}, balancer_ports) for a in balancer["healthcheck"]["test"]]
    wait_until(lambda: subprocess.run(balancer_check[1:], capture_output=True, timeout=30).returncode == 0,
               "the balancer's healthcheck", 30, 0.5, diagnostics=lb.tail)
    seen: set[tuple[str, str]] = set()  # requests through the balancer reach both replicas once its checks pass

    def both_replicas_answered() -> bool:
        answer = get_health(balancer_ports["8080"])
        seen.add((answer["replica"], answer["role"]))
        return {role for _, role in seen} == {"leader", "follower"}

    wait_until(both_replicas_answered, "the balancer to send requests to both replicas", 30, 0.1,
               diagnostics=lambda: f"{seen}\n{lb.tail()}")

    agent = services["cpu-agent"]
    agent_spec = dockerfile_spec("agent-cpu.Dockerfile")
    assert agent_spec.cmd[:2] == ["sh", "-c"] and "--token-file" in agent_spec.cmd[2] and "--device cpu" in \
        agent_spec.cmd[2]
    assert agent["environment"]["TUNEFARM_SERVER"] == "tuner:50051", "agents dial the balancer"
    assert agent["environment"]["TUNEFARM_LOCK_DIR"] in mounts(agent), "a host-wide lock dir"
    blocked = role_modules_missing("agent") | {"tuner_server", "tunefarm_client"}
    assert {"fastapi", "sqlalchemy", "uvicorn"} <= blocked
    checks = []
    for i in range(agent["deploy"]["replicas"] if own_hostnames() else 1):
        name, ports = f"cpu-agent-{i}", {"8081": str(free_port())}
        env = environment("agent-cpu.Dockerfile", agent, blocked, ports)
        cmd = [localize(part, agent, ports) for part in agent_spec.cmd]
        hostname = name if own_hostnames() else None
        farm.agents.append(process_tracker.spawn(name, user.command(cmd, hostname), env, root / f"{name}.log"))
        checks.append(([localize(a, agent, ports) for a in agent["healthcheck"]["test"]], env))
    wait_until(lambda: len(farm.active_agent_names()) == len(farm.agents), "the compose agents", 60,
               on_poll=process_tracker.snapshot, diagnostics=farm.logs)
    for check, env in checks:
        wait_until(lambda c=check, e=env: healthy(user, c, e), "the agents' healthchecks", 30, 0.5,
                   diagnostics=farm.logs)
    with farm.client() as c:
        job = c.create_job("matmul", MATMUL, "cpu", 4, seed=5, measure=FAST_MEASURE)
        done = farm.wait_job(job.id)
        assert done.state == "done" and c.job(job.id).progress.verified == 4, farm.logs()
        assert c.health().database == "ok"

    # The leader replica dies: the balancer's address keeps serving, the other replica leads, and the agents go on
    # through the balancer (those on the dead replica reconnect with their sessions).
    leader = next(name for name, role in roles.items() if role == "leader")
    survivor = next(name for name in replicas if name != leader)
    process_tracker.kill(servers[leader])

    def survivor_leads_behind_the_balancer() -> bool:
        try:
            through = get_health(balancer_ports["8080"])
        except (AssertionError, httpx.HTTPError):  # a request the balancer could not place yet
            return False
        return through == {**get_health(replica_ports[survivor]["8080"]), "role": "leader"}

    wait_until(survivor_leads_behind_the_balancer, "the balancer to answer from the survivor, now the leader", 30,
               0.2, diagnostics=lambda: farm.logs() + lb.tail())
    with farm.client() as c:
        job = c.create_job("matmul", MATMUL, "cpu", 2, seed=6, measure=FAST_MEASURE)
        done = farm.wait_job(job.id)
        assert done.state == "done" and c.job(job.id).progress.verified == 2, farm.logs()
    assert subprocess.run(balancer_check[1:], capture_output=True, timeout=30).returncode == 0
    written = [*volumes["/tmp"].iterdir(), *volumes["tunerdata"].rglob("*")]
    assert any(p.name.startswith("tunefarm-measure-") for p in written), "the agents' locks are in the shared dir"
    assert {p.stat().st_uid for p in written} == {user.uid}, "everything was written by the image's user"
    ours = farm.agents + [servers[survivor]]
    process_tracker.stop(ours + [lb])
    assert [p.popen.returncode for p in ours] == [0] * len(ours), farm.logs()
