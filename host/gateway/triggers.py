"""Server events become turns, by the server-event contract (docs/architecture.md, "Server events").

A resource that follows the contract holds JSON `{"items": [{"id", "text", "session"?, "delivery"?}, ...],
"ack": {"tool", "argument"}}`: each item runs as its own event, and is acknowledged through the ack tool only after
its turn finished and its reply was delivered. A plain-text resource wakes the main session with its text, as
before, but only when it changes, not when a server (re)connects.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Literal

import anyio
from anyio.abc import ObjectReceiveStream, TaskGroup
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ConfigDict, ValidationError

from ..events import NOWHERE, Event, EventKind, Principal, Target, system
from ..inbox.retries import Retries
from ..mcp.pool import McpPool, ServerEvent
from ..trust.origin import Origin

logger = logging.getLogger(__name__)

Submit = Callable[[Event], Awaitable[None]]
Fallback = Callable[[], Target | None]
Check = Callable[[str, str], str | None]
"""Why a (channel, conversation) cannot be delivered to, or None (`Gateway.target_problem`)."""


class Delivery(BaseModel):
    model_config = ConfigDict(extra="allow")

    mode: Literal["none", "announce", "webhook"] = "announce"
    channel: str | None = None
    to: str | None = None


class Item(BaseModel):
    """One queued item; servers may add fields of their own (job ids, times), which pass through as metadata."""

    model_config = ConfigDict(extra="allow")

    id: str
    text: str
    session: str = "main"
    delivery: Delivery = Delivery()
    kind: Literal["server", "cron", "subagent"] = "server"


class Ack(BaseModel):
    tool: str
    argument: str


class Batch(BaseModel):
    items: list[Item]
    ack: Ack | None = None


def parse_batch(text: str) -> Batch | None:
    """The resource's items when it follows the contract; None for plain text (or JSON of another shape)."""
    try:
        data: object = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict) or "items" not in data:
        return None
    try:
        return Batch.model_validate(data)
    except ValidationError as exc:
        logger.warning("ignoring a server-event resource that breaks the contract: %s", exc)
        return None


def session_for(server: str, item: Item, origin: Origin | None = None) -> str:
    """`main` by default; `isolated` gets a fresh session of its own, named after the item so a retry finds it.

    Work someone other than the owner set up never runs in `main`: it runs in the session it came from."""
    isolated = f"isolated-{server}-{item.id}"
    key = isolated if item.session == "isolated" else item.session
    if key == "main" and origin is not None and origin.principal != "owner":
        return origin.session if origin.session != "main" else isolated
    return key


def origin_of(server: str, item: Item) -> Origin | None:
    """The origin the server handed back with the item (`origin.py`); None when it recorded none. One that breaks
    the contract gets the fewest rights: a session of its own, no conversation to deliver to."""
    given = (item.model_extra or {}).get("origin")
    if given is None:
        return None
    try:
        return Origin.model_validate(given)
    except ValidationError:
        logger.warning("item %s has an origin that breaks the contract; it runs with no rights", item.id)
        return Origin(
            session=f"isolated-{server}-{item.id}", principal="system", label="someone the server did not name"
        )


def principal_of(server: str, item: Item, origin: Origin | None) -> Principal:
    """Who an item acts for: its creator's rights (the owner's when the server recorded none, since the owner chose
    the server); its text is data unless it is a job the owner set up."""
    what = {"cron": "a cron job", "subagent": "a sub-agent's result", "server": f"an event from the {server} server"}
    data = item.kind != "cron"
    if origin is None:
        return system(what[item.kind], "owner", data=data)
    return origin.principal_for(what[item.kind], data=True if origin.principal != "owner" else data)


class Relay:
    """Reads changed resources and submits their items, each once while it is queued or running.

    An item whose turn fails waits (`backoff_s`) before it is read again; one that used up its tries (`retries.py`)
    is set aside as a dead letter and acknowledged, so it can neither loop nor take the host down at every start."""

    def __init__(
        self,
        pool: McpPool,
        submit: Submit,
        fallback: Fallback,
        retries: Retries | None = None,
        later: TaskGroup | None = None,
        check: Check | None = None,
    ) -> None:
        self.pool = pool
        self.submit = submit
        self.fallback = fallback
        self.retries = retries
        self.check = check
        self._in_flight: set[tuple[str, str]] = set()
        self._later = later
        """Where the reads after a failed item's backoff wait; without it the next update reads it again."""

    async def handle(self, event: ServerEvent) -> None:
        try:
            text = await self.pool.handles[event.server].read_resource(event.uri)
        except (MCPError, TimeoutError) as exc:
            logger.warning("could not read %s from %s: %s", event.uri, event.server, exc)
            return
        batch = parse_batch(text)
        if batch is not None:
            for item in batch.items:
                await self._submit_item(event, item, batch.ack)
        elif text.strip() and not event.initial:
            target = self.fallback()
            metadata = {"server": event.server, "uri": event.uri}
            await self.submit(
                Event(
                    "server",
                    f"[event from {event.server}: {event.uri}]\n{text}",
                    target or NOWHERE,
                    metadata=metadata,
                    deliver=target is not None,
                    principal=system(f"an event from the {event.server} server", "owner", data=True),
                )
            )

    async def _submit_item(self, event: ServerEvent, item: Item, ack: Ack | None) -> None:
        key = (event.server, item.id)
        if key in self._in_flight:
            return
        self._in_flight.add(key)
        origin = origin_of(event.server, item)
        target = self._target(item, origin)
        tries = f"{event.server}:{item.id}"

        async def done(handled: bool, error: str | None) -> None:
            wait = 0.0
            try:
                if handled:
                    await self._ack(event.server, item.id, ack)
                    if self.retries is not None:
                        self.retries.succeeded(tries)
                elif self.retries is not None:
                    wait = self.retries.failed(tries, error or "its turn failed")
                    if self.retries.used_up(tries):
                        wait = 0.0
                        await self._set_aside(self.retries, tries, submitted, ack)
            finally:
                if wait and self._later is not None:  # read again after the wait, not at the next update
                    self._later.start_soon(self._again_after, wait, key, event)
                else:
                    self._in_flight.discard(key)  # only now: a read racing the ack must not submit the item again

        kind: EventKind = item.kind
        submitted = Event(
            kind,
            f"[event from {event.server}]\n{item.text}",
            target or NOWHERE,
            session_key=session_for(event.server, item, origin),
            metadata={**(item.model_extra or {}), "server": event.server, "uri": event.uri, "event_id": item.id},
            deliver=target is not None,
            on_done=done,
            principal=principal_of(event.server, item, origin),
        )
        problem = self.check(target.channel, target.conversation) if target and self.check else None
        if problem is not None:
            logger.warning("%s item %s cannot be delivered: %s", event.server, item.id, problem)
            submitted = replace(submitted, target=NOWHERE, deliver=False)
        if self.retries is not None:
            if problem is not None or self.retries.used_up(tries):  # no turn for what cannot end well
                self._in_flight.discard(key)
                await self._set_aside(self.retries, tries, submitted, ack, problem)
                return
            self.retries.started(tries)
        await self.submit(submitted)

    async def _set_aside(
        self, retries: Retries, tries: str, event: Event, ack: Ack | None, reason: str | None = None
    ) -> None:
        """The item ends as a dead letter, and its server is told it was handled: it never comes back by itself."""
        server = str(event.metadata["server"])
        await retries.set_aside(tries, "server-item", server, event, reason)
        await self._ack(server, str(event.metadata["event_id"]), ack)

    async def _ack(self, server: str, item_id: str, ack: Ack | None) -> None:
        if ack is None:
            return
        outcome = await self.pool.handles[server].call(ack.tool, {ack.argument: [item_id]})
        if outcome.is_error:
            logger.warning("%s did not acknowledge %s: %s", server, item_id, outcome.text)

    async def _again_after(self, wait: float, key: tuple[str, str], event: ServerEvent) -> None:
        await anyio.sleep(wait)
        self._in_flight.discard(key)
        await self.handle(ServerEvent(event.server, event.uri))

    def _target(self, item: Item, origin: Origin | None) -> Target | None:
        """Where the reply goes: the item's channel and conversation (both named), else the conversation the work
        was asked for in (when its channel runs here), else the owner's last one; work someone else set up goes back
        only to the conversation it came from."""
        delivery = item.delivery
        if delivery.mode != "announce":
            return None
        named = Target(delivery.channel, delivery.to) if delivery.channel and delivery.to else None
        if origin is not None and origin.principal != "owner":
            if named is not None and named != origin.target:
                logger.warning(
                    "item %s names another conversation than its origin's; it goes back to its origin", item.id
                )
            return origin.target
        if named is not None:
            return named
        asked_in = origin.target if origin is not None else None
        if asked_in is not None and (self.check is None or self.check(asked_in.channel, asked_in.conversation) is None):
            return asked_in
        target = self.fallback()
        if target is None:
            logger.warning("no conversation known to announce %s in; its reply stays in the transcript", item.id)
        return target


async def relay_server_events(
    events: ObjectReceiveStream[ServerEvent],
    pool: McpPool,
    submit: Submit,
    fallback: Fallback,
    retries: Retries | None = None,
    check: Check | None = None,
) -> None:
    """Turn every server event into submitted events until the stream closes."""
    async with events, anyio.create_task_group() as later:
        relay = Relay(pool, submit, fallback, retries, later, check)
        async for event in events:
            await relay.handle(event)
        later.cancel_scope.cancel()
