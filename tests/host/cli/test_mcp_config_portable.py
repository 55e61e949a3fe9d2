"""`hermitcrab mcp-config NAME --portable`: an entry for any machine with uv, installing the server's extra."""

from __future__ import annotations

import json
import socket
import sys
from importlib.metadata import entry_points, metadata
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from typer.testing import CliRunner

from hermitcrab.host.cli.app import app
from hermitcrab.install.own_servers import OWN_SERVERS

runner = CliRunner()


def portable(name: str) -> dict[str, object]:
    result = runner.invoke(app, ["mcp-config", name, "--portable"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_the_portable_entry_runs_the_server_through_uvx():
    assert portable("memory") == {
        "mcpServers": {"memory": {"command": "uvx", "args": ["--from", "hermitcrab[memory]", "hermitcrab-memory"]}}
    }


@pytest.mark.parametrize("name", OWN_SERVERS)
def test_it_names_an_extra_and_a_command_that_hermitcrab_has(name: str):
    entry = portable(name)["mcpServers"][name]  # type: ignore[index]  # the printed JSON
    _, spec, script, *_ = entry["args"]

    assert spec.removeprefix("hermitcrab[").removesuffix("]") in metadata("hermitcrab").get_all("Provides-Extra", [])
    assert script in {point.name for point in entry_points(group="console_scripts")}
    assert not any(Path(arg).is_absolute() for arg in entry["args"]), "nothing of this machine's paths"


def test_the_default_entry_is_unchanged_and_absolute():
    result = runner.invoke(app, ["mcp-config", "exec"])
    entry = json.loads(result.output)["mcpServers"]["exec"]

    assert Path(entry["command"]).is_absolute() and entry["args"][-2:] == ["--state", str(Path(entry["args"][-1]))]
    assert not {"--ask", "--risk-tiers"} & set(entry["args"]), "the server's own default decides what is asked"


async def test_the_portable_exec_entry_starts(tmp_path: Path):
    """uvx would install hermitcrab[exec] first; this checkout has it, so its script runs with the entry's args."""
    entry = portable("exec")["mcpServers"]["exec"]  # type: ignore[index]  # the printed JSON
    _, _, script, *args = entry["args"]
    command = str(Path(sys.executable).parent / script)
    params = StdioServerParameters(command=command, args=args, env={"HOME": str(tmp_path)})

    with anyio.fail_after(60):
        async with Client(params) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}

    assert {"exec", "read_file", "write_file"} <= tools
    assert (tmp_path / ".hermitcrab" / "workspace").is_dir(), "the default root under that machine's home"


def test_the_http_entry_sends_the_token_from_the_environment_and_says_how_to_start_the_server():
    result = CliRunner().invoke(app, ["mcp-config", "exec", "--http", "0.0.0.0:8765"])
    assert result.exit_code == 0, result.output
    entry = json.loads(result.stdout)["mcpServers"]["exec"]

    assert entry == {
        "type": "http",
        "url": f"http://{socket.gethostname()}:8765/mcp",
        "headers": {"Authorization": "Bearer ${HERMITCRAB_MCP_TOKEN}"},
    }
    (start,) = [line for line in result.stderr.splitlines() if line.startswith("HERMITCRAB_MCP_TOKEN=")]
    assert "hermitcrab-exec" in start and start.endswith(f"--http 0.0.0.0:8765 --allow-host {socket.gethostname()}")


def test_spawns_entry_passes_the_provider_variables_set_here_never_their_values(monkeypatch: pytest.MonkeyPatch):
    for variable in ("HERMITCRAB_LLM_BASE_URL", "HERMITCRAB_MODEL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HERMITCRAB_LLM_API_KEY", "sk-secret-in-shell")
    monkeypatch.setenv("HERMITCRAB_LLM_BASE_URL", "http://127.0.0.1:11434/v1")

    for extra in ([], ["--portable"]):
        result = runner.invoke(app, ["mcp-config", "spawn", *extra])
        assert result.exit_code == 0, result.output
        entry = json.loads(result.stdout)["mcpServers"]["spawn"]
        assert entry["env"] == {
            "HERMITCRAB_LLM_API_KEY": "${HERMITCRAB_LLM_API_KEY}",
            "HERMITCRAB_LLM_BASE_URL": "${HERMITCRAB_LLM_BASE_URL}",
        }
        assert "sk-secret-in-shell" not in result.output
        assert "replace each with its value" in result.stderr
