"""The compose file's balancer (HAProxy with docker/haproxy.cfg) as a local process, in front of local replicas.

`localized_config` rewrites only addresses: each `bind :PORT` listens on a loopback port of the test's choosing,
and each `server NAME NAME:PORT ... port PORT` points at that replica's local ports (the replicas all run on
127.0.0.1, so each has its own). Everything else (checks, balancing, retries, the monitor) is the file as shipped.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.farm.farm_support import REPO, Proc, ProcessTracker

CONFIG = REPO / "docker" / "haproxy.cfg"


def haproxy_binary() -> str:
    path = shutil.which("haproxy")
    if path is None:
        pytest.skip("haproxy is not installed (Debian's package; .ci/run installs it)")
    return path


def localized_config(text: str, binds: dict[str, int], replicas: dict[str, dict[str, int]]) -> str:
    """`binds`: the config's listening port -> a local port; `replicas`: replica name -> (its port -> local port)."""
    def bind(match: re.Match) -> str:
        return f"bind 127.0.0.1:{binds[match[1]]}"

    def server(match: re.Match) -> str:
        name, host, port, rest = match[1], match[2], match[3], match[4]
        assert host == name and name in replicas, f"server {name} at {host}: not a replica of the compose file"
        ports = replicas[name]
        rest = re.sub(r"\bport (\d+)", lambda m: f"port {ports[m[1]]}", rest)
        return f"server {name} 127.0.0.1:{ports[port]}{rest}"

    text = re.sub(r"\bbind :(\d+)", bind, text)
    text = re.sub(r"\bserver (\S+) ([\w.-]+):(\d+)(.*)", server, text)
    return text


def start_balancer(tracker: ProcessTracker, root: Path, binds: dict[str, int],
                   replicas: dict[str, dict[str, int]]) -> Proc:
    config = root / "haproxy.cfg"
    config.write_text(localized_config(CONFIG.read_text(), binds, replicas))
    checked = subprocess.run([haproxy_binary(), "-c", "-f", str(config)], capture_output=True, text=True, timeout=30)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    return tracker.spawn("balancer", [haproxy_binary(), "-db", "-f", str(config)], {"PATH": "/usr/sbin:/usr/bin"},
                         root / "balancer.log")
