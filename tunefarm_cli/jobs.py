"""Job sub-commands: tune, follow, cancel, jobs; the progress bar, the stall warning and the Ctrl-C detach."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from compiler_core.workload import make_workload
from tunefarm_cli.commands import (
    CliError,
    console,
    parse_measure,
    parse_params,
    parse_strategy_options,
    resolve_device,
    warn,
)
from tunefarm_client.client import DEVICE_KINDS, FINAL_JOB_STATES, TunefarmClient, TunefarmError

INTERRUPTED = 130  # the shell's code for a command stopped by SIGINT


@dataclass
class StallWatch:
    """Warns once (stderr) when no agent that could run the job has been online for `after_s` seconds."""

    client: TunefarmClient
    after_s: float
    last_online: float = field(default_factory=time.monotonic)
    last_check: float = float("-inf")
    warned: bool = False

    def check(self, job) -> None:
        now = time.monotonic()
        if self.warned or job.state in FINAL_JOB_STATES or now - self.last_check < min(2.0, self.after_s):
            return
        self.last_check = now
        wanted = job.device_class or job.device_selector
        kind = wanted if wanted in DEVICE_KINDS else wanted.split("-", 1)[0]
        devices = self.client.devices(kind=kind if kind in DEVICE_KINDS else None, limit=1000).items
        if any(d.status == "online" and (wanted in DEVICE_KINDS or d.device_class == wanted) for d in devices):
            self.last_online = now
        elif now - self.last_online >= self.after_s:
            self.warned = True
            start = "cuda:0" if kind == "cuda" else "cpu"
            warn(f"warning: no {wanted} agent is online, so job {job.id} waits until one registers: start one "
                 f"(`tunefarm up --devices {start}` or `tunefarm agent --device {start} ...`), or Ctrl-C to detach")


def follow_job(client: TunefarmClient, job_id: str, poll_s: float = 0.5, stall_s: float | None = None,
               watch: StallWatch | None = None):
    """Progress bar until the job is done, failed or cancelled; returns the final job. With `stall_s`, raises
    TunefarmError when no trial completes for that long; `watch` warns when no agent for the job is online."""
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
            if watch is not None:
                watch.check(job)
            if p is not None:
                progress.update(task, completed=p.completed, best=_speed(p, job.phase))
            if job.state in FINAL_JOB_STATES:
                return job
            time.sleep(poll_s)
            job = client.job(job_id)


def _speed(p, phase: str) -> str:
    best = p.best
    speed = f"best {best.median_s * 1e3:.3f} ms" if best and best.median_s else ""
    if best and best.gflops:
        speed += f" ({best.gflops:.1f} GFLOP/s)"
    return speed + ("; re-measuring the top trials head to head" if phase == "final" else "")


def print_paired_ratios(result) -> None:
    """The job's re-measured speed-ups (JobResultPublic): only ratios timed in the same rounds are printed."""
    for label, paired in (("speed-up over the untuned default", result.speedup_vs_default),
                          (f"ratio to {result.reference}", result.speedup_vs_reference)):
        if paired is not None:
            console.print(f"{label}: [bold]{paired.ratio:.2f}x[/] (95% CI {paired.ci_low:.2f}-{paired.ci_high:.2f}, "
                          "paired rounds; >1: the head is faster)")
    if result.noisy:
        console.print("[yellow]the last comparison was noisy (contention or a wide interval): treat with care[/]")


def _interrupted(client: TunefarmClient, job_id: str, args, command: str) -> int:
    """Ctrl-C while a job is followed: detach (the job keeps running), or cancel it with --cancel-on-interrupt."""
    if getattr(args, "cancel_on_interrupt", False):
        job = client.cancel_job(job_id)
        warn(f"tunefarm {command}: cancelled job {job_id} ({job.progress.completed if job.progress else 0} "
             "measured trials stay)")
    else:
        warn(f"tunefarm {command}: detached from job {job_id}; it keeps running on the farm. Follow it: "
             f"`tunefarm follow {job_id}`; cancel it: `tunefarm cancel {job_id}`")
    return INTERRUPTED


def _follow_and_report(client: TunefarmClient, job_id: str, args, command: str) -> int:
    """Follow to the end and print the outcome; Ctrl-C detaches (or cancels, with --cancel-on-interrupt)."""
    try:
        job = follow_job(client, job_id, watch=StallWatch(client, args.stall_warning))
    except KeyboardInterrupt:
        return _interrupted(client, job_id, args, command)
    if job.state != "done":
        console.print(f"[red]job {job.id} {job.state}[/]{': ' + job.error if job.error else ''}")
        return 1
    start, started = job.start_model, ""
    if start is not None:
        whose = "its class" if start.device_class == job.device_class else start.device_class
        started = f", its search started from the cost model of {whose} v{start.version} ({start.trained_on} trials)"
    console.print(f"job {job.id} done on {job.device_class}{started}")
    if job.result is None:
        console.print("no head-to-head result (no verified trial to re-measure)")
        return 0
    console.print(f"head: {job.result.head_median_s * 1e3:.4f} ms {job.result.config}")
    print_paired_ratios(job.result)
    return 0


def _tune_device(client: TunefarmClient, device: str) -> str:
    """The class to submit: cpu|cuda resolved now (printed), or the kind itself while no agent of it registered."""
    if device in DEVICE_KINDS and not client.devices(kind=device, limit=1).total:
        console.print(f"no {device} agent has registered yet: the job runs on the first {device} class that does")
        return device
    return resolve_device(client, device)


def cmd_tune(client: TunefarmClient, args) -> int:
    measure = parse_measure(args.measure)  # a malformed one is refused before anything is resolved
    options = parse_strategy_options(args.strategy_options)
    device = _tune_device(client, args.device)
    try:
        job = client.create_job(args.op, parse_params(args.params), device, args.trials, strategy=args.strategy,
                                strategy_options=options, seed=args.seed, priority=args.priority, measure=measure)
    except TunefarmError as exc:  # the server's 422 on a strategy carries every strategy's options: say where to look
        if exc.status != 422 or not isinstance(exc.detail, dict) or "strategies" not in exc.detail:
            raise
        raise CliError(f"{exc.error} (`tunefarm ops {args.strategy}` lists its options)") from exc
    try:
        console.print(f"job {job.id}: {job.workload} on {device}, {job.trial_budget} trials, {job.strategy}")
    except KeyboardInterrupt:
        return _interrupted(client, job.id, args, "tune")
    if args.no_wait:
        console.print(f"follow it: `tunefarm follow {job.id}`")
        return 0
    return _follow_and_report(client, job.id, args, "tune")


def cmd_follow(client: TunefarmClient, args) -> int:
    job = client.job(args.job)
    console.print(f"job {job.id}: {job.workload} on {job.device_class or job.device_selector}, {job.state}")
    return _follow_and_report(client, job.id, args, "follow")


def cmd_cancel(client: TunefarmClient, args) -> int:
    job = client.cancel_job(args.job)
    done = job.progress.completed if job.progress else 0
    console.print(f"job {job.id} {job.state} ({done} measured trials stay)")
    return 0


def cmd_jobs(client: TunefarmClient, args) -> int:
    if (args.op is None) != (args.params is None):
        raise CliError("--op and --params go together (they name one workload)")
    workload = make_workload(args.op, parse_params(args.params)).key if args.op else None
    device = client.resolve_device(args.device) if args.device else None
    page = client.jobs(state=args.state, workload=workload, device_class=device, limit=args.limit)
    table = Table(title=f"{len(page.items)} of {page.total} jobs, newest first")
    table.add_column("id", no_wrap=True)
    for col in ("state", "workload", "device", "trials", "strategy", "created"):
        table.add_column(col)
    for j in page.items:
        table.add_row(j.id, j.state, j.workload, j.device_class or j.device_selector, str(j.trial_budget),
                      j.strategy, j.created_at.isoformat(timespec="seconds"))
    console.print(table)
    return 0
