"""Webhook delivery: POST each outbox item as JSON when it is due, retry failures on a backoff schedule, give up."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol, TypeVar

import anyio
import httpx

from hermitcrab.util.outbound import Outbound, guarded_client

from .clock import REAL_CLOCK, Clock
from .events import Item
from .runs import RunLog
from .store import Outgoing, State, Store

BACKOFF_S: tuple[float, ...] = (30, 60, 300, 900, 3600)
TIMEOUT_S = 10.0
T = TypeVar("T")


class Editor(Protocol):
    async def edit(self, change: Callable[[State], T]) -> T: ...


async def post(client: httpx.AsyncClient, url: str, item: Item) -> str | None:
    """None when the receiver answered 2xx, else what went wrong in a few words."""
    try:
        response = await client.post(url, content=item.model_dump_json(), headers={"content-type": "application/json"})
    except httpx.HTTPError as exc:
        return f"{type(exc).__name__}: {exc}"[:300]
    if response.is_success:
        return None
    return f"HTTP {response.status_code} {response.reason_phrase}"


class Outbox:
    """Delivers the store's outbox while `active()` (only the process that fires delivers); `wake` when it grew."""

    def __init__(
        self,
        editor: Editor,
        store: Store,
        runs: RunLog,
        outbound: Outbound,
        backoff: Sequence[float] = BACKOFF_S,
        clock: Clock = REAL_CLOCK,
    ) -> None:
        self._editor, self._store, self._runs, self._clock = editor, store, runs, clock
        self.outbound = outbound
        self.backoff = tuple(backoff)
        self._wake = anyio.Event()

    def wake(self) -> None:
        self._wake.set()

    async def run(self, active: Callable[[], bool]) -> None:
        # Redirects are not followed: a receiver that moved should be configured with its new URL.
        async with guarded_client(self.outbound, timeout=TIMEOUT_S) as http:
            while True:
                self._wake = anyio.Event()
                wait = await self._deliver_due(http) if active() else math.inf
                await self._clock.wait(wait, self._wake)

    async def _deliver_due(self, http: httpx.AsyncClient) -> float:
        """POST every item whose time has come; seconds until the next one is due."""
        now = self._clock.now()
        due = [outgoing for outgoing in self._store.state.outbox if outgoing.next_attempt_at <= now]
        outcomes: dict[str, str | None] = {}

        async def send(outgoing: Outgoing) -> None:
            outcomes[outgoing.item.id] = await post(http, outgoing.url, outgoing.item)

        async with anyio.create_task_group() as group:
            for outgoing in due:
                group.start_soon(send, outgoing)
        if outcomes:
            self._runs.append(await self._editor.edit(lambda state: self._record(state, outcomes, self._clock.now())))
        waits = [
            (outgoing.next_attempt_at - self._clock.now()).total_seconds() for outgoing in self._store.state.outbox
        ]
        return max(0.0, min(waits)) if waits else math.inf

    def _record(self, state: State, outcomes: dict[str, str | None], now: datetime) -> list[dict[str, Any]]:
        """Drop what was sent or given up, schedule the next try of the rest; the run-history lines for it all."""
        records: list[dict[str, Any]] = []
        for outgoing in list(state.outbox):
            if outgoing.item.id not in outcomes:
                continue
            error = outcomes[outgoing.item.id]
            outgoing.attempts += 1
            record: dict[str, Any] = {
                "at": now.isoformat(),
                "job_id": outgoing.item.job_id,
                "run_id": outgoing.item.id.partition(":")[2],
                "event_id": outgoing.item.id,
                "attempt": outgoing.attempts,
            }
            delay = (
                None if error is None or outgoing.attempts > len(self.backoff) else self.backoff[outgoing.attempts - 1]
            )
            if delay is None:
                state.outbox.remove(outgoing)
                status = "sent" if error is None else "failed"
            else:
                outgoing.next_attempt_at = now + timedelta(seconds=self.backoff[outgoing.attempts - 1])
                status = "retrying"
                record["next_attempt_at"] = outgoing.next_attempt_at.isoformat()
            records.append(record | {"status": status} | ({"detail": error} if error else {}))
            job = state.jobs.get(outgoing.item.job_id or "")
            if job is not None and job.last_run is not None and outgoing.item.id.endswith(job.last_run.run_id):
                job.last_run.status = status
        return records
