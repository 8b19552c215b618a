"""gRPC over TLS between REAL processes: a tuner serving TLS only (TUNEFARM_GRPC_TLS_CERT_FILE/_KEY_FILE) and an
agent that trusts a throwaway CA (TUNEFARM_GRPC_TLS_CA_FILE, as docker-compose.tls.yml sets it). The certificate
names only `tuner` (the compose service name), so the agent dials 127.0.0.1 with --tls-server-name tuner, as an
agent would reach the tuner through another address. The agent registers and a tiny job completes; a plaintext
agent never registers on that port. Bad TLS settings stop the tuner and the agent with one clear line.
"""
from __future__ import annotations

import subprocess
import sys

import pytest

from tests.farm.farm_support import FAST_MEASURE, MATMUL, REPO, base_env
from tests.farm.tls_certs import tls_material
from tests.ports import free_port


def test_agent_registers_and_measures_over_tls(farm, tmp_path):
    tls = tls_material(tmp_path / "tls", ["tuner"])
    f = farm(agents=0, env={"TUNEFARM_GRPC_TLS_CERT_FILE": str(tls.cert),
                            "TUNEFARM_GRPC_TLS_KEY_FILE": str(tls.key)})
    assert "(TLS)" in f.server.tail()
    f.agent_env = {"TUNEFARM_GRPC_TLS_CA_FILE": str(tls.ca)}
    agent = f.add_agent("tls-agent", ("--tls-server-name", "tuner"))
    f.agent_env = {}
    plain = f.add_agent("plaintext-agent")
    f.wait_for_agents({"tls-agent"})
    with f.client() as c:
        job = c.create_job("matmul", MATMUL, "cpu", 2, seed=3, measure=FAST_MEASURE)
        done = f.wait_job(job.id)
        assert done.state == "done" and c.job(job.id).progress.verified == 2, f.logs()
    assert "(TLS)" in agent.tail(chars=None)  # its first lines: a slow host's job logs can push them out of a tail
    assert "plaintext-agent" not in f.active_agent_names() and plain.alive(), "plaintext must not get through"
    assert {t.agent_id for t in f.trials(job.id)} and "register failed" in plain.tail()


def _one_line_failure(cmd: list[str], env: dict[str, str], expected: str) -> None:
    done = subprocess.run(cmd, env=base_env(env), cwd=REPO, capture_output=True, text=True, timeout=120)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and expected in lines[0], (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("variables, expected", [
    ({"TUNEFARM_GRPC_TLS_CERT_FILE": "{tls}/cert.pem"}, "needs both"),
    ({"TUNEFARM_GRPC_TLS_CERT_FILE": "{tls}/missing.pem", "TUNEFARM_GRPC_TLS_KEY_FILE": "{tls}/key.pem"},
     "missing.pem: No such file"),
    ({"TUNEFARM_GRPC_TLS_CERT_FILE": "{tls}/key.pem", "TUNEFARM_GRPC_TLS_KEY_FILE": "{tls}/key.pem"},
     "is not a PEM certificate"),
])
def test_bad_tls_settings_stop_the_tuner_in_one_line(tmp_path, variables, expected):
    tls = tls_material(tmp_path / "tls", ["tuner"])
    env = {k: v.format(tls=tls.ca.parent) for k, v in variables.items()}
    env["TUNEFARM_DATABASE_URL"] = f"sqlite:///{tmp_path / 'never.db'}"
    _one_line_failure([sys.executable, "-m", "tuner_server"], env, expected)
    assert not (tmp_path / "never.db").exists(), "settings are checked before anything starts"


def test_bad_agent_settings_stop_the_agent_in_one_line(tmp_path):
    tls = tls_material(tmp_path / "tls", ["tuner"])
    agent = [sys.executable, "-m", "device_agent.main", "--server", "127.0.0.1:1"]
    _one_line_failure([*agent, "--token", "t"], {"TUNEFARM_GRPC_TLS_CA_FILE": str(tmp_path / "nope.pem")},
                      "cannot read the TLS CA certificate file")
    _one_line_failure([*agent, "--token", "t", "--tls-ca", str(tls.key)], {}, "holds no PEM certificate")
    _one_line_failure([*agent, "--token-file", str(tmp_path / "nope")], {}, "cannot read the enrolment token file")
    _one_line_failure([*agent, "--token", "t"], {"TUNEFARM_HEALTH_PORT": "http"}, "is not a port number")


def test_health_probe_of_no_agent_fails():
    done = subprocess.run([sys.executable, "-m", "device_agent.health", str(free_port())], env=base_env(),
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "not serving" in done.stdout
