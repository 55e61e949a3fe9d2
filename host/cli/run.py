"""`hermitcrab run`: the long-running host: gateway, MCP pool and its server events, channels, heartbeat, webhooks."""

from __future__ import annotations

import errno
import logging
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator
from typing import Annotated

import anyio
import typer

from hermitcrab.channels.web import WebChannel
from hermitcrab.channels.webhook import WebhookChannel
from hermitcrab.dashboard.context import Context
from hermitcrab.dashboard.serve import check_public, serve_dashboard
from hermitcrab.util.outbound import Outbound

from ..config import Settings, load_settings
from ..errors import ConfigError
from ..events import Target
from ..gateway.gateway import Gateway
from ..gateway.heartbeat import Heartbeat
from ..gateway.last_target import LastTarget
from ..gateway.recovery import recover
from ..gateway.triggers import relay_server_events
from ..inbox.lock import holding_home
from ..inbox.log import Inbox
from ..inbox.retries import Retries, owner_announcer
from ..turn.agent import Agent
from .options import McpConfigOption, VerboseOption
from .runtime import make_home_private, open_agent, setup_logging

logger = logging.getLogger(__name__)


PublicOption = Annotated[
    bool,
    typer.Option("--public", help="Let the dashboard listen beyond loopback ([dashboard] listen), behind a TLS proxy."),
]


def run(mcp_config: McpConfigOption = None, verbose: VerboseOption = False, public: PublicOption = False) -> None:
    """Serve until Ctrl-C or SIGTERM: server events (cron, spawn), the heartbeat, webhooks, the dashboard and chat
    channels.

    On a stop signal the running turn finishes; queued server events stay with their servers for the next start.
    Refused at once, before any server starts, when another `run` holds the home or the webhook's port is taken.
    """
    settings = load_settings(mcp_config=mcp_config)
    setup_logging(verbose, settings)
    make_home_private(settings)
    with holding_home(settings.home, settings.state):
        check_listens(settings, public)
        logger.info("run started: pid %d, home %s", os.getpid(), settings.home)
        try:
            anyio.run(serve, settings, public)
        finally:
            logger.info("run stopped: pid %d", os.getpid())


def check_listens(settings: Settings, public: bool) -> None:
    """Refuse at once, before any server starts, an endpoint that could not listen (or should not, beyond loopback)."""
    if settings.webhook.token:
        check_listen(settings.webhook.host, settings.webhook.port, "webhook")
    if settings.dashboard.enabled:
        check_public(settings, public)
        check_listen(settings.dashboard.host, settings.dashboard.port, "dashboard")


async def serve(settings: Settings, public: bool) -> None:
    async with open_agent(settings) as agent:
        last = LastTarget(settings.state / "last_target.json")
        retries = Retries(settings.state, settings.agent.max_attempts, settings.agent.retry_wait_s)
        gateway = Gateway(
            agent,
            {},
            ask_timeout_s=settings.agent.ask_timeout_s,
            last_target=last,
            dm_scope=settings.dm_scope,
            inbox=Inbox(settings.state / "inbox" / "inbox.jsonl"),
            retries=retries,
        )

        def fallback() -> Target | None:
            """The user's last conversation, when its channel runs in this process."""
            target = last.get()
            return target if target is not None and target.channel in gateway.channels else None

        heartbeat = Heartbeat(
            settings.heartbeat,
            settings.workspace,
            gateway.submit,
            busy=lambda: gateway.pending("main") > 0,
            target=fallback,
            now=agent.now,
        )
        hooks = settings.webhook
        webhook = (
            WebhookChannel(
                hooks.token,
                gateway.submit,
                fallback,
                owner=hooks.owner,
                check=gateway.target_problem,
                outbound=Outbound(settings.outbound.allow, how_to_allow="add it to [outbound] allow in config.toml"),
            )
            if hooks.token
            else None
        )
        async with anyio.create_task_group() as group:
            await group.start(gateway.serve)
            check_listens(settings, public)  # again: starting the servers took a while
            if webhook is not None:
                gateway.add_channel(webhook)
                await group.start(webhook.serve, hooks.host, hooks.port)
            dashboard = None
            if settings.dashboard.enabled:
                web = WebChannel(gateway.submit, settings.state)
                gateway.add_channel(web)
                dashboard = await group.start(serve_dashboard, Context(settings, gateway, agent, web), public)
            if token := settings.discord.token:
                from . import discord_bot  # here, not above: only a `run` with a bot token pays for discord.py

                await discord_bot.start(token, settings, gateway, group)
            if telegram_token := settings.telegram.token:
                from . import telegram_bot  # only a `run` with a Telegram token pays for python-telegram-bot

                await telegram_bot.start(telegram_token, settings, gateway, group)
            if agent.pool is not None and agent.server_events is not None:
                relay = (agent.server_events, agent.pool, gateway.submit, fallback, retries, gateway.target_problem)
                group.start_soon(relay_server_events, *relay)
            group.start_soon(heartbeat.run)
            retries.announce = owner_announcer(gateway.deliver, fallback)
            group.start_soon(retries.serve, gateway.enqueue)
            group.start_soon(recover, gateway)
            _ready(agent, settings, webhook is not None, dashboard)
            agent.hooks.attach(submit=gateway.submit)
            group.start_soon(agent.hooks.fire, "gateway:start", _started(agent, gateway))
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for signum in signals:
                    logger.warning("%s: finishing the running turn, then stopping", signal.Signals(signum).name)
                    break
                if webhook is not None:
                    webhook.close()
                async with anyio.create_task_group() as stopping:
                    stopping.start_soon(_stop_now_on_second_signal, signals, stopping.cancel_scope)
                    await gateway.drain()
                    await agent.hooks.fire("gateway:stop", _started(agent, gateway))
                    stopping.cancel_scope.cancel()
            group.cancel_scope.cancel()


async def _stop_now_on_second_signal(signals: AsyncIterator[int], drain: anyio.CancelScope) -> None:
    async for _ in signals:
        logger.warning("second stop signal: not waiting for the running turn")
        drain.cancel()
        return


def check_listen(host: str, port: int, table: str) -> None:
    """A ConfigError naming the setting when the `[table]` endpoint could not listen on `host:port`.

    Checked by binding it ourselves: uvicorn reports a taken port by logging its own error and exiting the process
    from inside the event loop, which ends `run` with a traceback instead of one line."""
    try:
        addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ConfigError(
            _cannot_listen(table, host, port, exc.strerror or str(exc), "an address of this machine")
        ) from None
    for family, kind, proto, _, address in addresses:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: TIME_WAIT is no conflict
            if family == socket.AF_INET6:
                probe.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                probe.bind(address)
            except OSError as exc:
                if exc.errno == errno.EADDRINUSE:
                    raise ConfigError(_cannot_listen(table, host, port, "address in use", "a free port")) from None
                reason = (exc.strerror or str(exc)).lower()
                raise ConfigError(_cannot_listen(table, host, port, reason, "an address of this machine")) from None


def _cannot_listen(table: str, host: str, port: int, reason: str, wanted: str) -> str:
    return (
        f"the {table} cannot listen on {host}:{port} ({reason}): "
        f"set [{table}] listen or HERMITCRAB_{table.upper()}_LISTEN to {wanted}"
    )


def _started(agent: Agent, gateway: Gateway) -> dict[str, list[str]]:
    """The gateway:start and gateway:stop payload: what runs."""
    handles = list(agent.pool.handles.values()) if agent.pool else []
    return {"channels": sorted(gateway.channels), "servers": sorted(h.config.name for h in handles if h.ready)}


def _ready(agent: Agent, settings: Settings, webhook: bool, dashboard: str | None) -> None:
    handles = list(agent.pool.handles.values()) if agent.pool else []
    up = [h.config.name for h in handles if h.ready]
    down = [h.config.name for h in handles if not h.ready]
    beat = settings.heartbeat.every_minutes
    parts = [
        f"hermitcrab is running · {agent.provider.label}",
        f"servers up: {', '.join(up) or 'none'}" + (f" (down: {', '.join(down)})" if down else ""),
        f"webhook: http://{settings.webhook.host}:{settings.webhook.port}" if webhook else "webhook: off (no token)",
        f"heartbeat: every {beat:g} min" if beat > 0 else "heartbeat: off",
        "discord: on" if settings.discord.token else "discord: off (no token)",
        "telegram: on" if settings.telegram.token else "telegram: off (no token)",
        f"dashboard: {dashboard} (`hermitcrab dashboard` prints a login link)" if dashboard else "dashboard: off",
    ]
    print(" · ".join(parts), file=sys.stderr, flush=True)


def register(app: typer.Typer) -> None:
    app.command()(run)
