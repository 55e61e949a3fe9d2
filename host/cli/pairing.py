"""`hermitcrab pairing list | approve CODE | revoke USER`: let a stranger who DMed the bot in, or out again.

Works while `hermitcrab run` is running: both share `state/pairing/` (see `channels/pairing.py`).
"""

from __future__ import annotations

import datetime as dt
import os
import sys
from typing import Annotated

import typer

from hermitcrab.channels.pairing import PairingStore

from ..config import home_dir

pairing = typer.Typer(help="Approve or revoke the people who may DM your assistant.", no_args_is_help=True)


def _store() -> PairingStore:
    return PairingStore(home_dir(os.environ) / "state" / "pairing")


def _when(timestamp: float) -> str:
    return dt.datetime.fromtimestamp(timestamp).astimezone().strftime("%Y-%m-%d %H:%M")


@pairing.command("list")
def list_() -> None:
    """Show the codes waiting for approval and the users already let in."""
    store = _store()
    pending, allowed = store.pending(), store.allowed()
    typer.echo("waiting:" if pending else "waiting: none")
    for request in pending:
        typer.echo(
            f"  {request.code}  {request.channel} user {request.user} ({request.name}) since {_when(request.created)}"
        )
    typer.echo("allowed:" if allowed else "allowed: none")
    for user in allowed:
        typer.echo(f"  {user.channel} user {user.user} ({user.name}) since {_when(user.approved)}")


@pairing.command()
def approve(code: Annotated[str, typer.Argument(help="The 8-character code the bot sent them.")]) -> None:
    """Let the user who got CODE talk to your assistant."""
    try:
        user = _store().approve(code)
    except LookupError as exc:
        print(f"error: {exc.args[0]}; `hermitcrab pairing list` shows the waiting codes", file=sys.stderr)
        raise typer.Exit(1) from None
    typer.echo(f"approved {user.channel} user {user.user} ({user.name})")


@pairing.command()
def revoke(user: Annotated[str, typer.Argument(help="The user's id (or name) as `pairing list` shows it.")]) -> None:
    """Stop USER from talking to your assistant (their next DM gets a new pairing code)."""
    gone = _store().revoke(user)
    if not gone:
        print(f"error: no allowed user {user!r}; `hermitcrab pairing list` shows them", file=sys.stderr)
        raise typer.Exit(1)
    for removed in gone:
        typer.echo(f"revoked {removed.channel} user {removed.user} ({removed.name})")


def register(app: typer.Typer) -> None:
    app.add_typer(pairing, name="pairing")
