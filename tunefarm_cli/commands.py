"""Client sub-commands (tune, best, history, export, import): REST calls with rich output and progress."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from compiler_core.workload import parse_params
from tunefarm_cli.embedded import read_farm_file
from tunefarm_client.client import FINAL_JOB_STATES, TunefarmClient, TunefarmError

console = Console()


def connect(server: str | None, token: str | None, data_dir: Path) -> TunefarmClient:
    """--server/--token, else the farm started by `tunefarm up` in data_dir."""
    if server is None:
        farm = read_farm_file(data_dir)
        if farm is None:
            raise TunefarmError(f"no --server given and no running `tunefarm up` farm in {data_dir}")
        server, token = farm["url"], token or farm["token"]
    return TunefarmClient(server, token)


def follow_job(client: TunefarmClient, job_id: str, poll_s: float = 0.5, stall_s: float | None = None):
    """Progress bar until the job is done, failed or cancelled; returns the final job. With `stall_s`, raises
    TunefarmError when no trial completes for that long (e.g. no agent of the job's device class is running)."""
    columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("{task.fields[best]}"))
    with Progress(*columns, console=console) as progress:
        job = client.job(job_id)
        task = progress.add_task(job.workload[:48], total=job.trial_budget, best="")
        last_seen, last_change = None, time.monotonic()
        while True:
            p = job.progress
            seen = (p.completed, p.comparing, job.phase) if p is not None else None
            if seen != last_seen:  # a trial, or a head-to-head comparison of the final phase, finished
                last_seen, last_change = seen, time.monotonic()
            if stall_s is not None and time.monotonic() - last_change > stall_s:
                raise TunefarmError(f"job {job_id}: no trial finished for {stall_s:.0f} s (are agents running?)")
            if p is not None:
                best = p.best
                speed = f"best {best.median_s * 1e3:.3f} ms" if best and best.median_s else ""
                if best and best.gflops:
                    speed += f" ({best.gflops:.1f} GFLOP/s)"
                if job.phase == "final":
                    speed += "; re-measuring the top trials head to head"
                progress.update(task, completed=p.completed, best=speed)
            if job.state in FINAL_JOB_STATES:
                return job
            time.sleep(poll_s)
            job = client.job(job_id)


def cmd_tune(client: TunefarmClient, args) -> int:
    job = client.create_job(args.op, parse_params(args.params), args.device, args.trials, strategy=args.strategy,
                            seed=args.seed)
    console.print(f"job {job.id}: {job.workload} on {args.device}, {job.trial_budget} trials, {job.strategy}")
    if args.no_wait:
        return 0
    job = follow_job(client, job.id)
    if job.state != "done":
        console.print(f"[red]job {job.state}[/]: {job.error or ''}")
        return 1
    if job.result is None:
        console.print("no head-to-head result (no verified trial to re-measure)")
        return 0
    console.print(f"head: {job.result.head_median_s * 1e3:.4f} ms {job.result.config}")
    print_paired_ratios(job.result)
    return 0


def print_paired_ratios(result) -> None:
    """The job's re-measured speed-ups (JobResultPublic): only ratios timed in the same rounds are printed."""
    for label, paired in (("speed-up over the untuned default", result.speedup_vs_default),
                          (f"ratio to {result.reference}", result.speedup_vs_reference)):
        if paired is not None:
            console.print(f"{label}: [bold]{paired.ratio:.2f}x[/] (95% CI {paired.ci_low:.2f}-{paired.ci_high:.2f}, "
                          "paired rounds; >1: the head is faster)")
    if result.noisy:
        console.print("[yellow]the last comparison was noisy (contention or a wide interval): treat with care[/]")


def cmd_best(client: TunefarmClient, args) -> int:
    best = client.best(args.op, parse_params(args.params), args.device, version=args.version, as_of=args.as_of,
                       include_source=args.source)
    rate = f"{best.gflops:.1f} GFLOP/s" if best.gflops else f"{best.gbps or 0:.1f} GB/s"
    console.print(f"{best.workload} on {best.device_class}: version {best.version} ({best.reason}), "
                  f"{(best.median_s or 0) * 1e3:.4f} ms, {rate}{' [pinned]' if best.head_pinned else ''}")
    console.print_json(json.dumps(best.config))
    if args.source and best.source:
        print(best.source)
    return 0


def cmd_history(client: TunefarmClient, args) -> int:
    page = client.history(args.op, parse_params(args.params), args.device, limit=args.limit)
    table = Table(title=f"{page.total} versions")
    for col in ("version", "reason", "median ms", "author", "created", "config"):
        table.add_column(col)
    for v in page.items:
        table.add_row(str(v.version), v.reason, f"{(v.median_s or 0) * 1e3:.4f}", v.author or "",
                      v.created_at.isoformat(timespec="seconds"), json.dumps(v.config))
    console.print(table)
    return 0


def cmd_export(client: TunefarmClient, args) -> int:
    out = open(args.output, "w") if args.output else sys.stdout  # noqa: SIM115
    count = 0
    for line in client.export(op=args.op):
        out.write(line.rstrip("\n") + "\n")
        count += 1
    if args.output:
        out.close()
    print(f"exported {count} lines", file=sys.stderr)
    return 0


def cmd_import(client: TunefarmClient, args) -> int:
    result = client.import_lines(Path(args.input).read_text())
    console.print(result.model_dump())
    return 0
