"""Transcripts are append-only JSONL that survive restarts and crashes mid-write."""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

from hermitcrab.host.config import AgentSettings
from hermitcrab.host.providers import Message, ToolCall
from hermitcrab.host.session.transcript import INTERRUPTED, SessionStore
from hermitcrab.host.turn.loop import run_turn
from tests.support.scripted_provider import ScriptedProvider
from tests.support.toolboxes import Toolbox


def test_a_session_continues_after_a_restart(tmp_path: Path):
    session = SessionStore(tmp_path).open("main")
    session.transcript.append("user", text="hi")
    session.transcript.append("assistant", text="hello", usage={"input_tokens": 5, "output_tokens": 2})

    reopened = SessionStore(tmp_path).open("main")

    assert reopened.id == session.id
    assert reopened.messages() == [Message("user", "hi"), Message("assistant", "hello")]
    assert reopened.usage.input_tokens == 5


def test_a_torn_last_line_is_skipped_and_appending_still_works(tmp_path: Path, caplog):
    session = SessionStore(tmp_path).open("main")
    session.transcript.append("user", text="first")
    with session.transcript.path.open("a") as handle:
        handle.write('{"kind": "assistant", "text": "half a li')

    session.transcript.append("user", text="second")

    assert [m.content for m in session.messages()] == ["first", "second"]
    assert "torn" in caplog.text


def test_a_tool_call_without_result_gets_an_error_result(tmp_path: Path):
    transcript = SessionStore(tmp_path).open("main").transcript
    transcript.append("user", text="do it")
    transcript.append("assistant", text="")
    transcript.append("tool_call", call_id="c1", name="exec", arguments={"command": "ls"})

    messages = SessionStore(tmp_path).open("main").messages()

    assert messages[1].tool_calls == (ToolCall("c1", "exec", {"command": "ls"}),)
    assert messages[2] == Message("tool", INTERRUPTED, tool_call_id="c1", is_error=True)


def test_new_starts_a_fresh_transcript_and_keeps_the_old_one(tmp_path: Path):
    store = SessionStore(tmp_path)
    old = store.open("main")
    old.transcript.append("user", text="old")

    fresh = store.new("main")

    assert store.open("main").id == fresh.id != old.id
    assert fresh.messages() == []
    assert old.transcript.path.exists()


def test_entries_appended_by_another_process_are_read_from_the_tail(tmp_path: Path):
    ours = SessionStore(tmp_path).open("main")
    ours.transcript.append("user", text="from us")
    theirs = SessionStore(tmp_path).open("main")  # e.g. `hermitcrab ask` while `hermitcrab run` is up

    theirs.transcript.append("assistant", text="from them", usage={"input_tokens": 3, "output_tokens": 1})
    theirs.transcript.append("event", event_id="job-1")

    assert [m.content for m in ours.messages()] == ["from us", "from them"]
    assert ours.handled("job-1") and ours.usage.input_tokens == 3


def write_transcript(path: Path, entries: int, keep: int) -> None:
    """A long transcript written in one go: `entries` turns' worth, compacted so the last `keep` stay verbatim."""
    lines = []
    for index in range(entries - keep - 1):
        kind = ("user", "assistant", "event")[index % 3]
        lines.append({"id": f"e{index}", "kind": kind, "text": f"old {index} " + "o" * 200, "event_id": f"ev{index}"})
    kept = [{"id": f"k{i}", "kind": ("user", "assistant")[i % 2], "text": f"recent {i}"} for i in range(keep)]
    lines.append({"id": "c", "kind": "compaction", "summary": "- summary", "first_kept_id": "k0"})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in [*lines[:-1], *kept, lines[-1]]))


async def test_a_turn_costs_the_same_in_a_50000_entry_transcript_as_in_a_50_entry_one(tmp_path: Path):
    sessions = []
    for name, size in (("small", 50), ("big", 50_000)):
        store = SessionStore(tmp_path / name)
        session = store.new("main")
        write_transcript(session.transcript.path, size, keep=40)
        sessions.append(store.open("main"))
    provider = ScriptedProvider()
    timings: dict[str, list[float]] = {"small": [], "big": []}
    for index in range(30):
        for name, session in zip(("small", "big"), sessions, strict=True):
            provider.say(f"answer {index}")
            start = time.perf_counter()
            assert not session.handled(f"ev-new-{index}")
            await run_turn(
                provider=provider,
                toolbox=Toolbox(),
                session=session,
                system="S",
                user_text=f"question {index}",
                settings=AgentSettings(),
            )
            timings[name].append(time.perf_counter() - start)

    small, big = (statistics.median(timings[name]) for name in ("small", "big"))
    assert big < 2 * small, (small, big)
    assert sessions[1].handled("ev2") and len(sessions[1].messages()) == 1 + 40 + 60


def test_only_the_most_recently_used_sessions_stay_open_and_a_closed_one_is_read_again(tmp_path: Path):
    store = SessionStore(tmp_path, open_sessions=2)
    main = store.open("main")
    main.transcript.append("user", text="kept on disk")
    store.open("hook-1")
    assert store.open("main") is main  # used again, so it stays
    store.open("hook-2")
    store.open("hook-3")

    reopened = store.open("main")

    assert reopened is not main and [m.content for m in reopened.messages()] == ["kept on disk"]
