"""`tunefarm up` watches its processes: an agent that dies is started again, one that cannot start (a device this host
cannot use) is reported with what its log said last and left down, and the farm stops with exit code 1 when its
tuner dies. Real tuner and agent processes on loopback."""
from __future__ import annotations

import os
import signal
import time

import pytest

from tests.cpu.cli_support import embedded_farm
from tests.ports import free_ports
from tunefarm_cli.embedded import FAILED_START_S, EmbeddedFarm


def _until(farm: EmbeddedFarm, predicate, timeout_s: float) -> list[str]:
    """supervise() every 0.2 s until predicate(lines so far) holds; the lines."""
    lines: list[str] = []
    deadline = time.monotonic() + timeout_s
    while not predicate(lines):
        assert time.monotonic() < deadline, f"supervise said {lines}"
        lines += farm.supervise()
        time.sleep(0.2)
    return lines


def test_a_killed_agent_is_started_again(tmp_path):
    with embedded_farm(tmp_path / "farm") as farm:
        agent = farm.processes[1]
        os.kill(agent.pid, signal.SIGKILL)
        agent.wait(10)
        farm.children[1].started_at -= FAILED_START_S  # it had run a while: a crash, not a failed start
        (line,) = _until(farm, lambda lines: lines, 10)
        assert line.startswith("agent-cpu exited with -9") and line.endswith(
            f"; restarting it (see {farm.children[1].log})")
        assert farm.processes[1] is not agent and farm.processes[1].poll() is None
        assert farm.supervise() == []


def test_an_agent_that_cannot_start_is_reported_and_left_down(tmp_path):
    rest, grpc = free_ports(2)
    with EmbeddedFarm(tmp_path / "farm", devices=["cpu", "cuda:97"], rest_port=rest, grpc_port=grpc) as farm:
        lines = _until(farm, lambda lines: any("not restarted" in line for line in lines), 4 * FAILED_START_S)
        assert lines[0].startswith("agent-cuda97 exited with ") and "restarting it" in lines[0]
        given_up = lines[-1]
        assert given_up.startswith("agent-cuda97 exited with ") and f"twice within {FAILED_START_S:.0f} s" in given_up
        assert "cuda" in given_up.lower() and str(farm.children[2].log) in given_up  # what it said, where to look
        assert farm.processes[1].poll() is None  # the CPU agent runs on
        assert farm.supervise() == [] and farm.children[2].given_up


def test_the_farm_is_gone_when_its_tuner_dies(tmp_path):
    with embedded_farm(tmp_path / "farm") as farm:
        os.kill(farm.processes[0].pid, signal.SIGKILL)
        farm.processes[0].wait(10)
        with pytest.raises(RuntimeError, match=r"the tuner exited with -9"):
            farm.supervise()


def test_an_agent_that_stops_cleanly_is_offline_at_once(tmp_path):
    """A stopping agent says so in its last heartbeat (`leaving`): the tuner retires it then, not after the agent
    has been silent long enough to be marked lost (after `tunefarm demo`, `tunefarm devices` showed its agent
    online for up to 30 s)."""
    from tunefarm_client import TunefarmClient

    with embedded_farm(tmp_path / "farm") as farm, TunefarmClient(farm.url, farm.admin_token) as client:
        deadline = time.monotonic() + 60
        while not any(d.active_agents for d in client.devices(kind="cpu").items):
            assert time.monotonic() < deadline, "the CPU agent did not register"
            time.sleep(0.2)
        agent = farm.processes[1]
        agent.send_signal(signal.SIGTERM)
        assert agent.wait(30) == 0
        (device,) = client.devices(kind="cpu").items
        assert device.active_agents == 0 and device.status == "offline"
        assert not [a for a in device.agents if a.status == "active"]
