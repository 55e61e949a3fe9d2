"""The gateway: events in, one FIFO worker per session, each event's turn run and its reply sent.

What it leans on, each in a module of its own: where replies go (`outbox.py`), questions waiting for a person
(`questions.py`), the view of the conversation a turn's tools get (`conversation.py`), exactly-once bookkeeping
(`once.py`), slash commands (`commands.py`) and the owner's last conversation (`last_target.py`).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
from anyio.abc import ObjectReceiveStream, TaskGroup, TaskStatus
from anyio.streams.memory import MemoryObjectSendStream

from ..events import Channel, Delivered, Describes, Event, Idles, Streams, Target, TurnDone
from ..hooks.events import HookEvent, about
from ..inbox.log import Inbox
from ..inbox.retries import Retries
from ..session.routing import DmScope, routed
from ..text import shorten
from ..turn.agent import Agent
from ..turn.budget import Spent
from ..turn.failures import failure_text
from ..turn.stream import TurnStream
from .commands import find_command
from .conversation import BoundConversation
from .heartbeat import BeatTurn, is_heartbeat_ok
from .last_target import LastTarget
from .once import Once
from .outbox import Outbox
from .questions import Questions

logger = logging.getLogger(__name__)

_TOLD: dict[str, HookEvent] = {"cron": "cron:fired", "subagent": "subagent:done"}
"""The hook events of server items, told before their turn."""


class Gateway:
    """Routes each event to its session's queue; a question on screen takes its user's next message instead."""

    def __init__(
        self,
        agent: Agent,
        channels: Mapping[str, Channel],
        *,
        ask_timeout_s: float,
        last_target: LastTarget | None = None,
        dm_scope: DmScope = "main",
        inbox: Inbox | None = None,
        retries: Retries | None = None,
    ) -> None:
        self.agent = agent
        self.outbox = Outbox(channels, agent.hooks)
        self.questions = Questions(self.outbox, ask_timeout_s)
        self.once = Once(agent.session, inbox, retries)
        self.dm_scope: DmScope = dm_scope
        self.last_target = last_target
        self.failures = 0
        self._queues: dict[str, MemoryObjectSendStream[Event]] = {}
        self._group: TaskGroup | None = None
        self._pending: dict[str, int] = {}
        self._running = 0
        self._closing = False

    @property
    def channels(self) -> Mapping[str, Channel]:
        return self.outbox.channels

    @property
    def inbox(self) -> Inbox | None:
        return self.once.inbox

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Run session workers until cancelled; start it with `await group.start(gateway.serve)`."""
        async with anyio.create_task_group() as group:
            self._group = group
            task_status.started()
            await anyio.sleep_forever()

    async def submit(self, event: Event) -> None:
        """Accept an event: the answer to the question on screen, or work queued for its session (by `routing`).

        With an inbox, a channel's message is recorded before anything else, and one seen before is dropped."""
        event = routed(event, self.dm_scope)
        if not self.once.accept(event):
            return
        if self.questions.answer(event):
            self.once.end(event)
            return
        await self.enqueue(event)

    async def enqueue(self, event: Event) -> None:
        """Queue an accepted event for its session's worker (a restart's recovery re-queues this way)."""
        if self._group is None:
            raise RuntimeError("Gateway.serve() is not running")
        queue = self._queues.get(event.session_key)
        if queue is None:
            send, receive = anyio.create_memory_object_stream[Event](max_buffer_size=100)
            self._queues[event.session_key] = queue = send
            self._group.start_soon(self._worker, receive)
        self._pending[event.session_key] = self._pending.get(event.session_key, 0) + 1
        await queue.send(event)

    def add_channel(self, channel: Channel) -> None:
        """Plug in a channel that needs the gateway to exist first (it submits events to it)."""
        self.outbox.add(channel)

    def pending(self, session_key: str) -> int:
        """Events of this session queued or running."""
        return self._pending.get(session_key, 0)

    async def process(self, event: Event, *, deliver: bool = True) -> str | None:
        """Run one event to completion and deliver its reply (unless told not to); returns the reply.

        An event carrying `metadata["event_id"]` (a server's queue item) runs at most once per session: it is
        recorded after its reply was delivered, and a repeat delivery of the same id is skipped.
        """
        if self.once.handled_before(event):
            await _done(event, True)
            return None
        if not self.once.start(event):
            await self._set_aside(event)
            return None
        if self._remembered(event) and self.last_target is not None:
            self.last_target.remember(event.target)
        received = await self._received(event)
        if received is None:
            self.once.end(event)
            await _done(event, True)
            return None
        event = received
        command = find_command(event.text) if event.kind == "message" else None
        beat = BeatTurn.start(self.agent, event.session_key) if event.kind == "heartbeat" else None
        async with self._stream(event) as stream:
            reply = await command(self.agent, event) if command is not None else await self._turn(event, stream)
            if beat is not None:
                beat.end(reply, self.agent.now())
            await stream.settle()  # a channel's draft holds all the turn said before the reply comes to finish it
            due = deliver and event.deliver and not (event.kind == "heartbeat" and is_heartbeat_ok(reply or ""))
            if reply and due and await self.outbox.deliver(event.target, reply, event):  # False: a hook held it
                stream.emit(Delivered(event.target.channel, event.target.conversation))
        self.once.delivered(event)
        self.once.end(event)
        await _done(event, True)
        return reply

    async def _received(self, event: Event) -> Event | None:
        """The event as the hooks leave it: a message rewritten or dropped (None) by `message:received` hooks; a
        cron job's or sub-agent's outcome told to `cron:fired` and `subagent:done` ones before its turn."""
        hooks = self.agent.hooks
        if event.kind == "message":
            return await hooks.received(event) if hooks.on("message:received") else event
        happened = _TOLD.get(event.kind)
        if happened is not None:
            await hooks.fire(happened, {**about(event), "metadata": _plain(event.metadata)})
        return event

    def _stream(self, event: Event) -> TurnStream:
        """The events of the turn for `event`, for its channel if it streams there (`Streams`); the one place a hook
        or a web UI would subscribe too. A heartbeat's turn is not shown: its reply is mostly HEARTBEAT_OK, which is
        never delivered."""
        channel = self.channels.get(event.target.channel)
        if not isinstance(channel, Streams) or event.kind == "heartbeat" or self.agent.hooks.on("message:sending"):
            return TurnStream()  # with message:sending hooks, only the text they pass may be shown
        listener = channel.listener(event.target)
        return TurnStream([listener] if listener is not None else [])

    async def _turn(self, event: Event, stream: TurnStream) -> str | None:
        """The agent's turn for `event`, with the channel showing it is working meanwhile; one line in the log."""
        started = time.monotonic()
        channel = self.channels.get(event.target.channel)
        if channel is not None:
            await channel.typing(event.target)
        try:
            conversation = BoundConversation(self.outbox, self.questions, event.target, stream)
            display = channel.display if isinstance(channel, Describes) else None
            result = await self.agent.respond(event, conversation, stream, display)
        finally:
            if isinstance(channel, Idles):
                await channel.idle(event.target)
        stream.emit(TurnDone(result.reply, result.usage))
        logger.info(
            "turn: session %s, trigger %s, %d model calls, %d tokens in, %d out, %.1f s",
            event.session_key,
            event.kind,
            result.model_calls,
            result.usage.input_tokens,
            result.usage.output_tokens,
            time.monotonic() - started,
        )
        usage = {"input_tokens": result.usage.input_tokens, "output_tokens": result.usage.output_tokens}
        done = {"reply": result.reply, "usage": usage, "model_calls": result.model_calls}
        await self.agent.hooks.fire("turn:done", {**about(event), **done})
        if result.spent is not None:
            await self._tell_owner_once(result.spent)
        return result.reply

    async def _set_aside(self, event: Event) -> None:
        """A message whose turn took the host down too often: not run again; its sender and the owner are told."""
        letter = await self.once.set_aside(event)
        said = f"I could not answer “{shorten(event.text, 80)}”: it failed {letter.attempts} times, so I set it aside."
        await self.answer_once(event, f"{said} My owner can have me try again.")

    async def answer_once(self, event: Event, text: str) -> None:
        """Answer an accepted message with `text` (nothing when empty) and close it, without a turn."""
        try:
            if text:
                await self.deliver(event.target, text)
        except Exception:  # the channel is broken: the answer is in the transcript, and a retry could only double it
            logger.exception("could not deliver the answer to message %s", event.inbound_id)
        self.once.end(event)

    async def _tell_owner_once(self, spent: Spent) -> None:
        """A budget ran out: the owner hears of it once a day, in their last conversation."""
        owner = self.last_target.get() if self.last_target is not None else None
        budget = self.agent.budget
        if owner is None or budget is None or not budget.first_to_tell(spent, self.agent.now().date()):
            return
        try:
            await self.deliver(owner, spent.owner_note)
        except Exception:  # the note is a courtesy; the turn it came from was answered
            logger.warning("could not tell the owner that a budget is spent", exc_info=True)

    @staticmethod
    def _remembered(event: Event) -> bool:
        """Only the owner's own messages outside groups move where reminders and findings go: they are private."""
        return event.kind == "message" and event.principal.kind == "owner" and event.chat in (None, "direct")

    async def drain(self) -> None:
        """Stop starting queued events and wait for the running ones to finish (a clean shutdown)."""
        self._closing = True
        while self._running:
            await anyio.sleep(0.05)

    def waiting_for_answer(self, target: Target) -> bool:
        return self.questions.waiting(target)

    async def ask(self, target: Target, question: str, choices: Sequence[str] | None = None) -> str | None:
        """Put a question to `target.user` (`Questions.ask`)."""
        return await self.questions.ask(target, question, choices)

    def target_problem(self, channel: str, to: str) -> str | None:
        """Why (channel, to) cannot be delivered to, in words naming the field; None when it can be tried."""
        return self.outbox.target_problem(channel, to)

    async def deliver(self, target: Target, text: str) -> None:
        await self.outbox.deliver(target, text)

    async def _worker(self, queue: ObjectReceiveStream[Event]) -> None:
        async with queue:
            async for event in queue:
                if self._closing:
                    logger.info("shutting down: %s event for session %s not started", event.kind, event.session_key)
                    continue
                self._running += 1
                try:
                    await self.process(event)
                except Exception as exc:  # per-event guard: one failed turn must not stop the session
                    self.failures += 1
                    logger.exception("turn failed for session %s", event.session_key)
                    await self._report_failure(event, exc)
                    self.once.end(event)  # the sender was told what failed: that is its answer
                    await _done(event, False, f"{type(exc).__name__}: {exc}")
                finally:
                    self._running -= 1
                    self._pending[event.session_key] -= 1

    async def _report_failure(self, event: Event, exc: Exception) -> None:
        try:
            await self.deliver(event.target, failure_text(exc))
        except Exception:  # the channel itself is broken; the failure is already logged above
            logger.exception("could not report the failure to %s", event.target)


async def _done(event: Event, handled: bool, error: str | None = None) -> None:
    if event.on_done is None:
        return
    try:
        await event.on_done(handled, error)
    except Exception:  # e.g. the ack call failed: the item comes again and is then skipped as handled
        logger.warning("could not acknowledge a %s event", event.kind, exc_info=True)


def _plain(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """An event's metadata as JSON can carry it (a value that is not JSON is given as its text)."""
    return json.loads(json.dumps(metadata, default=str))
