"""A tool call's timeout measures the server, so its clock stops while the server waits on the user.

An exec approval may wait minutes for a person; the call's own timeout must not cut it, and a late "yes" must
still approve the command it was asked for. The clock travels in a context variable: the SDK runs elicitation
callbacks in tasks started from the call's own task, which inherit it.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from contextlib import contextmanager
from contextvars import ContextVar

import anyio


class CallClock:
    """A budget of seconds spent only while no question to the user is open."""

    def __init__(self, scope: anyio.CancelScope, budget_s: float) -> None:
        self._scope = scope
        self._budget_s = budget_s
        self._pauses = 0

    def pause(self) -> None:
        if not self._pauses:
            self._budget_s = max(0.0, self._scope.deadline - anyio.current_time())
            self._scope.deadline = math.inf
        self._pauses += 1

    def resume(self) -> None:
        self._pauses -= 1
        if not self._pauses:
            self._scope.deadline = anyio.current_time() + self._budget_s


_clock: ContextVar[CallClock | None] = ContextVar("call_clock", default=None)


@contextmanager
def call_clock(timeout_s: float) -> Generator[anyio.CancelScope]:
    """Like `anyio.move_on_after`, but paused by `waiting_on_user` inside the block; check `cancelled_caught`."""
    with anyio.CancelScope(deadline=anyio.current_time() + timeout_s) as scope:
        token = _clock.set(CallClock(scope, timeout_s))
        try:
            yield scope
        finally:
            _clock.reset(token)


@contextmanager
def waiting_on_user() -> Generator[None]:
    """Stop the clock of the call being served while the block is open; a no-op outside a call."""
    clock = _clock.get()
    if clock is None:
        yield
        return
    clock.pause()
    try:
        yield
    finally:
        clock.resume()
