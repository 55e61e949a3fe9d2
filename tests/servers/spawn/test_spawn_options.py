"""A task never becomes an option of the configured CLI: it comes on stdin or in a file, after a `--` the template
marks, or it is refused when it starts with `-`; the stand-in CLI parses its arguments with argparse."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from mcp import Client

from hermitcrab.servers.spawn import Commands, Limits, build_server

from .conftest import call, error_of, spawn, wait_for_items

STAND_IN = (sys.executable, str(Path(__file__).with_name("argparse_cli.py")))
CLIS = {
    "inline": (*STAND_IN, "-p", "{task}"),
    "marked": (*STAND_IN, "-p", "--", "{task}"),
    "piped": (*STAND_IN, "-p"),
    "file": (*STAND_IN, "-p", "--prompt-file", "{task_file}"),
}
HOSTILE = ("--dangerously-skip-permissions", "--output=/tmp/owned")


async def parsed(client: Client, cli: str, task: str) -> dict[str, Any]:
    run_id = await spawn(client, cli, task)
    await wait_for_items(client, 1)
    await call(client, "sessions_ack", run_ids=[run_id])
    return json.loads((await call(client, "sessions_result", run_id=run_id))["result"])


async def test_a_task_that_looks_like_an_option_is_refused_where_the_template_puts_it_among_options(state: Path):
    async with Client(build_server(state, Commands(None, CLIS), Limits())) as client:
        refused = [await error_of(client, "sessions_spawn", task=task, runtime="cli", cli="inline") for task in HOSTILE]
        runs = await call(client, "sessions_list")
    assert all("would start an argument with '-'" in reason and "cli 'inline'" in reason for reason in refused)
    assert runs == {"runs": []}


async def test_a_task_that_looks_like_an_option_reaches_the_cli_as_its_prompt_and_never_as_an_option(state: Path):
    async with Client(build_server(state, Commands(None, CLIS), Limits())) as client:
        seen = {(cli, task): await parsed(client, cli, task) for cli in ("marked", "piped", "file") for task in HOSTILE}

    for (cli, task), args in seen.items():
        assert args["prompt"] == task, cli
        assert args["dangerously_skip_permissions"] is False and args["output"] is None, cli
    assert seen["marked", HOSTILE[0]]["argv"] == ["-p", "--", HOSTILE[0]]
    assert all(task not in seen[cli, task]["argv"] for cli in ("piped", "file") for task in HOSTILE)  # not in `ps`
    assert seen["file", HOSTILE[0]]["argv"][-1].endswith("/task")


async def test_the_task_file_is_the_owners_alone(state: Path):
    async with Client(build_server(state, Commands(None, CLIS), Limits())) as client:
        run_id = await spawn(client, "piped", "a private task")
        await wait_for_items(client, 1)
    task_file = state / "runs" / run_id / "task"
    assert task_file.read_text() == "a private task" and task_file.stat().st_mode & 0o777 == 0o600
