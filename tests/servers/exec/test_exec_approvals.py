"""Approvals over MCP elicitation: approve, deny, timeout, allow-always, on both protocol eras."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer

from hermitcrab.servers.exec.approvals import ApprovalStore
from hermitcrab.servers.exec.policy import Miss, Verdict
from tests.support.elicitation import User

pytestmark = pytest.mark.anyio  # marked at collection time too, so the parametrized fixtures below apply


@pytest.fixture(params=["auto", "legacy"])
def era(request: pytest.FixtureRequest) -> str:
    """2026-07-28 input-required rounds, and the older mid-call elicitation request."""
    return request.param  # type: ignore[no-any-return]


@pytest.fixture(
    params=[
        ("deny", "accept", "denied"),
        ("allow-once", "decline", "did not approve"),
        ("allow-once", "cancel", "did not approve"),
    ]
)
def refusal(request: pytest.FixtureRequest) -> tuple[str, str, str]:
    return request.param  # type: ignore[no-any-return]


async def run(server: MCPServer, user: User, era: str, command: str) -> tuple[bool, str]:
    async with Client(server, elicitation_callback=user, mode=era) as client:  # type: ignore[arg-type]
        result = await client.call_tool("exec", {"command": command})
    return result.is_error, result.content[0].text  # type: ignore[union-attr]


async def test_allow_once_runs_the_command(server_factory: Callable[..., MCPServer], workspace: Path, era: str) -> None:
    user = User("allow-once")
    is_error, _ = await run(server_factory(), user, era, "rm a.txt")
    assert not is_error and not (workspace / "a.txt").exists()
    (question,) = user.questions
    assert "Command: rm a.txt" in question.message and f"Directory: {workspace}" in question.message
    assert "not on the allowlist" in question.message
    schema = question.requested_schema
    assert schema["properties"]["decision"]["enum"] == ["allow-once", "allow-always", "deny"]
    assert schema["required"] == ["decision"]


async def test_deny_refuses(
    server_factory: Callable[..., MCPServer], workspace: Path, era: str, refusal: tuple[str, str, str]
) -> None:
    decision, action, expected = refusal
    is_error, text = await run(server_factory(), User(decision, action), era, "rm a.txt")
    assert is_error and expected in text and "`rm a.txt`" in text
    assert (workspace / "a.txt").exists()


async def test_no_answer_in_time_means_deny(
    server_factory: Callable[..., MCPServer], workspace: Path, era: str
) -> None:
    server = server_factory(approval_timeout_s=0.3)
    with anyio.fail_after(10):
        is_error, text = await run(server, User("allow-once", delay_s=0.8), era, "rm a.txt")
    assert is_error and "nobody approved" in text
    assert (workspace / "a.txt").exists()


async def test_allow_always_is_persisted(server_factory: Callable[..., MCPServer], state: Path, era: str) -> None:
    user = User("allow-always")
    is_error, text = await run(server_factory(), user, era, "rm -f nothing")
    assert not is_error and "Approved always" in text
    saved = json.loads((state / "approvals.json").read_text())
    assert [Path(b).name for b in saved["binaries"]] == ["rm"]
    again = User("deny")
    is_error, _ = await run(server_factory(), again, era, "rm -f other")  # a fresh server reads the file
    assert not is_error and again.questions == []


async def test_allow_always_for_inline_code_remembers_the_exact_command(
    server_factory: Callable[..., MCPServer], state: Path
) -> None:
    server = server_factory(allow=("ls", "bash"))
    is_error, _ = await run(server, User("allow-always"), "auto", "bash -c 'echo hi'")
    assert not is_error
    assert json.loads((state / "approvals.json").read_text())["commands"] == ["bash -c 'echo hi'"]
    again = User("deny")
    assert (await run(server, again, "auto", "bash -c 'echo hi'"))[0] is False and again.questions == []
    assert (await run(server, again, "auto", "bash -c 'echo bye'"))[0] is True


async def test_ask_always_offers_only_once_or_deny(server_factory: Callable[..., MCPServer]) -> None:
    user = User("allow-once")
    is_error, _ = await run(server_factory(ask="always"), user, "auto", "ls")
    assert not is_error
    assert user.questions[0].requested_schema["properties"]["decision"]["enum"] == ["allow-once", "deny"]


async def test_host_without_elicitation_gets_a_clear_refusal(server_factory: Callable[..., MCPServer]) -> None:
    async with Client(server_factory()) as client:
        result = await client.call_tool("exec", {"command": "rm a.txt"})
    assert result.is_error and "cannot ask the user" in result.content[0].text  # type: ignore[union-attr]


async def test_hard_refusals_are_never_asked(server_factory: Callable[..., MCPServer]) -> None:
    user = User("allow-always")
    is_error, text = await run(server_factory(), user, "auto", "LD_PRELOAD=/tmp/x.so ls")
    assert is_error and "LD_PRELOAD" in text and user.questions == []


@pytest.mark.parametrize(
    "content",
    ['{"binaries": ["/usr/bin/rm"], "commands": ["rm -rf x"]}', "not json", "[1]", '{"binaries": 1, "mac": "x"}'],
)
def test_a_file_the_server_did_not_write_is_ignored(
    state: Path, content: str, caplog: pytest.LogCaptureFixture
) -> None:
    state.mkdir(parents=True)
    (state / "approvals.json").write_text(content)
    store = ApprovalStore(state / "approvals.json")
    assert store.binaries == set() and store.commands == set()
    assert "approvals.json" in caplog.text


def test_approvals_the_server_wrote_survive_a_restart_and_edits_do_not(state: Path) -> None:
    store = ApprovalStore(state / "approvals.json")
    store.remember(Verdict(misses=(Miss("rm x", "not allowed", "/usr/bin/rm"),)), "rm x")
    assert ApprovalStore(state / "approvals.json").binaries == {"/usr/bin/rm"}
    saved = json.loads((state / "approvals.json").read_text())
    saved["binaries"].append("/usr/bin/bash")
    (state / "approvals.json").write_text(json.dumps(saved))
    assert ApprovalStore(state / "approvals.json").binaries == set()


async def test_the_question_shows_a_commands_escapes_and_line_breaks_written_out(
    server_factory: Callable[..., MCPServer], workspace: Path, era: str
) -> None:
    """Any MCP host shows this text: a command must not redraw it, nor add a line that looks like the server's."""
    user = User("deny")
    await run(server_factory(), user, era, "rm a.txt #\x1b[2K\x1b[1A\nDirectory: /tmp/safe")
    (question,) = user.questions
    assert "\x1b" not in question.message
    assert "Command: rm a.txt #\\x1b[2K\\x1b[1A\\nDirectory: /tmp/safe" in question.message
    assert [line for line in question.message.splitlines() if line.startswith("Directory:")] == [
        f"Directory: {workspace}"
    ]
