"""Indexing never blocks a search: BM25 answers at once while the vectors are embedded behind it, a note appended
gets its vector ahead of a backlog (in its own file or behind the backlog in the same), and a server killed
mid-embedding keeps what it wrote.

Each test runs the real server over stdio against a loopback stand-in for an OpenAI-compatible embeddings service
that answers slowly, or only when the test lets it.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from hermitcrab.servers.memory.embed import make_embedder
from hermitcrab.servers.memory.ranking.settings import RankSettings
from hermitcrab.servers.memory.server import build_server
from hermitcrab.servers.memory.vectors import HEADER, KEY_BYTES, MIN_BATCH
from tests.support.embeddings import Embeddings, embedded
from tests.support.processes import pid_serving
from tests.support.tools import call, search

MODULE = "hermitcrab.servers.memory"


def _notes(count: int) -> str:
    return "".join(f"- Note {n}: the parcel for order {n * 7919} goes to locker {n % 31}.\n" for n in range(count))


@pytest.fixture
def backlog(tmp_path: Path) -> Path:
    """A workspace of 600 distinct notes: a backlog of vectors to embed."""
    root = tmp_path / "workspace"
    (root / "memory").mkdir(parents=True)
    (root / "memory" / "2025-04-01.md").write_text(_notes(600), encoding="utf-8")
    return root


@pytest.fixture
def gated() -> Iterator[Embeddings]:
    endpoint = Embeddings(gated=True)
    yield endpoint
    endpoint.close()


@asynccontextmanager
async def server(workspace: Path, state: Path, endpoint: Embeddings, *flags: str) -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", MODULE, "--workspace", str(workspace), "--state", str(state), "--embedder", endpoint.spec, *flags],
        env=dict(os.environ),  # the code under test, wherever this run imports it from
    )
    async with Client(params) as client:
        yield client


async def _vectors_when(client: Client, ready: Any) -> dict[str, Any]:
    """`memory_status.vectors` once `ready(vectors)` holds (polled)."""
    with anyio.fail_after(30):
        while not ready(vectors := (await call(client, "memory_status"))["vectors"]):
            await anyio.sleep(0.02)
    return vectors


async def test_a_search_answers_by_bm25_while_vectors_are_embedded_and_status_shows_progress(
    backlog: Path, tmp_path: Path, gated: Embeddings
) -> None:
    async with server(backlog, tmp_path / "state", gated) as client:
        found = await search(client, "order 79190 locker", max_results=1)  # no batch of passages answered yet
        assert "order 79190" in found[0]["snippet"]
        waiting = await _vectors_when(client, lambda v: v["embedding"])
        assert waiting["embedded"] == 0 and waiting["pending"] == waiting["total"] == 600
        appended = await call(client, "memory_append", text="The violet umbrella is in the hall cupboard.")
        found = await search(client, "violet umbrella", max_results=1)
        assert found[0]["path"] == appended["path"] and "hall cupboard" in found[0]["snippet"]  # BM25 at once
        gated.let_through(1)  # one batch; the next (the new note's first) waits
        partway = await _vectors_when(client, lambda v: v["embedded"] > 0 and v["embedding"] and gated.waiting)
        assert 0 < partway["pending"] < partway["total"] == 601
        assert partway["per_second"] > 0 and partway["eta_s"] > 0 and partway["error"] is None
        gated.open()
        done = (await embedded(client))["vectors"]
    assert done["embedded"] == done["total"] == 601 and done["eta_s"] == 0
    assert len([text for text in gated.texts if text.startswith("- Note")]) == 600  # each text embedded once


async def test_appended_notes_get_their_vectors_ahead_of_the_backlog_in_a_file_of_their_own_or_behind_it(
    backlog: Path, tmp_path: Path, gated: Embeddings
) -> None:
    behind = "The violet umbrella is in the hall cupboard."  # appended to the backlog's own file, after it
    elsewhere = "The spare key hangs behind the boiler."  # in a file of its own
    async with server(backlog, tmp_path / "state", gated, "--search", "vector") as client:
        await _vectors_when(client, lambda v: v["embedding"] and gated.waiting)  # the first batch held at the gate
        await call(client, "memory_append", text=behind, path="memory/2025-04-01.md")
        await call(client, "memory_append", text=elsewhere, path="memory/2025-05-01.md")
        # file times are coarse (two appends a few ms apart may share one): make the backlog's file the older
        later = (backlog / "memory" / "2025-05-01.md").stat().st_mtime_ns
        os.utime(backlog / "memory" / "2025-04-01.md", ns=(later - 10**9, later - 10**9))
        gated.open()  # the batch in hand lands and ends the round: the appends woke the thread
        await embedded(client)
        embedded_first = list(gated.texts)  # every passage once, in the order embedded, before any query
        await _found_by_vector(client, behind)
        await _found_by_vector(client, elsewhere)
    ahead = {note: _backlog_notes(embedded_first[: embedded_first.index(note)]) for note in (behind, elsewhere)}
    assert ahead == {behind: MIN_BATCH, elsewhere: MIN_BATCH}  # only the batch in hand when they were appended
    assert _backlog_notes(embedded_first) == 600


def _backlog_notes(texts: list[str]) -> int:
    return len([text for text in texts if text.startswith("- Note")])


async def test_a_server_killed_mid_embedding_keeps_what_it_wrote_and_embeds_the_rest(
    backlog: Path, tmp_path: Path, gated: Embeddings
) -> None:
    state = tmp_path / "state"
    async with server(backlog, state, gated) as client:
        gated.let_through(3)
        before = await _vectors_when(  # three batches written, the fourth held at the gate
            client, lambda v: gated.answered == 3 and v["embedded"] == len(gated.texts) and gated.waiting
        )
        os.kill(pid_serving(MODULE, state), signal.SIGKILL)
    gated.refuse_waiting()
    asked = len(gated.texts)
    gated.open()
    async with server(backlog, state, gated) as client:
        done = await embedded(client)
        found = await search(client, "order 79190 locker", max_results=1)
    again = gated.texts[asked:]
    assert len([text for text in again if text.startswith("- Note")]) == 600 - before["embedded"]
    assert done["vectors"]["embedded"] == done["vectors"]["total"] == 600
    assert "order 79190" in found[0]["snippet"]
    (cache,) = (state / "vectors").glob("*.vec")
    assert cache.stat().st_size == HEADER.size + 600 * (KEY_BYTES + 4 * 8)  # every vector once, no torn record


async def test_two_servers_sharing_a_state_write_each_vector_once(
    backlog: Path, tmp_path: Path, gated: Embeddings
) -> None:
    state = tmp_path / "state"
    async with server(backlog, state, gated) as first, server(backlog, state, gated) as second:
        with anyio.fail_after(30):
            while gated.waiting < 2:  # both embed the same first batch
                await anyio.sleep(0.02)
        gated.open()
        done = [await embedded(first), await embedded(second)]
        found = await search(second, "order 79190 locker", max_results=1)
    assert [status["vectors"]["embedded"] for status in done] == [600, 600]
    assert "order 79190" in found[0]["snippet"]
    (cache,) = (state / "vectors").glob("*.vec")
    assert cache.stat().st_size == HEADER.size + 600 * (KEY_BYTES + 4 * 8)  # appends took turns; none repeated


async def _found_by_vector(client: Client, note: str) -> None:
    """Polls a vector-only search until `note` is among its results (fails the test after a minute)."""
    with anyio.fail_after(60):
        while not any(note in hit["snippet"] for hit in await search(client, note)):
            await anyio.sleep(0.05)


async def test_successive_in_process_clients_of_one_built_server_each_get_the_vectors_embedded(
    backlog: Path, tmp_path: Path
) -> None:
    endpoint = Embeddings()
    vector_only = RankSettings(legs="vector", rescore=False)
    memory = build_server(backlog, tmp_path / "state", make_embedder(endpoint.spec), settings=vector_only, watch=False)
    notes = {
        "memory/2025-05-01.md": "The violet umbrella is in the hall cupboard.",
        "memory/2025-05-02.md": "The spare key hangs behind the boiler.",
    }  # each alone: embedded as it is
    try:
        for path, note in notes.items():  # each client's session starts the embedding again: the last one stopped it
            async with Client(memory) as client:
                await call(client, "memory_append", text=note, path=path)
                await _found_by_vector(client, note)
                done = await embedded(client)
    finally:
        endpoint.close()
    assert done["vectors"]["embedded"] == done["vectors"]["total"] == 602
