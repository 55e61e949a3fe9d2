"""Our servers over real stdio: lines the SDK cannot parse get a JSON-RPC error, and a huge bad argument is
answered at once, briefly, without flooding the log."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hermitcrab.servers._common.serve import LOG_LEVELS
from hermitcrab.servers.exec.__main__ import main as exec_main
from hermitcrab.servers.memory.__main__ import main as memory_main


class StdioPeer:
    """A server process spoken to line by line, as a confused MCP client would."""

    def __init__(self, process: subprocess.Popen[bytes], stderr: Path) -> None:
        self.process = process
        self.stderr = stderr
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
            assert peer.receive(60)["id"] == 0
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
