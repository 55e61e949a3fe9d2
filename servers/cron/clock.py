"""The time the cron server goes by: what time it is, and waiting for a moment unless woken first.

The server's engine, outbox and tools read the time only through a `Clock`, so a test can hand them one it moves
itself (tests/support/clock.py) instead of waiting seconds of real time for a job to come due.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol

import anyio


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, in UTC."""
        ...

    async def wait(self, seconds: float, wake: anyio.Event) -> None:
        """Return once `seconds` have passed on this clock (math.inf: never), or as soon as `wake` is set."""
        ...


class RealClock:
    """The system's wall clock; waits are timed by the event loop."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    async def wait(self, seconds: float, wake: anyio.Event) -> None:
        with anyio.move_on_after(seconds):
            await wake.wait()


REAL_CLOCK = RealClock()
