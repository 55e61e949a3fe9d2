"""What the host and our servers leave on disk: no credential in the logs, and files only the owner may read.

A real host turn against the scripted LLM (which echoes the key in its error, as some providers do) and a remote MCP
server whose URL carries `?api_key=`; real servers started as an MCP client starts them."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.support.cli import wait_for
from tests.support.fake_llm import FakeLLM, Reply, free_port, openai_text
from tests.support.processes import serving
from tests.support.spawn import FAKE_CLI, spawn, wait_for_items

PROVIDER_KEY = "sk-test-secret"  # what fake_llm_env gives the host
URL_KEY = "url-key-0f3c9a7d"


@pytest.fixture
def open_umask() -> Iterator[None]:
    """The umask most desktops start with, so what a process creates is open to others unless it says otherwise."""
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def modes(root: Path) -> dict[str, int]:
    """The permission bits of `root` and of everything in it, by path relative to `root`."""
    found = {".": stat.S_IMODE(root.stat().st_mode)}
    for folder, folders, files in os.walk(root):
        for name in [*folders, *files]:
            path = Path(folder, name)
            found[str(path.relative_to(root))] = stat.S_IMODE(path.lstat().st_mode)
    return found


def open_ones(root: Path) -> dict[str, str]:
    """Entries of `root` that are not 0600 files or 0700 folders, with their modes."""
    return {
        name: oct(mode) for name, mode in modes(root).items() if mode != (0o700 if (root / name).is_dir() else 0o600)
    }


def test_the_host_log_holds_neither_a_url_key_nor_the_key_a_provider_echoes(
    hermitcrab: Callable[..., object], hermitcrab_home: Path, llm: FakeLLM, tmp_path: Path
):
    port = free_port()
    cron = [sys.executable, "-m", "hermitcrab.servers.cron", "--state", str(tmp_path / "cron"), "--http", str(port)]
    echoed = {"error": {"message": f"Incorrect API key provided: {PROVIDER_KEY}.", "code": "invalid_api_key"}}
    llm.enqueue(Reply(echoed, status=401))
    desktop = tmp_path / "desktop.json"
    with serving(cron, port) as url:
        desktop.write_text(json.dumps({"mcpServers": {"remote": {"url": url + "?api_key=${REMOTE_KEY}"}}}))
        result = hermitcrab("ask", "hello", "--mcp-config", str(desktop), env={"REMOTE_KEY": URL_KEY})

    log = (hermitcrab_home / "state" / "logs" / "host.log").read_text()
    assert "HTTP 401" in log and "Incorrect API key provided: ***" in log  # logged, masked
    for secret in (PROVIDER_KEY, URL_KEY):
        assert secret not in log
        assert secret not in result.stderr  # type: ignore[attr-defined]  # a CompletedProcess


def test_a_server_over_http_logs_requests_without_the_key_in_their_url(tmp_path: Path):
    port = free_port()
    stderr = tmp_path / "stderr"
    cron = [sys.executable, "-m", "hermitcrab.servers.cron", "--state", str(tmp_path / "cron"), "--http", str(port)]
    with stderr.open("w") as errlog:
        process = subprocess.Popen([*cron, "--log-level", "INFO"], stderr=errlog)
    try:
        wait_for(lambda: "Uvicorn running" in stderr.read_text(), f"cron did not start: {stderr.read_text()}")
        httpx.get(f"http://127.0.0.1:{port}/mcp?api_key={URL_KEY}")
        wait_for(lambda: "/mcp?api_key=***" in stderr.read_text(), f"no access log line: {stderr.read_text()}")
    finally:
        process.terminate()
        process.wait(timeout=15)

    assert URL_KEY not in stderr.read_text()


def test_a_turn_leaves_only_private_files_and_fixes_open_ones_with_a_note(
    hermitcrab: Callable[..., object], hermitcrab_home: Path, llm: FakeLLM, open_umask: None
):
    (hermitcrab_home / "workspace" / "memory").mkdir(parents=True)
    (hermitcrab_home / "workspace" / "MEMORY.md").write_text("- The owner's private notes.\n")
    (hermitcrab_home / "state" / "logs").mkdir(parents=True)
    (hermitcrab_home / "state" / "logs" / "host.log").write_text("an old log\n")
    (hermitcrab_home / "config.toml").write_text("")
    llm.enqueue(openai_text("Hello!"))

    result = hermitcrab("chat", stdin="hi\n/exit\n")

    assert "Hello!" in result.stdout, result.stderr  # type: ignore[attr-defined]  # a CompletedProcess
    assert open_ones(hermitcrab_home / "state") == {}
    assert open_ones(hermitcrab_home / "workspace") == {}
    assert stat.S_IMODE((hermitcrab_home / "config.toml").stat().st_mode) == 0o600
    assert stat.S_IMODE(hermitcrab_home.stat().st_mode) == 0o700
    assert any(name.startswith("sessions/") for name in modes(hermitcrab_home / "state"))  # a transcript was written
    log = (hermitcrab_home / "state" / "logs" / "host.log").read_text()
    assert f"in {hermitcrab_home / 'workspace'} private to the owner" in log


SERVER_ARGS = {
    "memory": ["--embedder", "none"],
    "exec": ["--root", "{workspace}"],
    "browser": ["--isolated"],
    "cron": [],
    "spawn": [],
}


@pytest.mark.parametrize("server", SERVER_ARGS)
async def test_each_server_makes_its_state_private_at_start(server: str, tmp_path: Path, open_umask: None):
    workspace, state = tmp_path / "workspace", tmp_path / "state"
    (workspace / "memory").mkdir(parents=True)
    (state / "old").mkdir(parents=True)
    (state / "old" / "notes.json").write_text("{}")
    args = [arg.format(workspace=workspace) for arg in SERVER_ARGS[server]]
    workspace_flag = ["--workspace", str(workspace)] if server == "memory" else []
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", f"hermitcrab.servers.{server}", *workspace_flag, "--state", str(state), *args],
    )
    with (tmp_path / "stderr").open("w") as errlog, anyio.fail_after(60):
        async with Client(stdio_client(params, errlog=errlog)) as client:
            await client.list_tools()

    assert open_ones(state) == {}
    assert "private to the owner" in (tmp_path / "stderr").read_text()


async def test_what_the_memory_server_writes_is_private(tmp_path: Path, open_umask: None):
    workspace, state = tmp_path / "workspace", tmp_path / "state"
    (workspace / "memory").mkdir(parents=True)
    (workspace / "MEMORY.md").write_text("- Likes tea.\n")
    (workspace / "USER.md").write_text("- Name: Dana.\n")
    (workspace / "SOUL.md").write_text("Be kind.\n")  # not the memory server's: left as it is
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "hermitcrab.servers.memory",
            "--workspace",
            str(workspace),
            "--state",
            str(state),
            "--embedder",
            "none",
        ],
    )
    with anyio.fail_after(60):
        async with Client(params) as client:
            appended = await client.call_tool("memory_append", {"text": "- Booked the ferry."})
            assert not appended.is_error, appended.content
            await client.call_tool("memory_search", {"query": "ferry"})

    assert open_ones(state) == {}
    memory = {name: oct(mode) for name, mode in modes(workspace).items() if name != "SOUL.md" and name != "."}
    assert set(memory.values()) <= {"0o600", "0o700"}, memory
    assert any(name.startswith("memory/") for name in memory)  # the daily log
    assert stat.S_IMODE((workspace / "SOUL.md").stat().st_mode) == 0o644


async def test_a_sub_agents_output_is_private(tmp_path: Path, open_umask: None):
    state = tmp_path / "state"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "hermitcrab.servers.spawn", "--state", str(state), "--cli", f"echo={sys.executable} {FAKE_CLI}"],
    )
    with anyio.fail_after(60):
        async with Client(params) as client:
            run_id = await spawn(client, "echo", "summarise my inbox")
            await wait_for_items(client, 1)

    assert (state / "runs" / run_id / "output").stat().st_size > 0
    assert open_ones(state) == {}
