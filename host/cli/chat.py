"""`hermitcrab chat`: an interactive conversation in the terminal.

On a terminal the lines are read with prompt_toolkit (`Keyboard`: editing, history kept under state/, completion of
slash commands, multi-line messages); from a pipe, line by line. Ctrl-C stops the running turn (the transcript records
it as cancelled) and gives the prompt back; at a question a server event's turn asks meanwhile, it cancels only that
question (the turn goes on without an answer); Ctrl-C at an empty prompt, Ctrl-D or /exit leaves.
"""

from __future__ import annotations

import logging
import signal
import sys
from collections.abc import AsyncIterator, Callable, Generator
from contextlib import contextmanager

import anyio
import typer
from rich.console import Console

from hermitcrab.channels.terminal import TERMINAL, Keyboard, LineReader, Lines, TerminalChannel

from ..config import Settings, load_settings
from ..events import OWNER, Event
from ..gateway.commands import COMMANDS, find_command
from ..gateway.gateway import Gateway
from ..gateway.triggers import relay_server_events
from ..session.routing import routed
from ..skills.invocation import prompt_usage
from ..turn.agent import Agent
from ..turn.failures import failure_text
from .options import McpConfigOption, VerboseOption
from .runtime import make_home_private, open_agent, setup_logging

logger = logging.getLogger(__name__)
console = Console()
EXIT_WORDS = frozenset({"/exit", "/quit", "exit", "quit"})
CANCELLED = "(cancelled by the user)"
POLL_S = 0.05
HISTORY_FILE = "chat_history.jsonl"
"""Under state/: the messages typed into `chat`, for Up to recall them in the next run."""


def chat(
    mcp_config: McpConfigOption = None,
    verbose: VerboseOption = False,
) -> None:
    """Chat with your agent in the main session (/help lists commands, Ctrl-C stops a turn, /exit or Ctrl-D leaves)."""
    settings = load_settings(mcp_config=mcp_config)
    setup_logging(verbose, settings)
    make_home_private(settings)
    anyio.run(_chat, settings)


async def _chat(settings: Settings) -> None:
    starting = console.status("Starting MCP servers…")
    starting.start()
    async with open_agent(settings, lazy=True) as agent:
        starting.stop()
        ctrl_c = _CtrlC()
        terminal = TerminalChannel(console, _lines(settings, agent, ctrl_c))
        gateway = Gateway(agent, {"terminal": terminal}, ask_timeout_s=settings.agent.ask_timeout_s)
        turns = _Turns(gateway, terminal)
        _banner(agent)
        async with anyio.create_task_group() as group:
            await group.start(gateway.serve)
            if agent.pool is not None and agent.server_events is not None:
                group.start_soon(relay_server_events, agent.server_events, agent.pool, turns.submit, lambda: TERMINAL)
            with anyio.open_signal_receiver(signal.SIGINT) as interrupts:
                group.start_soon(ctrl_c.watch, interrupts)
                await _converse(turns, ctrl_c)
            group.cancel_scope.cancel()


def _lines(settings: Settings, agent: Agent, ctrl_c: _CtrlC) -> Lines:
    """The keyboard when chat runs on a terminal, else the lines of the pipe it reads."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return LineReader(console)
    keyboard = Keyboard(settings.state / HISTORY_FILE, lambda: _slash_words(agent), ctrl_c.interrupt)
    ctrl_c.asking = lambda: keyboard.asking
    return keyboard


def _slash_words(agent: Agent) -> dict[str, str]:
    """What a message may start with, for completion: the commands, the skills a user runs, the servers' prompts."""
    words = dict.fromkeys(COMMANDS, "") | dict.fromkeys(("/exit", "/quit"), "leave the chat")
    words |= {f"/{skill.name}": skill.description for skill in agent.skills().skills if skill.user_invocable}
    for handle in agent.pool.handles.values() if agent.pool else ():
        for prompt in handle.prompts:
            words[f"/{handle.config.name}:{prompt.name}"] = prompt_usage(handle.config.name, prompt)
    return words


async def _converse(turns: _Turns, ctrl_c: _CtrlC) -> None:
    """Prompt, run the turn, again, until the user leaves."""
    while True:
        with ctrl_c.stops(at_prompt=True) as prompt:
            line = await turns.terminal.lines.read("you> ")
        if prompt.cancelled_caught:
            console.print()  # the shell's prompt then starts on a line of its own
            return
        if line is None or line.strip() in EXIT_WORDS:
            return
        if not line.strip():
            continue
        with ctrl_c.stops() as turn:
            await turns.run(Event("message", line.strip(), TERMINAL, principal=OWNER))
        if turn.cancelled_caught:
            turns.terminal.note(CANCELLED)


class _CtrlC:
    """What Ctrl-C stops right now: the running turn, or the prompt (which leaves); at a question asked while the
    prompt waits (a reminder's turn, not the user's), only that question, which then has no answer."""

    def __init__(self) -> None:
        self._scope: anyio.CancelScope | None = None
        self._at_prompt = False
        self.asking: Callable[[], bool] = lambda: False
        """Whether a question has the screen (the keyboard's; a pipe asks none that Ctrl-C could reach)."""

    async def watch(self, signals: AsyncIterator[int]) -> None:
        async for _ in signals:
            self.interrupt()

    def interrupt(self) -> None:
        """Ctrl-C: the terminal's SIGINT while a turn runs, a key at a prompt (the keyboard then gives the question
        no answer by itself)."""
        if self._scope is not None and not (self._at_prompt and self.asking()):
            self._scope.cancel()

    @contextmanager
    def stops(self, *, at_prompt: bool = False) -> Generator[anyio.CancelScope]:
        """A block that the next Ctrl-C cancels; `at_prompt`: the message prompt's, which a question may take over."""
        with anyio.CancelScope() as scope:
            self._scope, self._at_prompt = scope, at_prompt
            try:
                yield scope
            finally:
                self._scope, self._at_prompt = None, False


class _Turns:
    """The user's turns run in chat's own task, so that Ctrl-C can cancel one; server events still go through the
    gateway's queue. Each waits for the other (a server event is queued only between the user's turns, a user's turn
    starts once the events queued before it are done), so a session never runs two turns at once."""

    def __init__(self, gateway: Gateway, terminal: TerminalChannel) -> None:
        self.gateway = gateway
        self.terminal = terminal
        self._lock = anyio.Lock()

    async def submit(self, event: Event) -> None:
        """Queue a server event, once no turn of the user's runs."""
        async with self._lock:
            await self.gateway.submit(event)

    async def run(self, event: Event) -> None:
        """Run the user's message to its end (the terminal asks the agent's questions meanwhile); a cancelled turn
        is recorded as such, so the model and `/status` see where it stopped."""
        event = routed(event, self.gateway.dm_scope)
        async with self._lock:
            while self.gateway.pending(event.session_key):
                await anyio.sleep(POLL_S)
            try:
                await self._process(event)
            except anyio.get_cancelled_exc_class():
                if find_command(event.text) is None:  # a command (/status, /compact) writes no turn to record
                    self.gateway.agent.session(event.session_key).transcript.append("assistant", text=CANCELLED)
                raise

    async def _process(self, event: Event) -> None:
        try:
            await self.gateway.process(event)
        except Exception as exc:  # one failed turn must not end the chat
            logger.exception("turn failed for session %s", event.session_key)
            await self.terminal.send(event.target, failure_text(exc))


def _banner(agent: Agent) -> None:
    pool = agent.pool
    handles = list(pool.handles.values()) if pool else []
    starting = [h.config.name for h in handles if not h.attempted.is_set()]  # a lazy start goes on behind the banner
    down = [h.config.name for h in handles if h.attempted.is_set() and not h.ready]
    tools = len(pool.tool_specs()) if pool else 0
    console.print(
        f"[bold]hermitcrab[/bold] · {agent.provider.label} · {tools} tools from {len(handles) - len(down)} servers"
    )
    if starting:
        console.print(f"[dim]still starting: {', '.join(starting)}[/dim]")
    if down:
        console.print(f"[yellow]not running:[/yellow] {', '.join(down)} (see `hermitcrab doctor`)")
    console.print("[dim]/help for commands, Ctrl-C stops a turn, /exit or Ctrl-D to leave[/dim]")


def register(app: typer.Typer) -> None:
    app.command()(chat)
