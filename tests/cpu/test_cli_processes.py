"""The CLI as processes: Ctrl-C during `tune` detaches (or cancels), the stall warning, `kill -9` of `tunefarm up`
leaves nothing behind, and README's CLI examples run verbatim on this host."""
from __future__ import annotations

import re
import signal
import socket
import subprocess
import threading
import time

import psutil
import pytest

from tests.cpu.cli_support import MATMUL, REPO, cli_env, embedded_farm, one_line_error, start_tunefarm, tunefarm
from tunefarm_cli.farm_dir import running_farm
from tunefarm_client import TunefarmClient

KEY = ["--op", "matmul", "--params", MATMUL]


@pytest.fixture(scope="module")
def farm(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli-processes")
    with embedded_farm(root / "farm") as f, TunefarmClient(f.url, f.admin_token) as client:
        f.cwd, f.client = root, client
        yield f


class Lines:
    """Collects a pipe's lines in a thread, so a test can wait for one without blocking on the pipe."""

    def __init__(self, pipe):
        self.lines: list[str] = []
        self._thread = threading.Thread(target=lambda: self.lines.extend(iter(pipe.readline, "")), daemon=True)
        self._thread.start()

    def wait_for(self, needle: str, timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while not any(needle in line for line in list(self.lines)):
            assert time.monotonic() < deadline, f"no {needle!r} in {self.lines}"
            time.sleep(0.1)

    def text(self) -> str:
        self._thread.join(10)
        return "".join(self.lines)


def _started_job(proc: subprocess.Popen, out: Lines) -> str:
    out.wait_for("trials,")  # the "job ID: WORKLOAD on DEVICE, N trials, STRATEGY" line
    return re.search(r"job (\S+):", "".join(out.lines)).group(1)


def _interrupt(proc: subprocess.Popen, out: Lines, err: Lines, within_s: float = 30) -> int:
    """SIGINT, as Ctrl-C sends it; the exit code. If the CLI does not exit in time, fail with what tells why: its
    signal masks (SIGINT is bit 2) and what it printed."""
    proc.send_signal(signal.SIGINT)
    try:
        return proc.wait(within_s)
    except subprocess.TimeoutExpired:
        with open(f"/proc/{proc.pid}/status") as f:
            masks = [line.strip() for line in f if line.startswith(("SigBlk", "SigIgn", "SigCgt", "SigPnd", "ShdPnd"))]
        proc.kill()
        raise AssertionError(f"no exit {within_s} s after SIGINT; {masks}; stdout {out.lines[-5:]}; stderr "
                             f"{err.lines[-20:]}") from None


def test_ctrl_c_detaches_tune_and_the_job_keeps_running(farm):
    proc = start_tunefarm("tune", *KEY, "--device", "cpu", "--trials", "2000", cwd=farm.cwd, data_dir=farm.data_dir)
    out, err = Lines(proc.stdout), Lines(proc.stderr)
    job_id = _started_job(proc, out)
    time.sleep(1.0)  # following now
    assert _interrupt(proc, out, err) == 130
    message = err.text()
    assert "Traceback" not in message and "KeyboardInterrupt" not in message, message
    assert f"detached from job {job_id}; it keeps running" in message
    assert f"`tunefarm follow {job_id}`" in message and f"`tunefarm cancel {job_id}`" in message
    assert farm.client.job(job_id).state in ("queued", "running")
    cancelled = tunefarm("cancel", job_id, cwd=farm.cwd, data_dir=farm.data_dir)
    assert cancelled.returncode == 0 and farm.client.job(job_id).state == "cancelled"


def test_tune_on_a_missing_gpu_warns_of_the_stall_and_ctrl_c_can_cancel(farm):
    proc = start_tunefarm("tune", *KEY, "--device", "cuda", "--trials", "4", "--stall-warning", "1",
                          "--cancel-on-interrupt", cwd=farm.cwd, data_dir=farm.data_dir)
    out, err = Lines(proc.stdout), Lines(proc.stderr)
    job_id = _started_job(proc, out)
    err.wait_for("warning: no cuda agent is online", timeout_s=30)
    assert _interrupt(proc, out, err) == 130
    message = err.text()
    assert "Traceback" not in message and f"tunefarm tune: cancelled job {job_id}" in message
    assert "no cuda agent has registered yet" in out.text()
    assert farm.client.job(job_id).state == "cancelled"


def test_kill_9_of_up_leaves_no_process_behind(tmp_path):
    data = tmp_path / "farm"
    up = start_tunefarm("up", "--devices", "cpu", cwd=tmp_path, data_dir=data)
    try:
        Lines(up.stdout).wait_for("Ctrl-C stops the farm")
        farm = running_farm(data)
        with TunefarmClient(farm["url"], farm["token"]) as client:
            deadline = time.monotonic() + 60
            while not client.devices(kind="cpu").total:  # the agent has started its sandbox worker by then
                assert time.monotonic() < deadline, "the agent did not register"
                time.sleep(0.2)
        children = psutil.Process(up.pid).children(recursive=True)
        assert len(children) >= 2  # the tuner, the agent (and their workers)
        up.kill()
        up.wait(10)
        gone, alive = psutil.wait_procs(children, timeout=45)
        assert not alive, [(p.pid, p.cmdline()) for p in alive]
        one_line_error(tunefarm("devices", cwd=tmp_path, data_dir=data), "devices", "is not running")
    finally:
        if up.poll() is None:
            up.kill()


def test_up_refuses_bad_devices_and_busy_ports(tmp_path):
    one_line_error(tunefarm("up", "--devices", "gpu", cwd=tmp_path, data_dir=tmp_path / "d"), "up",
                   "give cpu and/or cuda:N")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = str(busy.getsockname()[1])
        one_line_error(tunefarm("up", "--rest-port", port, cwd=tmp_path, data_dir=tmp_path / "d"), "up",
                       f"--rest-port {port} is not free")


def readme_cli_lines() -> list[str]:
    """The commands of README's "Using the farm" block, without their comments (a line ending in a backslash goes
    on in the next, as in a shell)."""
    text = (REPO / "README.md").read_text()
    block = text.split("## Using the farm", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0].replace("\\\n", " ")
    return [" ".join(line.split("  #", 1)[0].split()) for line in block.splitlines() if line.strip()]


def test_readme_cli_examples_run_verbatim(tmp_path):
    """In a fresh directory, as a user would: `up` in the background, then each line in a shell from a
    subdirectory (the farm is found in the parent). Only the other farm's address in the import line (a
    placeholder) is replaced by this farm's."""
    lines = readme_cli_lines()
    sub = tmp_path / "sub"
    sub.mkdir()
    assert lines[0].startswith("tunefarm up") and lines[0].endswith("&")
    # exec: the shell becomes `tunefarm up` (what `&` puts in the background), so the test can stop it
    up = subprocess.Popen(["bash", "-c", f"tunefarm() {{ exec python3 -m tunefarm_cli \"$@\"; }}; {lines[0][:-1]}"],
                          cwd=tmp_path, env=cli_env(tmp_path), text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE)
    printed = Lines(up.stdout)
    try:
        printed.wait_for("Ctrl-C stops the farm")
        farm = running_farm(tmp_path / ".tunefarm")
        for line in lines[1:]:
            line = line.replace("--server http://other:8080 --token T", f"--server {farm['url']} --token "
                                f"{farm['token']}")
            out = subprocess.run(["bash", "-c", f"tunefarm() {{ python3 -m tunefarm_cli \"$@\"; }}; {line}"],
                                 cwd=sub, env=cli_env(tmp_path), capture_output=True, text=True, timeout=240)
            assert out.returncode == 0 and "Traceback" not in out.stderr, (line, out.stdout[-2000:],
                                                                           out.stderr[-2000:])
    finally:
        up.send_signal(signal.SIGTERM)
        up.wait(60)
    assert not (tmp_path / ".tunefarm" / "farm.json").exists()
    said = printed.text()  # stopping can take the agents' grace period: the user is told, then told it is done
    assert "tunefarm up: stopping (agents finish or return their leases" in said and said.endswith("stopped\n")
