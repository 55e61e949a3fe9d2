"""Trying again after a failure, written once on stamina: each place names what is worth another try and its backoff,
stamina counts the tries and waits, and `stamina.set_testing` takes the waits out of tests.

hermitcrab says itself, in words, what it tries again; stamina's own log line (a warning about `<context block>`) is
switched off, as it would only repeat that.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import stamina
from stamina.instrumentation import set_on_retry_hooks

logger = logging.getLogger(__name__)

T = TypeVar("T")

Retryable = type[Exception] | tuple[type[Exception], ...] | Callable[[Exception], bool | float]
"""What is worth another try: exception types, or a hook answering for one exception, True (after the backoff's
wait), False (raise it), or the seconds to wait instead (a server's Retry-After)."""

set_on_retry_hooks(())


@dataclass(frozen=True)
class Backoff:
    """`attempts` tries in all (None: until one works); the first wait `first_s`, each next one `factor` times longer
    but at most `max_s`, plus up to `jitter_s` at random, so clients that failed together do not return together."""

    attempts: int | None
    first_s: float
    factor: float = 2.0
    max_s: float = math.inf
    jitter_s: float = 0.0


async def retrying(
    what: str, call: Callable[[], Awaitable[T]], on: Retryable, backoff: Backoff, *, level: int = logging.INFO
) -> T:
    """`call()`'s result, tried again after each failure `on` accepts until `backoff` runs out, when that failure is
    raised; each failure tried again is logged at `level` as `what` failed."""
    async for attempt in stamina.retry_context(
        on=_logged(what, on, backoff.attempts, level),
        attempts=backoff.attempts,
        timeout=None,
        wait_initial=backoff.first_s,
        wait_max=backoff.max_s,
        wait_jitter=backoff.jitter_s,
        wait_exp_base=backoff.factor,
    ):
        with attempt:
            return await call()
    raise AssertionError("unreachable: the last failure is raised")


def _logged(what: str, on: Retryable, attempts: int | None, level: int) -> Callable[[Exception], bool | float]:
    """`on` as stamina's backoff hook, logging each failure that another try follows."""
    failures = 0

    def hook(error: Exception) -> bool | float:
        nonlocal failures
        failures += 1
        answer = isinstance(error, on) if isinstance(on, type | tuple) else on(error)
        if answer is not False and (attempts is None or failures < attempts):
            tries = f"{failures} of {attempts}" if attempts is not None else str(failures)
            logger.log(level, "%s failed (try %s), trying again: %s", what, tries, error)
        return answer

    return hook
