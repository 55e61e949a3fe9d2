"""One way to try again: what is worth another try, how often, how long to wait, and what is said about it."""

from __future__ import annotations

import logging

import pytest

from hermitcrab.util.retry import Backoff, retrying


class Flaky:
    """Fails with each of `failures` in turn, then answers "done"."""

    def __init__(self, *failures: Exception) -> None:
        self.failures = list(failures)
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.failures:
            raise self.failures.pop(0)
        return "done"


async def test_a_failure_worth_another_try_is_tried_again_with_growing_waits(retry_waits: list[float]):
    call = Flaky(OSError("down"), OSError("still down"))

    assert await retrying("the test call", call, OSError, Backoff(attempts=3, first_s=0.01)) == "done"
    assert call.calls == 3
    assert retry_waits == [pytest.approx(0.01), pytest.approx(0.02)]


async def test_the_waits_stop_growing_at_the_cap_and_jitter_only_adds(retry_waits: list[float]):
    call = Flaky(*(OSError("down") for _ in range(4)))

    await retrying("the test call", call, OSError, Backoff(attempts=None, first_s=0.01, max_s=0.03, jitter_s=0.005))

    assert len(retry_waits) == 4
    for wait, least in zip(retry_waits, [0.01, 0.02, 0.03, 0.03], strict=True):
        assert least - 1e-9 <= wait <= min(least + 0.005, 0.03) + 1e-9


async def test_the_last_failure_is_raised_once_the_tries_are_used_up(retry_waits: list[float]):
    call = Flaky(*(OSError(f"down {n}") for n in range(1, 5)))

    with pytest.raises(OSError, match="down 3"):
        await retrying("the test call", call, OSError, Backoff(attempts=3, first_s=0.0))
    assert call.calls == 3 and len(retry_waits) == 2


async def test_a_failure_not_worth_another_try_is_raised_at_once():
    call = Flaky(ValueError("wrong"))

    with pytest.raises(ValueError, match="wrong"):
        await retrying("the test call", call, OSError, Backoff(attempts=3, first_s=0.0))
    assert call.calls == 1


async def test_a_hook_decides_per_failure_and_may_name_the_wait(retry_waits: list[float]):
    def hook(error: Exception) -> bool | float:
        return 0.015 if "later" in str(error) else "again" in str(error)

    call = Flaky(OSError("try again"), OSError("come back later"), OSError("give up"))

    with pytest.raises(OSError, match="give up"):
        await retrying("the test call", call, hook, Backoff(attempts=5, first_s=0.01))
    assert call.calls == 3
    assert retry_waits == [pytest.approx(0.01), pytest.approx(0.015)]


async def test_each_failure_tried_again_is_logged_the_last_one_is_not(caplog: pytest.LogCaptureFixture):
    call = Flaky(OSError("down 1"), OSError("down 2"))

    with caplog.at_level(logging.INFO, logger="hermitcrab.util.retry"), pytest.raises(OSError, match="down 2"):
        await retrying("the test call", call, OSError, Backoff(attempts=2, first_s=0.0), level=logging.WARNING)

    assert [(record.levelno, record.getMessage()) for record in caplog.records] == [
        (logging.WARNING, "the test call failed (try 1 of 2), trying again: down 1")
    ]
