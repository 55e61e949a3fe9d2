"""Exec approvals travel from the real exec server, through the host, to the user in the conversation."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from hermitcrab.host.config import AgentSettings, ServerConfig, Settings
from hermitcrab.host.events import OWNER, Event, Target
from tests.support.channels import RecordingChannel, run_turn_with_servers
from tests.support.fake_llm import openai_text, openai_tool_calls
from tests.support.scripted_provider import ScriptedProvider

ROOM = Target("test", "room", "owner")


def exec_server(root: Path, state: Path) -> ServerConfig:
    args = (
        "-m",
        "hermitcrab.servers.exec",
        "--root",
        str(root),
        "--state",
        str(state),
        "--ask",
        "on-miss",
        "--sandbox",
        "none",
        "--approval-timeout",
        "10",
    )
    return ServerConfig("exec", command=sys.executable, args=args, timeout_s=30)


@pytest.mark.parametrize(("decision", "ran"), [("allow-once", True), ("deny", False)])
async def test_a_command_off_the_allowlist_is_approved_or_denied_by_the_user(tmp_path: Path, decision: str, ran: bool):
    root = tmp_path / "workspace"
    root.mkdir()
    command = "touch approved.txt"
    provider = ScriptedProvider().call(("x1", "exec", {"command": command})).say("done")
    settings = Settings(tmp_path, (), (exec_server(root, tmp_path / "state"),), AgentSettings())
    channel = RecordingChannel(answer=decision, trigger="wants to run a shell command")

    await run_turn_with_servers(settings, provider, channel, Event("message", "make the file", ROOM, principal=OWNER))

    question = channel.texts[0]
    assert command in question and "- allow-once" in question and "- deny" in question
    assert (root / "approved.txt").exists() is ran
    result = provider.seen[1]["messages"][-1]
    assert result.is_error is not ran


@pytest.mark.parametrize(("typed", "made"), [("allow-once\n", True), ("1\n", True), ("sure, go ahead\n", False)])
def test_hermitcrab_ask_forwards_the_approval_to_stdin(hermitcrab, llm, tmp_path: Path, typed: str, made: bool):
    root = tmp_path / "workspace"
    root.mkdir()
    desktop = tmp_path / "desktop.json"
    server = exec_server(root, tmp_path / "state")
    desktop.write_text(json.dumps({"mcpServers": {"exec": {"command": server.command, "args": list(server.args)}}}))
    llm.enqueue(openai_tool_calls(("x1", "exec", '{"command": "touch made.txt"}')), openai_text("Made it."))

    result = hermitcrab("ask", "--mcp-config", str(desktop), "make a file", stdin=typed)

    assert result.returncode == 0, result.stderr
    assert "The exec server asks:" in result.stderr and "wants to run a shell command" in result.stderr
    assert (root / "made.txt").exists() is made
    assert result.stdout.strip() == "Made it."
