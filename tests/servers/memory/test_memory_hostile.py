"""The memory server against hostile input: FIFOs, control characters, bad bytes, huge or broken arguments,
and retried appends."""

from __future__ import annotations

import os
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client

from hermitcrab.servers.memory.embed import make_embedder
from tests.servers.memory.conftest import MemoryServer
from tests.support.fake_llm import free_port
from tests.support.tools import call, error_of, search

HUGE = 10_000_000


@pytest.mark.skipif(os.name != "posix", reason="named pipes")
async def test_a_fifo_never_hangs_memory_and_is_listed_as_skipped(memory_server: MemoryServer, workspace: Path):
    pipe = workspace / "memory" / "2024-05-01.md"
    os.mkfifo(pipe)
    with anyio.fail_after(10):
        async with Client(memory_server(watch=False)) as client:
            assert await search(client, "marathon")
            status = await call(client, "memory_status")
            refused_get = await error_of(client, "memory_get", path="memory/2024-05-01.md")
            refused_append = await error_of(client, "memory_append", text="- x", path="memory/2024-05-01.md")
            pipe.unlink()
            assert await search(client, "marathon")
            after = await call(client, "memory_status")
    assert "FIFO" in status["skipped"]["memory/2024-05-01.md"]
    assert "FIFO" in refused_get and "FIFO" in refused_append and "regular file" in refused_append
    assert after["skipped"] == {} and not pipe.exists()


async def test_control_characters_are_stripped_on_the_way_in(memory_server: MemoryServer, workspace: Path):
    async with Client(memory_server(watch=False)) as client:
        written = await call(
            client, "memory_append", text="- Gate\x00 code\x07 is 1234\r\n- second\tline", path="MEMORY.md"
        )
        results = await search(client, "gate code")
    text = (workspace / "MEMORY.md").read_text(encoding="utf-8")
    assert text.endswith("\n- Gate code is 1234\n- second\tline\n")
    assert "Removed 2 control character" in written["note"]  # NUL and BEL; CRLF became LF
    assert results[0]["path"] == "MEMORY.md" and "Gate code is 1234" in results[0]["snippet"]


async def test_one_bad_byte_does_not_hide_the_rest_of_a_file(memory_server: MemoryServer, workspace: Path):
    with (workspace / "MEMORY.md").open("ab") as handle:
        handle.write(b"- The boat is called \x00Wavedancer \xff\xfe.\n")
    async with Client(memory_server()) as client:
        garage = await search(client, "garage door code")
        boat = await search(client, "what is the boat called")
        read = await call(client, "memory_get", path="MEMORY.md")
        status = await call(client, "memory_status")
    assert garage[0]["path"] == "MEMORY.md" and "Wavedancer" in boat[0]["snippet"]
    assert "- The boat is called \ufffdWavedancer \ufffd\ufffd." in read["text"] and "\ufffd" in read["note"]
    assert status["skipped"] == {}


async def test_huge_arguments_are_refused_at_once_without_echoing_them(memory_server: MemoryServer):
    async with Client(memory_server(watch=False)) as client:
        started = time.perf_counter()
        errors = {
            "path": await error_of(client, "memory_get", path="memory/" + "a" * HUGE + ".md"),
            "query": await error_of(client, "memory_search", query="tea " * (HUGE // 4)),
            "text": await error_of(client, "memory_append", text="x" * HUGE),
        }
        elapsed = time.perf_counter() - started
    for name, limit in (("path", "4,096"), ("query", "2,000"), ("text", "100,000")):
        assert f"`{name}` is too long" in errors[name] and limit in errors[name]
        assert len(errors[name]) < 400
    assert elapsed < 5


@pytest.mark.skipif(not hasattr(os, "link"), reason="hard links")
async def test_a_hard_link_to_a_file_outside_the_workspace_is_neither_read_written_nor_indexed(
    memory_server: MemoryServer, workspace: Path
):
    outside = workspace.parent / "diary.md"
    outside.write_text("- The vault password is swordfish.\n", encoding="utf-8")
    os.link(outside, workspace / "memory" / "diary.md")
    async with Client(memory_server(watch=False)) as client:
        found = await search(client, "vault password swordfish")
        read = await error_of(client, "memory_get", path="memory/diary.md")
        written = await error_of(client, "memory_append", text="- appended through the link", path="memory/diary.md")
        status = await call(client, "memory_status")
    assert found == []
    assert "is not read: it has other hard links" in read and "swordfish" not in read
    assert "is not written: it has other hard links" in written
    assert outside.read_text(encoding="utf-8") == "- The vault password is swordfish.\n"
    assert "hard links" in status["skipped"]["memory/diary.md"]


async def test_a_symlink_leading_out_of_the_roots_is_listed_as_skipped(memory_server: MemoryServer, workspace: Path):
    outside = workspace.parent / "elsewhere.md"
    outside.write_text("- The vault password is swordfish.\n", encoding="utf-8")
    (workspace / "memory" / "elsewhere.md").symlink_to(outside)
    (workspace / "memory" / "inside.md").symlink_to(workspace / "MEMORY.md")
    async with Client(memory_server(watch=False)) as client:
        found = await search(client, "vault password swordfish")
        status = await call(client, "memory_status")
    assert found == []
    assert status["skipped"] == {
        "memory/elsewhere.md": f"its real path {outside.resolve()} is outside the memory roots"
    }


async def test_unusable_paths_are_refused_in_words(memory_server: MemoryServer, workspace: Path):
    (workspace / "memory" / "loop.md").symlink_to("loop.md")
    async with Client(memory_server(watch=False)) as client:
        too_long = await error_of(client, "memory_get", path="memory/" + "a" * 300 + ".md")
        appended = await error_of(client, "memory_append", text="x", path="memory/" + "a" * 300 + ".md")
        loop = await error_of(client, "memory_get", path="memory/loop.md")
    for text in (too_long, appended):
        assert "too long" in text and "255 bytes" in text and len(text) < 500
    assert "loop of symbolic links" in loop


async def test_invalid_arguments_read_as_a_line_or_two(memory_server: MemoryServer):
    async with Client(memory_server(watch=False)) as client:
        wrong_type = await error_of(client, "memory_search", query="tea", max_results="lots")
        missing = await error_of(client, "memory_get")
        too_many = await error_of(client, "memory_search", query="tea", max_results=500)
    assert wrong_type.startswith("Invalid arguments for memory_search: `max_results`") and "'lots'" in wrong_type
    assert missing.startswith("Invalid arguments for memory_get: `path` is required")
    assert "`max_results`" in too_many and "50" in too_many
    for text in (wrong_type, missing, too_many):
        assert text.count("\n") <= 1 and "pydantic" not in text and "validation error" not in text


async def test_append_succeeds_once_written_and_a_retry_writes_nothing(memory_server: MemoryServer, workspace: Path):
    broken = make_embedder(f"openai:nomic-embed-text@http://127.0.0.1:{free_port()}/v1")  # nothing listens there
    log = workspace / "memory" / "trips.md"
    async with Client(memory_server(embedder=broken, watch=False)) as client:
        first = await call(client, "memory_append", text="- Booked the ferry to Texel.", path="memory/trips.md")
        again = await call(client, "memory_append", text="- Booked the ferry to Texel.", path="memory/trips.md")
        other = await call(client, "memory_append", text="- Packed the tent.", path="memory/trips.md")
        log.write_text("- Plans changed.\n", encoding="utf-8")
        rewritten = await call(client, "memory_append", text="- Booked the ferry to Texel.", path="memory/trips.md")
    assert first["note"] is None and (first["start_line"], first["end_line"]) == (1, 1)
    assert "already written" in again["note"] and (again["start_line"], again["end_line"]) == (1, 1)
    assert other["start_line"] == 3 and rewritten["note"] is None
    assert log.read_text(encoding="utf-8") == "- Plans changed.\n\n- Booked the ferry to Texel.\n"
