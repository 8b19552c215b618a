"""Loopback ports for the tests' servers that no other test process is given meanwhile, pytest-xdist workers included.

A port found with bind(("127.0.0.1", 0)) is closed again before the server that is to use it (often another
process, seconds later) binds it, and a restarted server wants its port back after a gap. Meanwhile the kernel may
hand the same port to any other bind(0) or outgoing connection, and under xdist another worker of the suite is
doing just that. So ports come from below the kernel's ephemeral range (which bind(0) and outgoing connections
draw from), one slice per xdist worker, in turn from a random start (so that two suites on one host seldom meet),
each checked free with a bind first. Without a usable range below (or above) the ephemeral one, bind(0) it is.
"""
from __future__ import annotations

import itertools
import os
import random
import socket
from pathlib import Path

from tunefarm_cli.embedded import free_ports as kernel_ports  # the fallback: bind(0), all at once

EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
FIRST_PORT = 10_000  # below: the well-known and registered ports services tend to use
MIN_SLICE = 500


def ephemeral_range() -> tuple[int, int]:
    try:
        low, high = (int(v) for v in EPHEMERAL_RANGE.read_text().split())
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default
    return low, high


def worker_slice(worker: str | None, workers: int, ephemeral: tuple[int, int]) -> range | None:
    """This xdist worker's ports ('gw3' of `workers`; None: not under xdist), or None when there is no room."""
    low, high = ephemeral
    pool = max(range(FIRST_PORT, low), range(high + 1, 65536), key=len)
    index = int(worker[2:]) if worker and worker.startswith("gw") and worker[2:].isdigit() else 0
    size = len(pool) // max(workers, index + 1)
    if size < MIN_SLICE:
        return None
    return range(pool.start + index * size, pool.start + (index + 1) * size)


_SLICE = worker_slice(os.environ.get("PYTEST_XDIST_WORKER"), int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")),
                      ephemeral_range())
_TURN = itertools.count(random.randrange(len(_SLICE))) if _SLICE else None


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_ports(n: int) -> list[int]:
    """n distinct ports, free now, that no other test process of this host is given (see the module's doc)."""
    if _SLICE is None:
        return kernel_ports(n)
    ports: list[int] = []
    for _ in range(len(_SLICE)):
        port = _SLICE[next(_TURN) % len(_SLICE)]
        if _bindable(port):
            ports.append(port)
            if len(ports) == n:
                return ports
    raise RuntimeError(f"fewer than {n} free ports in {_SLICE}")


def free_port() -> int:
    return free_ports(1)[0]


def closed_port() -> int:
    """A port nothing listens on, that no other test process is given: connections to it are refused."""
    return free_port()
