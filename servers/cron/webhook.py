"""Webhook delivery: POST an event item as JSON, and when to try again after a failure."""

from __future__ import annotations

from collections.abc import Sequence

import httpx

from .events import Item

BACKOFF_S: tuple[float, ...] = (30, 60, 300, 900, 3600)
TIMEOUT_S = 10.0


async def post(client: httpx.AsyncClient, url: str, item: Item) -> str | None:
    """None when the receiver answered 2xx, else what went wrong in a few words."""
    try:
        response = await client.post(url, content=item.model_dump_json(), headers={"content-type": "application/json"})
    except httpx.HTTPError as exc:
        return f"{type(exc).__name__}: {exc}"[:300]
    if response.is_success:
        return None
    return f"HTTP {response.status_code} {response.reason_phrase}"


def retry_delay(attempts: int, backoff: Sequence[float]) -> float | None:
    """Seconds to wait after the `attempts`-th failed try, or None when it is time to give up."""
    return backoff[attempts - 1] if attempts <= len(backoff) else None


def client(timeout_s: float = TIMEOUT_S) -> httpx.AsyncClient:
    """Redirects are not followed: a receiver that moved should be configured with its new URL."""
    return httpx.AsyncClient(timeout=timeout_s, follow_redirects=False, trust_env=False)
