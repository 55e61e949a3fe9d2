"""`hermitcrab subagent`: one sub-agent run as the spawn server starts it: the task in, the final answer on stdout."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import anyio
import typer

from ..config import Settings, load_settings
from ..events import OWNER, Rights, system
from ..turn.subagent import run_subagent, subagent_settings
from .options import VerboseOption
from .runtime import open_agent, setup_logging


def subagent(
    run_dir: Annotated[Path, typer.Option("--run-dir", help="The run's folder; its transcript is kept under it.")],
    task: Annotated[
        str | None,
        typer.Argument(help="The task; the sub-agent sees nothing else (default: stdin, as spawn passes it)."),
    ] = None,
    session: Annotated[str, typer.Option(help="The run's session key (spawn passes subagent:<run id>).")] = "subagent",
    label: Annotated[str, typer.Option(help="The run's name, shown in its prompt.")] = "sub-agent",
    model: Annotated[str | None, typer.Option(help="Use this model instead of the configured ones.")] = None,
    hide_tool: Annotated[
        list[str] | None, typer.Option("--hide-tool", help="A tool the sub-agent must not see (repeatable).")
    ] = None,
    home: Annotated[Path | None, typer.Option(help="The hermitcrab home (default: $HERMITCRAB_HOME).")] = None,
    principal: Annotated[
        Rights, typer.Option(help="Whose rights the run has: spawn passes the rights of the turn that started it.")
    ] = "owner",
    verbose: VerboseOption = False,
) -> None:
    """Run one task to its end with the parent's MCP servers and print the final answer (for hermitcrab-spawn, which
    passes the task on stdin so that `ps` does not show it)."""
    text = sys.stdin.read() if task is None else task
    environ = {**os.environ, "HERMITCRAB_HOME": str(home)} if home is not None else None
    settings = subagent_settings(load_settings(environ), model, hide_tool or [])
    setup_logging(verbose, settings)
    reply = anyio.run(_run, settings, run_dir, text, session, label, principal)
    if reply:
        typer.echo(reply)


async def _run(settings: Settings, run_dir: Path, task: str, session: str, label: str, rights: Rights) -> str | None:
    principal = OWNER if rights == "owner" else system(f"a sub-agent started from a {rights} session", rights)
    async with open_agent(settings, sessions=run_dir / "sessions") as agent:
        return (await run_subagent(agent, task, session, label, principal)).reply


def register(app: typer.Typer) -> None:
    app.command()(subagent)
