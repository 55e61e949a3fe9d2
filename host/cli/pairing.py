"""`hermitcrab pairing list | approve CODE | deny CODE | revoke USER`: let a stranger who DMed the bot in, turn them
down, or let them out again.

Works while `hermitcrab run` is running: both share `state/pairing/` (see `channels/pairing.py`); the running bot
tells an approved user they are in.
"""

from __future__ import annotations

import datetime as dt
import os
import sys
import time
from collections.abc import Iterable
from typing import Annotated

import typer

from hermitcrab.channels.pairing import Allowed, Denied, PairingStore, Request

from ..config import home_dir

pairing = typer.Typer(help="Approve, deny or revoke the people who may DM your assistant.", no_args_is_help=True)

Code = Annotated[str, typer.Argument(help="The 8-character code the bot sent them.")]


def _store() -> PairingStore:
    return PairingStore(home_dir(os.environ) / "state" / "pairing")


def _when(timestamp: float) -> str:
    return dt.datetime.fromtimestamp(timestamp).astimezone().strftime("%Y-%m-%d %H:%M")


def _who(user: Request | Allowed | Denied) -> str:
    return f"{user.channel} user {user.user} ({user.name})"


def _left(until: float) -> str:
    """Time left as the owner reads it: '24 h', '23 h 59 min', '4 min'."""
    hours, minutes = divmod(max(1, round((until - time.time()) / 60)), 60)
    return " ".join(part for part in (f"{hours} h" if hours else "", f"{minutes} min" if minutes else "") if part)


def _section(title: str, lines: Iterable[str]) -> None:
    shown = list(lines)
    typer.echo(f"{title}:" if shown else f"{title}: none")
    for line in shown:
        typer.echo(f"  {line}")


def _fail(message: str) -> typer.Exit:
    print(f"error: {message}; `hermitcrab pairing list` shows the waiting codes", file=sys.stderr)
    return typer.Exit(1)


@pairing.command("list")
def list_() -> None:
    """Show the codes waiting for approval, the users let in, and the users denied (ignored for a day)."""
    store = _store()
    _section("waiting", (f"{r.code}  {_who(r)} since {_when(r.created)}" for r in store.pending()))
    _section("allowed", (f"{_who(a)} since {_when(a.approved)}" for a in store.allowed()))
    _section(
        "denied",
        (
            f"{_who(d)} on {_when(d.denied)}: ignored {_left(d.until)} more (until {_when(d.until)})"
            for d in store.denied()
        ),
    )


@pairing.command()
def approve(code: Code) -> None:
    """Let the user who got CODE talk to your assistant (the running bot tells them by DM)."""
    try:
        approval = _store().approve(code)
    except LookupError as exc:
        raise _fail(exc.args[0]) from None
    allowed = approval.allowed
    if approval.already:
        typer.echo(f"already approved: {_who(allowed)} on {_when(allowed.approved)}")
    else:
        typer.echo(f"approved {_who(allowed)}")


@pairing.command()
def deny(code: Code) -> None:
    """Turn down the user who got CODE: the code is dropped and their DMs are ignored for a day."""
    try:
        denial = _store().deny(code)
    except LookupError as exc:
        raise _fail(exc.args[0]) from None
    denied = denial.denied
    if denial.already:
        typer.echo(f"already denied: {_who(denied)} on {_when(denied.denied)}")
    else:
        typer.echo(f"denied {_who(denied)}: their DMs are ignored until {_when(denied.until)}")


@pairing.command()
def revoke(user: Annotated[str, typer.Argument(help="The user's id (or name) as `pairing list` shows it.")]) -> None:
    """Stop USER from talking to your assistant (their next DM gets a new pairing code)."""
    gone = _store().revoke(user)
    if not gone:
        print(f"error: no allowed user {user!r}; `hermitcrab pairing list` shows them", file=sys.stderr)
        raise typer.Exit(1)
    for removed in gone:
        typer.echo(f"revoked {_who(removed)}")


def register(app: typer.Typer) -> None:
    app.add_typer(pairing, name="pairing")
