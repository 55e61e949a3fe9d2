"""The pool and OAuth logins: a server waiting for a login comes up once one is stored, without a restart; a
login is used only for the server it was made for."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from mcp.shared.auth import OAuthToken

from hermitcrab.host.config import ServerConfig, ServerOAuth, load_settings
from hermitcrab.host.errors import ConfigError
from hermitcrab.host.mcp.oauth import LoginFile, LoginRequired, stored_login
from hermitcrab.host.mcp.pool import McpPool, ToolOutcome
from tests.support.oauth_server import log_in_headless, running_oauth_server


async def test_a_server_waiting_for_a_login_comes_up_once_one_is_stored(tmp_path: Path):
    logins = tmp_path / "oauth"
    with running_oauth_server() as server:
        remote = ServerConfig("remote", url=server.url, auth="oauth")
        async with McpPool([remote], oauth_logins=logins, startup_timeout_s=10) as pool:
            waiting = pool.handles["remote"].state
            assert await log_in_headless(remote, logins) == 1
            with anyio.fail_after(20):
                while not pool.handles["remote"].ready:
                    await anyio.sleep(0.05)
            outcome = await pool.call("add", {"a": 2, "b": 3})
        counts = server.stats()

    assert waiting == (
        "waiting for a login: MCP server 'remote' needs an OAuth login (not logged in): "
        "run `hermitcrab mcp login remote`"
    )
    assert outcome == ToolOutcome("5")
    assert counts["code_grants"] == 1


async def test_a_login_is_not_offered_to_another_url(tmp_path: Path):
    made_for = ServerConfig("remote", url="http://127.0.0.1:1/mcp", auth="oauth")
    await LoginFile(tmp_path, made_for).set_tokens(_token())
    moved = ServerConfig("remote", url="http://127.0.0.1:2/mcp", auth="oauth")

    assert LoginFile(tmp_path, made_for).login() is not None
    assert LoginFile(tmp_path, moved).login() is None
    assert await LoginFile(tmp_path, moved).get_tokens() is None
    with pytest.raises(LoginRequired, match=r"not logged in\): run `hermitcrab mcp login remote`"):
        stored_login(moved, tmp_path)


def test_a_torn_login_file_is_no_login(tmp_path: Path, caplog: pytest.LogCaptureFixture):
    config = ServerConfig("remote", url="http://127.0.0.1:1/mcp", auth="oauth")
    (tmp_path / "remote.json").write_text("{not json")

    assert LoginFile(tmp_path, config).login() is None
    assert "the server needs a new login" in caplog.text


async def test_a_name_that_is_no_file_name_gets_a_file_of_its_own(tmp_path: Path):
    odd = [ServerConfig(name, url="http://127.0.0.1:1/mcp", auth="oauth") for name in ("../up", "a/b", "a b")]
    for config in odd:
        await LoginFile(tmp_path, config).set_tokens(_token())

    files = sorted(path.name for path in tmp_path.glob("*.json"))
    assert len(files) == 3 and all(name.startswith("server-") for name in files)
    assert all(LoginFile(tmp_path, config).login() is not None for config in odd)


def _token() -> OAuthToken:
    return OAuthToken(access_token="at-1", expires_in=60, refresh_token="rt-1")


def test_the_oauth_settings_of_an_entry_are_read_and_only_an_http_entry_logs_in(tmp_path: Path):
    desktop = tmp_path / "servers.json"
    oauth = {"client_id": "hand-made", "client_secret": "${SECRET}", "redirect_port": 8765}
    desktop.write_text(
        json.dumps({"mcpServers": {"remote": {"url": "https://x/mcp", "auth": "oauth", "oauth": oauth}}})
    )
    env = {"HERMITCRAB_HOME": str(tmp_path), "SECRET": "s3cret"}
    (remote,) = load_settings(env, mcp_config=desktop).servers
    desktop.write_text(json.dumps({"mcpServers": {"local": {"command": "true", "auth": "oauth"}}}))

    assert remote.oauth == ServerOAuth(client_id="hand-made", client_secret="s3cret", redirect_port=8765)
    with pytest.raises(ConfigError, match="auth 'oauth' needs a 'url'"):
        load_settings(env, mcp_config=desktop)
