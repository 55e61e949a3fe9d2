"""Firing: APScheduler's triggers say when, the store records each run before anyone is told, overdue jobs are caught
up once. The time is the engine's `Clock` (the wall clock unless a test gives it one it moves itself).

Only the process holding the scheduler lock fires; any other one on the same store serves reads and edits, follows
the file, and takes over when the lock comes free. Ticks are committed in batches (one store write for every job
due at the same moment), and a tick at or before a job's `cursor` is dropped, so no run is ever recorded twice.
"""

from __future__ import annotations

import heapq
import logging
import math
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, TypeVar

import anyio
from anyio.abc import TaskGroup
from apscheduler.triggers.base import BaseTrigger

from hermitcrab.servers._common.notifier import Notifier
from hermitcrab.util.outbound import Outbound

from . import webhook
from .clock import REAL_CLOCK, Clock
from .events import Item, job_item, run_id
from .jobs import AtSchedule, Job, LastRun
from .runs import RunLog
from .schedule import in_words, zone
from .store import Outgoing, SchedulerLock, State, Store

logger = logging.getLogger(__name__)
T = TypeVar("T")
Reason = Literal["schedule", "catch-up", "missed", "manual"]
_MICRO = timedelta(microseconds=1)
ANNOUNCE_GAP_S = 0.05
COMMIT_GAP_S = 0.05  # at most ~20 store writes a second however many jobs are due: p99 lateness stays far under 1 s


@dataclass(frozen=True)
class Tick:
    """A run owed to a job: `scheduled_at` is the tick's own time; `until` moves the cursor past skipped ticks."""

    job_id: str
    scheduled_at: datetime
    reason: Reason
    until: datetime | None = None


@dataclass
class _Written:
    records: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    items: list[Item] = field(default_factory=list[Item])


def next_after(trigger: BaseTrigger, moment: datetime) -> datetime | None:
    """The trigger's first fire time strictly after `moment`, in UTC (grid-aligned for intervals, whatever `moment`).

    Everything here is compared in UTC: Python compares two times of the same zone by their wall clock, which
    calls 02:30 before and after clocks go back equal.
    """
    after = moment.astimezone(UTC)
    fire: datetime | None = trigger.get_next_fire_time(None, after + _MICRO)  # pyright: ignore[reportUnknownMemberType]
    return fire.astimezone(UTC) if fire is not None and fire.astimezone(UTC) > after else None


def next_run(job: Job) -> datetime | None:
    """When the job fires next: its first tick not yet handled (in the past when it is overdue)."""
    return next_after(job.trigger(), job.cursor or job.since) if job.enabled else None


class Engine:
    """The store, the scheduler (while this process holds the lock), the commit loop, and the tasks around them."""

    def __init__(
        self,
        store: Store,
        runs: RunLog,
        notifier: Notifier,
        grace_s: float,
        outbound: Outbound,
        backoff: Sequence[float] = webhook.BACKOFF_S,
        poll_s: float = 1.0,
        clock: Clock = REAL_CLOCK,
    ) -> None:
        self.store, self.runs, self.notifier = store, runs, notifier
        self.grace = timedelta(seconds=grace_s)
        self.poll_s = poll_s
        self.clock = clock
        self.lock = SchedulerLock(store.directory)
        self._firing = False
        self._planned: dict[str, tuple[object, ...]] = {}
        self._next: dict[str, tuple[BaseTrigger, int]] = {}  # a planned job's trigger, and its entry in `_due`
        self._due: list[tuple[datetime, int, str]] = []  # a heap of (fire time, entry, job id); stale entries skipped
        self._entries = 0
        self._replanned = anyio.Event()
        self._group: TaskGroup | None = None
        self._ticks_in, self._ticks_out = anyio.create_memory_object_stream[Tick](math.inf)
        self._known_events = {item.id for item in store.state.events}
        self.outbox = webhook.Outbox(self, store, runs, outbound, backoff, clock)
        self._announce_due = anyio.Event()
        self._running = False

    @property
    def firing(self) -> bool:
        return self._firing

    @asynccontextmanager
    async def running(self) -> AsyncGenerator[Engine]:
        """Fire (or stand by) until the context exits; a nested entry (a second in-process client) shares it."""
        if self._running:
            yield self
            return
        self._running = True
        async with anyio.create_task_group() as group:
            self._group = group
            self._take_over_if_free()
            group.start_soon(self._commit_forever)
            group.start_soon(self._announce_forever)
            group.start_soon(self._watch_forever)
            group.start_soon(self.outbox.run, lambda: self.firing)
            try:
                yield self
            finally:
                group.cancel_scope.cancel()
                self._firing, self._group = False, None
                self._next, self._due = {}, []
                self.lock.release()
                self._running = False

    async def current(self) -> State:
        """The newest state, after catching up with another process's writes."""
        if self.store.refresh():
            self._settle()
        return self.store.state

    async def edit(self, change: Callable[[State], T]) -> T:
        """Apply a change to the store, then reschedule and tell listeners what it (or another process) added."""
        result = self.store.transact(change)
        self._settle()
        return result

    async def run_now(self, tick: Tick) -> list[Item]:
        """Commit one tick at once (cron_run); the items it produced."""
        return await self._commit([tick])

    def next_in_words(self, job: Job, now: datetime) -> tuple[datetime | None, str | None]:
        moment = next_run(job)
        if moment is None:
            return None, None
        if moment <= now:
            return moment, "due now (overdue; runs as soon as the scheduler is up)"
        return moment.astimezone(zone(job.schedule.tz)), in_words(moment, job.schedule.tz, now)

    def _take_over_if_free(self) -> None:
        if self._firing or self._group is None or not self.lock.try_acquire():
            return
        self._firing, self._planned, self._next, self._due = True, {}, {}, []
        self._group.start_soon(self._fire_forever)
        logger.info("holding the scheduler lock of %s: firing jobs", self.store.directory)
        self._reconcile(self.clock.now())
        self.outbox.wake()

    def _reconcile(self, now: datetime) -> None:
        """Make the scheduler match the store: new, changed and re-enabled jobs planned again, removed ones dropped."""
        if not self._firing:
            return
        jobs = self.store.state.jobs
        for job_id in set(self._planned) - set(jobs):
            self._unplan(job_id)
        for job in jobs.values():
            signature = (job.schedule, job.enabled, job.since)
            if self._planned.get(job.id) != signature:
                self._unplan(job.id)
                self._planned[job.id] = signature
                if job.enabled:
                    self._plan(job, now)

    def _unplan(self, job_id: str) -> None:
        self._planned.pop(job_id, None)
        self._next.pop(job_id, None)  # its entry in `_due` is stale now

    def _plan(self, job: Job, now: datetime) -> None:
        """Plan `job`'s next tick; a tick missed while nobody fired is owed once, if within the grace period."""
        trigger = job.trigger()
        anchor = job.cursor or job.since
        pending = next_after(trigger, anchor)
        if pending is not None and pending <= now:
            recent = next_after(trigger, max(anchor, now - self.grace - _MICRO))
            if recent is not None and recent <= now:
                self._ticks_in.send_nowait(Tick(job.id, recent, "catch-up", until=now))
            else:
                self._ticks_in.send_nowait(Tick(job.id, pending, "missed", until=now))
            pending = next_after(trigger, now)
        if pending is not None:
            self._fire_at(job.id, trigger, pending)
            self._replanned.set()

    def _fire_at(self, job_id: str, trigger: BaseTrigger, moment: datetime) -> None:
        self._entries += 1
        self._next[job_id] = (trigger, self._entries)
        heapq.heappush(self._due, (moment, self._entries, job_id))

    async def _fire_forever(self) -> None:
        """Hand each planned job's tick to the commit loop when its time comes, then plan its next one.

        A job whose several ticks came due at once (the process was suspended) gets one, for the latest of them (the
        others are older than a tick nobody missed); the wait ends early when a job is planned anew.
        """
        while True:
            self._replanned = anyio.Event()
            now = self.clock.now()
            while self._due and self._due[0][0] <= now:
                moment, entry, job_id = heapq.heappop(self._due)
                planned = self._next.get(job_id)
                if planned is None or planned[1] != entry:
                    continue  # unplanned or planned again since
                trigger = planned[0]
                while (later := next_after(trigger, moment)) is not None and later <= now:
                    moment = later
                self._ticks_in.send_nowait(Tick(job_id, moment, "schedule"))
                following = next_after(trigger, now)
                if following is None:
                    del self._next[job_id]  # a one-shot that fired
                else:
                    self._fire_at(job_id, trigger, following)
            wait = (self._due[0][0] - now).total_seconds() if self._due else math.inf
            await self.clock.wait(max(wait, 0.0), self._replanned)

    def _settle(self) -> None:
        """After the store changed: reschedule, tell listeners about new items, wake webhook delivery."""
        self._reconcile(self.clock.now())
        state = self.store.state
        ids = {item.id for item in state.events}
        fresh = ids - self._known_events
        self._known_events = ids
        if fresh:
            self._announce_due.set()
        if state.outbox:
            self.outbox.wake()

    async def _announce_forever(self) -> None:
        """Tell listeners about new items at once, then at most every ANNOUNCE_GAP_S.

        A thousand jobs due in one second must not become a thousand notifications: the SDK ends the listen
        stream of a host that falls behind, so a burst is one notification and one read of the resource.
        """
        while True:
            await self._announce_due.wait()
            self._announce_due = anyio.Event()
            await self.notifier.changed()
            await anyio.sleep(ANNOUNCE_GAP_S)

    async def _commit_forever(self) -> None:
        """Group commit: ticks that came due during one write (and a short gap after it) share the next one."""
        async for tick in self._ticks_out:
            batch = [tick]
            while True:
                try:
                    batch.append(self._ticks_out.receive_nowait())
                except anyio.WouldBlock:
                    break
            await self._commit(batch)
            await anyio.sleep(COMMIT_GAP_S)

    async def _commit(self, batch: list[Tick]) -> list[Item]:
        now = self.clock.now()
        written = await self.edit(lambda state: self._apply_all(state, batch, now))
        self.runs.append(written.records)
        return written.items

    def _apply_all(self, state: State, batch: list[Tick], now: datetime) -> _Written:
        written = _Written()
        for tick in batch:
            job = state.jobs.get(tick.job_id)
            if job is not None and (job.enabled or tick.reason == "manual"):
                self._apply(state, job, tick, now, written)
        return written

    def _apply(self, state: State, job: Job, tick: Tick, now: datetime, written: _Written) -> None:
        """Record one run in `state`: the cursor moves first, so the same tick can never be recorded again."""
        manual = tick.reason == "manual"
        record: dict[str, Any] = {
            "at": now.isoformat(),
            "job_id": job.id,
            "run_id": run_id(tick.scheduled_at, manual),
            "scheduled_at": tick.scheduled_at.isoformat(),
            "trigger": tick.reason,
            "late_s": round((now - tick.scheduled_at).total_seconds(), 3),
        }
        if not manual:
            if job.cursor is not None and tick.scheduled_at <= job.cursor:
                return
            job.cursor = max(tick.scheduled_at, tick.until or tick.scheduled_at)
            if tick.reason == "missed" or (tick.reason == "schedule" and now - tick.scheduled_at > self.grace):
                detail = f"more than {self.grace} late (was the server running?)"
                _note(job, record | {"status": "missed", "detail": detail}, tick, now, written)
                _finish_one_shot(state, job)
                return
        item = job_item(job, tick.scheduled_at, now, manual)
        if job.delivery.mode == "webhook" and job.delivery.url is not None:
            state.outbox.append(Outgoing(item=item, url=job.delivery.url, next_attempt_at=now))
            status = "sending"
        else:
            state.events.append(item)
            status = "queued"
        _note(job, record | {"status": status, "event_id": item.id}, tick, now, written)
        written.items.append(item)
        if not manual:
            _finish_one_shot(state, job)

    async def _watch_forever(self) -> None:
        """Follow the store file (edits by another process) and take over firing when the lock comes free."""
        while True:
            await anyio.sleep(self.poll_s)
            self._take_over_if_free()
            if self.store.refresh():
                self._settle()


def _note(job: Job, record: dict[str, Any], tick: Tick, now: datetime, written: _Written) -> None:
    status = record["status"]
    job.last_run = LastRun(run_id=record["run_id"], scheduled_at=tick.scheduled_at, fired_at=now, status=status)
    written.records.append(record)


def _finish_one_shot(state: State, job: Job) -> None:
    """An `at` job has fired (or been missed): remove it if asked, else keep it disabled."""
    if isinstance(job.schedule, AtSchedule):
        if job.delete_after_run:
            del state.jobs[job.id]
        else:
            job.enabled = False
