"""Retries, backoff and error mapping, driven through httpx.MockTransport."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
import stamina

from hermitcrab.host.errors import ProviderError, RetryableProviderError
from hermitcrab.host.providers._http import parse_retry_after, post_json, retry_wait


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


@pytest.fixture
def no_waiting() -> Iterator[None]:
    """Every try made, none of the waits between them waited."""
    with stamina.set_testing(True, attempts=100, cap=True):
        yield


async def test_retries_429_and_5xx_then_succeeds(no_waiting: None):
    too_fast = httpx.Response(429, json={"error": {"message": "slow down"}}, headers={"Retry-After": "7"})
    client, seen = transport(too_fast, httpx.Response(503, text="unavailable"), httpx.Response(200, json={"ok": True}))

    body = await post_json(client, "http://llm/x", {}, headers={}, timeout_s=5, max_retries=3)

    assert body == {"ok": True}
    assert len(seen) == 3
    retry_after = parse_retry_after(too_fast.headers["Retry-After"])
    assert retry_wait(RetryableProviderError("HTTP 429", status=429, retry_after=retry_after)) == 7.0
    assert retry_wait(RetryableProviderError("HTTP 503", status=503)) is True  # the backoff's wait, below


def test_retry_after_is_capped_at_a_minute():
    assert retry_wait(RetryableProviderError("HTTP 429", status=429, retry_after=3600.0)) == 60.0


async def test_timeouts_are_retried_and_then_raised(no_waiting: None, retry_waits: list[float]):
    client, seen = transport(*(httpx.ReadTimeout("slow") for _ in range(3)))

    with pytest.raises(RetryableProviderError, match="timed out"):
        await post_json(client, "http://llm/x", {}, headers={}, timeout_s=1, max_retries=2)
    assert len(seen) == 3 and len(retry_waits) == 2


async def test_client_errors_are_not_retried():
    client, seen = transport(httpx.Response(401, json={"error": {"message": "bad key"}}))

    with pytest.raises(ProviderError, match="HTTP 401: bad key") as caught:
        await post_json(client, "http://llm/x", {}, headers={}, timeout_s=1, max_retries=3)
    assert not isinstance(caught.value, RetryableProviderError)
    assert len(seen) == 1


async def test_backoff_grows_exponentially_with_jitter(retry_waits: list[float]):
    """Real waits, on a base of 10 ms instead of the providers' 0.5 s so that five of them stay short."""
    client, _ = transport(*(httpx.Response(503, text="unavailable") for _ in range(5)), httpx.Response(200, json={}))

    await post_json(client, "http://llm/x", {}, headers={}, timeout_s=1, max_retries=5, base_delay_s=0.01)

    assert len(retry_waits) == 5
    for attempt, delay in enumerate(retry_waits):
        ceiling = 0.01 * 2**attempt
        assert ceiling / 2 <= delay <= ceiling


def test_retry_after_accepts_seconds_and_http_dates():
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0
    assert parse_retry_after("soon") is None
