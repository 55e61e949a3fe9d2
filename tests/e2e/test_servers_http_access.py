"""Who may call a server over HTTP: a bearer token when one is set (required off loopback), and only Host and
Origin names the server answers to, on any bind, so a web page cannot reach it through a rebinding name."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from hermitcrab.host.config import ServerConfig
from hermitcrab.host.mcp.pool import McpPool
from tests.support.fake_llm import free_port
from tests.support.processes import serving

TOKEN = "s3cret-token-for-the-test"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def exec_server(tmp_path: Path, bind: str, *extra: str) -> list[str]:
    (tmp_path / "workspace").mkdir(exist_ok=True)
    (tmp_path / "workspace" / "notes.txt").write_text("hello with a token\n")
    root, state = str(tmp_path / "workspace"), str(tmp_path / "state")
    return [sys.executable, "-m", "hermitcrab.servers.exec", "--root", root, "--state", state, "--http", bind, *extra]


def test_a_server_does_not_serve_off_loopback_without_a_token(tmp_path: Path):
    environment = {key: value for key, value in os.environ.items() if key != "HERMITCRAB_MCP_TOKEN"}
    done = subprocess.run(
        exec_server(tmp_path, f"0.0.0.0:{free_port()}"), capture_output=True, text=True, timeout=60, env=environment
    )
    assert done.returncode != 0
    assert "without a token" in done.stderr and "HERMITCRAB_MCP_TOKEN" in done.stderr


async def test_with_a_token_a_request_without_it_gets_401_and_the_host_with_it_calls_tools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    port = free_port()
    monkeypatch.setenv("HERMITCRAB_MCP_TOKEN", TOKEN)  # the way to pass it that `ps` does not show
    with serving(exec_server(tmp_path, f"0.0.0.0:{port}"), port) as url:
        async with httpx.AsyncClient() as client:
            bare = await client.post(url, json=INITIALIZE, headers=HEADERS)
            wrong = await client.post(url, json=INITIALIZE, headers={**HEADERS, "authorization": "Bearer nope"})
            raw = await client.post(url, json=INITIALIZE, headers={**HEADERS, "authorization": TOKEN})
        entry = ServerConfig("remote", url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout_s=30)
        async with McpPool([entry]) as pool:
            outcome = await pool.call("read_file", {"path": "notes.txt"})
    assert [bare.status_code, wrong.status_code, raw.status_code] == [401, 401, 401]
    assert bare.headers["www-authenticate"] == "Bearer"
    assert not outcome.is_error and "hello with a token" in outcome.text


@pytest.mark.parametrize("bind", ["127.0.0.1", "0.0.0.0"])
async def test_a_rebinding_host_or_a_foreign_origin_is_refused_on_any_bind(tmp_path: Path, bind: str):
    port = free_port()
    with serving(exec_server(tmp_path, f"{bind}:{port}", "--token", TOKEN), port) as url:
        authorized = {**HEADERS, "authorization": f"Bearer {TOKEN}"}
        async with httpx.AsyncClient() as client:
            rebinding = await client.post(url, json=INITIALIZE, headers={**authorized, "host": f"evil.example:{port}"})
            foreign = await client.post(url, json=INITIALIZE, headers={**authorized, "origin": "http://evil.example"})
            fine = await client.post(url, json=INITIALIZE, headers=authorized)
    assert rebinding.status_code == 421 and foreign.status_code == 403
    assert fine.status_code == 200


async def test_an_extra_host_name_is_accepted_when_listed(tmp_path: Path):
    port = free_port()
    command = exec_server(tmp_path, f"0.0.0.0:{port}", "--token", TOKEN, "--allow-host", "crab.lan")
    with serving(command, port) as url:
        headers = {**HEADERS, "authorization": f"Bearer {TOKEN}", "host": f"crab.lan:{port}"}
        async with httpx.AsyncClient() as client:
            listed = await client.post(url, json=INITIALIZE, headers=headers)
    assert listed.status_code == 200
