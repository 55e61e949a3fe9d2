"""Our servers over real stdio and streamable HTTP: lines the SDK cannot parse get a JSON-RPC error (one line on both
transports), a huge bad argument is answered at once, briefly, without flooding the log; an unknown prompt and a
list cursor are invalid params, the version is the package's, and batches are handled per protocol version."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

import httpx
import pytest

from hermitcrab.servers._common.serve import LOG_LEVELS
from hermitcrab.servers.exec.__main__ import main as exec_main
from hermitcrab.servers.memory.__main__ import main as memory_main
from tests.support.fake_llm import free_port
from tests.support.processes import serving

MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


class StdioPeer:
    """A server process spoken to line by line, as a confused MCP client would."""

    def __init__(self, process: subprocess.Popen[bytes], stderr: Path) -> None:
        self.process = process
        self.stderr = stderr
        self.initialized: dict[str, Any] = {}
        self._buffer = b""

    def send(self, line: bytes | dict[str, Any]) -> None:
        data = line if isinstance(line, bytes) else json.dumps(line).encode()
        assert self.process.stdin is not None
        self.process.stdin.write(data + b"\n")
        self.process.stdin.flush()

    def receive(self, timeout_s: float = 10) -> dict[str, Any]:
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            assert left > 0 and select.select([self.process.stdout], [], [], left)[0], "no reply in time"
            chunk = os.read(self.process.stdout.fileno(), 1 << 20)
            assert chunk, "the server closed its output"
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)


@pytest.fixture(scope="module")
def memory_peer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StdioPeer]:
    """One memory server for the module (its start costs seconds); its stderr goes to `stderr.log` beside it."""
    tmp_path = tmp_path_factory.mktemp("serve")
    command = [sys.executable, "-m", "hermitcrab.servers.memory", "--workspace", str(tmp_path / "ws")]
    command += ["--state", str(tmp_path / "state"), "--embedder", "none"]
    with (tmp_path / "stderr.log").open("wb") as stderr:
        process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr)
        peer = StdioPeer(process, tmp_path / "stderr.log")
        try:
            peer.send(
                {
                    "jsonrpc": "2.0",
                    "id": 0,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-06-18",
                        "capabilities": {},
                        "clientInfo": {"name": "t", "version": "1"},
                    },
                }
            )
            peer.initialized = peer.receive(60)
            peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            yield peer
        finally:
            process.kill()
            process.wait()


def test_unparseable_requests_get_an_error_reply(memory_peer: StdioPeer):
    lines = {
        1: b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":"\\ud800"}}',
        2: b'{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"x":' + b"[" * 300 + b"]" * 300 + b"}}",
        3: b'{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"x":' + b"9" * 5000 + b"}}",
        4: b'{"jsonrpc":"2.0","id":4,"method":"tools/list","params":[]}',
    }
    for request_id, line in lines.items():
        memory_peer.send(line)
        reply = memory_peer.receive()
        assert reply["id"] == request_id
        assert reply["error"]["code"] == (-32600 if request_id == 4 else -32700)
    memory_peer.send(b"{not json")
    assert memory_peer.receive() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": -32700,
            "message": "Parse error: the line is not JSON this server can read "
            "('key must be a string at line 1 column 2')",
        },
    }
    memory_peer.send({"jsonrpc": "2.0", "id": 5, "method": "tools/list"})
    assert len(memory_peer.receive()["result"]["tools"]) == 4


def test_stdio_answers_an_unknown_prompt_and_a_cursor_with_invalid_params_and_names_its_version(
    memory_peer: StdioPeer,
):
    memory_peer.send({"jsonrpc": "2.0", "id": 11, "method": "prompts/get", "params": {"name": "nope"}})
    prompt = memory_peer.receive()
    memory_peer.send({"jsonrpc": "2.0", "id": 12, "method": "tools/list", "params": {"cursor": "made-up"}})
    cursor = memory_peer.receive()

    assert prompt["error"] == {
        "code": -32602,
        "message": "Unknown prompt: 'nope'; prompts/list names this server's prompts",
    }
    assert cursor["error"]["code"] == -32602 and "cursor" in cursor["error"]["message"]
    assert memory_peer.initialized["result"]["serverInfo"]["version"] == version("hermitcrab")


def test_stdio_refuses_a_batch_in_one_line(memory_peer: StdioPeer):
    memory_peer.send(b'[{"jsonrpc":"2.0","id":13,"method":"ping"}]')

    assert memory_peer.receive() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": "Invalid request: a JSON-RPC batch; send one message per line"},
    }


def test_a_huge_bad_argument_is_answered_at_once_and_not_logged(memory_peer: StdioPeer):
    huge = "memory/" + "a" * 10_000_000 + ".md"
    started = time.monotonic()
    memory_peer.send(
        {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "memory_get", "arguments": {"path": huge}},
        }
    )
    reply = memory_peer.receive(timeout_s=20)
    elapsed = time.monotonic() - started
    text = reply["result"]["content"][0]["text"]
    assert reply["result"]["isError"] and "`path` is too long" in text and len(text) < 400
    assert elapsed < 5  # 31 s, a 20 MB reply and 48 MB of rich log before
    assert memory_peer.stderr.stat().st_size < 10_000


@pytest.mark.parametrize("main", [memory_main, exec_main], ids=["memory", "exec"])
def test_every_server_has_a_log_level_flag(main: Callable[[list[str]], None], capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit):
        main(["--help"])
    shown = capsys.readouterr().out
    assert "--log-level" in shown and all(level in shown for level in LOG_LEVELS)


class HttpPeer:
    """A server over streamable HTTP, spoken to one POST at a time in a protocol version's own way."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}

    def post(self, body: object, headers: dict[str, str] | None = None) -> httpx.Response:
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        return httpx.post(self.url, content=content, headers={**self.headers, **(headers or {})}, timeout=30)

    def session(self, protocol_version: str) -> tuple[dict[str, Any], dict[str, str]]:
        """Open a handshake-era session: the initialize result and the headers later requests carry."""
        opened = self.post(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": protocol_version,
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            }
        )
        headers = {"mcp-session-id": opened.headers["mcp-session-id"]}
        if protocol_version != "2025-03-26":  # that version has no protocol-version header
            headers["mcp-protocol-version"] = protocol_version
        assert self.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, headers).status_code == 202
        return messages(opened)[0]["result"], headers

    def modern(self, request_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """One 2026-07-28 request, stateless, its envelope in `_meta`."""
        headers = {"mcp-protocol-version": "2026-07-28", "mcp-method": method}
        if "name" in params:
            headers["mcp-name"] = params["name"]
        body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {**params, "_meta": MODERN_META}}
        (reply,) = messages(self.post(body, headers))
        return reply


def messages(response: httpx.Response) -> list[dict[str, Any]]:
    """The JSON-RPC messages of a response, whether JSON or an SSE stream."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        lines = response.text.splitlines()
        return [
            json.loads(line.removeprefix("data:")) for line in lines if line.startswith("data:") and line[5:].strip()
        ]
    return [response.json()]


@pytest.fixture(scope="module")
def http_peer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpPeer]:
    tmp_path = tmp_path_factory.mktemp("http")
    port = free_port()
    command = [sys.executable, "-m", "hermitcrab.servers.memory", "--workspace", str(tmp_path / "ws")]
    command += ["--state", str(tmp_path / "state"), "--embedder", "none", "--http", f"127.0.0.1:{port}"]
    with serving(command, port) as url:
        yield HttpPeer(url)


@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
def test_http_answers_an_unknown_prompt_and_a_cursor_with_invalid_params_in_both_eras(http_peer: HttpPeer, era: str):
    if era == "2026-07-28":
        prompt = http_peer.modern(1, "prompts/get", {"name": "nope"})
        cursor = http_peer.modern(2, "resources/list", {"cursor": "made-up"})
    else:
        _, headers = http_peer.session(era)
        (prompt,) = messages(
            http_peer.post({"jsonrpc": "2.0", "id": 1, "method": "prompts/get", "params": {"name": "nope"}}, headers)
        )
        (cursor,) = messages(
            http_peer.post(
                {"jsonrpc": "2.0", "id": 2, "method": "resources/list", "params": {"cursor": "made-up"}}, headers
            )
        )

    assert prompt["error"] == {
        "code": -32602,
        "message": "Unknown prompt: 'nope'; prompts/list names this server's prompts",
    }
    assert cursor["error"] == {
        "code": -32602,
        "message": "Invalid cursor for resources/list: this server lists everything in one page",
    }


def test_http_names_the_package_version_in_both_eras(http_peer: HttpPeer):
    handshake, _ = http_peer.session("2025-11-25")
    discovered = http_peer.modern(3, "server/discover", {})

    assert handshake["serverInfo"]["version"] == version("hermitcrab")
    assert discovered["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["version"] == version("hermitcrab")


def test_a_malformed_message_gets_the_same_line_over_http_as_over_stdio(http_peer: HttpPeer, memory_peer: StdioPeer):
    line = b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":[]}'
    _, headers = http_peer.session("2025-11-25")
    memory_peer.send(line)

    answered = http_peer.post(line, headers)

    assert answered.status_code == 400
    assert (
        answered.json()
        == memory_peer.receive()
        == {
            "jsonrpc": "2.0",
            "id": 4,
            "error": {
                "code": -32600,
                "message": "Invalid request: not a JSON-RPC 2.0 message (is `params` an object?)",
            },
        }
    )


def test_a_batch_under_2025_03_26_gets_an_answer_per_request_and_its_notifications_run(http_peer: HttpPeer):
    _, headers = http_peer.session("2025-03-26")
    batch = [
        {"jsonrpc": "2.0", "id": "ping", "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "gone"}},
        {"jsonrpc": "2.0", "id": "tools", "method": "tools/list"},
        {"jsonrpc": "2.0", "id": "bad", "method": "tools/call", "params": [1]},
    ]

    answered = messages(http_peer.post(batch, headers))

    by_id = {reply["id"]: reply for reply in answered}
    assert sorted(by_id) == ["bad", "ping", "tools"]
    assert by_id["ping"]["result"] == {}
    assert "memory_search" in {tool["name"] for tool in by_id["tools"]["result"]["tools"]}
    assert by_id["bad"]["error"]["code"] == -32600
    assert http_peer.post(batch[1:2], headers).status_code == 202
    unknown = http_peer.post(batch[:1], {"mcp-session-id": "no-such-session"})
    assert unknown.status_code == 404


@pytest.mark.parametrize("era", ["2025-06-18", "2025-11-25"])
def test_a_batch_after_2025_03_26_is_refused_in_one_line(http_peer: HttpPeer, era: str):
    _, headers = http_peer.session(era)

    refused = http_peer.post([{"jsonrpc": "2.0", "id": 1, "method": "ping"}], headers)

    assert refused.status_code == 400
    assert refused.json()["error"] == {
        "code": -32600,
        "message": f"Invalid request: protocol version {era} has no JSON-RPC batches; post each message on its own",
    }


@pytest.mark.parametrize(
    ("batch", "reason"),
    [
        ([], "the batch is empty"),
        (
            [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}],
            "initialize must not be part of a JSON-RPC batch",
        ),
    ],
    ids=["empty", "initialize"],
)
def test_a_batch_under_2025_03_26_that_the_version_forbids_is_refused(
    http_peer: HttpPeer, batch: list[dict[str, Any]], reason: str
):
    _, headers = http_peer.session("2025-03-26")

    refused = http_peer.post(batch, headers)

    assert refused.status_code == 400
    assert refused.json()["error"] == {"code": -32600, "message": f"Invalid request: {reason}"}


def test_a_post_beside_the_mcp_path_is_left_to_the_server(http_peer: HttpPeer):
    elsewhere = httpx.post(
        http_peer.url.removesuffix("/mcp") + "/other", json=[{"jsonrpc": "2.0", "id": 1}], headers=http_peer.headers
    )

    assert elsewhere.status_code == 404
