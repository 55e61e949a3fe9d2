"""The `hermitcrab` command: a thin typer layer over the host library, one command group per module."""

from __future__ import annotations

import logging
import sys
from importlib.metadata import version
from typing import Annotated, NoReturn, TypeVar, cast

import typer

from hermitcrab.util.private import keep_private
from hermitcrab.util.redact import redact

from ..errors import HermitcrabError
from ..turn.failures import LOG_HINT
from . import (
    ask,
    bundle,
    chat,
    dashboard,
    deadletters,
    doctor,
    hooks,
    init,
    logs,
    mcp_config,
    mcp_login,
    pairing,
    run,
    service,
    skills,
    subagent,
    usage,
)

logger = logging.getLogger("hermitcrab")
_E = TypeVar("_E", bound=BaseException)

app = typer.Typer(
    help="hermitcrab: a self-hosted personal AI assistant living in swappable MCP servers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Click's own help layout: typer's rich one shows every flag as taking a `<bool>` value (typer 0.29, click 8.5).
    rich_markup_mode=None,
)
for module in (
    run,
    chat,
    ask,
    init,
    doctor,
    logs,
    mcp_config,
    mcp_login,
    bundle,
    pairing,
    deadletters,
    service,
    subagent,
    skills,
    hooks,
    usage,
    dashboard,
):
    module.register(app)


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"hermitcrab {version('hermitcrab')} (mcp {version('mcp')})")
        raise typer.Exit


@app.callback()
def _root(
    show_version: Annotated[
        bool, typer.Option("--version", callback=_show_version, is_eager=True, help="Show the version and exit.")
    ] = False,
) -> None:
    """hermitcrab: a self-hosted personal AI assistant living in swappable MCP servers."""


def main() -> None:
    """Console-script entry: errors become one clear message on stderr and exit code 1, never a traceback.

    A domain error says what is wrong in its own words; anything else is a bug, logged in full to the host log.
    What any command creates, and the servers it starts, is the owner's alone (0600 files in 0700 folders).
    """
    keep_private()
    try:
        app()
    except Exception as exc:
        if _leaf(exc, KeyboardInterrupt) is not None:
            _interrupted()
        logger.info("the command failed", exc_info=exc)  # the log file keeps the traceback; stderr gets one line
        error = _leaf(exc, HermitcrabError)
        if error is None:
            error = f"internal error ({type(exc).__name__}); {LOG_HINT}"
        print(f"error: {redact(str(error))}", file=sys.stderr)  # a provider may have echoed its key
        sys.exit(1)
    except KeyboardInterrupt:
        _interrupted()


def _interrupted() -> NoReturn:
    print("interrupted", file=sys.stderr)
    sys.exit(130)


def _leaf(exc: BaseException, kind: type[_E]) -> _E | None:
    """The first `kind` error in `exc`, looking inside the exception groups that task groups raise."""
    if isinstance(exc, kind):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        group = cast(BaseExceptionGroup[BaseException], exc)
        return next((found for inner in group.exceptions if (found := _leaf(inner, kind)) is not None), None)
    return None
