"""Indexing: the `index` command, the progress bar of a slow first index (stderr only), what gets embedded."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import numpy as np
import pytest
import tantivy
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from hermitcrab.servers.memory.embed import OpenAIEmbedder, Unloading, USEEmbedder
from hermitcrab.servers.memory.server import build_server
from tests.support.embeddings import Embeddings, embedded

BAR = "indexing memory"


@pytest.fixture
def slow_embeddings() -> Iterator[Embeddings]:
    endpoint = Embeddings(delay_s=0.12)
    yield endpoint
    endpoint.close()


@pytest.fixture
def big_workspace(tmp_path: Path) -> Path:
    """600 distinct notes: 19 requests to the slow endpoint, over two seconds to embed."""
    root = tmp_path / "big"
    (root / "memory").mkdir(parents=True)
    notes = "\n".join(f"- Note {n}: the parcel for order {n * 7919} goes to locker {n % 31}." for n in range(600))
    (root / "memory" / "2025-04-01.md").write_text(notes + "\n", encoding="utf-8")
    return root


class Terminal:
    """A pseudo-terminal to hand a child process as its stderr, and everything the child wrote to it."""

    def __init__(self) -> None:
        self._master, self.slave = pty.openpty()
        self._chunks: list[bytes] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self._master, 4096)
            except OSError:  # EIO: every writer closed its end
                return
            if not chunk:
                return
            self._chunks.append(chunk)

    def text(self) -> str:
        """What was written, once the child and our copy of its end are closed."""
        os.close(self.slave)
        self._reader.join(timeout=10)
        os.close(self._master)
        return b"".join(self._chunks).decode(errors="replace")


def _memory_command(*args: str | Path) -> list[str]:
    return [sys.executable, "-m", "hermitcrab.servers.memory", *map(str, args)]


def _terminal_env() -> dict[str, str]:
    return {**os.environ, "TERM": "xterm-256color", "COLUMNS": "100"}


async def test_index_command_builds_the_index_that_a_server_then_uses(workspace: Path, state: Path) -> None:
    done = subprocess.run(
        _memory_command("index", "--workspace", workspace, "--state", state, "--embedder", "none"),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.startswith("indexed 2 files, 5 chunks in "), done.stdout
    assert done.stdout.count("\n") == 1 and "embed" in done.stdout
    assert done.stderr == ""
    assert (state / "meta.json").exists() and (state / "tantivy").is_dir()
    async with Client(build_server(workspace=workspace, state=state, embedder=None, watch=False)) as client:
        found = await client.call_tool("memory_search", {"query": "garage door code", "max_results": 1})
        status = (await client.call_tool("memory_status", {})).structured_content or {}
    assert "4711" in (found.structured_content or {})["results"][0]["snippet"]
    assert status["warnings"] == []  # the index was taken as it was, not rebuilt


async def test_an_index_of_an_earlier_version_is_rebuilt_quietly(workspace: Path, state: Path) -> None:
    earlier = tantivy.SchemaBuilder()
    earlier.add_text_field("id", stored=True, tokenizer_name="raw")
    (state / "tantivy").mkdir(parents=True)
    writer = tantivy.Index(earlier.build(), path=str(state / "tantivy")).writer()
    writer.add_document(tantivy.Document(id="MEMORY.md\x1f0"))
    writer.commit()
    async with Client(build_server(workspace=workspace, state=state, embedder=None, watch=False)) as client:
        found = await client.call_tool("memory_search", {"query": "garage door code", "max_results": 1})
        status = (await client.call_tool("memory_status", {})).structured_content or {}
    assert "4711" in (found.structured_content or {})["results"][0]["snippet"]
    assert status["warnings"] == []  # an upgrade, not a broken index


async def test_status_says_where_the_last_sync_spent_its_time(workspace: Path, state: Path) -> None:
    async with Client(build_server(workspace=workspace, state=state, embedder=None)) as client:
        await client.call_tool("memory_search", {"query": "tea"})
        status = (await client.call_tool("memory_status", {})).structured_content or {}
    phases: dict[str, float] = status["last_sync_phases"]
    assert list(phases) == ["read", "bm25", "other"]  # embedding is the background thread's
    assert 0 <= sum(phases.values()) <= status["last_sync_seconds"] + 0.01


def test_index_command_refuses_a_missing_workspace_in_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        _memory_command("index", "--workspace", tmp_path / "nowhere", "--state", tmp_path / "state"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].endswith("is not a folder")
    assert "Traceback" not in done.stderr


def test_a_slow_index_shows_a_progress_bar_on_stderr_and_prints_only_its_summary(
    big_workspace: Path, tmp_path: Path, slow_embeddings: Embeddings
) -> None:
    terminal = Terminal()
    done = subprocess.run(
        _memory_command(
            "index", "--workspace", big_workspace, "--state", tmp_path / "state", "--embedder", slow_embeddings.spec
        ),
        stdout=subprocess.PIPE,
        stderr=terminal.slave,
        env=_terminal_env(),
        text=True,
        timeout=120,
        check=True,
    )
    shown = terminal.text()
    assert BAR in shown
    assert done.stdout.startswith("indexed 1 files, 600 chunks in ") and done.stdout.count("\n") == 1
    assert len(slow_embeddings.texts) == 600


def test_a_quick_index_shows_no_progress_bar(workspace: Path, state: Path) -> None:
    notes = "".join(f"- note {n}: the parcel for order {n} waits at locker {n % 7}\n" for n in range(150))
    (workspace / "memory" / "2025-06-01.md").write_text(notes, encoding="utf-8")  # three requests to embed
    endpoint = Embeddings()  # answers at once: embedding ends well within the second before a bar would show
    terminal = Terminal()
    try:
        subprocess.run(
            _memory_command("index", "--workspace", workspace, "--state", state, "--embedder", endpoint.spec),
            stdout=subprocess.PIPE,
            stderr=terminal.slave,
            env=_terminal_env(),
            timeout=60,
            check=True,
        )
    finally:
        endpoint.close()
    assert len(endpoint.texts) == 155  # the fixture's five notes and these were embedded
    assert terminal.text() == ""


async def test_the_server_shows_the_bar_of_its_first_index_on_stderr_and_serves_mcp_on_stdout(
    big_workspace: Path, tmp_path: Path, slow_embeddings: Embeddings
) -> None:
    terminal = Terminal()
    params = StdioServerParameters(
        command=sys.executable,
        args=_memory_command(
            "--workspace", big_workspace, "--state", tmp_path / "state", "--embedder", slow_embeddings.spec
        )[1:],
        env=_terminal_env(),
    )
    with os.fdopen(os.dup(terminal.slave), "w") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            found = await client.call_tool("memory_search", {"query": "order 79190 locker", "max_results": 1})
            await embedded(client)  # the search did not wait for the vectors; the bar shows while they come
    results = (found.structured_content or {})["results"]
    assert "order 79190" in results[0]["snippet"]
    assert BAR in terminal.text()


async def test_a_long_line_is_embedded_once_and_each_piece_is_still_found(workspace: Path, state: Path) -> None:
    endpoint = Embeddings()
    filler = " ".join(f"Sentence {n} says nothing in particular about the weather today." for n in range(60))
    (workspace / "memory" / "2025-05-02.md").write_text(
        f"- user: {filler} The spare key is under the blue flowerpot.\n- assistant: Noted.\n", encoding="utf-8"
    )
    server = build_server(workspace=workspace, state=state, embedder=OpenAIEmbedder("fake", endpoint.base_url))
    try:
        async with Client(server) as client:
            found = await client.call_tool("memory_search", {"query": "spare key flowerpot", "max_results": 1})
            status = (await client.call_tool("memory_status", {})).structured_content or {}
    finally:
        endpoint.close()
    pieces = status["chunks"] - 5 - 1  # the fixture's five notes and the reply
    assert pieces >= 6
    passages = [text for text in endpoint.texts if text != "spare key flowerpot"]
    assert len(passages) == 5 + 1 + 1
    top = (found.structured_content or {})["results"][0]
    assert "blue flowerpot" in top["snippet"] and top["path"] == "memory/2025-05-02.md"


def test_passages_split_over_threads_come_back_in_order() -> None:
    embedder = USEEmbedder(threads=3)
    texts = ["short", "a somewhat longer sentence about the harbour", "tea", "x " * 300, "le café est fermé", ""]
    together = embedder.passages(texts)
    alone = np.stack([embedder.query(text) for text in texts])
    assert together.shape == (6, 512)
    assert np.allclose(together, alone, atol=1e-5)


def test_warm_loads_the_model_in_the_background() -> None:
    embedder = Unloading(USEEmbedder, idle_s=60)
    embedder.warm()
    deadline = time.monotonic() + 30
    while not embedder.loaded and time.monotonic() < deadline:
        time.sleep(0.05)
    assert embedder.loaded


async def test_a_restart_over_an_indexed_state_leaves_the_model_unloaded(workspace: Path, state: Path) -> None:
    first = Unloading(USEEmbedder, idle_s=60)
    async with Client(build_server(workspace=workspace, state=state, embedder=first)) as client:
        await client.call_tool("memory_search", {"query": "tea"})
    assert first.loaded
    again = Unloading(USEEmbedder, idle_s=60)
    async with Client(build_server(workspace=workspace, state=state, embedder=again)) as client:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            status = (await client.call_tool("memory_status", {})).structured_content or {}
            if status["last_sync"] is not None:
                break
            await anyio.sleep(0.05)
        assert status["chunks"] == 5 and status["vectors_cached"] == 5
        assert not again.loaded
        assert not any(thread.name == "embedder-load" for thread in threading.enumerate())  # nor loading


_FREEZE_PROBE = """
import asyncio, gc, sys
from pathlib import Path
from mcp import Client
from hermitcrab.servers.memory.server import build_server
from tests.support.embeddings import Embeddings, embedded

async def main():
    server = build_server(Path(sys.argv[1]), Path(sys.argv[2]), None, watch=False, freeze_heap=sys.argv[3] == "1")
    async with Client(server) as client:
        await client.call_tool("memory_search", {"query": "garage door code"})
        frozen = gc.get_freeze_count()
        await client.call_tool("memory_search", {"query": "tea"})  # nothing changed: no second collection
        print(frozen, gc.get_freeze_count())

asyncio.run(main())
"""


@pytest.mark.parametrize("freeze", [True, False])
def test_a_server_process_keeps_its_index_out_of_the_collector_after_a_sync(
    workspace: Path, state: Path, freeze: bool
) -> None:
    # A full collection over years of notes took 100-160 ms and landed in whichever search was running.
    done = subprocess.run(
        [sys.executable, "-c", _FREEZE_PROBE, str(workspace), str(state), "1" if freeze else "0"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    after_sync, after_search = map(int, done.stdout.split())
    assert (after_sync > 10_000) == freeze
    assert after_search <= after_sync  # frozen objects can still be freed; none are added
