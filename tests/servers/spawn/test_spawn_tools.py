"""The spawn tools in process: runs report back on spawn://events, limits refuse clearly, kills and timeouts."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
from mcp import Client

from .conftest import SpawnServer, call, error_of, events, spawn, wait_for_items


async def test_a_cli_run_reports_its_output_on_events_in_its_session_until_acked(spawn_server: SpawnServer):
    async with Client(spawn_server()) as client:
        run_id = await spawn(client, "echo", "find the answer", session="discord-42", label="finder")
        (item,) = await wait_for_items(client, 1)
        listed = await call(client, "sessions_list", "discord-42")
        acked = await call(client, "sessions_ack", run_ids=[run_id, "unknown"])
        after = await events(client)

    assert item["id"] == run_id and item["session"] == "discord-42" and item["kind"] == "subagent"
    assert item["text"] == '[sub-agent finder finished: ok] ["find the answer"]'
    assert [run["run_id"] for run in listed["runs"]] == [run_id]
    assert listed["runs"][0]["status"] == "ok"
    assert acked == {"acknowledged": 1, "remaining": 0}
    assert after == {"items": [], "ack": {"tool": "sessions_ack", "argument": "run_ids"}}


async def test_a_task_full_of_shell_metacharacters_arrives_as_one_argument_or_on_stdin(spawn_server: SpawnServer):
    task = """it's "quoted"; rm -rf / && echo $(whoami) `id` | tee x > y {model} {task} \\ *.py\nnext line"""
    async with Client(spawn_server()) as client:
        exact = await spawn(client, "echo", task)
        piped = await spawn(client, "piped", "-v --help " + task)
        await wait_for_items(client, 2)
        results = {run_id: await call(client, "sessions_result", run_id=run_id) for run_id in (exact, piped)}

    assert json.loads(results[exact]["result"]) == [task]
    assert json.loads(results[piped]["result"]) == ["-v --help " + task]


async def test_without_a_session_in_meta_runs_belong_to_main(spawn_server: SpawnServer):
    async with Client(spawn_server()) as client:
        await spawn(client, "echo", "hello")
        (item,) = await wait_for_items(client, 1)
    assert item["session"] == "main"


async def test_the_sixth_active_child_of_a_session_is_refused_while_other_sessions_may_spawn(spawn_server: SpawnServer):
    async with Client(spawn_server()) as client:
        for number in range(5):
            await spawn(client, "slow", f"task {number}", session="main")
        refused = await error_of(client, "sessions_spawn", "main", task="one more", runtime="cli", cli="slow")
        other = await spawn(client, "echo", "elsewhere", session="other")
        (item,) = await wait_for_items(client, 1)

    assert "already has 5 active sub-agents (the limit is 5)" in refused
    assert item["id"] == other


async def test_a_sub_agent_cannot_spawn_at_depth_two(spawn_server: SpawnServer):
    async with Client(spawn_server()) as client:
        child = await spawn(client, "echo", "child", session="main")
        refused = await error_of(
            client, "sessions_spawn", f"subagent:{child}", task="grandchild", runtime="cli", cli="echo"
        )
    assert "sub-agent at depth 1 and the depth limit is 1" in refused


async def test_depth_two_is_allowed_when_the_limit_says_so(spawn_server: SpawnServer):
    async with Client(spawn_server(max_depth=2)) as client:
        child = await spawn(client, "echo", "child")
        grandchild = await spawn(client, "echo", "grandchild", session=f"subagent:{child}")
        status = await call(client, "sessions_status", run_id=grandchild)
        refused = await error_of(
            client, "sessions_spawn", f"subagent:{grandchild}", task="too deep", runtime="cli", cli="echo"
        )
    assert status["session"] == f"subagent:{child}"
    assert "depth limit is 2" in refused


async def test_a_run_past_its_timeout_is_killed_and_announced_as_timed_out(spawn_server: SpawnServer):
    async with Client(spawn_server()) as client:
        run_id = await spawn(client, "slow", "never ends", timeout_s=1)
        (item,) = await wait_for_items(client, 1, timeout_s=10)
        status = await call(client, "sessions_status", run_id=run_id)
    assert item["text"].startswith("[sub-agent never ends finished: timed out] stopped after its timeout of 1 s")
    assert status["status"] == "timed_out"


async def test_kill_stops_a_running_run_and_a_failure_carries_its_exit_code_and_log(spawn_server: SpawnServer):
    async with Client(spawn_server()) as client:
        slow = await spawn(client, "slow", "long job", label="long")
        with anyio.fail_after(10):
            while (await call(client, "sessions_status", run_id=slow))["status"] != "running":
                await anyio.sleep(0.05)
        killed = await call(client, "sessions_kill", run_id=slow)
        failing = await spawn(client, "fails", "bad job", label="bad")
        items = {item["id"]: item for item in await wait_for_items(client, 2)}

    assert killed["status"] == "killed"
    assert items[slow]["text"].startswith("[sub-agent long finished: killed] killed with sessions_kill")
    assert items[failing]["text"].startswith("[sub-agent bad finished: failed] exited with code 3")
    assert "working" in items[failing]["text"]  # the end of its stderr log


async def test_runs_beyond_max_concurrent_wait_in_the_queue(spawn_server: SpawnServer):
    async with Client(spawn_server(max_concurrent=1)) as client:
        first = await spawn(client, "slow", "first")
        second = await spawn(client, "echo", "second")
        with anyio.fail_after(10):
            while (await call(client, "sessions_status", run_id=first))["status"] != "running":
                await anyio.sleep(0.05)
        waiting = await call(client, "sessions_status", run_id=second)
        await call(client, "sessions_kill", run_id=first)
        items = await wait_for_items(client, 2)
    assert waiting["status"] == "queued"
    assert {item["id"] for item in items} == {first, second}


async def test_unknown_clis_runs_and_a_missing_agent_runtime_are_explained(spawn_server: SpawnServer):
    async with Client(spawn_server()) as client:
        no_cli = await error_of(client, "sessions_spawn", task="x", runtime="cli", cli="nope")
        no_agent = await error_of(client, "sessions_spawn", task="x")
        no_run = await error_of(client, "sessions_status", run_id="20260101-000000-abcdef")
    assert "there is no cli named 'nope'; the clis here: echo, fails, piped, slow" in no_cli
    assert "the agent runtime is not available here" in no_agent
    assert "there is no run '20260101-000000-abcdef'" in no_run


async def test_an_unreadable_store_is_moved_aside_and_the_server_starts_empty(spawn_server: SpawnServer, state: Path):
    state.mkdir(parents=True)
    (state / "runs.json").write_text("{not json")
    async with Client(spawn_server()) as client:
        listed = await call(client, "sessions_list")
    assert listed == {"runs": []}
    assert [path.name.startswith("runs.json.corrupt-") for path in state.iterdir() if "corrupt" in path.name] == [True]


async def test_two_servers_on_one_state_dir_announce_their_own_runs_and_take_over_those_of_one_that_left(
    spawn_server: SpawnServer,
):
    async with Client(spawn_server()) as second:
        async with Client(spawn_server()) as first:
            run_id = await spawn(first, "slow", "long job")
            shared = await call(second, "sessions_list")
            assert (await events(second))["items"] == []  # the first server runs and announces it
        (item,) = await wait_for_items(second, 1, timeout_s=10)

    assert [run["run_id"] for run in shared["runs"]] == [run_id]
    assert item["id"] == run_id and "finished: interrupted" in item["text"]
