"""Wire the concrete pieces (providers, MCP pool, sessions) into an Agent for the CLI commands."""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx

from hermitcrab.util.private import make_private
from hermitcrab.util.redact import RedactingFilter

from ..config import Settings
from ..mcp.pool import McpPool, ServerEvent
from ..mcp.tool_cache import ToolCache
from ..providers import FailoverProvider, create
from ..session.transcript import SessionStore
from ..turn.agent import Agent
from ..turn.budget import Budget
from ..usage.prices import Prices


class _Brief(logging.Formatter):
    """One line per record on the terminal; tracebacks go to the log file only."""

    def format(self, record: logging.LogRecord) -> str:
        return f"{record.levelname} {record.name}: {record.getMessage()}"


def setup_logging(verbose: bool, settings: Settings) -> None:
    """Everything from INFO up, with tracebacks, to `state/logs/host.log`; warnings (or all, verbose) to stderr.

    Both mask credentials, from whichever logger: a remote server's URL may carry a key, a provider may echo one."""
    to_file = logging.FileHandler(settings.log_file("host.log"), encoding="utf-8")
    to_file.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    to_terminal = logging.StreamHandler(sys.stderr)
    to_terminal.setLevel(logging.INFO if verbose else logging.WARNING)
    to_terminal.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s") if verbose else _Brief())
    for handler in (to_file, to_terminal):
        handler.addFilter(RedactingFilter())
    logging.basicConfig(level=logging.INFO, handlers=[to_file, to_terminal], force=True)
    for chatty in ("httpx", "httpx2"):  # a line per request
        logging.getLogger(chatty).setLevel(logging.WARNING)


def make_home_private(settings: Settings) -> None:
    """Close to others what an earlier version or a wider umask left open: the home, its config.toml, and all of the
    workspace and the state (a note in host.log for each, not on the terminal: it is done, nothing to act on); what
    the host creates from here on is private already."""
    make_private(settings.home, recursive=False, level=logging.INFO)
    for path in (settings.config_file, settings.workspace, settings.state):
        make_private(path, level=logging.INFO)


TOOL_CACHE = "mcp_tools.json"
"""Under state/: each server's tool list as last seen, for a lazy start (`mcp/tool_cache.py`)."""


@asynccontextmanager
async def open_agent(settings: Settings, sessions: Path | None = None, *, lazy: bool = False) -> AsyncGenerator[Agent]:
    """Start the MCP servers and an HTTP client; close both when the block ends. Transcripts live in `sessions`
    (default `state/sessions`). `lazy` (a command that should answer soon: `ask`, `chat`) goes on before the servers
    whose tools the last run saw have started, offering those tools meanwhile."""
    profiles = settings.require_provider()
    send, receive = anyio.create_memory_object_stream[ServerEvent](max_buffer_size=1000)
    cache = ToolCache(settings.state / TOOL_CACHE) if lazy else None
    with settings.log_file("servers.log").open("a", encoding="utf-8") as errlog, send, receive:
        async with (
            httpx.AsyncClient() as client,
            McpPool(
                settings.servers,
                on_event=send.send,
                errlog=errlog,
                oauth_logins=settings.oauth_logins,
                tool_cache=cache,
            ) as pool,
        ):
            provider = FailoverProvider([create(profile, client) for profile in profiles])
            store = SessionStore(sessions or settings.state / "sessions")
            budget = Budget(settings.state / "usage", settings.budget, Prices(settings.providers))
            agent = Agent(settings, provider, pool, store, server_events=receive, budget=budget)
            yield agent
