"""The CLI commands that need no model: init, mcp-config, doctor, --help."""

from __future__ import annotations

import json
import shutil
import sys
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hermitcrab.host.cli.app import app
from hermitcrab.host.config import load_settings
from hermitcrab.host.turn.persona import BOOTSTRAP_ORDER
from hermitcrab.util.server_options import NO_SANDBOX
from tests.support.cli_output import flowing
from tests.support.fake_llm import running_fake_llm

runner = CliRunner()


TEST_SERVER = str(Path(__file__).parents[2] / "support" / "mcp_test_server.py")


def test_init_copies_templates_without_overwriting(hermitcrab_home: Path):
    (hermitcrab_home / "workspace").mkdir()
    (hermitcrab_home / "workspace" / "SOUL.md").write_text("my own soul")

    result = runner.invoke(app, ["init"])

    assert result.exit_code == 0, result.output
    workspace = hermitcrab_home / "workspace"
    assert (workspace / "SOUL.md").read_text() == "my own soul"
    assert {p.name for p in workspace.glob("*.md")} == set(BOOTSTRAP_ORDER)
    config = tomllib.loads((hermitcrab_home / "config.toml").read_text())
    assert config["mcpServers"]["memory"]["args"][:2] == ["--workspace", str(workspace)]
    assert config["mcpServers"]["cron"]["args"] == ["--state", str(hermitcrab_home / "state" / "cron")]
    assert len(config["webhook"]["token"]) >= 32 and config["webhook"]["listen"] == "127.0.0.1:8787"
    assert (hermitcrab_home / "config.toml").stat().st_mode & 0o077 == 0


def test_init_names_the_discord_owner_and_without_one_says_how(hermitcrab_home: Path, tmp_path: Path):
    named = runner.invoke(app, ["init", "--discord-owner", "700000000000000001"])
    unnamed = runner.invoke(app, ["init"], env={"HERMITCRAB_HOME": str(tmp_path / "other")})

    assert named.exit_code == unnamed.exit_code == 0
    config = tomllib.loads((hermitcrab_home / "config.toml").read_text())
    assert config["discord"]["owners"] == ["700000000000000001"]
    assert "owners" not in tomllib.loads((tmp_path / "other" / "config.toml").read_text())["discord"]
    assert "--discord-owner" in unnamed.output and "--discord-owner" not in named.output
    assert load_settings({"HERMITCRAB_HOME": str(hermitcrab_home)}).discord.owners == ("700000000000000001",)


def test_init_twice_keeps_everything(hermitcrab_home: Path):
    runner.invoke(app, ["init"])
    (hermitcrab_home / "config.toml").write_text("# mine\n")

    result = runner.invoke(app, ["init"])

    assert result.exit_code == 0 and "kept" in result.output
    assert (hermitcrab_home / "config.toml").read_text() == "# mine\n"


def test_mcp_config_prints_a_claude_desktop_snippet():
    result = runner.invoke(app, ["mcp-config", "memory"])

    assert result.exit_code == 0
    entry = json.loads(result.output)["mcpServers"]["memory"]
    assert entry["command"].endswith("hermitcrab-memory")


def test_mcp_config_rejects_unknown_names():
    result = runner.invoke(app, ["mcp-config", "toaster"])

    assert result.exit_code == 2
    assert "unknown server 'toaster'" in result.output


@pytest.mark.parametrize("command", ["chat", "ask", "init", "doctor", "mcp-config"])
def test_every_command_has_help(command: str):
    result = runner.invoke(app, [command, "--help"])

    assert result.exit_code == 0 and "Usage" in result.output


def test_doctor_checks_provider_and_servers(hermitcrab_home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    desktop = tmp_path / "desktop.json"
    desktop.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "kit": {"command": sys.executable, "args": [TEST_SERVER]},
                    "broken": {"command": "/nonexistent/server"},
                }
            }
        )
    )
    with running_fake_llm() as llm:
        monkeypatch.setenv("HERMITCRAB_LLM_BASE_URL", llm.url)
        result = runner.invoke(app, ["doctor", "--mcp-config", str(desktop)], env={"COLUMNS": "200"})

    assert result.exit_code == 1, result.output
    assert "answered HTTP 200" in result.output
    assert "kit" in result.output and "tools: echo" in result.output
    assert "did not start" in result.output and "No such file" in result.output
    assert "fix: install '/nonexistent/server' or correct its `command` path" in flowing(result.output)


def test_doctor_reads_what_a_running_exec_server_asks(hermitcrab_home: Path, tmp_path: Path):
    (tmp_path / "ws").mkdir()
    args = ["-m", "hermitcrab.servers.exec", "--sandbox", "none", "--root", str(tmp_path / "ws")]
    desktop = tmp_path / "desktop.json"
    exec_server = {"command": sys.executable, "args": [*args, "--state", str(tmp_path / "state")]}
    desktop.write_text(json.dumps({"mcpServers": {"shell": exec_server}}))

    result = runner.invoke(app, ["doctor", "--mcp-config", str(desktop)], env={"COLUMNS": "400"})

    expected = f"no sandbox (--sandbox none): {NO_SANDBOX}; it asks (on-miss) before every command the allowlist"
    assert expected in flowing(result.output)


def test_doctor_without_provider_fails_with_guidance(hermitcrab_home: Path):
    result = runner.invoke(app, ["doctor"], env={"COLUMNS": "200"})

    assert result.exit_code == 1
    assert "No LLM provider is configured" in result.output


def test_version_names_hermitcrab_and_the_mcp_sdk():
    result = runner.invoke(app, ["--version"])

    assert result.exit_code == 0 and result.output.startswith("hermitcrab 0.1.0 (mcp 2.")


def test_doctor_names_an_unknown_key_and_the_fix(hermitcrab_home: Path):
    (hermitcrab_home / "config.toml").write_text('[agent]\ntimezone = "Mars/Olympus"\nmax_iteration = 3\n')

    result = runner.invoke(app, ["doctor"], env={"COLUMNS": "200"})

    assert result.exit_code == 1
    assert "agent.timezone: unknown time zone 'Mars/Olympus'" in result.output
    assert "agent.max_iteration: unknown key (did you mean 'max_iterations'?)" in result.output
    assert "fix: correct the key" in result.output


def test_doctor_says_plainly_when_exec_has_no_sandbox(hermitcrab_home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap to be found

    result = runner.invoke(app, ["doctor"], env={"COLUMNS": "400"})

    assert "no sandbox (bubblewrap is not installed)" in flowing(result.output)
    assert f"{NO_SANDBOX}, so every command off it is asked" in flowing(result.output)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is installed by scripts/test")
def test_doctor_confirms_the_sandbox_where_bubblewrap_works(hermitcrab_home: Path):
    result = runner.invoke(app, ["doctor"], env={"COLUMNS": "400"})

    assert "commands run in a sandbox; what would leave it (a write outside the workspace) is asked" in flowing(
        result.output
    )
