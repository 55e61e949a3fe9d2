"""Retries, backoff and error mapping, driven through httpx.MockTransport."""

from __future__ import annotations

import httpx
import pytest

from hermitcrab.host.errors import ProviderError, RetryableProviderError
from hermitcrab.host.providers._http import backoff_delay, parse_retry_after, post_json


def transport(*responses: httpx.Response | Exception) -> tuple[httpx.AsyncClient, list[httpx.Request]]:
    seen: list[httpx.Request] = []
    queue = list(responses)

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        item = queue.pop(0)
        if isinstance(item, Exception):
            raise item
        return item

    return httpx.AsyncClient(transport=httpx.MockTransport(handle)), seen


def recording_sleep(delays: list[float]):
    """A sleep that returns at once and records how long it was asked to wait."""

    async def sleep(seconds: float) -> None:
        delays.append(seconds)

    return sleep


async def test_retries_429_and_5xx_then_succeeds():
    client, seen = transport(
        httpx.Response(429, json={"error": {"message": "slow down"}}, headers={"Retry-After": "7"}),
        httpx.Response(503, text="unavailable"),
        httpx.Response(200, json={"ok": True}),
    )
    delays: list[float] = []

    body = await post_json(
        client, "http://llm/x", {}, headers={}, timeout_s=5, max_retries=3, sleep=recording_sleep(delays)
    )

    assert body == {"ok": True}
    assert len(seen) == 3
    assert delays[0] == 7.0
    assert 0.5 <= delays[1] <= 1.0


async def test_timeouts_are_retried_and_then_raised():
    client, seen = transport(*(httpx.ReadTimeout("slow") for _ in range(3)))
    delays: list[float] = []

    with pytest.raises(RetryableProviderError, match="timed out"):
        await post_json(
            client, "http://llm/x", {}, headers={}, timeout_s=1, max_retries=2, sleep=recording_sleep(delays)
        )
    assert len(seen) == 3 and len(delays) == 2


async def test_client_errors_are_not_retried():
    client, seen = transport(httpx.Response(401, json={"error": {"message": "bad key"}}))

    with pytest.raises(ProviderError, match="HTTP 401: bad key") as caught:
        await post_json(client, "http://llm/x", {}, headers={}, timeout_s=1, max_retries=3)
    assert not isinstance(caught.value, RetryableProviderError)
    assert len(seen) == 1


def test_backoff_grows_exponentially_with_jitter():
    for attempt in range(5):
        ceiling = 0.5 * 2**attempt
        assert ceiling / 2 <= backoff_delay(attempt, 0.5, None) <= ceiling


def test_retry_after_accepts_seconds_and_http_dates():
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0
    assert parse_retry_after("soon") is None
