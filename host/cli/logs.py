"""`hermitcrab logs`: the host's log, or one server's lines of the servers' shared stderr log, and what follows.

The servers' log is their raw stderr (no log filter of ours sees it), so every line is shown with credential-shaped
values masked; host.log is masked as it is written."""

from __future__ import annotations

import re
import time
from collections import deque
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Annotated

import typer

from hermitcrab.util.redact import redact

from ..config import load_settings

FOLLOW_POLL_S = 0.5
ALL_SERVERS = "all"

Lines = Annotated[int, typer.Option("--lines", "-n", min=0, help="How many of the last lines to show.")]
Follow = Annotated[bool, typer.Option("--follow", "-f", help="Keep showing lines as they are written (Ctrl-C ends).")]
Server = Annotated[
    str | None,
    typer.Option(
        "--server",
        "-s",
        help=f"Show servers.log's lines of this server (its name in mcpServers), or of every server: {ALL_SERVERS}.",
    ),
]


def logs(server: Server = None, lines: Lines = 50, follow: Follow = False) -> None:
    """Show the end of state/logs/host.log (start, stop, a line per turn, warnings and errors), or of servers.log
    (each line headed by its time and server) with --server."""
    settings = load_settings()
    path = settings.log_file("servers.log" if server is not None else "host.log")
    shown = _of_server(server) if server is not None and server != ALL_SERVERS else _every_line
    if not path.exists():
        typer.echo(f"{path} does not exist yet: nothing has been logged", err=True)
        if not follow:
            return
    offset = 0
    if path.exists():
        with path.open("rb") as log:
            last = deque((line for line in _decoded(log) if shown(line)), maxlen=lines)
            offset = log.tell()
        _echo(last)
    while follow:
        time.sleep(FOLLOW_POLL_S)
        offset = _show_new(path, offset, shown)


def _every_line(line: str) -> bool:
    return True


def _of_server(name: str) -> Callable[[str], bool]:
    """servers.log's lines of `name`, as the pool heads them: `<time> <name>: ...`."""
    heading = re.compile(rf"^\S+ {re.escape(name)}: ")
    return lambda line: heading.match(line) is not None


def _decoded(log: Iterable[bytes]) -> Iterable[str]:
    return (raw.decode("utf-8", "replace").rstrip("\n") for raw in log)


def _echo(lines: Iterable[str]) -> None:
    for line in lines:
        typer.echo(redact(line))


def _show_new(path: Path, offset: int, shown: Callable[[str], bool]) -> int:
    """Show the whole lines written since `offset`; returns where the next look starts. A file that shrank (cleared
    or replaced) is read from its start; one that is gone waits to be made again."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return 0
    if size < offset:
        offset = 0
    with path.open("rb") as log:
        log.seek(offset)
        data = log.read(size - offset)
    whole = data[: data.rfind(b"\n") + 1]  # an unfinished last line waits for its end
    _echo(line for line in _decoded(whole.splitlines(keepends=True)) if shown(line))
    return offset + len(whole)


def register(app: typer.Typer) -> None:
    app.command()(logs)
