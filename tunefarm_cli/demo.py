"""`tunefarm demo`: bring up the embedded farm, tune a real op through a real agent, print the best schedule."""
from __future__ import annotations

import statistics
import time
from pathlib import Path

import numpy as np
from rich.table import Table

import compiler_core as cc
from compiler_core.space import config_key
from compiler_core.workload import parse_params
from tunefarm_cli.commands import console, follow_job
from tunefarm_cli.embedded import EmbeddedFarm
from tunefarm_client.client import TunefarmClient
from tuner_server.targets import target_for_class

NUMPY_OPS = {"matmul": lambda ins: np.matmul(ins[0], ins[1]),
             "batch_matmul": lambda ins: np.matmul(ins[0], ins[1])}


def numpy_seconds(w: cc.Workload, min_time_s: float = 0.2) -> float | None:
    """Median seconds of the numpy equivalent in this process (OpenBLAS with its default threads)."""
    fn = NUMPY_OPS.get(w.op)
    if fn is None:
        return None
    inputs = cc.random_inputs(w, 0)
    fn(inputs)
    samples, start = [], time.perf_counter()
    while len(samples) < 5 or time.perf_counter() - start < min_time_s:
        t0 = time.perf_counter_ns()
        fn(inputs)
        samples.append((time.perf_counter_ns() - t0) / 1e9)
    return statistics.median(samples)


def _default_trial(client: TunefarmClient, job) -> object | None:
    w = cc.parse_key(job.workload)
    default = config_key(cc.default_config(w, target_for_class(job.device_class)))
    page = client.job_trials(job.id, limit=job.trial_budget + 10)
    return next((t for t in page.items if config_key(t.config) == default and t.status == "OK"), None)


def run_demo(op: str, params: str, trials: int, strategy: str, seed: int, data_dir: Path) -> int:
    w = cc.make_workload(op, parse_params(params))
    console.print(f"[bold]tunefarm demo[/]: starting the embedded farm in {data_dir} (tuner + one CPU agent, SQLite)")
    with EmbeddedFarm(data_dir, devices=["cpu"]) as farm, TunefarmClient(farm.url, farm.admin_token) as client:
        console.print(f"REST {farm.url} (docs at {farm.url}/docs), gRPC 127.0.0.1:{farm.grpc_port}")
        job = client.create_job(op, w.param_dict, "cpu", trials, strategy=strategy, seed=seed)
        job = follow_job(client, job.id, stall_s=300)  # see .tunefarm/*.log if it stalls
        if job.state != "done":
            console.print(f"[red]job {job.state}[/]: {job.error or ''}")
            return 1
        best = client.best(op, w.param_dict, job.device_class)
        default = _default_trial(client, job)
    np_s = numpy_seconds(w)
    flops = cc.get_op(op).flops(w)
    table = Table(title=f"{w.key} on {job.device_class}: {job.progress.verified} verified of {trials} trials")
    for col in ("schedule", "median ms", "GFLOP/s"):
        table.add_column(col, justify="right")
    fastest = job.progress.best
    rows = [("fastest trial of the job", fastest.median_s if fastest else None),
            (f"head schedule v{best.version} (GET /v1/best)", best.median_s),
            ("untuned default", getattr(default, "median_s", None)), ("numpy (OpenBLAS)", np_s)]
    for name, s in rows:
        if s:
            table.add_row(name, f"{s * 1e3:.4f}", f"{flops / s / 1e9:.1f}" if flops else "-")
    console.print(table)
    top = fastest if fastest is not None and fastest.median_s else best
    console.print(f"fastest config: {top.config}")
    console.print(f"head config: {best.config} (the head moves only when a trial is faster beyond the "
                  "confidence intervals)")
    if default is not None and default.median_s:
        console.print(f"speed-up over the untuned default: [bold]{default.median_s / top.median_s:.2f}x[/]")
    if np_s:
        console.print(f"ratio to numpy: [bold]{np_s / top.median_s:.2f}x[/] (>1: faster than numpy)")
    return 0
