"""Firing with the real scheduler: intervals, one-shots, catch-up after downtime, a second server. Where a test waits
for jobs to come due, the server goes by a ManualClock the test moves on, instead of real seconds passing."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import anyio
import pytest
from mcp import Client

from hermitcrab.servers.cron import build_server
from hermitcrab.servers.cron.store import State, Store, StoreUnreadable
from tests.servers.cron.conftest import CronServer, call, events, job, soon
from tests.support.clock import ManualClock

SETTLE_S = 0.2
"""Real time for a tick committed twice to show up: commits are COMMIT_GAP_S (50 ms) apart."""


async def wait_for(check: Any, timeout: float = 5) -> None:
    with anyio.fail_after(timeout):
        while not await check():
            await anyio.sleep(0.05)


async def test_every_second_fires_about_three_times_in_three_and_a_half_seconds(cron_server: CronServer):
    clock = ManualClock()
    async with Client(cron_server(clock=clock)) as client:
        added = await call(client, "cron_add", job=job(every=1))
        for fired in (1, 2, 3):
            await clock.advance(1)
            await wait_for(partial(has_items, client, fired))
        await clock.advance(0.5)
        await anyio.sleep(SETTLE_S)
        items = (await events(client))["items"]
        runs = (await call(client, "cron_runs", job_id=added["id"]))["runs"]
    assert len(items) == 3, items
    assert len({item["id"] for item in items}) == 3
    assert all(item["text"].startswith('[cron job "tick" fired at ') for item in items)
    assert [run["status"] for run in runs] == ["queued"] * 3
    assert max(run["late_s"] for run in runs) < 0.5


@pytest.mark.parametrize("delete", [True, False])
async def test_an_at_job_fires_once_and_is_deleted_when_asked(cron_server: CronServer, delete: bool):
    clock = ManualClock()
    spec = job("reminder", schedule={"kind": "at", "at": clock.later(0.5)}, delete_after_run=delete)
    async with Client(cron_server(clock=clock)) as client:
        added = await call(client, "cron_add", job=spec)
        await clock.advance(1.5)
        await wait_for(partial(has_items, client, 1))
        await anyio.sleep(SETTLE_S)
        items = (await events(client))["items"]
        remaining = (await call(client, "cron_list", include_disabled=True))["jobs"]
    assert [item["job_id"] for item in items] == [added["id"]]
    if delete:
        assert remaining == []
    else:
        (kept,) = remaining
        assert not kept["enabled"] and kept["next_run"] is None and kept["last_run"]["status"] == "queued"


def rewind(state: Path, job_id: str, **fields: datetime) -> None:
    """Make the store look as if the server had been down: what a previous process would have left."""

    def change(current: State) -> None:
        for name, value in fields.items():
            setattr(current.jobs[job_id], name, value)

    Store(state).transact(change)


async def test_after_downtime_an_overdue_job_runs_once_in_its_own_time_zone(cron_server: CronServer, state: Path):
    auckland = ZoneInfo("Pacific/Auckland")
    tick = (datetime.now(UTC) - timedelta(minutes=30)).astimezone(auckland).replace(second=0, microsecond=0)
    daily = {"kind": "cron", "expr": f"{tick.minute} {tick.hour} * * *", "tz": "Pacific/Auckland"}
    async with Client(cron_server()) as client:
        added = await call(client, "cron_add", job=job("daily", schedule=daily))
        frequent = await call(client, "cron_add", job=job("frequent", every=60))
    down_since = datetime.now(UTC) - timedelta(days=3)
    rewind(state, added["id"], since=down_since, cursor=down_since)
    rewind(state, frequent["id"], since=down_since, cursor=down_since)

    async with Client(cron_server()) as client:
        await wait_for(lambda: has_items(client, 2))
        await anyio.sleep(0.5)
        items = (await events(client))["items"]
        runs = (await call(client, "cron_runs"))["runs"]
    assert sorted(item["job_id"] for item in items) == sorted([added["id"], frequent["id"]])
    daily_item = next(item for item in items if item["job_id"] == added["id"])
    assert datetime.fromisoformat(daily_item["scheduled_at"]) == tick.astimezone(UTC)
    assert "min late: scheduled for " in daily_item["text"] and "+13:00" in daily_item["text"]
    assert sorted(run["trigger"] for run in runs) == ["catch-up", "catch-up"]


async def test_a_run_later_than_the_grace_period_is_recorded_as_missed(cron_server: CronServer, state: Path):
    async with Client(cron_server()) as client:
        added = await call(client, "cron_add", job=job("stale", schedule={"kind": "at", "at": soon(3600)}))
    rewind(state, added["id"], since=datetime.now(UTC) - timedelta(hours=3))
    Store(state).transact(
        lambda current: setattr(current.jobs[added["id"]].schedule, "at", datetime.now(UTC) - timedelta(hours=2))
    )

    async with Client(cron_server(grace_s=3600)) as client:
        await wait_for(lambda: has_runs(client, added["id"]))
        items = (await events(client))["items"]
        (run,) = (await call(client, "cron_runs", job_id=added["id"]))["runs"]
        (kept,) = (await call(client, "cron_list", include_disabled=True))["jobs"]
    assert items == [] and run["status"] == "missed" and "late" in run["detail"]
    assert not kept["enabled"]


async def test_a_job_enabled_again_owes_nothing_from_while_it_was_disabled(cron_server: CronServer, state: Path):
    async with Client(cron_server()) as client:
        added = await call(client, "cron_add", job=job(every=60, enabled=False))
        ten_minutes_ago = datetime.now(UTC) - timedelta(minutes=10)
        rewind(state, added["id"], since=ten_minutes_ago, cursor=ten_minutes_ago)
        enabled = await call(client, "cron_update", job_id=added["id"], patch={"enabled": True})
        await anyio.sleep(0.3)
        items = (await events(client))["items"]
    assert items == [] and enabled["next_run_in_words"].startswith("in ")


async def has_items(client: Client, count: int) -> bool:
    return len((await events(client))["items"]) >= count


async def has_runs(client: Client, job_id: str) -> bool:
    return bool((await call(client, "cron_runs", job_id=job_id))["runs"])


async def test_a_second_server_on_the_same_store_stands_by_and_takes_over(cron_server: CronServer):
    clock = ManualClock()
    first, second = cron_server(clock=clock), cron_server(clock=clock)
    async with Client(first) as one, Client(second) as two:
        status = await call(two, "cron_status")
        added = await call(two, "cron_add", job=job(every=1))  # an edit made where nothing fires
        await anyio.sleep(3 * 0.1)  # three polls of the file (poll_s): the first has planned the job by its next tick
        for fired in (1, 2):
            await clock.advance(1)
            await wait_for(partial(has_items, one, fired))
        seen_by_two = (await events(two))["items"]
        runs = (await call(one, "cron_runs", job_id=added["id"]))["runs"]
    assert status["role"] == "standby" and "another hermitcrab-cron process" in status["detail"]
    assert len(runs) == len({run["run_id"] for run in runs}) >= 2
    assert {item["id"] for item in seen_by_two} <= {run["event_id"] for run in runs}

    async with Client(second) as two:  # the first has exited: the second fires now
        assert (await call(two, "cron_status"))["role"] == "scheduler"


async def test_a_standby_takes_over_when_the_scheduler_exits(cron_server: CronServer):
    first_up, first_done = anyio.Event(), anyio.Event()

    async def run_first() -> None:
        async with Client(cron_server()) as one:
            assert await is_scheduler(one)
            first_up.set()
            await first_done.wait()

    async with anyio.create_task_group() as group:
        group.start_soon(run_first)
        await first_up.wait()
        async with Client(cron_server()) as two:
            assert not await is_scheduler(two)
            first_done.set()
            started = time.monotonic()
            await wait_for(lambda: is_scheduler(two))
    assert time.monotonic() - started < 2


async def is_scheduler(client: Client) -> bool:
    return (await call(client, "cron_status"))["role"] == "scheduler"


async def test_a_corrupt_store_is_recovered_from_the_kept_version(cron_server: CronServer, state: Path):
    async with Client(cron_server()) as client:
        await call(client, "cron_add", job=job("kept", every=3600))
        await call(client, "cron_add", job=job("also-kept", every=3600))
    (state / "cron.json").write_text('{"version": 1, "jobs": {"trunc')

    async with Client(cron_server()) as client:
        status = await call(client, "cron_status")
        names = {entry["name"] for entry in (await call(client, "cron_list"))["jobs"]}
    assert names == {"kept"}  # the version before the last write
    (warning,) = status["warnings"]
    assert "cron.json was unreadable" in warning and "recovered the previous version from cron.json.bak" in warning
    assert (state / "cron.json.corrupt").exists()


def test_a_store_with_no_readable_version_is_refused_untouched(state: Path):
    state.mkdir()
    (state / "cron.json").write_text("garbage")
    (state / "cron.json.bak").write_text("more garbage")
    with pytest.raises(StoreUnreadable, match="move both away"):
        build_server(state)
    assert (state / "cron.json").read_text() == "garbage"
