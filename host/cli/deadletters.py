"""`hermitcrab deadletters list | retry ID | drop ID`: the server items and messages that kept failing and were set
aside, so the owner can look at them, have one tried again, or let one go.

Works while `hermitcrab run` is running: both share `state/deadletters/` (see `host/deadletters.py`); the running
host resubmits a letter marked for a retry within a few seconds.
"""

from __future__ import annotations

import datetime as dt
import os
import sys
from collections.abc import Callable
from typing import Annotated

import typer

from ..config import home_dir
from ..inbox.deadletters import FOLDER, DeadLetters, Letter

deadletters = typer.Typer(
    help="See, retry or drop the items and messages that kept failing and were set aside.", no_args_is_help=True
)

Id = Annotated[str, typer.Argument(help="The dead letter's id, as `hermitcrab deadletters list` shows it.")]


def _store() -> DeadLetters:
    return DeadLetters(home_dir(os.environ) / "state" / FOLDER)


def _when(timestamp: float) -> str:
    return dt.datetime.fromtimestamp(timestamp).astimezone().strftime("%Y-%m-%d %H:%M")


def _what(letter: Letter) -> str:
    return f"{letter.id} ({letter.kind} from {letter.source})"


def line(letter: Letter) -> str:
    """One letter as `list` shows it: what, where, how often and when it failed, what it said, and why it ended."""
    tries = f"{letter.attempts} attempt{'s' if letter.attempts != 1 else ''}"
    asked = "; retry asked" if letter.retry else ""
    return (
        f"{letter.id}  {letter.kind} from {letter.source}, session {letter.session}, {tries}, "
        f"ended {_when(letter.created)}{asked}: {letter.summary!r}; reason: {letter.reason}"
    )


def _change(change: Callable[[DeadLetters, str], Letter], id: str) -> Letter:
    try:
        return change(_store(), id)
    except LookupError as exc:
        print(f"error: {exc.args[0]}; hermitcrab deadletters list shows them", file=sys.stderr)
        raise typer.Exit(1) from None


@deadletters.command("list")
def list_() -> None:
    """Show every dead letter, oldest first, one a line (or `none`)."""
    letters = _store().list()
    if not letters:
        typer.echo("none")
    for letter in letters:
        typer.echo(line(letter))


@deadletters.command()
def retry(id: Id) -> None:
    """Have the running `hermitcrab run` try the dead letter ID again (if it fails again, it comes back)."""
    letter = _change(DeadLetters.request_retry, id)
    typer.echo(f"will retry {_what(letter)}: the running `hermitcrab run` tries it again within a few seconds")


@deadletters.command()
def drop(id: Id) -> None:
    """Forget the dead letter ID: it is never tried again."""
    letter = _change(DeadLetters.drop, id)
    typer.echo(f"dropped {_what(letter)}: it will not be tried again")


def register(app: typer.Typer) -> None:
    app.add_typer(deadletters, name="deadletters")
