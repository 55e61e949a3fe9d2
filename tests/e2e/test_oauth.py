"""OAuth for remote MCP servers end to end: the real CLI logs in to a test authorisation server on 127.0.0.1 (its
`--open` starts the test "browser", which follows the redirects back to the login's loopback listener), then `ask`
calls the server's tool with the stored token, refreshes it after expiry, and names the command when it cannot."""

from __future__ import annotations

import json
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.fake_llm import openai_text, openai_tool_calls
from tests.support.oauth_server import BROWSER, OAuthServer, running_oauth_server

ONE_ROW_A_CHECK = {"COLUMNS": "1000"}  # doctor's table wraps what does not fit


@pytest.fixture
def remote() -> Iterator[OAuthServer]:
    with running_oauth_server() as server:
        yield server


@pytest.fixture
def remote_config(tmp_path: Path, remote: OAuthServer) -> Path:
    path = tmp_path / "remote.json"
    path.write_text(json.dumps({"mcpServers": {"remote": {"url": remote.url, "auth": "oauth"}}}))
    return path


@pytest.fixture
def log_in(hermitcrab: Callable[..., object], remote_config: Path) -> Callable[..., object]:
    def run(*options: str) -> object:
        return hermitcrab(
            "mcp", "login", "remote", "--mcp-config", str(remote_config), *options, env={"BROWSER": BROWSER}
        )

    return run


def login_file(home: Path) -> Path:
    return home / "state" / "oauth" / "remote.json"


def ask_add(hermitcrab, llm, remote_config: Path):
    llm.enqueue(openai_tool_calls(("call_1", "add", '{"a": 2, "b": 3}')), openai_text("Five."))
    return hermitcrab("ask", "--mcp-config", str(remote_config), "What is 2 + 3?")


def test_a_login_is_stored_privately_and_every_later_host_calls_the_server_with_it(
    hermitcrab, llm, log_in, remote, remote_config, hermitcrab_home
):
    login = log_in("--open")

    assert login.returncode == 0, login.stderr
    assert "code_challenge_method=S256" in login.stdout  # the printed address, PKCE'd
    assert "Logged in to remote; it offers 1 tools. logged in; the token expires" in login.stdout
    stored = login_file(hermitcrab_home)
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
    assert stat.S_IMODE(stored.parent.stat().st_mode) == 0o700

    for _ in range(2):  # each `ask` is a new host process
        answered = ask_add(hermitcrab, llm, remote_config)
        assert answered.returncode == 0, answered.stderr
        assert answered.stdout == "Five.\n"
        assert llm.requests[-1]["messages"][-1] == {"role": "tool", "tool_call_id": "call_1", "content": "5"}

    counts = remote.stats()
    assert (counts["registrations"], counts["code_grants"], counts["refresh_grants"]) == (1, 1, 0)
    tokens = json.loads(stored.read_text())["tokens"]
    logs = "".join(path.read_text() for path in (hermitcrab_home / "state" / "logs").iterdir())
    assert tokens["access_token"] not in logs + login.stdout + login.stderr
    assert tokens["refresh_token"] not in logs + login.stdout + login.stderr


def test_a_token_that_expired_while_the_host_was_off_is_refreshed(
    hermitcrab, llm, log_in, remote, remote_config, hermitcrab_home
):
    assert log_in("--open").returncode == 0
    stored = login_file(hermitcrab_home)
    before = json.loads(stored.read_text())
    lifetime_ago = time.time() - 3600  # as if the host had been off for the token's lifetime
    stored.write_text(json.dumps({**before, "expires_at": lifetime_ago}))
    remote.expire()  # and the server no longer takes the old access token

    answered = ask_add(hermitcrab, llm, remote_config)

    assert answered.returncode == 0, answered.stderr
    assert llm.requests[-1]["messages"][-1]["content"] == "5"
    counts = remote.stats()
    assert (counts["code_grants"], counts["refresh_grants"]) == (1, 1)
    after = json.loads(stored.read_text())
    assert after["tokens"]["access_token"] != before["tokens"]["access_token"]
    assert after["expires_at"] > lifetime_ago + 3600  # a new lifetime, from now


def test_a_revoked_login_asks_for_a_new_one_by_name(hermitcrab, llm, log_in, remote, remote_config, hermitcrab_home):
    assert log_in("--open").returncode == 0
    stored = login_file(hermitcrab_home)
    stored.write_text(json.dumps({**json.loads(stored.read_text()), "expires_at": time.time() - 3600}))
    remote.revoke()

    doctor = hermitcrab("doctor", "--mcp-config", str(remote_config), env=ONE_ROW_A_CHECK)

    assert doctor.returncode == 1
    row = next(line for line in doctor.stdout.splitlines() if "mcp" in line and "remote" in line)
    assert "FAIL" in row and "waiting for a login: MCP server 'remote' needs an OAuth login" in row
    assert "run `hermitcrab mcp login remote`; a running host connects once one is stored" in row
    assert remote.stats()["code_grants"] == 1  # nobody was sent to a browser


def test_without_a_login_status_and_doctor_say_which_command_logs_in(hermitcrab, remote_config):
    status = hermitcrab("mcp", "status", "--mcp-config", str(remote_config))
    doctor = hermitcrab("doctor", "--mcp-config", str(remote_config), env=ONE_ROW_A_CHECK)

    assert status.stdout == "remote: not logged in: run `hermitcrab mcp login remote`\n"
    oauth_row = next(line for line in doctor.stdout.splitlines() if "oauth" in line)
    assert "FAIL" in oauth_row and "hermitcrab mcp login remote" in oauth_row


def test_a_host_without_the_login_answers_anyway_and_says_how_to_log_in(hermitcrab, llm, remote, remote_config):
    llm.enqueue(openai_text("Hello without the remote tools."))

    answered = hermitcrab("ask", "--mcp-config", str(remote_config), "Hi")

    assert answered.returncode == 0, answered.stderr
    assert answered.stdout == "Hello without the remote tools.\n"
    assert "run `hermitcrab mcp login remote`" in answered.stderr
    offered = [tool["function"]["name"] for tool in llm.requests[0]["tools"]]
    assert "add" not in offered  # the server's tools are left out until it is logged in
    assert remote.stats()["code_grants"] == 0


def test_logout_deletes_the_login(hermitcrab, log_in, remote_config, hermitcrab_home):
    assert log_in("--open").returncode == 0

    logout = hermitcrab("mcp", "logout", "remote", "--mcp-config", str(remote_config))
    status = hermitcrab("mcp", "status", "--mcp-config", str(remote_config))

    assert logout.returncode == 0 and "Logged out of remote" in logout.stdout
    assert not login_file(hermitcrab_home).exists()
    assert "not logged in" in status.stdout


def test_a_refused_login_says_so_and_keeps_nothing(hermitcrab, tmp_path, hermitcrab_home):
    with running_oauth_server("--deny") as server:
        config = tmp_path / "deny.json"
        config.write_text(json.dumps({"mcpServers": {"remote": {"url": server.url, "auth": "oauth"}}}))
        login = hermitcrab("mcp", "login", "remote", "--open", "--mcp-config", str(config), env={"BROWSER": BROWSER})

    assert login.returncode == 1
    assert "the authorisation server refused the login to remote: access_denied the user said no" in login.stderr
    assert "tokens" not in json.loads(login_file(hermitcrab_home).read_text())  # the registered client only


def test_a_login_nobody_finishes_ends_with_a_clear_error(hermitcrab, remote_config):
    login = hermitcrab("mcp", "login", "remote", "--timeout", "1", "--mcp-config", str(remote_config))

    assert login.returncode == 1
    assert "/authorize?" in login.stdout
    assert "no answer came back from the browser within 1 s" in login.stderr


def test_login_names_what_is_wrong_with_the_server_entry(hermitcrab, desktop_config):
    config = str(desktop_config())

    unknown = hermitcrab("mcp", "login", "nowhere", "--mcp-config", config)
    local = hermitcrab("mcp", "login", "testkit", "--mcp-config", config)

    assert unknown.returncode == local.returncode == 1
    assert "no MCP server named 'nowhere'" in unknown.stderr
    assert 'add "auth": "oauth" to its entry' in local.stderr
