"""`tunefarm tokens create|list|revoke`: REST tokens (needs an admin token; only their hashes are stored)."""
from __future__ import annotations

from rich.table import Table

from tunefarm_cli.commands import CliError, console
from tunefarm_client.client import TunefarmClient


def cmd_tokens(client: TunefarmClient, args) -> int:
    if args.action == "create":
        made = client.create_token(args.name, args.scope)
        console.print(f"token {made.id} ({made.scope}, {made.name!r}), shown this once:")
        print(made.token)
    elif args.action == "list":
        table = Table(title="REST tokens")
        table.add_column("id", no_wrap=True)
        for col in ("name", "scope", "created", "revoked"):
            table.add_column(col)
        for t in client.tokens():
            table.add_row(t.id, t.name, t.scope, t.created_at.isoformat(timespec="seconds"),
                          "revoked" if t.revoked else "")
        console.print(table)
    else:
        if not args.id.strip():  # DELETE /v1/tokens/ is no route of the API
            raise CliError("a token id is required (`tunefarm tokens list` shows them)")
        revoked = client.revoke_token(args.id)
        console.print(f"token {revoked.id} ({revoked.scope}, {revoked.name!r}) revoked")
    return 0
