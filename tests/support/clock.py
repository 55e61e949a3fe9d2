"""A clock for the cron server that moves only when the test says: `advance` it, and whatever waited for that moment
runs, without the test sleeping real seconds."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import anyio


class ManualClock:
    """Starts at the real time (so times written by hand, and file stamps, still make sense) and stays there."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime.now(UTC)
        self._moved = anyio.Event()

    def now(self) -> datetime:
        return self._now

    def later(self, seconds: float) -> str:
        """`seconds` from now on this clock, as an ISO time for a job's schedule."""
        return (self._now + timedelta(seconds=seconds)).isoformat()

    async def advance(self, seconds: float) -> None:
        """Move the time on; every wait that is over by then returns (let the loop run once so they can start)."""
        self._now += timedelta(seconds=seconds)
        self._moved.set()
        self._moved = anyio.Event()
        await anyio.sleep(0)

    async def wait(self, seconds: float, wake: anyio.Event) -> None:
        until = None if math.isinf(seconds) else self._now + timedelta(seconds=seconds)
        while not wake.is_set() and (until is None or self._now < until):
            moved = self._moved
            async with anyio.create_task_group() as group:

                async def return_when(event: anyio.Event) -> None:
                    await event.wait()
                    group.cancel_scope.cancel()

                group.start_soon(return_when, wake)
                group.start_soon(return_when, moved)
