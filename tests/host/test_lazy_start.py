"""A lazy start: `ask` offers the model the tool lists of the last run while the servers start behind it; a call
waits for its server, the server's own list then decides, and a changed config entry is never served an old list.

The slow server is `gated_server.py`, which answers nothing until the test creates its gate file: what the host did
before the server answered is then certain, not a matter of time.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from mcp import types

from hermitcrab.host.config import ServerConfig
from hermitcrab.host.mcp.pool import McpPool
from hermitcrab.host.mcp.tool_cache import ToolCache, entry_digest
from tests.support.cli import CLI, cli_env, wait_for
from tests.support.fake_llm import FakeLLM, openai_text, openai_tool_calls

GATED_SERVER = str(Path(__file__).parents[1] / "support" / "gated_server.py")
SECRET = "sk-never-in-the-cache"


def gated(gate: Path, *options: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    return {"command": sys.executable, "args": [GATED_SERVER, str(gate), *options], "env": env or {}}


def desktop_config(tmp_path: Path, gate: Path) -> Path:
    path = tmp_path / "desktop.json"
    path.write_text(json.dumps({"mcpServers": {"slow": gated(gate, env={"SLOW_TOKEN": SECRET})}}))
    return path


def tool_names(request: dict[str, Any]) -> set[str]:
    return {tool["function"]["name"] for tool in request.get("tools", [])}


def tool_results(request: dict[str, Any]) -> list[str]:
    return [message["content"] for message in request["messages"] if message["role"] == "tool"]


def ask(home: Path, llm: FakeLLM, config: Path) -> subprocess.Popen[str]:
    command = [*CLI, "ask", "--mcp-config", str(config), "hi"]
    return subprocess.Popen(command, env=cli_env(home, llm), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def first_run(home: Path, llm: FakeLLM, tmp_path: Path) -> tuple[Path, Path]:
    """An `ask` with the gate open: no cache yet, so the host waits for the server and keeps its tools. The config
    and the gate, shut again."""
    gate = tmp_path / "gate"
    config = desktop_config(tmp_path, gate)
    gate.touch()
    llm.enqueue(openai_text("first"))
    out, err = ask(home, llm, config).communicate(timeout=60)
    assert out.strip() == "first", err
    gate.unlink()
    return config, gate


def held_run(home: Path, llm: FakeLLM, config: Path, gate: Path) -> tuple[set[str], str]:
    """An `ask` with the gate shut until the model was first asked: the tools it was offered then, and the reply."""
    process = ask(home, llm, config)
    wait_for(lambda: len(llm.requests) == 2, "the model was not asked before the held server answered")
    offered = tool_names(llm.requests[1])
    gate.touch()
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    return offered, out.strip()


def test_the_next_ask_offers_the_cached_tools_before_the_slow_server_answers_and_its_call_waits_for_it(
    hermitcrab_home: Path, llm: FakeLLM, tmp_path: Path
):
    config, gate = first_run(hermitcrab_home, llm, tmp_path)
    cache = hermitcrab_home / "state" / "mcp_tools.json"
    assert cache.stat().st_mode & 0o077 == 0
    assert "echo" in cache.read_text() and SECRET not in cache.read_text()

    llm.enqueue(openai_tool_calls(("c1", "echo", json.dumps({"text": "through the gate"}))), openai_text("done"))
    offered, out = held_run(hermitcrab_home, llm, config, gate)

    assert {"echo", "add", "ask_user"} <= offered
    assert out == "done"
    assert tool_results(llm.requests[2]) == ["through the gate"]


def test_a_cached_tool_the_server_no_longer_has_is_a_tool_error_and_leaves_the_next_request(
    hermitcrab_home: Path, llm: FakeLLM, tmp_path: Path
):
    config, gate = first_run(hermitcrab_home, llm, tmp_path)
    cache = hermitcrab_home / "state" / "mcp_tools.json"
    kept = json.loads(cache.read_text())
    kept["slow"]["tools"].append({"name": "vanished", "description": "Gone since.", "inputSchema": {"type": "object"}})
    cache.write_text(json.dumps(kept))  # as an earlier version of the server listed it

    llm.enqueue(openai_tool_calls(("c1", "vanished", "{}")), openai_text("noted"))
    offered, out = held_run(hermitcrab_home, llm, config, gate)

    assert "vanished" in offered
    assert out == "noted"
    [result] = tool_results(llm.requests[2])
    assert "unknown tool 'vanished'" in result and "echo" in result
    assert "vanished" not in tool_names(llm.requests[2]) and "echo" in tool_names(llm.requests[2])
    assert "vanished" not in cache.read_text()


def slow(gate: Path, *options: str, env: dict[str, str] | None = None) -> ServerConfig:
    return ServerConfig("slow", **gated(gate, *options, env=env))


async def test_a_changed_entry_is_not_served_the_old_list_but_waited_for(tmp_path: Path):
    gate, path = tmp_path / "gate", tmp_path / "mcp_tools.json"
    gate.touch()
    async with McpPool([slow(gate)], tool_cache=ToolCache(path)) as pool:
        assert "echo" in pool.routes()
    gate.unlink()

    async with McpPool([slow(gate)], tool_cache=ToolCache(path)) as same:
        cached = same.routes()  # entered with the gate still shut: only the cache can have named these
    async with McpPool([slow(gate, "--name", "renamed")], tool_cache=ToolCache(path), startup_timeout_s=0.5) as changed:
        waited = changed.routes()
        state = changed.handles["slow"].state

    assert "echo" in cached
    assert waited == {} and state == "starting"


async def test_a_cached_server_that_has_not_started_by_the_deadline_stops_offering_its_tools_and_says_why(
    tmp_path: Path,
):
    gate, path = tmp_path / "gate", tmp_path / "mcp_tools.json"
    gate.touch()
    async with McpPool([slow(gate)], tool_cache=ToolCache(path)):
        pass  # its list, kept for the next run
    gate.unlink()

    async with McpPool([slow(gate)], tool_cache=ToolCache(path), startup_timeout_s=0.5) as pool:
        offered = set(pool.routes())
        waited = await pool.call("echo", {"text": "hello"})  # waits for the start until the deadline
        after = set(pool.routes())
        late = await pool.call("add", {"a": 1, "b": 2})  # offered before the deadline, called after it
        state = pool.handles["slow"].state

    reason = "the slow server is not available: did not start within 0.5 s"
    assert {"echo", "add"} <= offered and after == set()
    assert (waited.is_error, waited.text) == (late.is_error, late.text) == (True, reason)
    assert state == "down, restarting: did not start within 0.5 s"


def test_the_digest_follows_the_entry_and_env_names_but_not_env_values(tmp_path: Path):
    base = slow(tmp_path / "gate", env={"TOKEN": "one"})

    assert entry_digest(base) == entry_digest(slow(tmp_path / "gate", env={"TOKEN": "two"}))
    assert entry_digest(base) != entry_digest(slow(tmp_path / "gate", env={"TOKEN": "one", "MORE": "x"}))
    assert entry_digest(base) != entry_digest(slow(tmp_path / "other", env={"TOKEN": "one"}))
    assert entry_digest(base) != entry_digest(ServerConfig("slow", url="http://127.0.0.1:1/mcp"))


async def test_a_call_to_a_cached_server_that_fails_to_start_gets_the_clear_error(tmp_path: Path):
    broken = ServerConfig("broken", command=sys.executable, args=("-c", "import sys; sys.exit('no start today')"))
    cache = ToolCache(tmp_path / "mcp_tools.json")
    cache.keep(broken, [types.Tool(name="fix", description="Fix it.", input_schema={"type": "object"})])

    async with McpPool([broken], tool_cache=ToolCache(tmp_path / "mcp_tools.json"), min_backoff_s=60) as pool:
        offered = set(pool.routes())
        outcome = await pool.call("fix", {})
        after = set(pool.routes())

    assert offered == {"fix"} and after == set()
    assert outcome.is_error and "the broken server is not available: " in outcome.text


def test_a_torn_cache_starts_as_a_first_run(tmp_path: Path):
    path = tmp_path / "mcp_tools.json"
    path.write_text("{not json")

    assert ToolCache(path).tools(slow(tmp_path / "gate")) is None
