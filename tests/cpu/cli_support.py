"""Running `tunefarm` as users do: a subprocess with this checkout importable, on a real farm on loopback."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.farm import farm_support
from tests.ports import free_ports
from tunefarm_cli.embedded import EmbeddedFarm

REPO = Path(__file__).resolve().parents[2]
MATMUL = "M=32,N=32,K=32"
# tune --measure for tests that check what a job does, not how well it times: the farm tests' options
FAST_MEASURE = ",".join(f"{name}={json.dumps(value)}" for name, value in farm_support.FAST_MEASURE.items())


def embedded_farm(data_dir: Path) -> EmbeddedFarm:
    """An embedded farm of the CPU device on ports from tests/ports.py (not the kernel's: see there)."""
    rest, grpc = free_ports(2)
    return EmbeddedFarm(data_dir, devices=["cpu"], rest_port=rest, grpc_port=grpc)


def cli_env(cwd: Path) -> dict[str, str]:
    """The ceiling keeps a .tunefarm the host holds above the test's directory (/tmp/.tunefarm, say) out of it."""
    return {"PYTHONPATH": str(REPO), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(cwd),
            "COLUMNS": "200", "TUNEFARM_CEILING_DIRECTORIES": str(cwd.parent)}


def tunefarm(*args: str, cwd: Path, data_dir: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    prefix = ["--data-dir", str(data_dir)] if data_dir is not None else []
    return subprocess.run([sys.executable, "-m", "tunefarm_cli", *prefix, *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, env=cli_env(cwd))


def _as_in_a_terminal() -> None:
    """SIGINT's default disposition, as a command typed in a terminal has it: a suite started in the background of a
    non-interactive shell (`pytest &`) ignores SIGINT, every child inherits that, and Python then installs no
    KeyboardInterrupt handler, so the Ctrl-C tests would time out for a reason that is not the CLI's."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_tunefarm(*args: str, cwd: Path, data_dir: Path | None = None) -> subprocess.Popen:
    prefix = ["--data-dir", str(data_dir)] if data_dir is not None else []
    return subprocess.Popen([sys.executable, "-m", "tunefarm_cli", *prefix, *args], cwd=cwd, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=cli_env(cwd),
                            preexec_fn=_as_in_a_terminal)


def one_line_error(out: subprocess.CompletedProcess, command: str, *needles: str) -> None:
    """A user mistake: exit 1, one line on stderr naming the command, no traceback."""
    err = out.stderr.strip()
    assert out.returncode == 1, out.stdout[-2000:] + out.stderr[-2000:]
    assert "Traceback" not in out.stderr and len(err.splitlines()) == 1, out.stderr
    assert err.startswith(f"tunefarm {command}: "), err
    for needle in needles:
        assert needle in err, err
