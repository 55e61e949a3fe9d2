"""The `cron://events` contract: the items a job leaves for the host, and telling listeners that items arrived.

Listeners are told in both protocol eras: 2026-era hosts through the `subscriptions/listen` bus, older ones
(desktop apps) through `notifications/resources/updated` after they called `resources/subscribe`.
"""

from __future__ import annotations

import json
import logging
import secrets
from datetime import UTC, datetime
from typing import Any

import anyio
from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.session import ServerSession
from mcp.server.subscriptions import ResourceUpdated, SubscriptionBus
from pydantic import BaseModel, ConfigDict, Field

from .jobs import Job, Session
from .schedule import zone

logger = logging.getLogger(__name__)
EVENTS_URI = "cron://events"
ACK = {"tool": "cron_ack", "argument": "event_ids"}


class Item(BaseModel):
    """One thing for the host to act on; it stays on `cron://events` until acknowledged with cron_ack."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(description="Unique: '<job_id>:<run_id>', or 'wake:<run_id>' for cron_wake.")
    text: str = Field(description="What the agent gets, under a line naming the job.")
    session: Session
    delivery: dict[str, str] = Field(description="mode, and channel/to when given.")
    job_id: str | None
    fired_at: datetime
    scheduled_at: datetime | None = None


def run_id(moment: datetime, manual: bool = False) -> str:
    """The run's id from its scheduled time (UTC, to the millisecond): the same tick always gets the same id."""
    utc = moment.astimezone(UTC)
    return utc.strftime("%Y%m%dT%H%M%S.") + f"{utc.microsecond // 1000:03d}Z" + ("-manual" if manual else "")


def job_item(job: Job, scheduled_at: datetime, fired_at: datetime, manual: bool) -> Item:
    """The item a firing of `job` leaves, its text headed by when it fired (in the job's zone) and why."""
    local = fired_at.astimezone(zone(job.schedule.tz))
    header = f'[cron job "{job.name}" {"run by hand" if manual else "fired"} at {local.isoformat(timespec="seconds")}'
    late = (fired_at - scheduled_at).total_seconds()
    if not manual and late >= 60:
        scheduled = scheduled_at.astimezone(local.tzinfo).isoformat(timespec="seconds")
        header += f", {round(late / 60)} min late: scheduled for {scheduled}"
    return Item(
        id=f"{job.id}:{run_id(scheduled_at, manual)}",
        text=f"{header}]\n{job.text}",
        session=job.session,
        delivery=job.delivery.model_dump(exclude_none=True, exclude={"url"}),
        job_id=job.id,
        fired_at=fired_at,
        scheduled_at=scheduled_at,
    )


def wake_item(text: str, now: datetime) -> Item:
    return Item(
        id=f"wake:{run_id(now)}-{secrets.token_hex(2)}",
        text=text,
        session="main",
        delivery={"mode": "announce"},
        job_id=None,
        fired_at=now,
    )


def render(items: list[Item]) -> str:
    """The resource's JSON: the items waiting, oldest first, and how to acknowledge them."""
    return json.dumps({"items": [item.model_dump(mode="json") for item in items], "ack": ACK}, ensure_ascii=False)


class Notifier:
    """Tells every listener of both protocol eras that `cron://events` changed, at most once per `min_gap_s`.

    A thousand jobs due in one second must not become a thousand notifications: a listener that falls behind has
    its stream ended by the SDK, so changes are coalesced and the resource read once for all of them.
    """

    def __init__(self, bus: SubscriptionBus, min_gap_s: float = 0.05) -> None:
        self._bus = bus
        self._min_gap_s = min_gap_s
        self._sessions: list[ServerSession] = []
        self._due = anyio.Event()

    def install(self, server: MCPServer[Any]) -> None:
        """Serve resources/subscribe and resources/unsubscribe, which the SDK leaves to the server."""
        lowlevel = server._lowlevel_server  # pyright: ignore[reportPrivateUsage]  # the SDK has no public seam for this
        lowlevel.add_request_handler("resources/subscribe", types.SubscribeRequestParams, self._subscribe)
        lowlevel.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, self._unsubscribe)

    async def _subscribe(
        self, ctx: ServerRequestContext[Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        if ctx.session not in self._sessions:
            self._sessions.append(ctx.session)
        return types.EmptyResult()

    async def _unsubscribe(
        self, ctx: ServerRequestContext[Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        if ctx.session in self._sessions:
            self._sessions.remove(ctx.session)
        return types.EmptyResult()

    def changed(self) -> None:
        """Items were added: listeners hear of it at once, or right after the previous notification's gap."""
        self._due.set()

    async def run(self) -> None:
        while True:
            await self._due.wait()
            self._due = anyio.Event()
            await self._bus.publish(ResourceUpdated(uri=EVENTS_URI))
            for session in list(self._sessions):
                try:
                    await session.send_resource_updated(EVENTS_URI)
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    self._sessions.remove(session)  # that host went away
            await anyio.sleep(self._min_gap_s)
