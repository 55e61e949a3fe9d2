"""Settings come from config.toml, Claude Desktop JSON and the environment, in a documented order."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hermitcrab.host.config import load_settings
from hermitcrab.host.errors import ConfigError


def test_environment_profile_comes_first_and_vendor_keys_are_honoured(tmp_path: Path):
    env = {
        "HERMITCRAB_HOME": str(tmp_path),
        "HERMITCRAB_LLM_BASE_URL": "http://127.0.0.1:9/v1/",
        "HERMITCRAB_MODEL": "local",
        "OPENAI_API_KEY": "sk-vendor",
    }
    (tmp_path / "config.toml").write_text('[[providers]]\nkind = "anthropic"\napi_key_env = "MY_KEY"\n')

    settings = load_settings({**env, "MY_KEY": "ak"})

    first, second = settings.providers
    assert (first.kind, first.base_url, first.model, first.api_key) == (
        "openai",
        "http://127.0.0.1:9/v1",
        "local",
        "sk-vendor",
    )
    assert (second.kind, second.api_key, second.base_url) == ("anthropic", "ak", "https://api.anthropic.com")


def test_vendor_keys_alone_configure_a_provider(tmp_path: Path):
    settings = load_settings({"HERMITCRAB_HOME": str(tmp_path), "ANTHROPIC_API_KEY": "ak"})

    assert [p.kind for p in settings.providers] == ["anthropic"]


def test_no_provider_gives_precise_guidance(tmp_path: Path):
    settings = load_settings({"HERMITCRAB_HOME": str(tmp_path)})

    with pytest.raises(ConfigError, match="HERMITCRAB_LLM_BASE_URL"):
        settings.require_provider()


def test_claude_desktop_json_replaces_configured_servers(tmp_path: Path):
    (tmp_path / "config.toml").write_text('[mcpServers.memory]\ncommand = "hermitcrab-memory"\n')
    desktop = tmp_path / "claude_desktop_config.json"
    desktop.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "fs": {"command": "npx", "args": ["-y", "server-filesystem", "/tmp"], "env": {"A": "1"}},
                    "remote": {"url": "http://127.0.0.1:8000/mcp", "headers": {"Authorization": "Bearer x"}},
                    "off": {"command": "x", "disabled": True},
                    "picky": {"command": "y", "enabled_tools": ["read"], "disabled_tools": ["write"], "timeout_s": 5},
                }
            }
        )
    )

    settings = load_settings({"HERMITCRAB_HOME": str(tmp_path)}, mcp_config=desktop)

    fs, remote, picky = settings.servers
    assert (fs.name, fs.command, fs.args, dict(fs.env)) == (
        "fs",
        "npx",
        ("-y", "server-filesystem", "/tmp"),
        {"A": "1"},
    )
    assert remote.url == "http://127.0.0.1:8000/mcp" and remote.headers["Authorization"] == "Bearer x"
    assert picky.allows("read") and not picky.allows("write") and not picky.allows("other")
    assert picky.timeout_s == 5


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[mcpServers.bad]\nargs = []\n", "exactly one of 'command' or 'url'"),
        ('[[providers]]\nkind = "gemini"\n', "providers.0.kind: Input should be 'openai' or 'anthropic'"),
        ('[[providers]]\nmodel = "x"\ntemprature = 1\n', "providers.0.temprature: unknown key"),
        ('[mcpServers.exec]\ncommand = "x"\ndisabled_tool = ["exec"]\n', "did you mean 'disabled_tools'"),
        ("[agnet]\nmax_iterations = 3\n", "agnet: unknown key \\(did you mean 'agent'\\?\\)"),
        ('[agent]\ntimezone = "Europe/Berln"\n', "unknown time zone 'Europe/Berln' \\(did you mean 'Europe/Berlin'"),
        ('[mcpServers.x]\ntype = "stdio"\nurl = "http://127.0.0.1:1/mcp"\n', "type 'stdio' does not match 'url'"),
        ("[agent]\nmax_iterations = 0\n", "agent.max_iterations: Input should be greater than 0"),
        ('[mcpServers.x]\ncommand = "a"\ntimeout_s = -1\n', "mcpServers.x.timeout_s"),
        ("not toml = = =", "config.toml"),
    ],
)
def test_bad_config_is_a_clear_error(tmp_path: Path, content: str, message: str):
    (tmp_path / "config.toml").write_text(content)

    with pytest.raises(ConfigError, match=message):
        load_settings({"HERMITCRAB_HOME": str(tmp_path)})


def test_missing_mcp_config_file_is_a_clear_error(tmp_path: Path):
    with pytest.raises(ConfigError, match="not found"):
        load_settings({"HERMITCRAB_HOME": str(tmp_path)}, mcp_config=tmp_path / "nope.json")


def test_unknown_keys_in_claude_desktop_entries_are_errors_but_its_own_keys_are_accepted(tmp_path: Path):
    desktop = tmp_path / "claude_desktop_config.json"
    entry = {"type": "stdio", "command": "npx", "args": [], "env": {}, "disabled": False, "timeout": 9}
    desktop.write_text(json.dumps({"globalShortcut": "Ctrl+Space", "mcpServers": {"fs": entry}}))

    (server,) = load_settings({"HERMITCRAB_HOME": str(tmp_path)}, mcp_config=desktop).servers

    assert (server.command, server.timeout_s) == ("npx", 9)
    desktop.write_text(json.dumps({"mcpServers": {"fs": {**entry, "enabled_tool": ["read"]}}}))
    with pytest.raises(ConfigError, match=r"fs.enabled_tool: unknown key \(did you mean 'enabled_tools'\?\)"):
        load_settings({"HERMITCRAB_HOME": str(tmp_path)}, mcp_config=desktop)


def test_server_entries_take_variables_from_the_environment_as_claude_code_does(tmp_path: Path):
    (tmp_path / "config.toml").write_text(
        "[mcpServers.kit]\n"
        'command = "${TOOLS}/kit"\n'
        'args = ["--region", "${REGION:-eu}"]\n'
        'env = { API_KEY = "${KIT_KEY}", OPTIONAL = "${UNSET:-}", EMPTY = "${BLANK:-fallback}" }\n'
        "[mcpServers.remote]\n"
        'url = "http://127.0.0.1:${PORT}/mcp"\n'
        'headers = { Authorization = "Bearer ${TOKEN}" }\n'
    )
    env = {"HERMITCRAB_HOME": str(tmp_path), "TOOLS": "/opt", "KIT_KEY": "k-1", "BLANK": "", "PORT": "8000"}

    kit, remote = load_settings({**env, "TOKEN": "t-2"}).servers

    assert (kit.command, kit.args) == ("/opt/kit", ("--region", "eu"))
    assert dict(kit.env) == {"API_KEY": "k-1", "OPTIONAL": "", "EMPTY": "fallback"}
    assert (remote.url, dict(remote.headers)) == ("http://127.0.0.1:8000/mcp", {"Authorization": "Bearer t-2"})
    with pytest.raises(ConfigError, match=r"mcpServers.remote.headers.Authorization: \$\{TOKEN\} is not set"):
        load_settings(env)


def test_outbound_allow_reaches_every_server_started_over_stdio_unless_its_entry_says_otherwise(tmp_path: Path):
    (tmp_path / "config.toml").write_text(
        '[outbound]\nallow = ["127.0.0.1:3000", "*.lan"]\n\n'
        '[mcpServers.cron]\ncommand = "hermitcrab-cron"\n\n'
        '[mcpServers.own]\ncommand = "other"\nenv = { HERMITCRAB_OUTBOUND_ALLOW = "" }\n\n'
        '[mcpServers.remote]\nurl = "https://mcp.example.com/mcp"\n'
    )

    settings = load_settings({"HERMITCRAB_HOME": str(tmp_path)})

    assert settings.outbound.allow == ("127.0.0.1:3000", "*.lan")
    cron, own, remote = settings.servers
    assert cron.env == {"HERMITCRAB_OUTBOUND_ALLOW": "127.0.0.1:3000;*.lan"}
    assert own.env == {"HERMITCRAB_OUTBOUND_ALLOW": ""} and remote.env == {}


def test_a_bad_outbound_entry_is_named_with_what_is_wrong(tmp_path: Path):
    (tmp_path / "config.toml").write_text('[outbound]\nallow = ["10.0.0.0/8:80/x"]\n')

    with pytest.raises(ConfigError, match=r"outbound.*10\.0\.0\.0/8:80/x.*expected host, host:port"):
        load_settings({"HERMITCRAB_HOME": str(tmp_path)})
