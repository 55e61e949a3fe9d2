"""A turn as a stream of events, and the fan-out that hands each event to every subscriber.

Channels (a Discord draft, the webhook's SSE), the terminal and, later, a web UI or hooks all want to see the turn as
it happens. The loop emits typed events into one `TurnStream` per turn; each subscriber reads them from a queue of
its own, so a slow one (a Discord edit waiting out a rate limit) never holds up the model's stream or the others, and
one that raises is logged and dropped rather than breaking the turn.

The event types are part of the contract with channels, so they live in `host/events.py`.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable
from types import TracebackType
from typing import Self

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ..events import Listener, TurnEvent

logger = logging.getLogger(__name__)


class TurnStream:
    """Fans each event out to its listeners, each fed from its own unbounded queue by a task of its own.

    Use it as `async with TurnStream(listeners) as stream:`; `emit` never waits. `settle` waits until every listener
    has taken what was emitted so far (the gateway settles before it delivers the reply, so a channel's draft holds
    the whole answer when the reply comes to replace it). Leaving the block lets every listener finish too, unless
    the block raised, which cancels them. An event is a few words, so a queue behind a slow listener stays small.
    """

    def __init__(self, listeners: Iterable[Listener] = ()) -> None:
        self._listeners = list(listeners)
        self._queues: list[MemoryObjectSendStream[TurnEvent | anyio.Event]] = []
        self._group: TaskGroup | None = None

    @property
    def listening(self) -> bool:
        """Whether anyone subscribes: without a listener the model need not stream at all."""
        return bool(self._listeners)

    def emit(self, event: TurnEvent) -> None:
        """Queue `event` for every listener (nothing outside the `async with` block)."""
        for queue in self._queues:
            queue.send_nowait(event)

    async def settle(self) -> None:
        """Wait until each listener has handled (or, dropped, skipped) every event emitted before this call."""
        marks = [anyio.Event() for _ in self._queues]
        for queue, mark in zip(self._queues, marks, strict=True):
            queue.send_nowait(mark)
        for mark in marks:
            await mark.wait()

    async def __aenter__(self) -> Self:
        if not self._listeners:
            return self
        self._group = group = anyio.create_task_group()
        await group.__aenter__()
        for listener in self._listeners:
            send, receive = anyio.create_memory_object_stream[TurnEvent | anyio.Event](max_buffer_size=math.inf)
            self._queues.append(send)
            group.start_soon(_pump, listener, receive)
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        for queue in self._queues:
            queue.close()
        self._queues.clear()
        group, self._group = self._group, None
        if group is None:
            return
        if error is None or isinstance(error, Exception):
            if error is not None:
                group.cancel_scope.cancel()
            await group.__aexit__(None, None, None)  # the block's own error propagates as it is, never grouped
        else:  # a cancellation or an interrupt: the task group must see it to unwind its scope
            await group.__aexit__(kind, error, traceback)


async def _pump(listener: Listener, queue: MemoryObjectReceiveStream[TurnEvent | anyio.Event]) -> None:
    """Hand the queue's events to `listener`, and once it has raised, skip them (still passing `settle`'s marks)."""
    broken = False
    async with queue:
        async for item in queue:
            if isinstance(item, anyio.Event):
                item.set()
            elif not broken:
                try:
                    await listener(item)
                except Exception:  # a broken subscriber loses the rest of the turn; the turn goes on
                    logger.exception("a turn listener failed on %s; it gets no more events", type(item).__name__)
                    broken = True
