"""Trials per second of a GPU agent, and the share of wall time its device spent timing kernels.

Starts the embedded farm with one agent per visible GPU (`--devices`, default cuda:0), submits a mix of
model-guided jobs at once (default: the six of issue 12: matmul 4096^3 float32 and float16, matmul 1024^3
float16, softmax and layernorm 8192^2, conv2d N=32 C=K=256 14x14 3x3), waits for all, and reads every trial (and
head-to-head comparison, where the farm has them) back over REST:

- trials/s: measured trials / (last job finished - first job started), per agent;
- device busy: the sum of every timed sample (trials and comparisons: the kernel's own time, as CUDA events saw
  it) over the same wall time; the rest is building, verifying, host work and waiting.

It uses only REST calls that older farms have too, so the same script measures a checkout before a change
(`--repo PATH` runs the farm from that checkout). Nothing here asserts a time.

    python3 benchmarks/farm_gpu_throughput.py --trials 40 --out benchmarks/results/gpu_throughput.json
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

MIX = [("matmul", {"M": 4096, "N": 4096, "K": 4096, "dtype": "float32"}),
       ("matmul", {"M": 4096, "N": 4096, "K": 4096, "dtype": "float16"}),
       ("matmul", {"M": 1024, "N": 1024, "K": 1024, "dtype": "float16"}),
       ("softmax", {"rows": 8192, "cols": 8192}),
       ("layernorm", {"rows": 8192, "cols": 8192}),
       ("conv2d", {"N": 32, "C": 256, "H": 14, "W": 14, "K": 256, "R": 3, "S": 3, "stride": 1, "pad": 1})]


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trials", type=int, default=40, help="trial budget of each job")
    p.add_argument("--devices", default="cuda:0", help="comma-separated agent devices")
    p.add_argument("--repo", default=str(Path(__file__).resolve().parents[1]), help="checkout that runs the farm")
    p.add_argument("--timeout", type=float, default=1500.0)
    p.add_argument("--label", default="", help="a name for this run in the output (e.g. before / after)")
    p.add_argument("--out", default=None, help="write the figures as JSON here")
    p.add_argument("--data-dir", default=None, help="run the farm here and keep its logs (default: a temporary one)")
    return p.parse_args(argv)


def busy_seconds(client, job) -> tuple[int, float, list[float]]:
    """(measured trials, seconds of timed kernel samples, compile seconds per trial) of one job, comparisons
    included where served."""
    page = client.job_trials(job.id, limit=job.trial_budget + 10)
    trials = [t for t in page.items if t.status != "AGENT_LOST"]
    busy = sum(sum(t.samples) for t in trials)
    compiles = [t.compile_s for t in trials if t.compile_s]
    try:
        raw = client._request("GET", f"/v1/jobs/{job.id}/comparisons").json()
    except Exception:  # noqa: BLE001 - a farm from before head-to-head comparisons: trials only
        raw = []
    for c in raw:
        busy += c.get("timed_s", 0.0)
    return len(trials), busy, compiles


def main(argv=None) -> int:
    args = parse_args(argv)
    sys.path.insert(0, args.repo)
    from tunefarm_cli.embedded import EmbeddedFarm
    from tunefarm_client.client import TunefarmClient

    devices = [d.strip() for d in args.devices.split(",") if d.strip()]
    verbose = {"log_level": "INFO"} if "log_level" in EmbeddedFarm.__dataclass_fields__ else {}  # older farms: none
    with tempfile.TemporaryDirectory(prefix="tunefarm-gpu-") as tmp, \
            EmbeddedFarm(Path(args.data_dir or tmp), devices=devices, **verbose) as farm, \
            TunefarmClient(farm.url, farm.admin_token) as client:
        t0 = time.monotonic()
        jobs = [client.create_job(op, params, "cuda", args.trials, seed=i) for i, (op, params) in enumerate(MIX)]
        while True:
            jobs = [client.job(j.id) for j in jobs]
            done = sum(j.progress.completed for j in jobs)
            print(f"\r{done}/{args.trials * len(jobs)} trials, {time.monotonic() - t0:.0f} s, states "
                  f"{sorted({j.state for j in jobs})}", end="", file=sys.stderr, flush=True)
            if all(j.state in ("done", "failed", "cancelled") for j in jobs) or time.monotonic() - t0 > args.timeout:
                break
            time.sleep(2.0)
        print(file=sys.stderr)
        counted = [busy_seconds(client, j) for j in jobs]
        started = min(j.started_at for j in jobs if j.started_at)
        finished = max(j.finished_at or datetime.now(started.tzinfo) for j in jobs)
        wall = (finished - started).total_seconds()
        trials, busy = sum(n for n, _, _ in counted), sum(b for _, b, _ in counted)
        compiles = sorted(c for _, _, cs in counted for c in cs)
        out = {"label": args.label, "devices": devices, "wall_s": wall, "trials": trials,
               "trials_per_s_per_agent": trials / wall / len(devices), "device_busy_fraction": busy / wall,
               "compile_s_median": compiles[len(compiles) // 2] if compiles else None,
               "compile_s_total": sum(compiles),
               "jobs": [{"workload": j.workload, "state": j.state, "trials": n, "busy_s": b,
                         "compile_s_median": sorted(cs)[len(cs) // 2] if cs else None,
                         "best_gflops": j.progress.best.gflops if j.progress.best else None,
                         "best_gbps": j.progress.best.gbps if j.progress.best else None}
                        for j, (n, b, cs) in zip(jobs, counted, strict=True)]}
    print(json.dumps(out, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
