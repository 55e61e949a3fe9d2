"""The owner's bounds on what a model schedules: runs at least --min-interval-s apart, at most --max-jobs jobs.

In process with the defaults of `build_server`, and as a real process started from the owner's config.toml.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from hermitcrab.host.config import load_settings
from hermitcrab.host.mcp.pool import McpPool
from hermitcrab.servers.cron import build_server
from tests.servers.cron.conftest import call, error_of, job, soon
from tests.support.origins import GROUP, OWNER

EVERY_SECOND = (
    "every_seconds 1 is below this server's minimum interval of 300 s (the owner can lower it with --min-interval-s)"
)


def cron(expr: str, tz: str = "UTC") -> dict[str, Any]:
    return {"kind": "cron", "expr": expr, "tz": tz}


async def test_an_every_schedule_below_the_minimum_is_refused_naming_the_flag(state: Path):
    async with Client(build_server(state)) as client:
        refused = await error_of(client, "cron_add", job=job(every=1))
        at_the_minimum = await call(client, "cron_add", job=job(every=300))
        jobs = (await call(client, "cron_list"))["jobs"]

    assert EVERY_SECOND in refused and "`job.schedule`" in refused and "use every_seconds 300 or more" in refused
    assert [entry["id"] for entry in jobs] == [at_the_minimum["id"]]


@pytest.mark.parametrize(
    ("expr", "gap"),
    [
        ("* * * * *", "60 s apart"),
        ("*/2 9-17 * * 1-5", "120 s apart"),
        ("0,59 0,23 * * *", "60 s apart"),  # only 23:59 and the next day's 00:00 are that close
    ],
)
async def test_a_cron_expression_firing_more_often_than_the_minimum_is_refused(state: Path, expr: str, gap: str):
    async with Client(build_server(state)) as client:
        refused = await error_of(client, "cron_add", job=job(schedule=cron(expr, "Europe/Berlin")))
        status = await call(client, "cron_status")

    assert f"`job.schedule`: cron expression {expr!r} runs {gap} (" in refused
    assert "below this server's minimum interval of 300 s (the owner can lower it with --min-interval-s)" in refused
    assert "+01:00" in refused or "+02:00" in refused  # the two runs are shown in the job's zone
    assert status["jobs"] == 0


@pytest.mark.parametrize("expr", ["*/5 * * * *", "0 9 * * 1-5", "@hourly", "30 2 * * *"])
async def test_a_cron_expression_whose_runs_are_far_enough_apart_is_accepted(state: Path, expr: str):
    async with Client(build_server(state)) as client:
        added = await call(client, "cron_add", job=job(schedule=cron(expr, "Europe/Berlin")))
    assert added["next_run"] is not None


async def test_a_one_shot_is_not_interval_limited(state: Path):
    async with Client(build_server(state, min_interval_s=10**9)) as client:
        added = await call(client, "cron_add", job=job(schedule={"kind": "at", "at": soon(60)}))
    assert added["schedule"]["kind"] == "at"


async def test_cron_update_checks_a_new_schedule_only(state: Path):
    async with Client(build_server(state, min_interval_s=0)) as client:
        fast = await call(client, "cron_add", job=job("fast", every=1))  # allowed then

    async with Client(build_server(state)) as client:  # the owner raised the minimum: the store still loads
        (kept,) = (await call(client, "cron_list"))["jobs"]
        renamed = await call(client, "cron_update", job_id=fast["id"], patch={"name": "renamed"})
        refused = await error_of(client, "cron_update", job_id=fast["id"], patch={"schedule": cron("* * * * *")})
        slower = await call(
            client, "cron_update", job_id=fast["id"], patch={"schedule": {"kind": "every", "every_seconds": 600}}
        )

    assert kept["id"] == fast["id"] and kept["schedule"]["every_seconds"] == 1
    assert renamed["name"] == "renamed" and renamed["schedule"]["every_seconds"] == 1
    assert "`patch.schedule`: cron expression '* * * * *' runs 60 s apart" in refused
    assert slower["schedule"]["every_seconds"] == 600


async def test_cron_add_beyond_the_cap_says_how_many_there_are_and_how_to_remove_one(state: Path):
    async with Client(build_server(state, max_jobs=3)) as client:
        added = [
            await call(client, "cron_add", job=job("a", every=600)),
            await call(client, "cron_add", job=job("b", schedule=cron("0 9 * * *"))),
            await call(client, "cron_add", job=job("c", schedule={"kind": "at", "at": soon(60)})),  # one-shots count
        ]
        refused = await error_of(client, "cron_add", job=job("d", every=600))
        await call(client, "cron_remove", job_id=added[0]["id"])
        again = await call(client, "cron_add", job=job("d", every=600))
        status = await call(client, "cron_status")

    assert refused == (
        "Error executing tool cron_add: This server already has 3 jobs and keeps at most 3 (the owner can raise that "
        "with --max-jobs); remove one that is no longer needed with cron_remove (cron_list with include_disabled lists "
        "them, fired one-shots too), then add this one again."
    )
    assert again["name"] == "d" and status["jobs"] == 3 and status["max_jobs"] == 3


async def test_a_group_session_at_the_cap_is_told_none_of_the_jobs_is_its_own(state: Path):
    isolated = {"payload": {"kind": "agent_turn", "message": "check the feed"}}
    async with Client(build_server(state, max_jobs=1)) as client:
        assert not (await client.call_tool("cron_add", {"job": job("mine", every=600)}, meta=OWNER)).is_error
        refused = await client.call_tool("cron_add", {"job": job("theirs", every=600, **isolated)}, meta=GROUP)

    assert refused.is_error
    assert refused.content[0].text.endswith(  # type: ignore[union-attr]  # an error result carries one text block
        "and none of them was made from this conversation; ask the owner to remove some."
    )


async def test_the_status_shows_the_bounds(state: Path):
    async with Client(build_server(state)) as client:
        status = await call(client, "cron_status")
    assert status["min_interval_s"] == 300 and status["max_jobs"] == 20


def write_config(home: Path, *args: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    entry = {"command": sys.executable, "args": ["-m", "hermitcrab.servers.cron", "--state", str(home / "cron"), *args]}
    (home / "config.toml").write_text(
        f"[mcpServers.cron]\ncommand = {json.dumps(entry['command'])}\nargs = {json.dumps(entry['args'])}\n"
    )


async def cron_add_from_config(home: Path, *specs: dict[str, Any]) -> list[str]:
    """The host started as configured adds the jobs one by one: what each call answered."""
    async with McpPool(load_settings({"HERMITCRAB_HOME": str(home)}).servers) as pool:
        return [(await pool.call("cron_add", {"job": spec})).text for spec in specs]


async def test_the_server_started_as_configured_keeps_the_defaults(tmp_path: Path):
    write_config(tmp_path / "home")
    (refused, added) = await cron_add_from_config(tmp_path / "home", job(every=1), job(every=300))
    assert EVERY_SECOND in refused and '"every_seconds":300' in added.replace(" ", "")


async def test_the_owner_lowers_the_minimum_and_the_cap_in_config(tmp_path: Path):
    write_config(tmp_path / "home", "--min-interval-s", "1", "--max-jobs", "1")
    (added, refused) = await cron_add_from_config(tmp_path / "home", job(every=1), job(every=1))
    assert '"every_seconds":1' in added.replace(" ", "")
    assert "This server already has 1 job and keeps at most 1 (the owner can raise that with --max-jobs)" in refused
