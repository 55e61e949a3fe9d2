"""The client the official conformance suite drives in its client scenarios: the host's own McpPool.

`conformance client --command CMD` starts CMD once per scenario with the suite's server URL as its last argument
and the scenario in `$MCP_CONFORMANCE_SCENARIO` (some also get `$MCP_CONFORMANCE_CONTEXT`, and
`$MCP_CONFORMANCE_PROTOCOL_VERSION` names the protocol version to speak). `run` connects through `McpPool` exactly
as the host does, then does what a host would: every listed tool is called once with arguments its schema asks
for, every listed prompt fetched, and each elicitation answered through the host's real `ElicitationHandler` by a
scripted user who presses Enter (takes the defaults). It fails, saying why, when the pool cannot connect.

CMD can be this module itself (`python -m tests.support.conformance_client` in the repository, one scenario per
process, as by hand), or `conformance_launch.py`, which hands each scenario to `serve_scenarios` in one long-lived
process: importing the host costs a second or two of CPU per process, and the suite starts a few dozen at once.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import anyio.streams.buffered
from anyio.abc import TaskStatus
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from hermitcrab.host.config import ServerConfig
from hermitcrab.host.mcp.elicitation import current_asker
from hermitcrab.host.mcp.pool import McpPool
from tests.support.oauth_server import log_in_headless

SERVER = "conformance"
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
"""The client ID metadata document the suite's auth scenarios accept (auth/basic-cimd)."""
ECHO_SCENARIO = "json-schema-2020-12-preservation"
"""The scenario whose echo tool takes the other tool's input schema, to see what the pool kept of it."""
_EXAMPLES: dict[str, Any] = {"string": "x", "integer": 1, "number": 1, "boolean": True, "array": [], "object": {}}


def server_entry(url: str, scenario: str, context: dict[str, Any], protocol_version: str | None) -> dict[str, Any]:
    """The `mcpServers` entry the pool is given for one scenario (the one place to configure it, e.g. auth).

    The suite's protocol version picks the era: a handshake-era version means `"protocol": "legacy"`. An auth
    scenario's server needs an OAuth login: a pre-registered client comes in the scenario's context, and the
    suite's client ID metadata document stands for the one a user would host."""
    legacy = protocol_version is not None and protocol_version not in MODERN_PROTOCOL_VERSIONS
    entry: dict[str, Any] = {"url": url, "timeout_s": 20, "protocol": "legacy" if legacy else "auto"}
    if scenario.startswith("auth/"):
        client = {key: context[key] for key in ("client_id", "client_secret") if key in context}
        entry |= {"auth": "oauth", "oauth": {**client, "client_metadata_url": CLIENT_METADATA_URL}}
    return entry


async def press_enter(question: str, choices: Sequence[str] | None = None) -> str | None:
    """The scripted user: answers every question by pressing Enter, meaning "the default"."""
    del question, choices
    return ""


def example_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    """Arguments for a tool's required properties: its default or first example, else a value of its type."""
    properties: dict[str, Any] = schema.get("properties") or {}
    arguments: dict[str, Any] = {}
    for name in schema.get("required") or []:
        field: dict[str, Any] = properties.get(name) or {}
        if "default" in field:
            arguments[name] = field["default"]
        elif field.get("examples"):
            arguments[name] = field["examples"][0]
        elif field.get("enum"):
            arguments[name] = field["enum"][0]
        else:
            arguments[name] = _EXAMPLES.get(str(field.get("type")), "x")
    return arguments


async def run(url: str, scenario: str, context: dict[str, Any], protocol_version: str | None) -> tuple[int, str]:
    """Play one scenario against the suite's server at `url`: the exit code and what was done, line by line."""
    config = ServerConfig(name=SERVER, **server_entry(url, scenario, context, protocol_version))
    current_asker.set(press_enter)
    with tempfile.TemporaryDirectory() as logins:
        if config.auth == "oauth":  # as `hermitcrab mcp login` would, before the host starts
            await log_in_headless(config, Path(logins))
        return await _play(config, Path(logins), scenario)


async def _play(config: ServerConfig, logins: Path, scenario: str) -> tuple[int, str]:
    done: list[str] = []
    async with McpPool([config], startup_timeout_s=25, oauth_logins=logins) as pool:
        handle = pool.handles[SERVER]
        if not handle.ready:
            return 1, f"could not connect: {handle.state}"
        routes = pool.routes()
        for name, route in routes.items():
            arguments = example_arguments(route.spec.parameters)
            if (
                scenario == ECHO_SCENARIO and "schema" in arguments
            ):  # hand back the other tool's schema as the pool has it
                arguments["schema"] = next(other.spec.parameters for key, other in routes.items() if key != name)
            outcome = await pool.call(name, arguments)
            done.append(f"{name}: {'error: ' if outcome.is_error else ''}{outcome.text[:300]}")
        for prompt in handle.prompts:
            arguments = {argument.name: "x" for argument in prompt.arguments or [] if argument.required}
            result = await handle.get_prompt(prompt.name, arguments)
            done.append(f"prompt {prompt.name}: {len(result.messages)} messages")
    return 0, "\n".join(done)


async def serve_scenarios(socket_path: str, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
    """Play each scenario `conformance_launch.py` sends over the Unix socket: one JSON line in (`url`, `scenario`,
    `context`, `protocol_version`), one out (`code`, `output`). Runs until cancelled."""

    async def play(stream: anyio.abc.SocketStream) -> None:
        async with stream:
            asked = json.loads(
                await anyio.streams.buffered.BufferedByteReceiveStream(stream).receive_until(b"\n", 1 << 20)
            )
            try:
                code, output = await run(asked["url"], asked["scenario"], asked["context"], asked["protocol_version"])
            except Exception as exc:  # the scenario's verdict, not the runner's end
                code, output = 1, f"{type(exc).__name__}: {exc}"
            await stream.send(json.dumps({"code": code, "output": output}).encode() + b"\n")

    listener = await anyio.create_unix_listener(socket_path)
    task_status.started()
    await listener.serve(play)


def main(argv: Sequence[str]) -> int:
    context: dict[str, Any] = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    code, output = anyio.run(run, argv[-1], scenario, context, os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION"))
    print(output, file=sys.stdout if code == 0 else sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
