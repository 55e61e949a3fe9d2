"""The MCP client pool against real stdio servers: naming, filtering, crashes, hangs, events, elicitation."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import anyio
import pytest

from hermitcrab.host.config import ServerConfig
from hermitcrab.host.mcp.elicitation import Asker, current_asker
from hermitcrab.host.mcp.pool import McpPool, ServerEvent, ToolOutcome
from tests.support.fake_llm import free_port
from tests.support.processes import serving

TEST_SERVER = str(Path(__file__).parents[1] / "support" / "mcp_test_server.py")


def server(name: str, **options) -> ServerConfig:
    return ServerConfig(name, command=sys.executable, args=(TEST_SERVER, "--name", name), **options)


async def test_tools_keep_their_names_unless_two_servers_clash():
    configs = [server("one", disabled_tools=("pid",)), server("two", enabled_tools=("echo", "pid"))]
    async with McpPool(configs) as pool:
        names = set(pool.routes())
        outcome = await pool.call("one__echo", {"text": "hi"})

    assert {"one__echo", "two__echo", "pid", "add", "publish"} <= names
    assert not {"echo", "one__pid", "two__pid", "two__add"} & names
    assert outcome.text == "hi" and not outcome.is_error


async def test_tool_errors_and_unknown_tools_are_error_results():
    async with McpPool([server("kit")]) as pool:
        failed = await pool.call("fail", {"reason": "no can do"})
        bad_args = await pool.call("add", {"a": "x"})
        unknown = await pool.call("nope", {})

    assert failed.is_error and "no can do" in failed.text
    assert bad_args.is_error and "validation error" in bad_args.text
    assert unknown.is_error and "unknown tool 'nope'" in unknown.text


async def test_a_killed_server_is_restarted_before_the_next_call():
    async with McpPool([server("kit")]) as pool:
        handle = pool.handles["kit"]
        first_pid = int((await pool.call("pid", {})).text)
        os.kill(first_pid, signal.SIGKILL)
        with anyio.fail_after(10):
            while handle.restarts == 0:
                await anyio.sleep(0.02)
        second = await pool.call("pid", {})

    assert not second.is_error
    assert int(second.text) != first_pid


async def test_a_hung_call_becomes_an_error_and_the_server_stays_usable():
    async with McpPool([server("kit", timeout_s=0.5)]) as pool:
        hung = await pool.call("hang", {})
        after = await pool.call("add", {"a": 1, "b": 1})

    assert hung.is_error and "timed out after 0.5s" in hung.text
    assert after.text == "2"


async def test_a_server_that_cannot_start_is_reported_not_fatal():
    async with McpPool(
        [ServerConfig("ghost", command="/nonexistent/server", timeout_s=0.5), server("kit")], startup_timeout_s=10
    ) as pool:
        ghost = pool.handles["ghost"]
        outcome = await pool.call("add", {"a": 2, "b": 3})

    assert not ghost.ready and "No such file" in (ghost.last_error or "")
    assert outcome.text == "5"


@pytest.mark.parametrize("protocol", ["auto", "legacy"])
async def test_server_events_reach_the_host_queue(protocol: str):
    received: list[ServerEvent] = []
    got_one = anyio.Event()

    async def sink(event: ServerEvent) -> None:
        received.append(event)
        if not event.initial:
            got_one.set()

    async with McpPool([server("kit", protocol=protocol)], on_event=sink) as pool:
        await pool.call("publish", {"item": "wake up"})
        with anyio.fail_after(5):
            await got_one.wait()

    assert {event.uri for event in received if event.initial} == {"test://inbox", "test://queue"}
    assert {event for event in received if not event.initial} == {ServerEvent("kit", "test://inbox")}


@pytest.mark.parametrize("protocol", ["auto", "legacy"])  # asked within the call's result, or mid-call by request
async def test_elicitation_is_answered_by_the_current_conversation(protocol: str):
    questions: list[tuple[str, Sequence[str] | None]] = []

    async def asker(question: str, choices: Sequence[str] | None = None) -> str | None:
        questions.append((question, choices))
        return "allow-once"

    async with McpPool([server("kit", protocol=protocol)]) as pool:
        token = current_asker.set(asker)
        try:
            approved = await pool.call("guarded", {"action": "rm notes.txt"})
        finally:
            current_asker.reset(token)
        unanswered = await pool.call("guarded", {"action": "rm notes.txt"})

    hint = "Pick one, by name or number. `decline` or `cancel` ends the form."
    assert questions == [
        (f"The kit server asks:\n```\nAllow rm notes.txt?\n```\n{hint}", ["allow-once", "allow-always", "deny"])
    ]
    assert approved.text == "rm notes.txt: allow-once"
    assert unanswered.is_error


async def test_an_older_era_question_during_calls_from_two_conversations_is_asked_of_neither():
    """An older-era server's question does not say which call it belongs to: with calls from two conversations in
    flight, showing it to either could put one person's approval before another."""
    first_asked, release = anyio.Event(), anyio.Event()
    second_questions: list[str] = []

    async def first(question: str, choices: Sequence[str] | None = None) -> str | None:
        first_asked.set()
        await release.wait()
        return "allow-once"

    async def second(question: str, choices: Sequence[str] | None = None) -> str | None:
        second_questions.append(question)
        return "allow-once"

    async def call_as(asker: Asker, action: str, outcomes: dict[str, ToolOutcome]) -> None:
        current_asker.set(asker)  # this task's own context
        outcomes[action] = await pool.call("guarded", {"action": action})

    outcomes: dict[str, ToolOutcome] = {}
    async with McpPool([server("kit", protocol="legacy")]) as pool, anyio.create_task_group() as group:
        group.start_soon(call_as, first, "deploy", outcomes)
        await first_asked.wait()
        await call_as(second, "rm -rf /", outcomes)
        release.set()

    assert second_questions == []
    assert outcomes["rm -rf /"].is_error and "decline" in outcomes["rm -rf /"].text
    assert outcomes["deploy"] == ToolOutcome("deploy: allow-once")


@pytest.fixture
def http_server_url() -> Iterator[str]:
    port = free_port()
    with serving([sys.executable, TEST_SERVER, "--name", "web", "--http-port", str(port)], port) as url:
        yield url


async def test_streamable_http_servers_are_called_like_stdio_ones(http_server_url: str):
    remote = ServerConfig("web", url=http_server_url, headers={"Authorization": "Bearer test"})
    async with McpPool([remote]) as pool:
        outcome = await pool.call("add", {"a": 40, "b": 2})

    assert outcome == ToolOutcome("42")


@pytest.mark.parametrize("protocol", ["auto", "legacy"])
async def test_the_call_timeout_stops_while_the_user_is_being_asked(protocol: str):
    async def slow_user(question: str, choices: Sequence[str] | None = None) -> str | None:
        await anyio.sleep(1.0)  # twice the call's timeout: a person reading an approval
        return "allow-once"

    async with McpPool([server("kit", timeout_s=0.5, protocol=protocol)]) as pool:
        token = current_asker.set(slow_user)
        try:
            approved = await pool.call("guarded", {"action": "deploy"})
        finally:
            current_asker.reset(token)
        hung = await pool.call("hang", {})

    assert approved == ToolOutcome("deploy: allow-once")
    assert hung.is_error and "timed out after 0.5s" in hung.text


async def test_a_server_failing_the_same_way_five_times_is_given_up_and_reported(caplog: pytest.LogCaptureFixture):
    ghost = ServerConfig("ghost", command="/nonexistent/server")
    async with McpPool([ghost], min_backoff_s=0.01) as pool:
        handle = pool.handles["ghost"]
        with anyio.fail_after(10):
            while handle.gave_up is None:
                await anyio.sleep(0.01)
        restarts = handle.restarts
        await anyio.sleep(0.2)

    assert handle.restarts == restarts == 4
    assert handle.state.startswith("stopped, not restarted any more: failed 5 times in a row with: FileNotFoundError")
    assert "is not restarted any more" in caplog.text
    assert "Traceback" not in caplog.text  # a missing binary is an expected failure, not a bug


async def test_an_unexpected_start_up_error_is_logged_with_its_traceback(caplog: pytest.LogCaptureFixture):
    broken = ServerConfig("broken", command="server\0name")  # ValueError from the OS layer: not a server's fault
    async with McpPool([broken], min_backoff_s=0.01, startup_timeout_s=5) as pool:
        await pool.handles["broken"].attempted.wait()

    assert "failed unexpectedly: ValueError: embedded null byte" in caplog.text
    assert "Traceback (most recent call last)" in caplog.text
