"""Telegram across a crash: `hermitcrab run` killed with -9 mid-turn, then started again, answers every message it
had accepted, and one sent while it was down, exactly once; the getUpdates offset it saved is where it goes on."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cli import wait_for
from tests.support.fake_llm import Reply, openai_text, running_fake_llm
from tests.support.fake_telegram import OWNER, running_fake_telegram
from tests.support.telegram_host import CONFIG, start_telegram_run


def test_kill_9_mid_turn_and_a_restart_answer_every_accepted_message_once(tmp_path: Path):
    (tmp_path / "config.toml").write_text(CONFIG)
    with running_fake_llm() as llm, running_fake_telegram() as telegram:
        first = start_telegram_run(tmp_path, llm, telegram, tmp_path / "run-1.log")
        try:
            llm.enqueue(Reply(openai_text("too late"), delay_s=60))
            asked = [telegram.user_says(OWNER, f"task {n}") for n in range(3)]
            wait_for(lambda: len(llm.requests) == 1, "the first turn did not start")
            wait_for(lambda: telegram.polls >= 2 and offset(tmp_path) == 4, "the updates were not all taken")
        finally:
            first.kill()
        asked.append(telegram.user_says(OWNER, "task 3, while you were down"))
        llm.enqueue(*(openai_text(f"done {n}") for n in range(4)))
        second = start_telegram_run(tmp_path, llm, telegram, tmp_path / "run-2.log")
        try:
            wait_for(lambda: all(telegram.replies_to(m) for m in asked), f"replies missing: {telegram.sent}")
            wait_for(lambda: len(llm.requests) == 5, f"not every message asked: {len(llm.requests)}")
        finally:
            second.kill()

    replies = [[sent.text for sent in telegram.replies_to(m)] for m in asked]
    assert sorted(text for reply in replies for text in reply) == [f"done {n}" for n in range(4)]
    assert all(len(reply) == 1 for reply in replies), replies
    asked_texts = [request["messages"][-1]["content"] for request in llm.requests[1:]]
    assert sorted(text.rsplit("\n", 1)[-1] for text in asked_texts) == sorted(
        ["task 0", "task 1", "task 2", "task 3, while you were down"]
    )
    assert offset(tmp_path) == 5


def offset(home: Path) -> int | None:
    path = home / "state" / "telegram" / "offset.json"
    return json.loads(path.read_text())["offset"] if path.exists() else None
