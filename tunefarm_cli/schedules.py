"""Best-schedule sub-commands: best, history, diff, pin, rollback (--device cpu|cuda resolves to the class)."""
from __future__ import annotations

import json

from rich.table import Table

from tunefarm_cli.commands import CliError, console, parse_params, resolve_device
from tunefarm_client.client import TunefarmClient, TunefarmError


def _key(client: TunefarmClient, args) -> tuple[str, dict, str]:
    return args.op, parse_params(args.params), resolve_device(client, args.device)


def cmd_best(client: TunefarmClient, args) -> int:
    try:
        best = client.best(*_key(client, args), version=args.version, as_of=args.as_of, include_source=args.source,
                           predict=args.predict, enqueue=args.enqueue)
    except TunefarmError as exc:  # no prediction, but --enqueue queued the key's job: the server's line says which
        job = exc.detail.get("enqueued_job") if isinstance(exc.detail, dict) else None
        if job is None:
            raise
        raise CliError(f"{exc.error} (`tunefarm follow {job['id']}` shows it)") from exc
    if best.predicted:
        model = best.model
        console.print(f"{best.workload} on {best.device_class}: no tuned schedule; PREDICTED by the class's cost model "
                      f"v{model.version} (trained on {model.trained_on} trials of {model.workloads} workloads), best "
                      f"of {best.candidates_scored} candidates, never measured")
        if best.enqueued_job is not None:
            console.print(f"tuning job {best.enqueued_job.id} ({best.enqueued_job.state}) covers this key")
        console.print_json(json.dumps(best.config))
        if args.source and best.source:
            print(best.source)
        return 0
    rate = f"{best.gflops:.1f} GFLOP/s" if best.gflops else f"{best.gbps or 0:.1f} GB/s"
    pinned = " \\[pinned]" if best.head_pinned else ""  # escaped: rich would read [pinned] as markup
    console.print(f"{best.workload} on {best.device_class}: version {best.version} ({best.reason}), "
                  f"{(best.median_s or 0) * 1e3:.4f} ms, {rate}{pinned}")
    console.print_json(json.dumps(best.config))
    if args.source and best.source:
        print(best.source)
    return 0


def cmd_history(client: TunefarmClient, args) -> int:
    op, params, device = _key(client, args)
    page = client.history(op, params, device, limit=args.limit)
    table = Table(title=f"{page.total} versions on {device}")
    for col in ("version", "reason", "median ms", "author", "created", "config"):
        table.add_column(col)
    for v in page.items:
        table.add_row(str(v.version), v.reason + (" (pinned)" if v.pinned else ""), f"{(v.median_s or 0) * 1e3:.4f}",
                      v.author or "", v.created_at.isoformat(timespec="seconds"), json.dumps(v.config))
    console.print(table)
    return 0


def cmd_diff(client: TunefarmClient, args) -> int:
    op, params, device = _key(client, args)
    diff = client.diff(op, params, device, args.v1, args.v2)
    ratio = f", median ratio {diff.median_ratio:.3f} (<1: v{args.v2} is faster)" if diff.median_ratio else ""
    console.print(f"{diff.workload} on {diff.device_class}: v{diff.from_version} -> v{diff.to_version}{ratio}")
    if not diff.changed:
        console.print("same config")
    for knob, (before, after) in sorted(diff.changed.items()):
        console.print(f"  {knob}: {json.dumps(before)} -> {json.dumps(after)}")
    return 0


def _print_version(verb: str, v) -> None:
    console.print(f"{verb}: {v.workload} on {v.device_class} is now version {v.version} ({v.reason}"
                  f"{', pinned' if v.pinned else ''}), config {json.dumps(v.config)}")


def cmd_pin(client: TunefarmClient, args) -> int:
    op, params, device = _key(client, args)
    made = client.pin(op, params, device, args.version, message=args.message, trial_id=args.trial)
    what = f"pinned trial {args.trial}" if args.trial else f"pinned version {args.version}"
    _print_version("unpinned" if args.unpin else what, made)
    return 0


def cmd_rollback(client: TunefarmClient, args) -> int:
    op, params, device = _key(client, args)
    made = client.rollback(op, params, device, args.to_version, message=args.message)
    _print_version(f"rolled back to version {args.to_version}", made)
    return 0
