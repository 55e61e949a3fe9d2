"""Runs keep their origin: the announcement carries the conversation that spawned the run, a non-owner's agent child
runs with that principal, and a non-owner sees only its own session's runs."""

from __future__ import annotations

import json
import sys

from mcp import Client

from tests.support.callers import call_as, error_as
from tests.support.origins import GROUP, GROUP_ORIGIN, GROUP_SESSION, meta

from .conftest import FAKE_CLI, SpawnServer, call, events, spawn, wait_for_items

AGENT = (sys.executable, FAKE_CLI, "--stdin")  # prints its command line, as the agent runtime is started, and stdin
OWNER_ORIGIN = {"session": "main", "principal": "owner", "channel": None, "to": None, "user": None, "label": "me"}
OWNER = meta(OWNER_ORIGIN, principal="owner")


async def child_argv(client: Client, run_id: str) -> list[str]:
    return json.loads((await call(client, "sessions_result", run_id=run_id))["result"])


async def test_a_group_runs_agent_child_gets_its_principal_and_its_item_the_origin(spawn_server: SpawnServer):
    async with Client(spawn_server(agent=AGENT)) as client:
        groups = (await call_as(client, GROUP, "sessions_spawn", task="look it up", label="lookup"))["run_id"]
        owners = (await call_as(client, OWNER, "sessions_spawn", task="plan the week"))["run_id"]
        items = {item["id"]: item for item in await wait_for_items(client, 2)}
        argv = {run_id: await child_argv(client, run_id) for run_id in (groups, owners)}

    assert items[groups]["origin"] == GROUP_ORIGIN and items[groups]["session"] == GROUP_SESSION
    assert items[owners]["origin"] == OWNER_ORIGIN
    options = argv[groups][:-1]
    assert options[options.index("--principal") + 1] == "group" and argv[groups][-1] == "look it up"
    assert "--principal" not in argv[owners] and argv[owners][-1] == "plan the week"
    assert "look it up" not in argv[groups][:-1]  # the task comes on stdin, where `ps` does not show it
    assert not any("plan" in word for word in argv[owners][:-1])  # nor a label made from its first words
    assert options[options.index("--label") + 1] == "lookup"  # a label the caller chose is a name, and is passed


async def test_an_item_carries_the_origin_even_when_another_server_announces_it(spawn_server: SpawnServer):
    async with Client(spawn_server()) as first:
        result = await first.call_tool("sessions_spawn", {"task": "hi", "runtime": "cli", "cli": "echo"}, meta=OWNER)
        run_id = result.structured_content["run_id"]  # type: ignore[index]  # a successful spawn is structured
        await wait_for_items(first, 1)
    async with Client(spawn_server()) as second:
        (item,) = await wait_for_items(second, 1)
    assert item["id"] == run_id and item["origin"] == OWNER_ORIGIN


async def test_runs_without_an_origin_or_with_a_malformed_one_are_announced_with_null(spawn_server: SpawnServer):
    junk = {"hermitcrab/session": "main", "hermitcrab/principal": "owner", "hermitcrab/origin": ["not", "an object"]}
    async with Client(spawn_server()) as client:
        plain = await spawn(client, "echo", "plain")
        result = await client.call_tool("sessions_spawn", {"task": "junk", "runtime": "cli", "cli": "echo"}, meta=junk)
        items = await wait_for_items(client, 2)
    assert not result.is_error
    assert [item["origin"] for item in items] == [None, None] and plain in {item["id"] for item in items}


async def test_a_non_owner_may_not_start_an_external_cli(spawn_server: SpawnServer):
    async with Client(spawn_server()) as client:
        refused = await error_as(client, GROUP, "sessions_spawn", task="x", runtime="cli", cli="echo")
        listed = await call(client, "sessions_list", GROUP_SESSION)
    assert "runs an external agent with the owner's rights, which a group session does not have" in refused
    assert listed == {"runs": []}


async def test_a_non_owner_sees_only_the_runs_its_own_session_spawned(spawn_server: SpawnServer):
    async with Client(spawn_server(agent=AGENT)) as client:
        owners = await spawn(client, "slow", "private work")
        groups = (await call_as(client, GROUP, "sessions_spawn", task="public work"))["run_id"]
        refusals = [
            await error_as(client, GROUP, tool, run_id=owners)
            for tool in ("sessions_status", "sessions_result", "sessions_kill")
        ]
        own = await call_as(client, GROUP, "sessions_status", run_id=groups)
        still = await call(client, "sessions_status", run_id=owners)
        await call(client, "sessions_kill", run_id=owners)
        announced = {item["id"] for item in (await events(client))["items"]}

    assert all(f"there is no run '{owners}'" in refusal for refusal in refusals), refusals
    assert own["run_id"] == groups and still["status"] in ("queued", "running")
    assert owners in announced
