"""Chromium's transient "Unable to capture screenshot" is retried; every other capture error is reported at once."""

from __future__ import annotations

import pytest
from playwright.async_api import Error as PlaywrightError

from hermitcrab.servers.browser.inspection import _capture

REFUSED = "Page.screenshot: Protocol error (Page.captureScreenshot): Unable to capture screenshot"


class Camera:
    """Refuses the first `refusals` captures with `message`, then returns a picture."""

    def __init__(self, refusals: int, message: str = REFUSED) -> None:
        self.refusals = refusals
        self.message = message
        self.calls = 0

    async def take(self) -> bytes:
        self.calls += 1
        if self.calls <= self.refusals:
            raise PlaywrightError(self.message)
        return b"png"


async def test_a_refused_capture_is_taken_again() -> None:
    camera = Camera(refusals=2)
    assert await _capture(camera.take) == b"png"
    assert camera.calls == 3


async def test_a_capture_refused_every_time_is_reported_after_three_tries() -> None:
    camera = Camera(refusals=10)
    with pytest.raises(PlaywrightError, match="Unable to capture screenshot"):
        await _capture(camera.take)
    assert camera.calls == 3


async def test_other_errors_are_not_retried() -> None:
    camera = Camera(refusals=1, message="Page.screenshot: Target page, context or browser has been closed")
    with pytest.raises(PlaywrightError, match="has been closed"):
        await _capture(camera.take)
    assert camera.calls == 1
