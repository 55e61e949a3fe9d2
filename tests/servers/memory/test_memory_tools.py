"""The memory server's tools, in process: search, get, append, status, freshness, safety and recovery."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import socket
from pathlib import Path

import anyio
import pytest
from mcp import Client

from hermitcrab.servers.memory.embed import Embedder
from tests.servers.memory.conftest import MemoryServer
from tests.support.embeddings import embedded
from tests.support.tools import call, error_of, search


async def test_search_finds_a_note_under_its_date(memory_server: MemoryServer):
    async with Client(memory_server()) as client:
        results = await search(client, "Who is training for a marathon?")
    top = results[0]
    assert top["path"] == "memory/2025-03-14.md"
    assert top["snippet"].startswith("[2025-03-14]\n- Met Bob at the climbing gym")
    assert (top["start_line"], top["end_line"]) == (1, 2)
    assert 0 < top["score"] <= 1


async def test_search_snippet_starts_with_its_heading(memory_server: MemoryServer):
    async with Client(memory_server()) as client:
        results = await search(client, "when are deploys", max_results=1)
    assert results[0]["path"] == "MEMORY.md"
    assert results[0]["snippet"] == "[Long-term · Work]\nDeploys happen on Fridays after the standup."


async def test_search_respects_max_results_and_min_score(
    memory_server: MemoryServer, workspace: Path, use_embedder: Embedder
):
    lines = "".join(f"- Note {i} about the blue kayak.\n\n## Day {i}\n\n" for i in range(12))
    (workspace / "memory" / "kayak.md").write_text(lines, encoding="utf-8")
    async with Client(memory_server(embedder=use_embedder)) as client:
        assert len(await search(client, "blue kayak", max_results=3)) == 3
        results = await search(client, "blue kayak")
        assert len(results) == 6
        scores = [result["score"] for result in results]
        assert scores == sorted(scores, reverse=True)
        best = scores[0]
        assert 0 < best < 1  # a probability from the re-scoring model
        threshold = scores[2] - 0.0001  # below the third result's (rounded) score
        kept = await search(client, "blue kayak", min_score=threshold)
        assert [r["score"] for r in kept] == [score for score in scores if score >= threshold]
        assert await search(client, "blue kayak", min_score=(best + 1) / 2) == []


async def test_search_rejects_an_empty_query(memory_server: MemoryServer):
    async with Client(memory_server()) as client:
        assert "empty" in await error_of(client, "memory_search", query="  ")


async def test_get_returns_lines_with_optional_numbers(memory_server: MemoryServer):
    async with Client(memory_server()) as client:
        whole = await call(client, "memory_get", path="MEMORY.md")
        part = await call(client, "memory_get", path="MEMORY.md", start_line=3, lines=2, line_numbers=True)
    assert whole["text"].startswith("# Long-term\n") and whole["total_lines"] == 8
    assert part["text"] == "3| - Alice prefers green tea over coffee.\n4| - The garage door code is 4711."
    assert (part["start_line"], part["end_line"]) == (3, 4)


async def test_paths_outside_memory_are_refused(memory_server: MemoryServer, workspace: Path):
    (workspace.parent / "secret.md").write_text("secret", encoding="utf-8")
    (workspace / "AGENTS.md").write_text("persona", encoding="utf-8")
    async with Client(memory_server()) as client:
        for path in ("../secret.md", "/etc/passwd", "AGENTS.md", "memory/../../secret.md", "memory/x.txt"):
            assert "not a memory file" in await error_of(client, "memory_get", path=path)
            assert "not a memory file" in await error_of(client, "memory_append", text="x", path=path)
    assert (workspace.parent / "secret.md").read_text(encoding="utf-8") == "secret"


async def test_symlinks_leading_out_are_neither_indexed_nor_readable(memory_server: MemoryServer, workspace: Path):
    outside = workspace.parent / "private.md"
    outside.write_text("- The vault password is swordfish.\n", encoding="utf-8")
    (workspace / "memory" / "linked.md").symlink_to(outside)
    async with Client(memory_server()) as client:
        assert await search(client, "vault password swordfish") == []
        assert "not a memory file" in await error_of(client, "memory_get", path="memory/linked.md")


async def test_append_goes_to_todays_log_and_is_found_on_the_next_call(memory_server: MemoryServer, workspace: Path):
    async with Client(memory_server(watch=False)) as client:
        written = await call(client, "memory_append", text="Carol moved to Lisbon in June.")
        results = await search(client, "Where does Carol live now?")
    today = dt.date.today().isoformat()
    assert written["path"] == f"memory/{today}.md"
    text = (workspace / written["path"]).read_text(encoding="utf-8").splitlines()
    assert text[written["start_line"] - 1] == "Carol moved to Lisbon in June."
    assert text[0].startswith("## ")  # a time heading
    assert results[0]["path"] == written["path"]
    assert results[0]["snippet"].startswith(f"[{today} · ")


async def test_append_to_memory_md_keeps_what_was_there(memory_server: MemoryServer, workspace: Path):
    before = (workspace / "MEMORY.md").read_text(encoding="utf-8")
    async with Client(memory_server()) as client:
        written = await call(client, "memory_append", text="- Alice's cat is called Miso.", path="MEMORY.md")
        assert "empty" in await error_of(client, "memory_append", text="\n")
    after = (workspace / "MEMORY.md").read_text(encoding="utf-8")
    assert after.startswith(before) and after.endswith("\n- Alice's cat is called Miso.\n")
    assert after.splitlines()[written["start_line"] - 1] == "- Alice's cat is called Miso."


async def test_edit_delete_and_rename_are_reflected_at_once(memory_server: MemoryServer, workspace: Path):
    log = workspace / "memory" / "2025-03-14.md"
    async with Client(memory_server(watch=False)) as client:
        assert await search(client, "dentist appointment")
        log.write_text("- Dentist cancelled; call the orthodontist instead.\n", encoding="utf-8")
        results = await search(client, "dentist")
        assert [r["snippet"] for r in results] == ["[2025-03-14]\n- Dentist cancelled; call the orthodontist instead."]
        log.rename(workspace / "memory" / "health.md")
        results = await search(client, "orthodontist")
        assert [r["path"] for r in results] == ["memory/health.md"]
        (workspace / "memory" / "health.md").unlink()
        assert await search(client, "orthodontist") == []


async def test_watcher_indexes_new_files_without_a_search(memory_server: MemoryServer, workspace: Path):
    async with Client(memory_server()) as client:
        with anyio.fail_after(10):
            while (await call(client, "memory_status"))["files"] != 2:
                await anyio.sleep(0.05)
        (workspace / "memory" / "trips.md").write_text("- Kyoto in April.\n", encoding="utf-8")
        with anyio.fail_after(10):
            while (await call(client, "memory_status"))["files"] != 3:
                await anyio.sleep(0.05)
        assert (await call(client, "memory_status"))["fresh"] is True


async def test_cjk_query_finds_a_chinese_note(memory_server: MemoryServer, workspace: Path):
    (workspace / "memory" / "2025-04-01.md").write_text(
        "- 我明天要去北京开会。\n- 周五和小王吃火锅。\n", encoding="utf-8"
    )
    async with Client(memory_server()) as client:
        results = await search(client, "北京")
        hotpot = await search(client, "火锅", max_results=1)
    assert results[0]["path"] == "memory/2025-04-01.md"
    assert "北京开会" in results[0]["snippet"]
    assert "吃火锅" in hotpot[0]["snippet"]


async def test_status_reports_files_chunks_and_skipped_files(memory_server: MemoryServer, workspace: Path):
    (workspace / "memory" / "blob.md").write_bytes(b"\x00\x01binary")
    (workspace / "memory" / "latin1.md").write_bytes("caf\xe9".encode("latin-1"))  # indexed, the bad byte replaced
    async with Client(memory_server()) as client:
        await search(client, "anything")
        status = await call(client, "memory_status")
    assert status["files"] == 3 and status["chunks"] == 6
    assert status["embedder"] == "none" and status["model"] is None
    assert set(status["skipped"]) == {"memory/blob.md"}
    assert "binary" in status["skipped"]["memory/blob.md"]
    assert status["fresh"] is True and status["last_error"] is None


async def test_a_skipped_file_fixed_on_disk_is_not_fresh_until_synced(memory_server: MemoryServer, workspace: Path):
    blob = workspace / "memory" / "blob.md"
    blob.write_bytes(b"\x00\x01binary")
    async with Client(memory_server(watch=False)) as client:
        await search(client, "anything")
        assert (await call(client, "memory_status"))["fresh"] is True
        blob.write_text("- The kiln fires at 1200 degrees.\n", encoding="utf-8")
        os.utime(blob, ns=(blob.stat().st_atime_ns, blob.stat().st_mtime_ns + 1_000_000_000))
        status = await call(client, "memory_status")
        assert status["fresh"] is False and "memory/blob.md" in status["skipped"]
        assert (await search(client, "kiln"))[0]["path"] == "memory/blob.md"
        status = await call(client, "memory_status")
    assert status["fresh"] is True and status["skipped"] == {}


async def test_a_corrupted_index_is_rebuilt_from_the_files(memory_server: MemoryServer, state: Path):
    async with Client(memory_server()) as client:
        assert await search(client, "garage door code")
    for path in (state / "tantivy").iterdir():
        if path.is_file():
            path.write_bytes(b"garbage")
    async with Client(memory_server()) as client:
        results = await search(client, "garage door code")
        status = await call(client, "memory_status")
    assert results[0]["path"] == "MEMORY.md"
    assert any("rebuilt" in warning for warning in status["warnings"])


async def test_a_lost_index_is_rebuilt_from_the_files(memory_server: MemoryServer, state: Path):
    async with Client(memory_server()) as client:
        assert await search(client, "garage door code")
    (state / "meta.json").write_text("{not json", encoding="utf-8")
    for path in (state / "tantivy").iterdir():
        if path.name.endswith(".idx"):
            path.unlink()
    async with Client(memory_server()) as client:
        assert (await search(client, "garage door code"))[0]["path"] == "MEMORY.md"
        assert len(await search(client, "Porto marathon")) == 1


async def test_two_clients_appending_at_once_lose_nothing(memory_server: MemoryServer, workspace: Path):
    async def append_many(client: Client, who: str) -> None:
        for i in range(6):
            await call(client, "memory_append", text=f"- {who} note number {i}", path="memory/shared.md")

    async with Client(memory_server(watch=False)) as first, Client(memory_server(watch=False)) as second:
        async with anyio.create_task_group() as group:
            group.start_soon(append_many, first, "first")
            group.start_soon(append_many, second, "second")
        results = await search(first, "second note number 5", max_results=1)
    lines = (workspace / "memory" / "shared.md").read_text(encoding="utf-8").splitlines()
    for who in ("first", "second"):
        assert [line for line in lines if line.startswith(f"- {who} ")] == [
            f"- {who} note number {i}" for i in range(6)
        ]
    assert "second note number 5" in results[0]["snippet"]


async def test_extra_paths_are_indexed_and_readable(memory_server: MemoryServer, tmp_path: Path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "garden.md").write_text("- Plant the tomatoes after the last frost.\n", encoding="utf-8")
    async with Client(memory_server(extra_paths=(notes,))) as client:
        results = await search(client, "when to plant tomatoes")
        text = await call(client, "memory_get", path=results[0]["path"])
    assert results[0]["path"] == (notes / "garden.md").resolve().as_posix()
    assert "tomatoes" in text["text"]


@pytest.mark.skipif(os.name != "posix", reason="unix sockets")
async def test_unreadable_file_is_skipped_not_fatal(
    memory_server: MemoryServer, workspace: Path, monkeypatch: pytest.MonkeyPatch
):
    # A unix socket cannot be opened at all (ENXIO), even by root, for whom file modes do not stop reads.
    monkeypatch.chdir(workspace / "memory")  # a socket path must be short; bind it relative to here
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind("locked.md")
        async with Client(memory_server()) as client:
            assert await search(client, "marathon")
            skipped = (await call(client, "memory_status"))["skipped"]
    assert skipped["memory/locked.md"].startswith("cannot read")


async def test_meaning_finds_what_words_miss(memory_server: MemoryServer, workspace: Path, use_embedder: Embedder):
    (workspace / "memory" / "errands.md").write_text(
        "- Bought a road bike to ride to the office.\n- Sourdough starter needs feeding twice a day.\n",
        encoding="utf-8",
    )
    async with Client(memory_server(embedder=use_embedder)) as client:
        await embedded(client)
        results = await search(client, "bicycle purchase", max_results=1)
        status = await call(client, "memory_status")
    assert "road bike" in results[0]["snippet"]
    assert status["embedder"] == "use" and status["vectors_cached"] == status["chunks"] == 7


async def test_changing_the_embedder_rebuilds_vectors(memory_server: MemoryServer, use_embedder: Embedder):
    async with Client(memory_server()) as client:
        assert (await call(client, "memory_status"))["vectors_cached"] == 0
    async with Client(memory_server(embedder=use_embedder)) as client:
        assert await search(client, "tea preference")
        assert (await embedded(client))["vectors_cached"] == 5


async def test_an_index_broken_while_running_is_rebuilt(memory_server: MemoryServer, workspace: Path, state: Path):
    async with Client(memory_server(watch=False)) as client:
        assert await search(client, "garage door code")
        shutil.rmtree(state / "tantivy")
        (workspace / "memory" / "keys.md").write_text("- The spare key is under the blue pot.\n", encoding="utf-8")
        results = await search(client, "spare key")
        garage = await search(client, "garage door code")
        status = await call(client, "memory_status")
    assert results[0]["path"] == "memory/keys.md"
    assert garage[0]["path"] == "MEMORY.md"
    assert any("rebuilt" in warning for warning in status["warnings"])


async def test_a_date_in_the_query_prefers_the_logs_of_those_days(memory_server: MemoryServer, workspace: Path):
    for day in ("2024-01-09", "2024-03-12", "2024-06-20"):
        (workspace / "memory" / f"{day}.md").write_text(f"- Went to the climbing gym ({day}).\n", encoding="utf-8")
    async with Client(memory_server()) as client:
        results = await search(client, "climbing gym in March 2024", max_results=1)
    assert results[0]["path"] == "memory/2024-03-12.md"
