"""Farm sub-commands: ops, devices, export, import."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from rich.table import Table

from tunefarm_cli.commands import CliError, console, warn
from tunefarm_client.client import TunefarmClient


def _param_text(p: dict) -> str:
    """'M=1..N', 'dtype=float32|float16 (float32)', 'expr'."""
    text = p["name"]
    if p.get("choices"):
        text += "=" + "|".join(str(c) for c in p["choices"])
    elif p.get("min") is not None:
        text += f"={p['min']}..{p['max']}"
    return text + (f" ({p['default']})" if p.get("default") is not None else "")


def _option_bounds(o: dict) -> str:
    if "choices" in o:
        return "|".join(map(str, o["choices"]))
    low, high = o.get("minimum"), o.get("maximum")
    if low is None and high is None:
        return ""
    return f"{'' if low is None else low}..{'' if high is None else high}"


def _show_strategy(name: str, strategy: dict) -> None:
    console.print(f"[bold]{name}[/] (search strategy): {strategy['doc']}")
    if not strategy["options"]:
        console.print("no options")
        return
    table = Table(title=f"options of {name} (`tunefarm tune --strategy {name} --strategy-options NAME=VALUE,...`)")
    for col in ("option", "type", "default", "allowed", "meaning"):
        table.add_column(col)
    for option, o in strategy["options"].items():  # a default of None: the strategy decides (the meaning says how)
        table.add_row(option, o["type"], json.dumps(o["default"]), _option_bounds(o), o["doc"])
    console.print(table)


def cmd_ops(client: TunefarmClient, args) -> int:
    page = client.ops(limit=1000)
    if args.name is not None and args.name in page.strategies:
        _show_strategy(args.name, page.strategies[args.name])
        return 0
    if args.name is not None:
        op = next((o for o in page.items if o.name == args.name), None)
        if op is None:
            raise CliError(f"unknown op or strategy {args.name!r}; the farm tunes: "
                           f"{', '.join(o.name for o in page.items)}; strategies: {', '.join(page.strategies)}")
        console.print(f"[bold]{op.name}[/]: {op.doc}")
        console.print(f"params: {', '.join(_param_text(p) for p in op.params)}")
        console.print(f"spaces (knobs for {op.example_workload}):")
        console.print_json(json.dumps(op.spaces))
        return 0
    table = Table(title=f"{page.total} ops (`tunefarm ops NAME` shows one's knobs)")
    for col in ("op", "params", "doc"):
        table.add_column(col)
    for op in page.items:
        table.add_row(op.name, ", ".join(_param_text(p) for p in op.params), op.doc.split("\n")[0])
    console.print(table)
    console.print(f"strategies: {', '.join(page.strategies)} (`tunefarm ops STRATEGY` shows one's options)")
    return 0


def cmd_devices(client: TunefarmClient, args) -> int:
    page = client.devices(kind=args.kind, limit=1000)
    table = Table(title=f"{page.total} device classes")
    table.add_column("device class", no_wrap=True)
    for col in ("kind", "status", "agents online", "model"):
        table.add_column(col)
    for d in page.items:
        table.add_row(d.device_class, d.kind, d.status, str(d.active_agents), str(d.fingerprint.get("model", "")))
    console.print(table)
    return 0


def cmd_export(client: TunefarmClient, args) -> int:
    try:
        out = open(args.output, "w") if args.output else sys.stdout  # noqa: SIM115
    except OSError as exc:
        raise CliError(f"cannot write {args.output}: {exc.strerror}") from None
    count = 0
    try:
        for line in client.export(op=args.op):
            out.write(line.rstrip("\n") + "\n")
            count += 1
    finally:
        if args.output:
            out.close()
    warn(f"exported {count} lines{' to ' + args.output if args.output else ''}")
    return 0


def cmd_import(client: TunefarmClient, args) -> int:
    try:
        text = Path(args.input).read_text()
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise CliError(f"cannot read {args.input}: {why} (give a file written by `tunefarm export`)") from None
    result = client.import_lines(text)
    console.print(f"imported {result.trials} trials ({result.duplicate_trials} already here), {result.versions} "
                  f"schedule versions, {result.workloads} workloads, {result.devices} device classes")
    return 0
