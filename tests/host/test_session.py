"""Transcripts are append-only JSONL that survive restarts and crashes mid-write."""

from __future__ import annotations

from pathlib import Path

from hermitcrab.host.providers import Message, ToolCall
from hermitcrab.host.session import INTERRUPTED, SessionStore


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
