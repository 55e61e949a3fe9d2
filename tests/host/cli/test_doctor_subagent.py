"""`doctor` says whether sub-agents find a model: the spawn server starts them with a server's small environment."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hermitcrab.host.cli.app import app
from hermitcrab.host.cli.init import render_config
from tests.support.cli_output import flowing
from tests.support.fake_llm import running_fake_llm

runner = CliRunner()


def _only_spawn(home: Path, env: dict[str, str] | None = None) -> None:
    """config.toml with our spawn server alone, as `init` writes it (or with another `env`)."""
    entry = tomllib.loads(render_config(home))["mcpServers"]["spawn"]
    env = entry["env"] if env is None else env
    variables = ", ".join(f"{name} = {json.dumps(value)}" for name, value in env.items())
    (home / "config.toml").write_text(
        f"[mcpServers.spawn]\ncommand = {json.dumps(entry['command'])}\nargs = {json.dumps(entry['args'])}\n"
        f"env = {{ {variables} }}\n"
    )


@pytest.fixture
def shell_provider(monkeypatch: pytest.MonkeyPatch):
    """A model provider given only in this shell's environment (a fake one on 127.0.0.1)."""
    with running_fake_llm() as llm:
        variables = {"HERMITCRAB_LLM_BASE_URL": llm.url, "HERMITCRAB_LLM_API_KEY": "sk-test"}
        for name, value in variables.items():
            monkeypatch.setenv(name, value)
        yield variables


def test_a_key_only_in_the_shell_is_reported_as_unseen_by_sub_agents(hermitcrab_home: Path, shell_provider):
    _only_spawn(hermitcrab_home, {})

    result = runner.invoke(app, ["doctor"], env={"COLUMNS": "400"})

    output = flowing(result.output)
    assert "answered HTTP 200" in output  # the agent itself has its provider
    assert "sub-agents find no model provider" in output
    assert "[mcpServers.spawn] env" in output
    assert "sk-test" not in result.output


def test_the_spawn_entry_init_writes_passes_the_shells_provider_on(hermitcrab_home: Path, shell_provider):
    _only_spawn(hermitcrab_home)  # env = { HERMITCRAB_LLM_API_KEY = "${HERMITCRAB_LLM_API_KEY:-}", ... }

    result = runner.invoke(app, ["doctor"], env={"COLUMNS": "400"})

    output = flowing(result.output)
    assert f"sub-agents use openai:gpt-4o-mini (environment) at {shell_provider['HERMITCRAB_LLM_BASE_URL']}" in output
    assert "sub-agents find no model provider" not in output


def test_a_variable_another_server_uses_must_reach_sub_agents_too(
    hermitcrab_home: Path, shell_provider, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-test")
    _only_spawn(hermitcrab_home)
    config = hermitcrab_home / "config.toml"
    config.write_text(
        config.read_text() + '[mcpServers.gh]\ncommand = "gh-mcp"\nenv = { GITHUB_TOKEN = "${GITHUB_TOKEN}" }\n'
    )

    result = runner.invoke(app, ["doctor"], env={"COLUMNS": "400"})

    output = flowing(result.output)
    assert "a sub-agent cannot read the config: mcpServers.gh.env.GITHUB_TOKEN: ${GITHUB_TOKEN} is not set" in output
    assert '[mcpServers.spawn] env (NAME = "${NAME}")' in output
    assert "ghp-test" not in result.output
