"""The bubblewrap sandbox: roots writable, everything else read-only, no escaping the kill. Skips without bwrap."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer

from hermitcrab.servers.exec import Policy, build_server
from hermitcrab.servers.exec.environment import child_environment
from hermitcrab.servers.exec.output import render
from hermitcrab.servers.exec.runner import Job, Limits, Spec
from hermitcrab.servers.exec.sandbox import detect, probe

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("bwrap") is None or probe() is not None, reason="bubblewrap is not usable here"),
]


@pytest.fixture
def outside() -> Iterator[Path]:
    """A directory outside /tmp (the sandbox gives /tmp its own tmpfs) and outside the roots."""
    path = Path("/var/tmp") / f"hermitcrab-exec-test-{uuid.uuid4().hex[:8]}"
    path.mkdir()
    yield path
    shutil.rmtree(path, ignore_errors=True)


async def run(server: MCPServer, command: str, **args: Any) -> dict[str, Any]:
    async with Client(server) as client:
        result = await client.call_tool("exec", {"command": command, **args})
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def test_only_the_roots_are_writable(
    server_factory: Callable[..., MCPServer], workspace: Path, outside: Path
) -> None:
    server = server_factory(sandbox="bwrap", security="full")
    out = await run(server, f"touch inside.txt && touch {outside}/escaped.txt")
    assert out["sandboxed"] is True and out["exit_code"] != 0
    assert "Read-only file system" in out["stderr"]
    assert (workspace / "inside.txt").exists() and not (outside / "escaped.txt").exists()


async def test_state_is_hidden_from_commands(workspace: Path, outside: Path) -> None:
    state = outside / "state"
    server = build_server(roots=[workspace], state=state, policy=Policy(security="full"), sandbox="bwrap")
    out = await run(server, f"ls -A {state}; echo '{{}}' > {state}/approvals.json")
    assert out["stdout"] == "" and not (state / "approvals.json").exists() and (state / "approvals.key").exists()


async def test_timeout_kills_processes_that_left_the_session(
    server_factory: Callable[..., MCPServer], wait_gone: Callable[[str], Awaitable[None]]
) -> None:
    server = server_factory(sandbox="bwrap", security="full")
    out = await run(server, "setsid sleep 43.917 & sleep 43.917", timeout_s=0.5)
    assert out["status"] == "timed_out"
    await wait_gone("43.917")


@pytest.mark.parametrize(("network", "expected"), [(False, ["lo"]), (True, None)])
async def test_no_network_unless_asked(workspace: Path, state: Path, network: bool, expected: list[str] | None) -> None:
    server = build_server(
        roots=[workspace], state=state, policy=Policy(security="full"), sandbox="bwrap", network=network
    )
    out = await run(server, "cat /proc/net/dev")
    interfaces = [line.split(":")[0].strip() for line in out["stdout"].splitlines()[2:]]
    assert interfaces == expected if expected else interfaces != ["lo"]
    description = next(t for t in await _tools(server) if t.name == "exec").description or ""
    assert ("have no network access" in description) is not network


async def _tools(server: MCPServer) -> list[Any]:
    async with Client(server) as client:
        return (await client.list_tools()).tools


async def test_unprivileged_uid_and_no_host_sockets(server_factory: Callable[..., MCPServer], outside: Path) -> None:
    server = server_factory(sandbox="bwrap", security="full")
    out = await run(server, "id -u; ls -A /var/run | wc -l; ls -A /run | wc -l; touch owned && stat -c %u owned")
    uid, _, entries, owner = out["stdout"].split()
    assert uid != "0" and entries == "0" and owner == uid


async def test_secrets_and_hermitcrab_home_are_hidden(outside: Path) -> None:
    home = outside / "home"
    hermitcrab_home = home / ".hermitcrab"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("PRIVATE KEY")
    (home / ".netrc").write_text("machine x password hunter2")
    (hermitcrab_home / "workspace").mkdir(parents=True)
    (hermitcrab_home / "config.toml").write_text("api_key = 'sk-secret'")
    environ = {"HOME": str(home), "HERMITCRAB_HOME": str(hermitcrab_home), "PATH": "/usr/bin:/bin"}
    server = build_server(policy=Policy(security="full"), sandbox="bwrap", environ=environ)
    out = await run(server, f"cat {home}/.ssh/id_rsa ~/.netrc {hermitcrab_home}/config.toml; ls -A {hermitcrab_home}")
    assert "PRIVATE KEY" not in out["stdout"] and "hunter2" not in out["stdout"] and "sk-secret" not in out["stdout"]
    assert "config.toml" not in out["stdout"].split() and "workspace" in out["stdout"].split()
    assert (await run(server, "touch made && ls"))["stdout"] == "made\n"


async def test_no_capabilities_and_kernel_settings_read_only(server_factory: Callable[..., MCPServer]) -> None:
    # A fresh /proc kept /proc/sys writable, and as root the command held every capability: `echo x >
    # /proc/sys/kernel/hostname` renamed the host. `test -w` only asks (access(2)), it changes nothing.
    server = server_factory(sandbox="bwrap", security="full")
    out = await run(server, "grep CapEff /proc/self/status; test -w /proc/sys/kernel/hostname && echo writable")
    assert out["stdout"].split() == ["CapEff:", "0000000000000000"]


@pytest.mark.parametrize("widened", [False, True])
async def test_one_call_can_be_given_a_writable_path_and_the_network(
    workspace: Path, outside: Path, widened: bool
) -> None:
    sandbox, _ = detect("bwrap")
    assert sandbox is not None and sandbox.network is False
    command = f"touch {outside}/approved.txt; cat /proc/net/dev | tail -n +3 | wc -l"
    env = child_environment(dict(os.environ), None)
    extra: dict[str, Any] = {"writable": [outside], "network": True} if widened else {}
    job = Job(Spec(command, workspace, env, 10, Limits(), sandbox, [workspace], **extra))
    assert await job.wait(10)
    interfaces = int(render(job.stdout, 100).text)
    assert (outside / "approved.txt").exists() is widened and (interfaces > 1) is widened
