"""A tool call's timeout measures the server, so its clock stops while the server waits on the user.

An exec approval may wait minutes for a person; the call's own timeout must not cut it, and a late "yes" must
still approve the command it was asked for. The clock travels in a context variable of the call's own task; the
elicitation handler takes it from there (`running_clock`) when the call starts, since a server of the older protocol
era asks in a request of its own, served by a task of the connection's.
"""

from __future__ import annotations

import math
from collections.abc import Generator, Iterable
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
    """Like `anyio.move_on_after`, but paused by `waiting_on_user`; check `cancelled_caught`."""
    with anyio.CancelScope(deadline=anyio.current_time() + timeout_s) as scope:
        token = _clock.set(CallClock(scope, timeout_s))
        try:
            yield scope
        finally:
            _clock.reset(token)


def running_clock() -> CallClock | None:
    """The clock of the call this task is making, if it is making one."""
    return _clock.get()


@contextmanager
def waiting_on_user(clocks: Iterable[CallClock]) -> Generator[None]:
    """Stop the clocks of the calls a question is asked for while the block is open."""
    stopped = list(clocks)
    for clock in stopped:
        clock.pause()
    try:
        yield
    finally:
        for clock in stopped:
            clock.resume()
