"""Wire the concrete pieces (providers, MCP pool, sessions) into an Agent for the CLI commands."""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

import anyio
import httpx

from ..agent import Agent
from ..config import Settings
from ..pool import McpPool, ServerEvent
from ..providers import FailoverProvider, create
from ..session import SessionStore


def setup_logging(verbose: bool) -> None:
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.INFO if verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("httpx").setLevel(logging.WARNING)


@asynccontextmanager
async def open_agent(settings: Settings) -> AsyncGenerator[Agent]:
    """Start the MCP servers and an HTTP client; close both when the block ends."""
    profiles = settings.require_provider()
    logs = settings.state / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    send, receive = anyio.create_memory_object_stream[ServerEvent](max_buffer_size=1000)
    with (logs / "servers.log").open("a", encoding="utf-8") as errlog, send, receive:
        async with httpx.AsyncClient() as client, McpPool(settings.servers, on_event=send.send, errlog=errlog) as pool:
            provider = FailoverProvider([create(profile, client) for profile in profiles])
            agent = Agent(settings, provider, pool, SessionStore(settings.state / "sessions"), server_events=receive)
            yield agent
