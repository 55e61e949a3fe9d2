"""The cron tools in process: validation errors, list and update, the events resource, ack, both eras' notifications."""

from __future__ import annotations

import warnings
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types import ResourceUpdatedNotification

from tests.servers.cron.conftest import CronServer, call, error_of, events, job, soon


@pytest.mark.parametrize(
    ("spec", "named"),
    [
        (
            job(schedule={"kind": "cron", "expr": "61 9 * * *", "tz": "UTC"}),
            "`job.schedule.cron`: value error, cron expression '61 9 * * *' is not valid",
        ),
        (
            job(schedule={"kind": "cron", "expr": "0 9 * * *", "tz": "Europe/Berln"}),
            "`job.schedule.cron.tz`: value error, unknown time zone 'Europe/Berln': use an IANA name (did you mean",
        ),
        (job(colour="blue"), "`job.colour`: extra inputs are not permitted"),
        (job(schedule={"kind": "every", "every_seconds": 0}), "`job.schedule.every.every_seconds`: input should be"),
        (job(delivery={"mode": "webhook"}), "`job.delivery`: value error, webhook delivery needs `url`"),
        (job(schedule={"kind": "weekly"}), "`job.schedule`: input tag 'weekly' found using 'kind' does not match"),
    ],
)
async def test_invalid_jobs_get_one_clear_error_naming_the_field(
    cron_server: CronServer, spec: dict[str, Any], named: str
):
    async with Client(cron_server()) as client:
        message = await error_of(client, "cron_add", job=spec)
    assert message.startswith("Invalid arguments for cron_add: "), message
    assert named in message
    assert "pydantic" not in message and "\n" in message and message.count("\n") == 1


async def test_an_at_in_the_past_is_refused(cron_server: CronServer):
    async with Client(cron_server()) as client:
        message = await error_of(client, "cron_add", job=job(schedule={"kind": "at", "at": "2020-01-01T09:00:00"}))
    assert message.startswith("Error executing tool cron_add: `job.schedule.at` 2020-01-01T09:00:00+00:00 is in")
    assert "the past (now it is " in message and message.endswith("; give a future time.")


async def test_list_shows_next_run_in_the_jobs_zone_and_in_words(cron_server: CronServer):
    daily = {"kind": "cron", "expr": "0 9 * * *", "tz": "Europe/Berlin"}
    async with Client(cron_server()) as client:
        added = await call(client, "cron_add", job=job("standup", schedule=daily))
        await call(client, "cron_add", job=job("paused", enabled=False))
        listed = (await call(client, "cron_list"))["jobs"]
        everything = (await call(client, "cron_list", include_disabled=True))["jobs"]
    assert [entry["id"] for entry in listed] == [added["id"]]
    assert added["id"].startswith("standup-")
    assert added["next_run"].endswith(("+01:00", "+02:00")) and "T09:00:00" in added["next_run"]
    words: str = added["next_run_in_words"]
    assert words.startswith("in ") and words.endswith(" 09:00 Europe/Berlin")
    assert added["session_target"] == "main" and added["delivery"] == {"mode": "announce"}
    assert {entry["name"] for entry in everything} == {"standup", "paused"}


async def test_update_replaces_fields_and_remove_forgets_the_job(cron_server: CronServer):
    async with Client(cron_server()) as client:
        added = await call(client, "cron_add", job=job(every=3600))
        patch = {"name": "renamed", "payload": {"kind": "agent_turn", "message": "check the mail"}}
        updated = await call(client, "cron_update", job_id=added["id"], patch=patch)
        unknown_field = await error_of(client, "cron_update", job_id=added["id"], patch={"colour": "red"})
        await call(client, "cron_remove", job_id=added["id"])
        gone = await error_of(client, "cron_remove", job_id=added["id"])
    assert updated["name"] == "renamed" and updated["session_target"] == "isolated"
    assert updated["schedule"] == added["schedule"] and updated["next_run"] == added["next_run"]
    assert "`patch.colour`: extra inputs are not permitted" in unknown_field
    assert f"There is no job '{added['id']}'" in gone


async def test_wake_queues_an_item_that_stays_until_acked(cron_server: CronServer):
    async with Client(cron_server()) as client:
        woken = await call(client, "cron_wake", text="Check the oven")
        before = await events(client)
        acked = await call(client, "cron_ack", event_ids=[woken["event_id"], "no-such-id"])
        again = await call(client, "cron_ack", event_ids=[woken["event_id"]])
        after = await events(client)
    (item,) = before["items"]
    assert item["id"] == woken["event_id"] and item["text"] == "Check the oven"
    assert item["session"] == "main" and item["delivery"] == {"mode": "announce"} and item["job_id"] is None
    assert before["ack"] == {"tool": "cron_ack", "argument": "event_ids"}
    assert acked == {"removed": 1, "remaining": 0} and again == {"removed": 0, "remaining": 0}
    assert after["items"] == []


async def test_a_forced_run_names_the_job_and_reaches_the_right_session(cron_server: CronServer):
    spec = job("digest", every=3600, payload={"kind": "agent_turn", "message": "Summarise the inbox"})
    spec["delivery"] = {"mode": "announce", "channel": "discord", "to": "dm:42"}
    async with Client(cron_server()) as client:
        added = await call(client, "cron_add", job=spec)
        ran = await call(client, "cron_run", job_id=added["id"], mode="force")
        not_due = await call(client, "cron_run", job_id=added["id"], mode="due")
        (item,) = (await events(client))["items"]
        runs = (await call(client, "cron_runs", job_id=added["id"]))["runs"]
        await call(client, "cron_ack", event_ids=[item["id"]])
        acked = (await call(client, "cron_runs", job_id=added["id"], limit=1))["runs"]
    assert ran["ran"] and ran["event_ids"] == [item["id"]]
    assert not not_due["ran"] and not_due["note"].startswith("not due: next run in 1 hour")
    assert item["text"].startswith('[cron job "digest" run by hand at ') and item["text"].endswith(
        "\nSummarise the inbox"
    )
    assert item["session"] == "isolated" and item["delivery"] == {
        "mode": "announce",
        "channel": "discord",
        "to": "dm:42",
    }
    assert [(run["status"], run["event_id"]) for run in runs] == [("queued", item["id"])]
    assert [(run["status"], run["run_id"]) for run in acked] == [("acked", runs[0]["run_id"])]


async def test_listeners_of_both_protocol_eras_are_told_about_new_items(cron_server: CronServer):
    server = cron_server()
    legacy_updates: list[str] = []
    legacy_told = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, ResourceUpdatedNotification):
            legacy_updates.append(str(message.params.uri))
            legacy_told.set()

    async with Client(server) as modern, Client(server, mode="legacy", message_handler=on_message) as legacy:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)  # the older era is the point here
            await legacy.session.subscribe_resource("cron://events")  # pyright: ignore[reportDeprecated]
        async with modern.listen(resource_subscriptions=["cron://events"]) as subscription:
            await call(modern, "cron_wake", text="ping")
            with anyio.fail_after(5):
                update = await anext(aiter(subscription))
                await legacy_told.wait()
    assert getattr(update, "uri", None) == "cron://events"
    assert legacy_updates == ["cron://events"]


async def test_status_reports_the_scheduler_role_and_counts(cron_server: CronServer):
    async with Client(cron_server()) as client:
        await call(client, "cron_add", job=job(schedule={"kind": "at", "at": soon(3600)}))
        await call(client, "cron_wake", text="hello")
        status = await call(client, "cron_status")
    assert status["role"] == "scheduler" and status["jobs"] == 1 and status["pending_events"] == 1
    assert status["next_run"].startswith("tick: in 1 hour") and status["warnings"] == []
