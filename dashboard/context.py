"""What the dashboard's pages read and change: the running host's parts, handed over by `hermitcrab run`."""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import Request

from hermitcrab.channels.web import WebChannel
from hermitcrab.host.config import Settings
from hermitcrab.host.gateway.gateway import Gateway
from hermitcrab.host.turn.agent import Agent


@dataclass(frozen=True)
class Context:
    """The host a page works on: its settings, the gateway (submit an event, run a slash command), the agent (its MCP
    pool and session store) and the web channel the Chat page talks through."""

    settings: Settings
    gateway: Gateway
    agent: Agent
    web: WebChannel


def context(request: Request) -> Context:
    """The `Context` of the app serving `request`."""
    found: Context = request.app.state.context
    return found
