"""`hermitcrab chat` on a pty: Ctrl-C at a question that a server event's turn asks while the message prompt waits
cancels that question only; the turn goes on without an answer and the chat stays."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests.support.chat_terminal import CTRL_C, Terminal
from tests.support.cli import wait_for
from tests.support.fake_llm import FakeLLM, openai_text, openai_tool_calls

PROMPT, ANSWER = "you>", "answer>"


def test_ctrl_c_at_a_reminders_question_cancels_the_question_not_the_chat(
    hermitcrab_home: Path, llm: FakeLLM, desktop_config: Callable[..., Path]
):
    item = json.dumps({"item": {"id": "job-1:run-1", "text": "ask the user whether to stretch"}})
    question = json.dumps({"question": "Stretch now?", "choices": ["yes", "later"]})
    llm.enqueue(openai_tool_calls(("q1", "queue_push", item)), openai_text("Queued."))
    llm.enqueue(openai_tool_calls(("a1", "ask_user", question)), openai_text("No answer, so no stretch."))
    llm.enqueue(openai_text("Hi again."))
    chat = Terminal(hermitcrab_home, llm, "--mcp-config", str(desktop_config()), term="xterm")
    try:
        wait_for(lambda: chat.cursor_line == PROMPT, f"chat did not start: {chat.screen}", timeout_s=60)
        chat.type("remind me\r")
        wait_for(lambda: chat.cursor_line == ANSWER, f"the reminder's turn asked nothing: {chat.screen}", timeout_s=30)
        assert "1. yes" in chat.screen and "2. later" in chat.screen
        chat.type(CTRL_C)
        wait_for(lambda: "No answer, so no stretch." in chat.screen, f"the reminder's turn stopped: {chat.screen}")
        wait_for(lambda: chat.cursor_line == PROMPT, f"the prompt did not come back: {chat.screen}")
        chat.type("hello\r")
        wait_for(lambda: chat.screen.endswith(f"Hi again.\n{PROMPT}"), f"the chat did not stay: {chat.screen}")
    finally:
        chat.close()
    answered = [m for m in llm.requests[3]["messages"] if m["role"] == "tool"]
    assert answered[-1]["content"].startswith("The user did not answer")
    assert llm.requests[4]["messages"][-1]["content"] == "hello"
