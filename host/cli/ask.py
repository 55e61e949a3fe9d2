"""`hermitcrab ask "message"`: one turn in the main session; only the final reply goes to stdout (with `--stream`,
written out as the model writes it; tool lines go to stderr)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Annotated

import anyio
import typer

from hermitcrab.channels.terminal import Written, chosen, numbered
from hermitcrab.util.text import escape_controls

from ..config import Settings, load_settings
from ..events import OWNER, Event, Listener, MessageDone, Target, TextDelta, ToolStarted, TurnEvent
from ..gateway.gateway import Gateway
from .options import McpConfigOption, VerboseOption
from .runtime import open_agent, setup_logging

CLI = Target(channel="cli", conversation="cli", user="cli")


class CliChannel:
    """Messages and questions go to stderr so stdout carries only the final reply; answers come from stdin.

    Streaming, the reply's words go to stdout as they come; `finish` then writes what the streamed text lacks."""

    name = "cli"
    display = "a command line: the reply is printed on stdout, where a person or a script reads it; plain text"

    def __init__(self, *, stream: bool = False) -> None:
        self.stream = stream
        self.written = Written()

    def listener(self, target: Target) -> Listener | None:
        return self._show if self.stream else None

    async def _show(self, event: TurnEvent) -> None:
        if isinstance(event, TextDelta):
            self.written.add(event.text)
            print(event.text, end="", flush=True)
        elif isinstance(event, MessageDone) and event.tool_calls:
            if self.written.text:
                print(flush=True)  # words before a tool call are said, but are not the reply
            self.written.clear()
        elif isinstance(event, ToolStarted):
            print(escape_controls(f"  ↳ {event.name} {event.arguments}"), file=sys.stderr, flush=True)

    def finish(self, reply: str | None) -> str | None:
        """What is left to print of `reply` (all of it when nothing streamed); None when nothing is."""
        rest = self.written.rest(reply or "")
        return reply if rest is None else rest

    async def send(self, target: Target, text: str) -> None:
        """A message the agent sends mid-turn, on stderr with its control characters escaped, as a question's."""
        print(escape_controls(text), file=sys.stderr, flush=True)

    async def typing(self, target: Target) -> None:
        return None

    async def ask(self, target: Target, question: str, choices: Sequence[str] | None = None) -> str | None:
        """The question on stderr, its choices numbered as `chat` numbers them, and the next line of stdin: a
        choice's number is that choice, an empty line is an answer (a form field's default), the end of stdin none.
        The question's control characters are escaped as the choices' are: a server's ESC sequence could otherwise
        clear the line and print a forged prompt."""
        options = list(choices or ())
        print("\n".join([f"? {escape_controls(question)}", *numbered(options)]), file=sys.stderr, flush=True)
        line = await anyio.to_thread.run_sync(sys.stdin.readline, abandon_on_cancel=True)
        return chosen(options, line.strip()) if line else None


def ask(
    message: Annotated[str, typer.Argument(help="What to ask the agent.")],
    mcp_config: McpConfigOption = None,
    session: Annotated[str, typer.Option(help="Session key to run the turn in.")] = "main",
    verbose: VerboseOption = False,
    stream: Annotated[bool, typer.Option(help="Write the reply to stdout as the model writes it.")] = False,
) -> None:
    """Run one turn and print the agent's final reply (nothing when it replies NO_REPLY)."""
    settings = load_settings(mcp_config=mcp_config)
    setup_logging(verbose, settings)
    channel = CliChannel(stream=stream)
    anyio.run(_ask, settings, channel, Event("message", message, CLI, session_key=session, principal=OWNER))


async def _ask(settings: Settings, channel: CliChannel, event: Event) -> None:
    """The turn, its reply printed before the servers are closed: one still on its lazy start takes a while to."""
    async with open_agent(settings, lazy=True) as agent:
        gateway = Gateway(agent, {"cli": channel}, ask_timeout_s=settings.agent.ask_timeout_s)
        rest = channel.finish(await gateway.process(event, deliver=False))
        if rest is not None:
            typer.echo(rest)


def register(app: typer.Typer) -> None:
    app.command()(ask)
