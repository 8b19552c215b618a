"""The CLI end to end: `tunefarm demo` (README's main command, on a small op) and client sub-commands."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.cpu.cli_support import FAST_MEASURE, embedded_farm

REPO = Path(__file__).resolve().parents[2]


def _tunefarm(*args: str, cwd: Path, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tunefarm_cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin:/usr/local/bin",
                                                "HOME": str(cwd), "COLUMNS": "160"})


def test_demo_tunes_through_the_embedded_farm_and_reports_the_best(tmp_path):
    # The CPU defaults but for max_time_s (2 s per task, 6 s per final comparison, which a 32^3 kernel rarely
    # narrows to 3 % before): the same job, final phase and report in a third of the time. A tune with the
    # defaults' time caps runs in test_cli_processes.py (README's CLI lines, verbatim).
    out = _tunefarm("--data-dir", str(tmp_path / "farm"), "demo", "--params", "M=32,N=32,K=32,dtype=float32",
                    "--trials", "3", "--measure", "max_time_s=0.3", cwd=tmp_path)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    # the numbers quoted come from the final phase: the head re-measured against the default and numpy in one worker
    assert "head config:" in out.stdout and "speed-up over the untuned default" in out.stdout
    assert "ratio to numpy" in out.stdout and "paired rounds" in out.stdout
    assert not (tmp_path / "farm" / "farm.json").exists()  # the farm was stopped


def test_client_commands_explain_a_missing_farm(tmp_path):
    out = _tunefarm("--data-dir", str(tmp_path / "none"), "best", "--op", "matmul", "--params", "M=8,N=8,K=8",
                    "--device", "cpu-x86_64-avx2-2c", cwd=tmp_path, timeout=60)
    assert out.returncode == 1 and "no running `tunefarm up` farm" in out.stderr


def test_a_second_farm_on_one_data_directory_is_refused_and_tune_prints_the_paired_result(tmp_path):
    import pytest

    from tunefarm_cli.embedded import EmbeddedFarm, FarmBusy

    data = tmp_path / "farm"
    with embedded_farm(data):
        with pytest.raises(FarmBusy, match="another tunefarm farm .* is running on"):
            EmbeddedFarm(data, devices=["cpu"]).start()
        refused = _tunefarm("--data-dir", str(data), "up", cwd=tmp_path, timeout=60)
        assert refused.returncode == 1 and "another tunefarm farm" in refused.stderr
        out = _tunefarm("--data-dir", str(data), "tune", "--op", "matmul", "--params", "M=32,N=32,K=32",
                        "--device", "cpu", "--trials", "3", "--measure", FAST_MEASURE, cwd=tmp_path)
        assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
        assert "head:" in out.stdout and "ratio to numpy" in out.stdout and "paired rounds" in out.stdout
    again = EmbeddedFarm(data, devices=[])  # the lock went with the farm
    again.start()
    again.stop()


def test_demo_refuses_a_malformed_measure_before_starting_a_farm(tmp_path):
    out = _tunefarm("--data-dir", str(tmp_path / "farm"), "demo", "--measure", "max_time_s=soon", cwd=tmp_path,
                    timeout=60)
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert out.stderr.strip() == ("tunefarm demo: --measure max_time_s=soon: a measurement option is a finite "
                                  "number or true/false")
    assert not (tmp_path / "farm").exists()


def test_a_param_given_twice_and_an_empty_token_id_are_refused_before_any_request(tmp_path):
    server = ("--server", "http://127.0.0.1:9", "--token", "t")  # nothing listens: a request would fail otherwise
    tune = _tunefarm(*server, "tune", "--op", "matmul", "--params", "M=64,M=32,N=64,K=64", "--device",
                     "cpu-x86_64-avx2-2c", cwd=tmp_path, timeout=60)
    assert tune.returncode == 1 and tune.stderr.strip() == (
        "tunefarm tune: --params 'M=64,M=32,N=64,K=64': param 'M' given more than once; give each at most once")
    revoke = _tunefarm(*server, "tokens", "revoke", "", cwd=tmp_path, timeout=60)
    assert revoke.returncode == 1 and revoke.stderr.strip() == (
        "tunefarm tokens: a token id is required (`tunefarm tokens list` shows them)")
