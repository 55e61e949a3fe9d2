"""`hermitcrab chat`: an interactive conversation in the terminal."""

from __future__ import annotations

import anyio
import typer
from rich.console import Console

from hermitcrab.channels.terminal import TERMINAL, TerminalChannel

from ..agent import Agent
from ..config import Settings, load_settings
from ..events import OWNER, Event
from ..gateway import Gateway
from ..triggers import relay_server_events
from .options import McpConfigOption, VerboseOption
from .runtime import open_agent, setup_logging

console = Console()
EXIT_WORDS = frozenset({"/exit", "/quit", "exit", "quit"})


def chat(
    mcp_config: McpConfigOption = None,
    verbose: VerboseOption = False,
) -> None:
    """Chat with your agent in the main session (/help lists commands, /exit or Ctrl-D leaves)."""
    settings = load_settings(mcp_config=mcp_config)
    setup_logging(verbose, settings)
    anyio.run(_chat, settings)


async def _chat(settings: Settings) -> None:
    terminal = TerminalChannel(console)
    starting = console.status("Starting MCP servers…")
    starting.start()
    async with open_agent(settings) as agent:
        starting.stop()
        gateway = Gateway(
            agent, {"terminal": terminal}, ask_timeout_s=settings.agent.ask_timeout_s, on_tool=terminal.tool_activity
        )
        _banner(agent)
        async with anyio.create_task_group() as group:
            await group.start(gateway.serve)
            if agent.pool is not None and agent.server_events is not None:
                group.start_soon(relay_server_events, agent.server_events, agent.pool, gateway.submit, lambda: TERMINAL)
            while True:
                line = await _read_line("you> ")
                if line is None or line.strip() in EXIT_WORDS:
                    break
                if line.strip():
                    await _turn(gateway, Event("message", line.strip(), TERMINAL, principal=OWNER))
            group.cancel_scope.cancel()


async def _turn(gateway: Gateway, event: Event) -> None:
    """Queue the message and wait for its session to go idle, reading lines that answer the agent's questions."""
    await gateway.submit(event)
    while gateway.pending(event.session_key):
        if gateway.waiting_for_answer(event.target):
            answer = await _read_line("answer> ")
            await gateway.submit(Event("message", answer or "", event.target, principal=OWNER))
        await anyio.sleep(0.05)


async def _read_line(prompt: str) -> str | None:
    try:
        return await anyio.to_thread.run_sync(console.input, prompt, abandon_on_cancel=True)
    except EOFError:
        return None


def _banner(agent: Agent) -> None:
    pool = agent.pool
    handles = list(pool.handles.values()) if pool else []
    down = [h.config.name for h in handles if not h.ready]
    tools = len(pool.tool_specs()) if pool else 0
    console.print(
        f"[bold]hermitcrab[/bold] · {agent.provider.label} · {tools} tools from {len(handles) - len(down)} servers"
    )
    if down:
        console.print(f"[yellow]not running:[/yellow] {', '.join(down)} (see `hermitcrab doctor`)")
    console.print("[dim]/help for commands, /exit or Ctrl-D to leave[/dim]")


def register(app: typer.Typer) -> None:
    app.command()(chat)
