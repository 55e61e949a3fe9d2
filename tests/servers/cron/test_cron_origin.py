"""Jobs keep their origin: the conversation that made a job gets it back on every item, and a non-owner can neither
reach the owner's main session nor see or change anyone else's jobs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.servers.cron.conftest import CronServer, call, events, job
from tests.support.callers import call_as, error_as
from tests.support.origins import GROUP, GROUP_ORIGIN, GROUP_SESSION, OWNER, OWNER_ORIGIN, meta


def isolated(name: str = "digest") -> dict[str, Any]:
    return job(name, every=3600, payload={"kind": "agent_turn", "message": "Summarise the news"})


async def test_a_jobs_origin_is_stored_and_comes_back_on_its_items_after_a_restart(cron_server: CronServer):
    async with Client(cron_server()) as client:
        added = await call_as(client, GROUP, "cron_add", job=isolated())
        await call_as(client, GROUP, "cron_run", job_id=added["id"])
        (first,) = (await events(client))["items"]
    async with Client(cron_server()) as client:
        listed = (await call_as(client, GROUP, "cron_list"))["jobs"]
        await call_as(client, GROUP, "cron_run", job_id=added["id"])
        items = (await events(client))["items"]

    assert added["origin"] == GROUP_ORIGIN and [entry["origin"] for entry in listed] == [GROUP_ORIGIN]
    assert first["origin"] == GROUP_ORIGIN and first["session"] == "isolated"
    assert [item["origin"] for item in items] == [GROUP_ORIGIN, GROUP_ORIGIN]


async def test_items_of_jobs_without_an_origin_say_null_and_wake_items_carry_the_callers(cron_server: CronServer):
    async with Client(cron_server()) as client:
        added = await call(client, "cron_add", job=job(every=3600))
        await call(client, "cron_run", job_id=added["id"])
        woken = await call_as(client, OWNER, "cron_wake", text="Check the oven")
        items = {item["id"]: item for item in (await events(client))["items"]}
    assert added["origin"] is None
    assert [item["origin"] for item in items.values() if item["job_id"] == added["id"]] == [None]
    assert items[woken["event_id"]]["origin"] == OWNER_ORIGIN


async def test_a_store_written_before_origins_still_loads(cron_server: CronServer, state: Path):
    async with Client(cron_server()) as client:
        added = await call(client, "cron_add", job=job(every=3600))
        await call(client, "cron_run", job_id=added["id"])
    stored = json.loads((state / "cron.json").read_text())
    for record in [*stored["jobs"].values(), *stored["events"]]:
        del record["origin"]
    (state / "cron.json").write_text(json.dumps(stored))
    async with Client(cron_server()) as client:
        (listed,) = (await call(client, "cron_list"))["jobs"]
        (item,) = (await events(client))["items"]
    assert listed["id"] == added["id"] and listed["origin"] is None and item["origin"] is None


@pytest.mark.parametrize(
    "spec",
    [
        job("reminder", every=3600),  # a system_event goes to main unless told otherwise
        {**isolated(), "session_target": "main"},
    ],
)
async def test_a_non_owner_cannot_add_a_job_to_the_main_session(cron_server: CronServer, spec: dict[str, Any]):
    async with Client(cron_server()) as client:
        refused = await error_as(client, GROUP, "cron_add", job=spec)
        jobs = (await call(client, "cron_list", include_disabled=True))["jobs"]
    assert refused.endswith(
        "A job made from a group session cannot run in the owner's main session; give it session_target 'isolated' "
        "(it then runs in a session of its own and its reply comes back to this conversation)."
    )
    assert jobs == []


async def test_a_non_owner_system_event_may_run_isolated_but_not_wake_main_or_post_to_a_webhook(
    cron_server: CronServer,
):
    async with Client(cron_server()) as client:
        added = await call_as(client, GROUP, "cron_add", job=job("note", every=3600, session_target="isolated"))
        moved = await error_as(client, GROUP, "cron_update", job_id=added["id"], patch={"session_target": "main"})
        webhook = {"mode": "webhook", "url": "http://127.0.0.1:9/hook"}
        posting = await error_as(client, GROUP, "cron_add", job={**isolated(), "delivery": webhook})
        woken = await error_as(client, GROUP, "cron_wake", text="wake up")
        (kept,) = (await call(client, "cron_list"))["jobs"]
        pending = (await events(client))["items"]
    assert added["session_target"] == "isolated" and kept["session_target"] == "isolated"
    assert "cannot run in the owner's main session" in moved
    assert "A job made from a group session cannot have webhook delivery" in posting
    assert "cron_wake wakes the owner's main session, which a group session may not do" in woken
    assert pending == []


async def test_a_non_owner_sees_and_changes_only_its_own_sessions_jobs(cron_server: CronServer):
    stranger = meta({**GROUP_ORIGIN, "session": "discord:group:888"}, principal="group")
    async with Client(cron_server()) as client:
        owners = await call(client, "cron_add", job=job("standup", every=3600))
        groups = await call_as(client, GROUP, "cron_add", job=isolated())
        await call(client, "cron_run", job_id=owners["id"])
        await call_as(client, GROUP, "cron_run", job_id=groups["id"])
        seen = (await call_as(client, GROUP, "cron_list", include_disabled=True))["jobs"]
        by_stranger = (await call_as(client, stranger, "cron_list", include_disabled=True))["jobs"]
        refusals = [
            await error_as(client, GROUP, "cron_remove", job_id=owners["id"]),
            await error_as(client, GROUP, "cron_update", job_id=owners["id"], patch={"name": "mine"}),
            await error_as(client, GROUP, "cron_run", job_id=owners["id"]),
            await error_as(client, GROUP, "cron_runs", job_id=owners["id"]),
            await error_as(client, stranger, "cron_remove", job_id=groups["id"]),
        ]
        runs = (await call_as(client, GROUP, "cron_runs"))["runs"]
        status = await call_as(client, GROUP, "cron_status")
        everything = (await call_as(client, OWNER, "cron_list"))["jobs"]
        await call_as(client, OWNER, "cron_remove", job_id=groups["id"])

    assert [entry["id"] for entry in seen] == [groups["id"]] and by_stranger == []
    assert all("There is no job " in refusal for refusal in refusals), refusals
    assert {run["job_id"] for run in runs} == {groups["id"]}
    assert status["jobs"] == 1
    assert {entry["id"] for entry in everything} == {owners["id"], groups["id"]}


async def test_an_update_never_changes_a_jobs_origin(cron_server: CronServer):
    async with Client(cron_server()) as client:
        added = await call_as(client, GROUP, "cron_add", job=isolated())
        by_owner = await call_as(client, OWNER, "cron_update", job_id=added["id"], patch={"name": "renamed"})
        by_group = await call_as(client, GROUP, "cron_update", job_id=added["id"], patch={"enabled": False})
        origin_patch = await error_as(client, OWNER, "cron_update", job_id=added["id"], patch={"origin": OWNER_ORIGIN})
    assert by_owner["name"] == "renamed" and by_owner["origin"] == GROUP_ORIGIN
    assert not by_group["enabled"] and by_group["origin"] == GROUP_ORIGIN
    assert "`patch.origin`: extra inputs are not permitted" in origin_patch


MALFORMED: list[Any] = [
    "discord:group:777",
    ["session", "main"],
    {"principal": "group"},
    {**GROUP_ORIGIN, "session": 777},
    {**GROUP_ORIGIN, "principal": "king"},
    {**GROUP_ORIGIN, "label": "x" * 301},  # longer than hermitcrab reads back
    {**GROUP_ORIGIN, "label": None},
    {**GROUP_ORIGIN, "extra": "x" * 1_001},
    {**GROUP_ORIGIN, "to": {"nested": "object"}},
    {f"field{number}": None for number in range(100)} | GROUP_ORIGIN,
]


@pytest.mark.parametrize("origin", MALFORMED)
async def test_a_malformed_origin_is_ignored_and_a_non_owner_keeps_its_own_narrow_one(
    cron_server: CronServer, origin: Any
):
    async with Client(cron_server()) as client:
        owners = await call_as(client, meta(origin, session="main", principal="owner"), "cron_add", job=isolated())
        groups = await call_as(client, meta(origin, GROUP_SESSION, principal="group"), "cron_add", job=isolated())
        mine = (await call_as(client, meta(session=GROUP_SESSION, principal="group"), "cron_list"))["jobs"]
    assert owners["origin"] is None
    narrow = {"session": GROUP_SESSION, "principal": "group", "channel": None, "to": None, "user": None}
    narrow["label"] = "a group session"
    assert groups["origin"] == narrow
    assert [entry["id"] for entry in mine] == [groups["id"]]


@pytest.mark.parametrize("principal", ["admin", 7, {"rights": "owner"}])
async def test_a_principal_that_is_not_understood_gets_no_owner_rights(cron_server: CronServer, principal: Any):
    who = {"hermitcrab/session": GROUP_SESSION, "hermitcrab/principal": principal}
    async with Client(cron_server()) as client:
        refused = await error_as(client, who, "cron_wake", text="wake up")
    assert "which a group session may not do" in refused


async def test_without_a_principal_the_origins_principal_counts(cron_server: CronServer):
    async with Client(cron_server()) as client:
        refused = await error_as(client, meta(GROUP_ORIGIN), "cron_wake", text="wake up")
        added = await call_as(client, meta(GROUP_ORIGIN), "cron_add", job=isolated())
    assert "which a group session may not do" in refused
    assert added["origin"] == GROUP_ORIGIN


async def test_an_origin_is_kept_verbatim_with_fields_added_later_but_never_with_more_rights_than_the_call(
    cron_server: CronServer,
):
    newer = {**OWNER_ORIGIN, "thread": "1234"}
    claims_owner = meta(OWNER_ORIGIN, GROUP_SESSION, principal="group")
    async with Client(cron_server()) as client:
        kept = await call_as(client, meta(newer, principal="owner"), "cron_add", job=isolated())
        narrowed = await call_as(client, claims_owner, "cron_add", job=isolated())
    assert kept["origin"] == newer
    assert narrowed["origin"] is not None and narrowed["origin"]["principal"] == "group"
    assert narrowed["origin"]["session"] == GROUP_SESSION and narrowed["origin"]["to"] is None
