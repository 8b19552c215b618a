"""Every client sub-command against a real embedded farm (tuner + one CPU agent on loopback), run as a user would:
`python -m tunefarm_cli` in a subprocess. One small job (matmul 32^3, 3 trials) feeds the schedule commands; a
bfloat16 softmax job is tuned on the same farm."""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time

import pytest

from tests.cpu.cli_support import FAST_MEASURE, MATMUL, REPO, cli_env, embedded_farm, one_line_error, tunefarm
from tunefarm_cli.parser import build_parser
from tunefarm_client import TunefarmClient

KEY = ["--op", "matmul", "--params", MATMUL]


@pytest.fixture(scope="module")
def farm(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    with embedded_farm(root / "farm") as f, TunefarmClient(f.url, f.admin_token) as client:
        deadline = time.monotonic() + 60
        while not client.devices(kind="cpu").total:  # the agent registers after the tuner is healthy
            assert time.monotonic() < deadline, "the CPU agent did not register"
            time.sleep(0.2)
        tuned = tunefarm("tune", *KEY, "--device", "cpu", "--trials", "3", "--measure", FAST_MEASURE,
                         "--strategy-options", "acquisition=ei,members=3,stall=null", cwd=root, data_dir=f.data_dir)
        assert tuned.returncode == 0, tuned.stdout[-2000:] + tuned.stderr[-2000:]
        f.cwd, f.client, f.tuned = root, client, tuned
        f.device_class = client.devices(kind="cpu").items[0].device_class
        yield f


def run(farm, *args: str, **kw) -> subprocess.CompletedProcess:
    return tunefarm(*args, cwd=farm.cwd, data_dir=farm.data_dir, **kw)


def ok(out: subprocess.CompletedProcess) -> str:
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stdout[-2000:] + out.stderr[-2000:]
    return out.stdout


def _parsers(parser: argparse.ArgumentParser):
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                yield from _parsers(child)


def test_every_option_has_help_and_shows_its_default():
    for parser in _parsers(build_parser()):
        if not parser.add_help:  # server and agent: their own parsers
            continue
        for action in parser._actions:
            assert action.help, f"{parser.prog} {action.dest} has no help"
    text = subprocess.run([sys.executable, "-m", "tunefarm_cli", "tune", "--help"], capture_output=True, text=True,
                          env=cli_env(REPO), cwd=REPO).stdout
    assert "(default: 64)" in text and "(default: model)" in text and "--cancel-on-interrupt" in text
    up = subprocess.run([sys.executable, "-m", "tunefarm_cli", "up", "--help"], capture_output=True, text=True,
                        env=cli_env(REPO), cwd=REPO).stdout
    assert "--rest-port" in up and "--grpc-port" in up and "--devices" in up


def test_tune_resolves_cpu_to_the_farms_class_and_prints_it(farm):
    out = farm.tuned.stdout
    assert f"device cpu -> {farm.device_class}" in out and f"on {farm.device_class}" in out and "head:" in out


def test_tune_measure_options_reach_the_job_and_bad_ones_are_named(farm):
    (job,) = farm.client.jobs(state="done").items
    assert {k: job.measure_options[k] for k in ("recheck_top", "max_time_s", "flush_cache")} == \
        {"recheck_top": 2, "max_time_s": 0.3, "flush_cache": False}
    assert job.measure_options["timeout_s"] == 60.0  # unset: the CPU kind's default
    tune = ["tune", *KEY, "--device", "cpu", "--trials", "3", "--measure"]
    one_line_error(run(farm, *tune, "recheck_top"), "tune", "'recheck_top' is not name=value")
    one_line_error(run(farm, *tune, "max_time_s=fast"), "tune", "max_time_s=fast", "a finite number or true/false")
    one_line_error(run(farm, *tune, "repeats=3"), "tune", "'repeats' is not one of warmup, min_repeats")
    one_line_error(run(farm, *tune, "max_time_s=900"), "tune", "max_time_s")
    assert len(farm.client.jobs().items) == 1  # none of them made a job


def test_tune_strategy_options_reach_the_job_and_bad_ones_point_to_the_list(farm):
    (job,) = farm.client.jobs(state="done").items
    assert {k: job.strategy_options[k] for k in ("acquisition", "members", "stall")} == \
        {"acquisition": "ei", "members": 3, "stall": None}
    tune = ["tune", *KEY, "--device", "cpu", "--trials", "3", "--strategy-options"]
    one_line_error(run(farm, *tune, "members=1000"), "tune", "'members'=1000 must be at most 32",
                   "`tunefarm ops model` lists its options")
    one_line_error(run(farm, *tune, "acquisition=pi"), "tune", "'acquisition'='pi' not allowed", "'ucb'")
    one_line_error(run(farm, *tune, "member=3"), "tune", "unknown option(s) 'member'", "members")
    one_line_error(run(farm, *tune, "{not json"), "tune", "not a JSON object")
    one_line_error(run(farm, *tune, "kappa=nan"), "tune", "kappa=nan: not a finite number, and no option takes NaN")
    one_line_error(run(farm, *tune, "members"), "tune", "'members' is not name=value")
    assert len(farm.client.jobs().items) == 1  # none of them made a job
    shown = ok(run(farm, "ops", "model"))
    assert "search strategy" in shown and "members" in shown and "1..32" in shown and "ucb|ei" in shown
    assert "no options" in ok(run(farm, "ops", "random"))


def test_ops_and_devices(farm):
    ops = ok(run(farm, "ops"))
    assert "matmul" in ops and "conv2d" in ops and "strategies:" in ops
    assert "matmul" in ok(run(farm, "ops", "matmul")) and '"knobs"' in ok(run(farm, "ops", "matmul"))
    one_line_error(run(farm, "ops", "nope"), "ops", "unknown op or strategy 'nope'", "matmul", "strategies: ")
    devices = ok(run(farm, "devices", "--kind", "cpu"))
    assert farm.device_class in devices and "online" in devices
    assert "0 device classes" in ok(run(farm, "devices", "--kind", "cuda"))


def test_best_history_pin_diff_rollback_with_device_cpu(farm):
    n = farm.client.best("matmul", {"M": 32, "N": 32, "K": 32}, farm.device_class).version  # the job made 1..n
    best = ok(run(farm, "best", *KEY, "--device", "cpu", "--source"))
    assert f"device cpu -> {farm.device_class}" in best and f"version {n}" in best and "void" in best
    assert f"{n} versions" in ok(run(farm, "history", *KEY, "--device", "cpu"))
    pinned = ok(run(farm, "pin", *KEY, "--device", "cpu", "--version", "1", "-m", "keep"))
    assert f"now version {n + 1} (pin, pinned)" in pinned
    assert "[pinned]" in ok(run(farm, "best", *KEY, "--device", farm.device_class))
    assert f"now version {n + 2} (pin)" in ok(run(farm, "pin", *KEY, "--device", "cpu", "--unpin"))
    rolled = ok(run(farm, "rollback", *KEY, "--device", "cpu", "--to-version", "1"))
    assert f"now version {n + 3} (rollback)" in rolled
    diff = ok(run(farm, "diff", *KEY, "--device", "cpu", "1", str(n + 3)))
    assert f"v1 -> v{n + 3}" in diff and "same config" in diff
    history = ok(run(farm, "history", *KEY, "--device", "cpu"))
    assert f"{n + 3} versions" in history and "rollback" in history
    first_trial = farm.client.best("matmul", {"M": 32, "N": 32, "K": 32}, farm.device_class, version=1).trial_id
    by_trial = ok(run(farm, "pin", *KEY, "--device", "cpu", "--trial", first_trial))
    assert f"pinned trial {first_trial}" in by_trial and f"now version {n + 4} (pin, pinned)" in by_trial
    one_line_error(run(farm, "diff", *KEY, "--device", "cpu", "1", "99"), "diff", "404", "no version 99")
    needs_one = run(farm, "pin", *KEY, "--device", "cpu")  # --version, --trial or --unpin: one of them is required
    one_line_error(needs_one, "pin", "one of the arguments", "`tunefarm pin --help` lists the options")
    one_line_error(run(farm, "jobs", "--state", "finished"), "jobs", "invalid choice: 'finished'", "'done'")
    one_line_error(run(farm, "tune", *KEY, "--device", "cpu", "--trials", "1.5"), "tune", "--trials",
                   "invalid int value: '1.5'")


def test_jobs_follow_and_cancel(farm):
    (job,) = farm.client.jobs(state="done").items
    listing = ok(run(farm, "jobs", "--state", "done", "--op", "matmul", "--params", MATMUL, "--device", "cpu"))
    assert job.id in listing and "1 of 1 jobs" in listing
    assert "0 of 0 jobs" in ok(run(farm, "jobs", "--state", "failed"))
    one_line_error(run(farm, "jobs", "--op", "matmul"), "jobs", "--op and --params go together")
    followed = ok(run(farm, "follow", job.id))
    assert f"job {job.id} done on {farm.device_class}" in followed and "head:" in followed
    one_line_error(run(farm, "cancel", job.id), "cancel", "409")
    one_line_error(run(farm, "follow", "no-such-job"), "follow", "404", "no job no-such-job")
    queued = ok(run(farm, "tune", *KEY, "--device", "cpu", "--trials", "500", "--no-wait"))
    job_id = re.search(r"job (\S+):", queued).group(1)
    assert f"tunefarm follow {job_id}" in queued
    assert re.search(rf"job {job_id} cancelled \(\d+ measured trials stay\)", ok(run(farm, "cancel", job_id)))
    assert farm.client.job(job_id).state == "cancelled"


def test_bfloat16_tunes_and_its_best_loads_as_a_kernel_on_ml_dtypes_arrays(farm, tmp_path):
    """dtype=bfloat16 end to end: `tune` and `best` on the CLI, then load_best's kernel on ml_dtypes arrays (a wrong
    dtype is refused by name). After test_jobs_follow_and_cancel, which counts this farm's done jobs."""
    import ml_dtypes
    import numpy as np

    import compiler_core as cc
    from tunefarm_client import load_best

    params = "rows=32,cols=96,dtype=bfloat16"
    out = ok(run(farm, "tune", "--op", "softmax", "--params", params, "--device", "cpu", "--trials", "3",
                 "--measure", "max_time_s=0.3"))  # the CPU defaults but for the time cap (2 s per task)
    assert "softmax(rows=32,cols=96,dtype=bfloat16)" in out and "head:" in out
    (device,) = farm.client.devices(kind="cpu").items
    best = ok(run(farm, "best", "--op", "softmax", "--params", params, "--device", device.device_class, timeout=60))
    assert f"softmax(rows=32,cols=96,dtype=bfloat16) on {device.device_class}" in best
    kernel = load_best(farm.client, "softmax", dict(rows=32, cols=96, dtype="bfloat16"), device.device_class,
                       cache_dir=tmp_path / "kernels")
    workload = cc.parse_key("softmax(rows=32,cols=96,dtype=bfloat16)")
    x = np.random.default_rng(0).uniform(-3, 3, (32, 96)).astype(ml_dtypes.bfloat16)
    (y,) = kernel.run(x)
    assert y.dtype == ml_dtypes.bfloat16 and cc.verify(workload, [y], cc.expect(workload, [x])).ok
    with pytest.raises(ValueError, match="X: expected .* bfloat16.*got .* float32"):
        kernel.run(x.astype(np.float32))


def test_tokens_create_list_revoke(farm):
    made = ok(run(farm, "tokens", "create", "ci-reader", "--scope", "read"))
    token_id, plaintext = re.search(r"token (\S+) \(read, 'ci-reader'\)", made).group(1), made.split()[-1]
    assert plaintext.startswith("tf_")
    listing = ok(run(farm, "tokens", "list"))
    assert token_id in listing and "ci-reader" in listing and plaintext not in listing  # only hashes are stored
    as_reader = ("--server", farm.url, "--token", plaintext)
    assert "version" in ok(run(farm, *as_reader, "best", *KEY, "--device", "cpu"))
    one_line_error(run(farm, *as_reader, "tokens", "list"), "tokens", "403", "admin token")
    assert f"token {token_id} (read, 'ci-reader') revoked" in ok(run(farm, "tokens", "revoke", token_id))
    one_line_error(run(farm, *as_reader, "devices"), "devices", "401", "revoked")
    admin_id = next(t.id for t in farm.client.tokens() if t.scope == "admin")
    one_line_error(run(farm, "tokens", "revoke", admin_id), "tokens", "409", "TUNEFARM_ADMIN_TOKEN")
    one_line_error(run(farm, "tokens", "revoke", "nope"), "tokens", "404")
    one_line_error(run(farm, "tokens", "revoke", ""), "tokens", "a token id is required")


def test_user_mistakes_are_one_line_errors(farm, tmp_path):
    one_line_error(run(farm, "import", "missing.jsonl"), "import", "cannot read missing.jsonl",
                   "No such file or directory", "tunefarm export")
    one_line_error(run(farm, "export", "-o", str(tmp_path / "no" / "dir.jsonl")), "export", "cannot write")
    one_line_error(run(farm, "best", "--op", "matmul", "--params", "M=32,N=32", "--device", "cpu"), "best",
                   "missing param K")
    one_line_error(run(farm, "best", "--op", "matmul", "--params", "M32", "--device", "cpu"), "best",
                   "not name=value")
    one_line_error(run(farm, "best", "--op", "matmul", "--params", "M=32,N=32,K=32,M=16", "--device", "cpu"), "best",
                   "param 'M' given more than once")
    one_line_error(run(farm, "best", "--op", "matmul", "--params", "M=+32,N=32,K=32", "--device", "cpu"), "best",
                   "query.M: '+32' is not a valid integer")
    one_line_error(run(farm, "best", *KEY, "--device", "cuda"), "best", "no cuda device class")
    one_line_error(run(farm, "best", *KEY, "--device", "cpu-x86_64-avx2-99c"), "best", "unknown device class",
                   farm.device_class)
    one_line_error(tunefarm("devices", cwd=tmp_path, data_dir=tmp_path / "none"), "devices",
                   "no running `tunefarm up` farm")


def test_export_then_import_round_trips(farm, tmp_path):
    path = tmp_path / "farm.jsonl"
    out = ok(run(farm, "export", "-o", str(path)))
    assert path.read_text().count("\n") > 3 and out == ""
    assert "already here" in ok(run(farm, "import", str(path)))


def test_loaded_kernel_refuses_a_missing_input(farm, tmp_path):
    """load_best takes --device's 'cpu' too; run(A) without B names B instead of zero-filling it."""
    import numpy as np

    from tunefarm_client import load_best

    kernel = load_best(farm.client, "matmul", {"M": 32, "N": 32, "K": 32}, "cpu", cache_dir=tmp_path)
    assert kernel.schedule.device_class == farm.device_class
    a, b = (np.ones((32, 32), np.float32) for _ in range(2))
    with pytest.raises(ValueError, match=r"matmul run\(\) takes its 2 inputs \(A, B\), got 1; missing: B"):
        kernel.run(a)
    (c,) = kernel.run(a, b)
    assert np.allclose(c, 32.0)


def test_cpu_is_ambiguous_with_two_cpu_classes_online(farm):
    """A second CPU agent on one core registers another class (…-1c): --device cpu then names both. Last in this
    module: the stopped agent's class stays online until the server declares it lost."""
    agent = subprocess.Popen([sys.executable, "-m", "device_agent.main", "--server", f"127.0.0.1:{farm.grpc_port}",
                              "--device", "cpu", "--cpus", "0", "--token-file", str(farm.data_dir / "enrolment_token"),
                              "--log-level", "WARNING"], env=cli_env(farm.cwd), stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while sum(d.status == "online" for d in farm.client.devices(kind="cpu").items) < 2:
            assert time.monotonic() < deadline and agent.poll() is None, "the second agent did not register"
            time.sleep(0.3)
        classes = [d.device_class for d in farm.client.devices(kind="cpu").items]
        one_line_error(run(farm, "best", *KEY, "--device", "cpu"), "best", "ambiguous", *classes)
        assert "version" in ok(run(farm, "best", *KEY, "--device", farm.device_class))
    finally:
        agent.terminate()
        agent.wait(30)



def test_a_pipe_gets_whole_lines_and_a_closed_one_ends_it_quietly(farm):
    env = {k: v for k, v in cli_env(farm.cwd).items() if k != "COLUMNS"}  # as `tunefarm jobs | grep done` runs
    listing = subprocess.run([sys.executable, "-m", "tunefarm_cli", "--data-dir", str(farm.data_dir), "jobs"],
                             cwd=farm.cwd, capture_output=True, text=True, timeout=60, env=env)
    assert listing.returncode == 0 and "…" not in listing.stdout, listing.stdout
    header = next(line for line in listing.stdout.splitlines() if " state " in line)
    assert all(col in header for col in ("id", "state", "workload", "device", "trials", "strategy", "created"))
    # `tunefarm export | head -0`: the reader is gone before the first write
    proc = subprocess.Popen([sys.executable, "-m", "tunefarm_cli", "--data-dir", str(farm.data_dir), "export"],
                            cwd=farm.cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    proc.stdout.close()
    assert proc.wait(60) == 141 and proc.stderr.read() == b""
