"""The bubblewrap sandbox: roots writable, everything else read-only, no escaping the kill. Skips without bwrap."""

from __future__ import annotations

import os
import shutil
import subprocess
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
    assert out["status"] == "timed_out" and out["note"].startswith("killed: still running after 0.5 s (timeout_s)")
    await wait_gone("43.917")


@pytest.mark.parametrize(
    "command",
    ["for i in $(seq 200); do sleep 47.319 & done; wait", "yes 47.319 | head -n 200 | xargs -P 0 -n 1 sleep"],
)
async def test_a_command_over_the_process_cap_is_killed_and_said_so(
    server_factory: Callable[..., MCPServer], wait_gone: Callable[[str], Awaitable[None]], command: str
) -> None:
    server = server_factory(sandbox="bwrap", security="full")
    out = await run(server, command, timeout_s=60)  # over the cap it dies in ~50 ms; without the cap, in 60 s
    assert (out["status"], out["note"]) == ("killed", "killed: more than 64 processes at once"), out
    await wait_gone("47.319")


@pytest.mark.parametrize(
    ("limits", "command", "note"),
    [
        (Limits(cpu_s=1), "while :; do :; done", "killed: more than 1 s of CPU time (SIGXCPU)"),
        (Limits(file_size_mb=1), "head -c 3000000 /dev/zero > big.bin", "killed: wrote past the file size limit"),
    ],
)
async def test_a_command_over_its_cpu_or_file_size_limit_is_killed_and_said_so(
    workspace: Path, state: Path, limits: Limits, command: str, note: str
) -> None:
    policy = Policy(security="full")
    server = build_server(roots=[workspace], state=state, policy=policy, sandbox="bwrap", limits=limits)
    out = await run(server, command, timeout_s=60)
    assert out["status"] == "killed" and out["note"].startswith(note), out
    assert not (workspace / "big.bin").exists() or (workspace / "big.bin").stat().st_size == 1024 * 1024


async def test_home_is_private_and_empty_but_for_toolchains(workspace: Path, state: Path, outside: Path) -> None:
    home = outside / "home"
    (home / ".cargo" / "bin").mkdir(parents=True)
    (home / ".cargo" / "bin" / "cargo-tool").write_text("#!/bin/sh\n")
    (home / ".cargo" / "credentials.toml").write_text("token = 'cargo-secret'")
    (home / ".gitconfig").write_text("[user]\n\tname = owner\n")
    (home / "notes.txt").write_text("private")
    environ = {"HOME": str(home), "PATH": "/usr/bin:/bin", "HERMITCRAB_HOME": str(outside / "hc")}
    server = build_server(
        roots=[workspace], state=state, policy=Policy(security="full"), sandbox="bwrap", environ=environ
    )
    out = await run(server, "ls -A ~; ls ~/.cargo/bin; cat ~/.cargo/credentials.toml; touch ~/made && echo ok")
    assert out["stdout"] == ".cargo\ncargo-tool\nok\n", out
    assert not (home / "made").exists()


async def test_other_processes_and_the_servers_variables_are_out_of_sight(
    workspace: Path, state: Path, outside: Path
) -> None:
    canary = f"canary-{uuid.uuid4().hex}"
    neighbour = subprocess.Popen(["sleep", "30"], env={"API_TOKEN": canary})
    try:
        environ = {"HOME": str(outside), "PATH": "/usr/bin:/bin", "API_TOKEN": canary, "LANG": "C.UTF-8"}
        server = build_server(
            roots=[workspace], state=state, policy=Policy(security="full"), sandbox="bwrap", environ=environ
        )
        out = await run(server, f"cat /proc/{neighbour.pid}/environ; cat /proc/1/environ; env")
        assert canary in Path(f"/proc/{neighbour.pid}/environ").read_text()  # outside the sandbox it is readable
    finally:
        neighbour.kill()
        neighbour.wait()
    assert canary not in out["stdout"] and "API_TOKEN" not in out["stdout"], out
    assert f"/proc/{neighbour.pid}/environ: No such file or directory" in out["stderr"]


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
