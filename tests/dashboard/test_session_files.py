"""What the Sessions page reads of a transcript file: whole lines only, torn ones skipped, summaries read again only
when the file changed, and entries as a person reads them."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from hermitcrab.dashboard.pages.session_files import HEAD_CHARS, Summaries, read_entries, shown

ENTRIES = [
    {"id": "a", "ts": "2026-12-03T10:00:00+00:00", "kind": "user", "text": "hello"},
    {"id": "b", "ts": "2026-12-03T10:00:01+00:00", "kind": "assistant", "text": "", "usage": {"input_tokens": 20}},
    {"id": "c", "kind": "tool_call", "call_id": "1", "name": "memory_search", "arguments": {"query": "tea"}},
    {"id": "d", "kind": "tool_result", "call_id": "1", "name": "memory_search", "text": "nothing", "is_error": True},
    {"id": "e", "ts": "2026-12-03T10:00:02", "kind": "assistant", "text": "Hi!", "usage": {"output_tokens": 5}},
]


def write(path: Path, entries: list[dict[str, object]], tail: str = "") -> None:
    path.write_text("".join(json.dumps(entry) + "\n" for entry in entries) + tail)


def test_only_whole_lines_are_read_and_a_torn_one_is_skipped(tmp_path: Path):
    path = tmp_path / "s.jsonl"
    write(path, ENTRIES[:2], '{"torn\n{"id": "x", "kind": "user", "text": "half-writ')
    entries, offset = read_entries(path)
    assert [entry["id"] for entry in entries] == ["a", "b"]
    assert path.read_bytes()[offset:] == b'{"id": "x", "kind": "user", "text": "half-writ'
    with path.open("a") as handle:
        handle.write('ten"}\n')
    later, end = read_entries(path, offset)
    assert [entry["text"] for entry in later] == ["half-written"] and end == path.stat().st_size


def test_a_summary_counts_messages_characters_and_tokens_and_follows_the_file(tmp_path: Path):
    path = tmp_path / "s.jsonl"
    write(path, ENTRIES)
    summaries = Summaries()
    first = summaries.of(path)
    assert (first.messages, first.chars) == (2, len("hello") + len("nothing") + len("Hi!"))
    assert (first.usage.input_tokens, first.usage.output_tokens) == (20, 5)
    last = dt.datetime(2026, 12, 3, 10, 0, 2, tzinfo=dt.UTC)  # the last entry's (UTC when it names no zone)
    assert first.changed == last.timestamp()  # not the file's time
    assert summaries.of(path) is first
    write(path, [*ENTRIES, {"kind": "user", "text": "more"}])
    assert summaries.of(path).messages == 3


def test_a_transcript_that_cannot_be_read_is_said_not_raised(tmp_path: Path):
    (tmp_path / "s.jsonl").mkdir()
    problem = Summaries().of(tmp_path / "s.jsonl").problem
    assert problem is not None and "s.jsonl could not be read" in problem
    assert Summaries().of(tmp_path / "gone.jsonl").changed is None


def test_entries_are_shown_as_a_person_reads_them():
    long = "x" * (HEAD_CHARS + 10)
    lines = shown(
        [
            *ENTRIES,
            {"id": "f", "kind": "user", "text": long, "trigger": "heartbeat"},
            {"id": "g", "kind": "user", "text": "save what matters", "flush": True},
            {"id": "h", "kind": "aside", "ids": ["f"]},
            {"id": "i", "kind": "event", "event_id": "job-1"},
            {"id": "j", "kind": "compaction", "summary": "S", "tokens_before": 1234, "failure": "timed out"},
        ]
    )
    assert [(line.kind, line.role) for line in lines] == [
        ("user", "User"),
        ("tool_call", "Tool call"),
        ("tool_result", "Tool result"),
        ("assistant", "Assistant"),
        ("user", "Event (heartbeat)"),
        ("user", "Host (memory flush)"),
        ("compaction", "Compaction"),
    ]  # the answer that only called a tool is its call; bookkeeping is left out
    call, result, beat, flush, compaction = lines[1], lines[2], lines[4], lines[5], lines[6]
    assert call.head == "memory_search" and json.loads(call.detail) == {"query": "tea"}
    assert result.failed and result.detail == "nothing"
    assert (len(beat.head), len(beat.rest)) == (HEAD_CHARS, 10) and beat.aside and flush.aside
    assert compaction.failed and compaction.head == "could not summarise: timed out" and compaction.detail == "S"
