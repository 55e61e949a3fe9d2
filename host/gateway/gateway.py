"""The gateway: events in, one FIFO worker per session, replies and questions out through channels."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field

import anyio
from anyio.abc import ObjectReceiveStream, TaskGroup, TaskStatus
from anyio.streams.memory import MemoryObjectSendStream

from ..events import Channel, Event, Target
from ..inbox.log import Inbox
from ..inbox.retries import Retries
from ..session.routing import DmScope, routed
from ..text import shorten
from ..turn.agent import Agent
from ..turn.budget import Spent
from ..turn.failures import failure_text
from ..turn.loop import Activity
from .commands import find_command
from .heartbeat import is_heartbeat_ok
from .last_target import LastTarget

logger = logging.getLogger(__name__)


@dataclass
class _Question:
    """A question on screen: only its user's next message in the conversation answers it; a question asked of
    nobody in particular (a cron job's or a webhook's approval) only an owner's."""

    user: str | None
    answered: anyio.Event = field(default_factory=anyio.Event)
    answer: str | None = None

    def accepts(self, event: Event) -> bool:
        if event.kind != "message":
            return False
        return event.principal.kind == "owner" if self.user is None else event.target.user == self.user


@dataclass
class _Asking:
    """A conversation's questions: the FIFO lock shows one at a time, in the order they were asked."""

    turn: anyio.Lock = field(default_factory=anyio.Lock)
    shown: _Question | None = None

    def answer(self, event: Event) -> bool:
        """Take `event` as the answer to the question on screen, if it is one."""
        if self.shown is None or not self.shown.accepts(event):
            return False
        self.settle(event.text)
        return True

    def settle(self, answer: str | None) -> None:
        """Answer the question on screen, if there is one, and take it off the screen."""
        question = self.shown
        if question is not None:
            self.shown = None
            question.answer = answer
            question.answered.set()


class BoundConversation:
    """What the host tools of one turn see: ask this event's user, send to this or another conversation."""

    def __init__(self, gateway: Gateway, target: Target) -> None:
        self.gateway = gateway
        self.target = target

    async def ask(self, question: str, choices: Sequence[str] | None = None) -> str | None:
        return await self.gateway.ask(self.target, question, choices)

    def target_problem(self, channel: str, to: str) -> str | None:
        """Why a later delivery to (channel, to) would fail, as far as this process can tell: a channel that does
        not run here (a job made in `chat` for Discord) may well run in `hermitcrab run`."""
        if channel not in self.gateway.channels:
            return None
        return self.gateway.target_problem(channel, to)

    async def send(self, text: str, channel: str | None = None, to: str | None = None) -> None:
        target = self.target
        if (channel or target.channel, to or target.conversation) != (target.channel, target.conversation):
            target = Target(channel or target.channel, to or target.conversation)
            problem = self.gateway.target_problem(target.channel, target.conversation)
            if problem is not None:
                raise ValueError(problem)
        await self.gateway.deliver(target, text)


class Gateway:
    """Routes each event to its session's queue; a question on screen takes its user's next message instead."""

    def __init__(
        self,
        agent: Agent,
        channels: Mapping[str, Channel],
        *,
        ask_timeout_s: float,
        on_tool: Activity | None = None,
        last_target: LastTarget | None = None,
        dm_scope: DmScope = "main",
        inbox: Inbox | None = None,
        retries: Retries | None = None,
    ) -> None:
        self.agent = agent
        self.inbox = inbox
        self.retries = retries
        self.dm_scope: DmScope = dm_scope
        self.last_target = last_target
        self.channels = dict(channels)
        self.ask_timeout_s = ask_timeout_s
        self.on_tool = on_tool
        self.failures = 0
        self._asking: dict[tuple[str, str], _Asking] = {}
        self._queues: dict[str, MemoryObjectSendStream[Event]] = {}
        self._group: TaskGroup | None = None
        self._pending: dict[str, int] = {}
        self._running = 0
        self._closing = False

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
        if self.inbox is not None and not self.inbox.accept(event):
            logger.info("dropped message %s: it was accepted before", event.inbound_id)
            return
        asking = self._asking.get(_conversation(event.target))
        if asking is not None and asking.answer(event):
            self._end(event)
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
        self.channels[channel.name] = channel

    def pending(self, session_key: str) -> int:
        """Events of this session queued or running."""
        return self._pending.get(session_key, 0)

    async def process(self, event: Event, *, deliver: bool = True) -> str | None:
        """Run one event to completion and deliver its reply (unless told not to); returns the reply.

        An event carrying `metadata["event_id"]` (a server's queue item) runs at most once per session: it is
        recorded after its reply was delivered, and a repeat delivery of the same id is skipped.
        """
        event_id = event.metadata.get("event_id")
        if event_id is not None and self.agent.session(event.session_key).handled(str(event_id)):
            logger.info("skipping event %s: already handled in session %s", event_id, event.session_key)
            await _done(event, True)
            return None
        key = event.inbound_id
        if key is not None and self.retries is not None:
            if self.retries.used_up(key):
                await self._set_aside(event, key)
                return None
            self.retries.started(key)
        if self._remembered(event) and self.last_target is not None:
            self.last_target.remember(event.target)
        command = find_command(event.text) if event.kind == "message" else None
        if command is not None:
            reply: str | None = await command(self.agent, event)
        else:
            channel = self.channels.get(event.target.channel)
            if channel is not None:
                await channel.typing(event.target)
            try:
                conversation = BoundConversation(self, event.target)
                display = getattr(channel, "display", None)  # what the channel can show, when it says
                result = await self.agent.respond(event, conversation, self.on_tool, display)
            finally:
                if (idle := getattr(channel, "idle", None)) is not None:
                    await idle(event.target)
            reply = result.reply
            if result.spent is not None:
                await self._tell_owner_once(result.spent)
        if reply and deliver and event.deliver and not (event.kind == "heartbeat" and is_heartbeat_ok(reply)):
            await self.deliver(event.target, reply)
        if event_id is not None:
            self.agent.session(event.session_key).transcript.append("event", event_id=str(event_id))
        self._end(event)
        await _done(event, True)
        return reply

    async def _set_aside(self, event: Event, key: str) -> None:
        """A message whose turn took the host down too often: not run again; its sender and the owner are told."""
        assert self.retries is not None
        letter = await self.retries.set_aside(key, "message", event.target.channel, event)
        said = f"I could not answer “{shorten(event.text, 80)}”: it failed {letter.attempts} times, so I set it aside."
        await self.answer_once(event, f"{said} My owner can have me try again.")

    async def answer_once(self, event: Event, text: str) -> None:
        """Answer an accepted message with `text` (nothing when empty) and close it, without a turn."""
        try:
            if text:
                await self.deliver(event.target, text)
        except Exception:  # the channel is broken: the answer is in the transcript, and a retry could only double it
            logger.exception("could not deliver the answer to message %s", event.inbound_id)
        self._end(event)

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

    def _end(self, event: Event) -> None:
        """The message is answered: it leaves the inbox, and its tries are forgotten."""
        if event.inbound_id is None:
            return
        if self.inbox is not None:
            self.inbox.end(event.inbound_id)
        if self.retries is not None:
            self.retries.succeeded(event.inbound_id)

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
        asking = self._asking.get(_conversation(target))
        return asking is not None and asking.shown is not None

    async def ask(self, target: Target, question: str, choices: Sequence[str] | None = None) -> str | None:
        """Put a question to `target.user`; their next message in the conversation (or the channel's prompt) answers.

        Questions of one conversation queue up: each is shown once the one before it was answered or expired, and
        its timeout starts then. A channel with its own prompt (`ask`, e.g. buttons) shows the question; a typed
        reply from the same user answers it too, and the prompt is then withdrawn (cancelled).
        """
        asking = self._asking.setdefault(_conversation(target), _Asking())
        channel = self.channels.get(target.channel)
        own_prompt = getattr(channel, "ask", None)
        async with asking.turn:
            pending = _Question(target.user)
            asking.shown = pending
            try:
                with anyio.move_on_after(self.ask_timeout_s):
                    async with anyio.create_task_group() as group:
                        if own_prompt is not None:
                            group.start_soon(_prompt, own_prompt, target, question, choices, asking)
                        else:
                            text = question if not choices else f"{question}\n" + "\n".join(f"  - {c}" for c in choices)
                            await self.deliver(target, text)
                        await pending.answered.wait()
                        group.cancel_scope.cancel()
            finally:
                if asking.shown is pending:
                    asking.shown = None
            return pending.answer

    def target_problem(self, channel: str, to: str) -> str | None:
        """Why (channel, to) cannot be delivered to, in words naming the field; None when it can be tried."""
        found = self.channels.get(channel)
        if found is None:
            running = ", ".join(sorted(self.channels)) or "none"
            return f"delivery.channel: no channel named {channel[:40]!r} runs here (running: {running})"
        check = getattr(found, "check_conversation", None)  # optional: a channel that cannot tell accepts all
        return check(to) if check is not None else None

    async def deliver(self, target: Target, text: str) -> None:
        channel = self.channels.get(target.channel)
        if channel is None:
            raise LookupError(f"no channel named {target.channel!r}")
        await channel.send(target, text)

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
                    self._end(event)  # the sender was told what failed: that is its answer
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


async def _prompt(
    prompt: Callable[[Target, str, Sequence[str] | None], Awaitable[str | None]],
    target: Target,
    question: str,
    choices: Sequence[str] | None,
    asking: _Asking,
) -> None:
    """The channel's own prompt answers the question on screen, unless a typed reply came first."""
    asking.settle(await prompt(target, question, choices))


def _conversation(target: Target) -> tuple[str, str]:
    return (target.channel, target.conversation)
