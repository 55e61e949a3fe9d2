"""POST JSON to a provider with retries (exponential backoff, jitter, Retry-After) and error mapping, for a whole
answer or a stream."""

from __future__ import annotations

import email.utils
import re
import time
from collections.abc import AsyncGenerator, Mapping
from contextlib import asynccontextmanager
from typing import Any, cast

import httpx

from hermitcrab.util.retry import Backoff, retrying
from hermitcrab.util.text import without_lone_surrogates

from ..config import ProviderProfile
from ..errors import ContextOverflowError, ProviderError, RetryableProviderError

RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})
MAX_RETRY_AFTER_S = 60.0
BASE_DELAY_S = 0.5
CONTEXT_OVERFLOW = re.compile(
    r"context.{0,20}(length|window|limit)|too many tokens|prompt is too long|maximum context", re.I
)


async def post_json(
    client: httpx.AsyncClient,
    url: str,
    payload: Mapping[str, Any],
    *,
    headers: Mapping[str, str],
    timeout_s: float,
    max_retries: int,
    base_delay_s: float = BASE_DELAY_S,
) -> dict[str, Any]:
    """Return the decoded JSON body; retry transient failures, then raise a ProviderError."""
    return await retrying(
        f"POST {url}",
        lambda: _post_once(client, url, payload, headers, timeout_s),
        retry_wait,
        backoff(max_retries, base_delay_s),
    )


class HttpProvider:
    """Plumbing both wire formats share: a profile, an HTTP client, and POSTs with the profile's retry budget."""

    def __init__(self, profile: ProviderProfile, client: httpx.AsyncClient) -> None:
        self.profile = profile
        self.client = client
        self.label = profile.label

    async def _post(self, path: str, payload: Mapping[str, Any], headers: Mapping[str, str]) -> dict[str, Any]:
        return await post_json(
            self.client,
            f"{self.profile.base_url}{path}",
            payload,
            headers=headers,
            timeout_s=self.profile.timeout_s,
            max_retries=self.profile.max_retries,
        )

    @asynccontextmanager
    async def _open_stream(
        self, path: str, payload: Mapping[str, Any], headers: Mapping[str, str]
    ) -> AsyncGenerator[httpx.Response]:
        """POST asking for a stream, retried like `_post` until the server answers 2xx; the caller reads the open
        response inside the block, which closes it."""
        url = f"{self.profile.base_url}{path}"
        timeout_s = self.profile.timeout_s
        response = await retrying(
            f"POST {url}",
            lambda: _send(self.client, url, payload, headers, timeout_s, stream=True),
            retry_wait,
            backoff(self.profile.max_retries, BASE_DELAY_S),
        )
        try:
            yield response
        finally:
            await response.aclose()


def backoff(max_retries: int, base_delay_s: float) -> Backoff:
    """Exponential backoff with jitter: the wait after the n-th failure lies between half of `base_delay_s * 2**(n-1)`
    and all of it."""
    return Backoff(attempts=max_retries + 1, first_s=base_delay_s / 2, jitter_s=base_delay_s / 2)


def retry_wait(error: Exception) -> bool | float:
    """Transient failures are tried again, after the server's Retry-After (capped) when it sent one."""
    if not isinstance(error, RetryableProviderError):
        return False
    return True if error.retry_after is None else min(error.retry_after, MAX_RETRY_AFTER_S)


async def _post_once(
    client: httpx.AsyncClient, url: str, payload: Mapping[str, Any], headers: Mapping[str, str], timeout_s: float
) -> dict[str, Any]:
    response = await _send(client, url, payload, headers, timeout_s, stream=False)
    return json_body(response)


async def _send(
    client: httpx.AsyncClient,
    url: str,
    payload: Mapping[str, Any],
    headers: Mapping[str, str],
    timeout_s: float,
    *,
    stream: bool,
) -> httpx.Response:
    """One POST; an error status is raised as the ProviderError it means. A streamed response is left open."""
    request = client.build_request("POST", url, json=payload, headers=dict(headers), timeout=timeout_s)
    try:
        response = await client.send(request, stream=stream)
    except httpx.TimeoutException as exc:
        raise RetryableProviderError(f"timed out after {timeout_s:g}s") from exc
    except httpx.TransportError as exc:
        raise RetryableProviderError(
            f"could not reach {url} ({exc or type(exc).__name__}): check that the server is running and that the "
            "profile's base URL (HERMITCRAB_LLM_BASE_URL, or base_url under [[providers]]) is right"
        ) from exc
    if not response.is_error:
        return response
    try:
        await response.aread()
    except httpx.TransportError as exc:
        raise RetryableProviderError(f"HTTP {response.status_code}, and the body broke off: {exc}") from exc
    finally:
        await response.aclose()
    if response.status_code in RETRYABLE_STATUS:
        raise RetryableProviderError(
            f"HTTP {response.status_code}: {_error_text(response)}",
            status=response.status_code,
            retry_after=parse_retry_after(response.headers.get("retry-after")),
        )
    message = f"HTTP {response.status_code}: {_error_text(response)}"
    if response.status_code in (400, 413) and CONTEXT_OVERFLOW.search(message):
        raise ContextOverflowError(message, status=response.status_code)
    raise ProviderError(message, status=response.status_code)


def json_body(response: httpx.Response) -> dict[str, Any]:
    """The (read) response's body as a JSON object, or a ProviderError saying what came instead."""
    try:
        body: object = without_lone_surrogates(response.json())
    except ValueError as exc:
        raise ProviderError(f"the provider answered with something that is not JSON: {response.text[:200]!r}") from exc
    if not isinstance(body, dict):
        raise ProviderError("the provider answered with JSON that is not an object")
    return cast(dict[str, Any], body)


def parse_retry_after(value: str | None) -> float | None:
    """Retry-After is either seconds or an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _error_text(response: httpx.Response) -> str:
    try:
        body: object = response.json()
    except ValueError:
        return response.text[:300]
    if not isinstance(body, dict):
        return str(body)[:300]
    error = cast(dict[str, object], body).get("error")
    if isinstance(error, dict):
        detail = cast(dict[str, object], error)
        return str(detail.get("message") or detail)[:300]
    return str(error or cast(dict[str, object], body))[:300]
