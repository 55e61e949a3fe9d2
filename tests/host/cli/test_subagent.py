"""`hermitcrab subagent` and the spawn server's entry in `init` and `mcp-config`."""

from __future__ import annotations

import json
import shlex
import tomllib
from pathlib import Path

from typer.testing import CliRunner

from hermitcrab.host.cli.app import app
from hermitcrab.host.config import ProviderProfile, ServerConfig, Settings
from hermitcrab.host.turn.subagent import subagent_settings

runner = CliRunner()


def test_subagent_has_help():
    result = runner.invoke(app, ["subagent", "--help"])
    assert result.exit_code == 0 and "--run-dir" in result.output and "--hide-tool" in result.output


def test_init_enables_spawn_with_the_agent_runtime_pinned_to_this_home(hermitcrab_home: Path):
    assert runner.invoke(app, ["init"]).exit_code == 0
    spawn = tomllib.loads((hermitcrab_home / "config.toml").read_text())["mcpServers"]["spawn"]

    assert spawn["command"].endswith("hermitcrab-spawn")
    assert spawn["args"][:2] == ["--state", str(hermitcrab_home / "state" / "spawn")]
    agent = shlex.split(spawn["args"][spawn["args"].index("--agent") + 1])
    assert agent[0].endswith("hermitcrab") and agent[1:] == ["subagent", "--home", str(hermitcrab_home)]


def test_mcp_config_prints_the_spawn_entry():
    result = runner.invoke(app, ["mcp-config", "spawn"])
    assert result.exit_code == 0
    assert json.loads(result.stdout)["mcpServers"]["spawn"]["command"].endswith("hermitcrab-spawn")


def test_a_subagent_gets_the_model_asked_for_and_never_sees_hidden_tools(tmp_path: Path):
    profile = ProviderProfile("openai", "big-model", "http://127.0.0.1:1/v1")
    server = ServerConfig("spawn", command="hermitcrab-spawn", disabled_tools=("sessions_ack",))
    settings = Settings(home=tmp_path, providers=(profile,), servers=(server,))

    changed = subagent_settings(settings, "small-model", ["sessions_spawn"])

    assert [p.model for p in changed.providers] == ["small-model"]
    assert not changed.servers[0].allows("sessions_spawn") and not changed.servers[0].allows("sessions_ack")
    assert subagent_settings(settings, None, []).providers == settings.providers
