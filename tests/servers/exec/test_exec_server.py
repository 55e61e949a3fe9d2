"""The exec and process tools over MCP (in-process client)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer

from hermitcrab.servers.exec.sandbox import SandboxUnavailable, detect


async def call(client: Client, tool: str, **args: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content
    content = result.structured_content
    assert content is not None
    return content["result"] if tool == "process" else content  # a union output is wrapped in "result"


async def error(client: Client, tool: str, **args: Any) -> str:
    result = await client.call_tool(tool, args)
    assert result.is_error
    return result.content[0].text  # type: ignore[union-attr]


async def test_exec_returns_exit_code_and_output(server_factory: Callable[..., MCPServer]) -> None:
    async with Client(server_factory()) as client:
        out = await call(client, "exec", command="ls | grep a; echo done >&2", workdir=".")
    assert out["status"] == "exited" and out["exit_code"] == 0
    assert out["stdout"] == "a.txt\n" and out["stderr"] == "done\n"
    assert out["session_id"] is None and out["duration_s"] >= 0


async def test_exec_runs_in_workdir_with_env(server_factory: Callable[..., MCPServer], workspace: Path) -> None:
    async with Client(server_factory(allow=("ls", "pwd", "printenv"))) as client:
        out = await call(client, "exec", command="pwd; printenv TZ", workdir="sub", env={"TZ": "hi"})
    assert out["stdout"].split() == [str(workspace / "sub"), "hi"]


async def test_refusals_name_the_command_and_why(server_factory: Callable[..., MCPServer]) -> None:
    async with Client(server_factory(ask="off")) as client:
        text = await error(client, "exec", command="ls && rm -rf /")
        assert "`rm -rf /`" in text and "not on the allowlist" in text
        text = await error(client, "exec", command="ls", env={"LD_PRELOAD": "/tmp/x.so"})
        assert "LD_PRELOAD" in text
        text = await error(client, "exec", command="ls", workdir="../..")
        assert "outside the allowed roots" in text


async def test_security_deny_and_full(server_factory: Callable[..., MCPServer]) -> None:
    async with Client(server_factory(security="deny")) as client:
        assert "--security deny" in await error(client, "exec", command="ls")
    async with Client(server_factory(security="full", ask="off")) as client:
        out = await call(client, "exec", command="touch made && /bin/ls made")
        assert out["stdout"] == "made\n"


async def test_slow_command_moves_to_the_background(server_factory: Callable[..., MCPServer]) -> None:
    async with Client(server_factory(security="full")) as client:
        out = await call(client, "exec", command="echo start; sleep 0.5; echo end", yield_ms=100)
        assert out["status"] == "running" and out["session_id"]
        session = out["session_id"]
        polled = await call(client, "process", action="poll", session_id=session, wait_ms=5000)
        assert polled["status"] == "exited" and polled["exit_code"] == 0
        assert "end" in polled["stdout"]


async def test_background_session_poll_log_write_kill(server_factory: Callable[..., MCPServer]) -> None:
    script = "echo ready; while read line; do echo got:$line; done; sleep 30"
    async with Client(server_factory(security="full")) as client:
        out = await call(client, "exec", command=script, background=True)
        session = out["session_id"]
        listing = await call(client, "process", action="list")
        assert [s["session_id"] for s in listing["sessions"]] == [session]
        await call(client, "process", action="write", session_id=session, data="one\ntwo\n")
        with anyio.fail_after(5):
            while "got:two" not in (await call(client, "process", action="log", session_id=session))["stdout"]:
                await anyio.sleep(0.05)
        log = await call(client, "process", action="log", session_id=session, offset=1, limit=1)
        assert log["stdout"] == "got:one" and log["stdout_lines"] >= 3
        polled = await call(client, "process", action="poll", session_id=session)
        assert polled["status"] == "running"
        killed = await call(client, "process", action="kill", session_id=session)
        assert killed["status"] == "killed"
        assert "No session" in await error(client, "process", action="poll", session_id="nope")


async def test_timeout_reported(server_factory: Callable[..., MCPServer]) -> None:
    async with Client(server_factory(security="full")) as client:
        out = await call(client, "exec", command="sleep 20", timeout_s=0.3)
    assert out["status"] == "timed_out" and out["exit_code"] == -9


async def test_status_resource(server_factory: Callable[..., MCPServer]) -> None:
    async with Client(server_factory()) as client:
        result = await client.read_resource("exec://status")
    status = json.loads(result.contents[0].text)  # type: ignore[union-attr]
    assert status["security"] == "allowlist" and status["sandbox"] == "none"
    assert any(path.endswith("/ls") for path in status["allow"])


async def test_a_missing_sandbox_is_reported(
    monkeypatch: pytest.MonkeyPatch, server_factory: Callable[..., MCPServer]
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(SandboxUnavailable, match="not installed"):
        detect("bwrap")
    box, problem = detect("auto")
    assert box is None and problem is not None and "not installed" in problem
    assert detect("none") == (None, None)
    with pytest.raises(SandboxUnavailable, match="not installed"):
        server_factory(sandbox="bwrap")
    async with Client(server_factory(sandbox="auto")) as client:
        result = await client.read_resource("exec://status")
    status = json.loads(result.contents[0].text)  # type: ignore[union-attr]
    assert status["sandbox"] == "none" and "not installed" in status["sandbox_problem"]


async def test_a_payload_in_env_cannot_run_through_arithmetic(
    server_factory: Callable[..., MCPServer], workspace: Path
) -> None:
    payload = {"DEBUG": "a[$(touch pwned)]"}  # bash runs the `$(...)` when it evaluates it as arithmetic
    async with Client(server_factory(ask="off")) as client:
        for command in ("echo ${a[DEBUG]}", "declare -i n=$DEBUG", 'printf -v "$DEBUG" x', "echo ${!DEBUG}"):
            assert "Refused" in await error(client, "exec", command=command, env=payload)
        out = await call(client, "exec", command='echo "$DEBUG"', env=payload)
    assert out["stdout"] == "a[$(touch pwned)]\n"  # plain expansion never runs a value
    assert not (workspace / "pwned").exists()


async def test_background_sessions_are_capped(server_factory: Callable[..., MCPServer]) -> None:
    from hermitcrab.servers.exec.processes import MAX_RUNNING

    async with Client(server_factory()) as client:
        ids = [(await call(client, "exec", command="cat", background=True))["session_id"] for _ in range(MAX_RUNNING)]
        assert "commands are still running" in await error(client, "exec", command="cat", background=True)
        for session_id in ids:
            await call(client, "process", action="kill", session_id=session_id)
        assert (await call(client, "exec", command="echo ok"))["stdout"] == "ok\n"
