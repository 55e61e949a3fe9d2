"""Errors a user can cause reach them as one clear line from the real CLI, never as a traceback."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.fake_llm import NO_PROVIDER_ENV, free_port, openai_text


def test_an_unknown_config_key_names_the_nearest_valid_one(hermitcrab, hermitcrab_home: Path):
    (hermitcrab_home / "config.toml").write_text('[mcpServers.exec]\ncommand = "x"\ndisabled_tool = ["exec"]\n')

    result = hermitcrab("ask", "hi")

    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "mcpServers.exec.disabled_tool: unknown key (did you mean 'disabled_tools'?)" in result.stderr


def test_an_unreachable_provider_is_one_line_even_with_servers_running(hermitcrab, hermitcrab_home, desktop_config):
    port = free_port()
    (hermitcrab_home / "config.toml").write_text(
        f'[[providers]]\nbase_url = "http://127.0.0.1:{port}/v1"\napi_key = "sk-x"\nmax_retries = 0\n'
    )

    result = hermitcrab("ask", "--mcp-config", str(desktop_config()), "hi", env=NO_PROVIDER_ENV)

    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    # said once, on the error line alone (no logger line before it), with what to check
    assert result.stderr.count("could not reach") == 1 and result.stderr.startswith("error: "), result.stderr
    assert f"could not reach http://127.0.0.1:{port}/v1/chat/completions" in result.stderr
    assert "check that the server is running" in result.stderr and "HERMITCRAB_LLM_BASE_URL" in result.stderr
    assert "Traceback (most recent call last)" in (hermitcrab_home / "state" / "logs" / "host.log").read_text()


def test_a_missing_server_binary_leaves_the_turn_working(hermitcrab, llm, tmp_path: Path):
    llm.enqueue(openai_text("hello without tools"))
    desktop = tmp_path / "desktop.json"
    desktop.write_text(json.dumps({"mcpServers": {"gone": {"command": "/nonexistent/hermitcrab-gone"}}}))

    result = hermitcrab("ask", "--mcp-config", str(desktop), "hi")

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "hello without tools"
    assert "Traceback" not in result.stderr
    assert "MCP server 'gone' failed: FileNotFoundError" in result.stderr
