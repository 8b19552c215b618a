"""`tunefarm demo`: bring up the embedded farm, tune a real op through a real agent, print the best schedule."""
from __future__ import annotations

from pathlib import Path

from rich.table import Table

import compiler_core as cc
from tunefarm_cli.commands import console, parse_measure, parse_params
from tunefarm_cli.embedded import EmbeddedFarm
from tunefarm_cli.jobs import follow_job, print_paired_ratios
from tunefarm_client.client import TunefarmClient


def run_demo(op: str, params: str, trials: int, strategy: str, seed: int, data_dir: Path,
             measure: str | None = None) -> int:
    w, measure_options = cc.make_workload(op, parse_params(params)), parse_measure(measure)
    console.print(f"[bold]tunefarm demo[/]: starting the embedded farm in {data_dir} (tuner + one CPU agent, SQLite)")
    with EmbeddedFarm(data_dir, devices=["cpu"]) as farm, TunefarmClient(farm.url, farm.admin_token) as client:
        console.print(f"REST {farm.url} (docs at {farm.url}/docs, dashboard at {farm.url}/dashboard), "
                      f"gRPC 127.0.0.1:{farm.grpc_port}")
        job = client.create_job(op, w.param_dict, "cpu", trials, strategy=strategy, seed=seed, measure=measure_options)
        job = follow_job(client, job.id, stall_s=300)  # see .tunefarm/*.log if it stalls
        if job.state != "done":
            console.print(f"[red]job {job.state}[/]: {job.error or ''}")
            return 1
        result = job.result
        if result is None:
            console.print(f"[yellow]job {job.id} has no head-to-head result[/] (no verified trial to re-measure)")
            return 1
        best = client.best(op, w.param_dict, job.device_class)
    flops = cc.get_op(op).flops(w)
    table = Table(title=f"{w.key} on {job.device_class}: {job.progress.verified} verified of {trials} trials; "
                        f"re-measured head to head ({result.comparisons} comparisons, interleaved in one worker)")
    for col in ("schedule", "median ms", "GFLOP/s"):
        table.add_column(col, justify="right")
    rows = [(f"head schedule v{best.version} (GET /v1/best)", result.head_median_s)]
    if result.speedup_vs_default is not None:
        rows.append(("untuned default", result.head_median_s * result.speedup_vs_default.ratio))
    if result.reference_median_s:
        rows.append((f"{result.reference} (same worker, same threads)", result.reference_median_s))
    for name, seconds in rows:
        table.add_row(name, f"{seconds * 1e3:.4f}", f"{flops / seconds / 1e9:.1f}" if flops else "-")
    console.print(table)
    console.print(f"head config: {best.config}")
    print_paired_ratios(result)
    return 0
