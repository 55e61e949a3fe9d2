"""The web channel: the owner's messages enter as the owner's, and what the Chat page is shown is logged, numbered
and replayed from a page's cursor without gaps or repeats."""

from __future__ import annotations

import uuid
from pathlib import Path

import anyio
import pytest

from hermitcrab.channels import web as web_module
from hermitcrab.channels.web import TARGET, Shown, WebChannel
from hermitcrab.host.events import Event, MessageDone, Target, TextDelta, ToolFinished, ToolStarted, TurnDone
from hermitcrab.host.providers.base import Usage


def channel(state: Path) -> tuple[WebChannel, list[Event]]:
    submitted: list[Event] = []

    async def submit(event: Event) -> None:
        submitted.append(event)

    return WebChannel(submit, state), submitted


async def shown_after(web: WebChannel, cursor: str | None, count: int) -> list[Shown]:
    """The first `count` things a page following from `cursor` is told."""
    seen: list[Shown] = []
    with anyio.fail_after(5):
        async for _, shown in web.follow(cursor):
            seen.append(shown)
            if len(seen) == count:
                break
    return seen


async def test_a_message_enters_as_the_owners_direct_message_once(tmp_path: Path):
    web, submitted = channel(tmp_path)
    message_id = str(uuid.uuid4())

    assert await web.take("  hello  ", message_id) is None
    assert await web.take("hello", message_id) is None  # the page retried: taken once

    [event] = submitted
    assert (event.kind, event.text, event.chat, event.inbound_id) == ("message", "hello", "direct", f"web:{message_id}")
    assert event.principal.kind == "owner" and event.principal.is_owner and not event.principal.data
    assert (event.target.channel, event.target.conversation, event.target.user) == ("web", "chat", "owner")
    assert [(e["kind"], e["text"]) for e in web.snapshot().entries] == [("user", "hello")]


async def test_another_spelling_of_the_same_id_is_the_same_message(tmp_path: Path):
    web, submitted = channel(tmp_path)
    message_id = uuid.uuid4()
    for spelling in (str(message_id), f"{{{message_id}}}", message_id.hex.upper(), f"urn:uuid:{message_id}"):
        assert await web.take("hello", spelling) is None
    [event] = submitted
    assert event.inbound_id == f"web:{message_id}" and len(web.snapshot().entries) == 1


@pytest.mark.parametrize(
    ("text", "message_id", "problem"),
    [("   ", str(uuid.uuid4()), "Type a message first."), ("hi", "not-an-id", "without a proper id")],
)
async def test_a_bad_message_is_a_sentence_and_nothing_is_submitted(tmp_path, text, message_id, problem):
    web, submitted = channel(tmp_path)
    assert problem in (await web.take(text, message_id) or "")
    assert submitted == [] and web.snapshot().entries == []


async def test_a_streamed_reply_is_replaced_by_the_delivered_one_and_tools_get_their_outcome(tmp_path: Path):
    web, _ = channel(tmp_path)
    listen = web.listener(TARGET)
    assert listen is not None
    await web.typing(TARGET)
    await listen(TextDelta("Let me "))
    await listen(MessageDone("Let me look.", 1))
    await listen(ToolStarted("c1", "exec", '{"command": "ls"}'))
    await listen(ToolFinished("c1", "exec", True, 1.234))
    await listen(TextDelta("Two files"))
    assert web.snapshot().draft == "Two files"
    await listen(TurnDone("Two files.", Usage()))
    await web.idle(TARGET)
    await web.send(TARGET, "Two files.")

    snapshot = web.snapshot()
    assert snapshot.draft == "" and not snapshot.working
    kinds = [(e["kind"], e.get("text") or e.get("name")) for e in snapshot.entries]
    assert kinds == [("agent", "Let me look."), ("tool", "exec"), ("agent", "Two files.")]
    assert (snapshot.entries[1]["ok"], snapshot.entries[1]["seconds"]) == (True, 1.2)


async def test_a_page_following_from_its_cursor_gets_what_came_after_it_once(tmp_path: Path):
    web, _ = channel(tmp_path)
    await web.send(TARGET, "first")
    cursor = web.snapshot().cursor
    listen = web.listener(TARGET)
    assert listen is not None
    await listen(TextDelta("sec"))
    await listen(TextDelta("ond"))
    await web.send(TARGET, "second")

    seen = await shown_after(web, cursor, 4)

    assert [(s.type, s.data.get("text")) for s in seen] == [
        ("delta", "sec"),
        ("delta", "ond"),
        ("draft", ""),
        ("entry", "second"),
    ]
    assert [s.number for s in seen] == list(range(seen[0].number, seen[0].number + 4))


async def test_a_cursor_of_another_run_or_too_far_back_resets_the_page(tmp_path: Path):
    web, _ = channel(tmp_path)
    await web.send(TARGET, "before the restart")
    old = web.snapshot().cursor
    restarted, _ = channel(tmp_path)

    assert [s.type for s in await shown_after(restarted, old, 1)] == ["reset"]
    assert [s.type for s in await shown_after(restarted, "garbage", 1)] == ["reset"]
    assert [e["text"] for e in restarted.snapshot().entries] == ["before the restart"]


async def test_the_log_survives_a_restart_and_a_torn_line_is_named_not_fatal(tmp_path: Path):
    web, _ = channel(tmp_path)
    await web.send(TARGET, "kept")
    with (tmp_path / "web" / "chat.jsonl").open("a") as log:
        log.write('{"kind": "agent", "te')
    assert (tmp_path / "web" / "chat.jsonl").stat().st_mode & 0o777 == 0o600
    restarted, _ = channel(tmp_path)
    await restarted.send(TARGET, "after")
    again, _ = channel(tmp_path)

    assert [e["text"] for e in again.snapshot().entries] == ["kept", "after"]
    assert again.snapshot().problem is None  # a torn last line is skipped, as in every JSONL log of the host
    (tmp_path / "web" / "chat.jsonl").write_text('{"kind": "agent"}\n[1, 2]\n')
    assert "2 lines of the chat's history could not be read" in (channel(tmp_path)[0].snapshot().problem or "")


async def test_the_log_keeps_the_newest_entries_and_says_older_ones_are_left_out(tmp_path: Path, monkeypatch):
    kept = 10
    monkeypatch.setattr(web_module, "KEPT", kept)  # the rule, not the size: 500 entries cost 500 fsyncs
    web, _ = channel(tmp_path)
    for number in range(2 * kept + 5):
        await web.send(TARGET, f"message {number}")
    restarted, _ = channel(tmp_path)
    snapshot = restarted.snapshot()

    assert len(snapshot.entries) == kept and snapshot.left_out
    assert snapshot.entries[-1]["text"] == f"message {2 * kept + 4}"
    assert len((tmp_path / "web" / "chat.jsonl").read_text().splitlines()) <= 2 * kept


async def test_a_question_is_answered_by_a_choice_and_closed_when_withdrawn(tmp_path: Path):
    web, _ = channel(tmp_path)
    answers: list[str | None] = []

    async def asking() -> None:
        answers.append(await web.ask(TARGET, "Run `ls`?", ["allow-once", "deny"]))

    async with anyio.create_task_group() as group:
        group.start_soon(asking)
        await anyio.wait_all_tasks_blocked()
        [question] = web.snapshot().entries
        assert question["open"] and question["choices"] == ["allow-once", "deny"]
        assert "not one of the question's choices" in (web.answer(question["id"], "sure") or "")
        assert web.answer(question["id"], "allow-once") is None
    assert answers == ["allow-once"]
    assert web.answer(question["id"], "deny") == "That question is no longer waiting for an answer."

    async with anyio.create_task_group() as group:
        group.start_soon(asking)
        await anyio.wait_all_tasks_blocked()
        group.cancel_scope.cancel()  # a typed reply answered it, or it expired
    closed = web.snapshot().entries[-1]
    assert (closed["open"], closed["answer"]) == (False, None)
    first = web.snapshot().entries[0]
    assert (first["open"], first["answer"]) == (False, "allow-once")


async def test_only_its_one_conversation_is_a_web_conversation(tmp_path: Path):
    web, _ = channel(tmp_path)
    assert web.check_conversation("chat") is None
    assert "one conversation" in (web.check_conversation("elsewhere") or "")
    with pytest.raises(LookupError):
        await web.send(Target("web", "elsewhere"), "lost")
