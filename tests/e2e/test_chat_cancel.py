"""Ctrl-C in `hermitcrab chat`: a real chat process on a pseudo-terminal (so ^C is the terminal's SIGINT, as a user
sends it) against the scripted LLM."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hermitcrab.host.cli.chat import CANCELLED
from tests.support.chat_terminal import CTRL_C, CTRL_D, Terminal
from tests.support.cli import wait_for
from tests.support.fake_llm import FakeLLM, Reply, openai_text, openai_tool_calls


@pytest.fixture
def terminal(hermitcrab_home: Path, llm: FakeLLM, desktop_config: Callable[..., Path]) -> Iterator[Terminal]:
    """`chat` with the test MCP server, which runs in a session of its own: the terminal's ^C never reaches it."""
    chat = Terminal(hermitcrab_home, llm, "--mcp-config", str(desktop_config()))
    wait_for(lambda: chat.prompts() == 1, f"chat did not start: {chat.output}", timeout_s=60)
    yield chat
    chat.close()


def main_transcript(home: Path) -> list[dict[str, Any]]:
    index = json.loads((home / "state" / "sessions" / "sessions.json").read_text())
    lines = (home / "state" / "sessions" / f"{index['main']['id']}.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_ctrl_c_cancels_the_running_turn_and_ctrl_c_at_the_prompt_leaves(
    terminal: Terminal, llm: FakeLLM, hermitcrab_home: Path
):
    llm.enqueue(
        Reply(openai_text("too late"), delay_s=30),
        openai_tool_calls(("c1", "add", '{"a": 20, "b": 22}')),
        openai_text("Here I am: 42."),
    )
    terminal.type("tell me a very long story\r")
    wait_for(lambda: len(llm.requests) == 1, f"the turn never reached the model: {terminal.output}")

    terminal.type(CTRL_C)
    wait_for(lambda: terminal.prompts() == 2, f"no prompt after Ctrl-C: {terminal.output}")
    terminal.type("are you there?\r")
    wait_for(lambda: terminal.prompts() == 3, f"the next message was not answered: {terminal.output}")
    terminal.type(CTRL_C)

    assert terminal.process.wait(timeout=30) == 0
    assert (
        CANCELLED in terminal.output
        and "Here I am: 42." in terminal.output
        and "tools from 1 servers" in terminal.output
    )
    assert "too late" not in terminal.output and "Traceback" not in terminal.output
    entries = [(e["kind"], e.get("text")) for e in main_transcript(hermitcrab_home)]
    assert entries == [
        ("user", "tell me a very long story"),
        ("assistant", CANCELLED),
        ("user", "are you there?"),
        ("assistant", ""),
        ("tool_call", None),
        ("tool_result", "42"),
        ("assistant", "Here I am: 42."),
    ]
    assert len(llm.requests) == 3
    said = [m["content"] for m in llm.requests[1]["messages"][-5:]]
    assert said[0].startswith("[Now: ") and said[3].startswith("[Now: ")  # the host's note before each message
    assert [said[1], said[2], said[4]] == ["tell me a very long story", CANCELLED, "are you there?"]


def test_ctrl_c_while_the_agent_asks_cancels_the_turn_and_the_next_line_is_a_new_message(
    terminal: Terminal, llm: FakeLLM, hermitcrab_home: Path
):
    llm.enqueue(openai_tool_calls(("q", "ask_user", '{"question": "Which city?"}')), openai_text("Hello!"))
    terminal.type("book a trip\r")
    wait_for(lambda: "answer> " in terminal.output, f"no question: {terminal.output}")

    terminal.type(CTRL_C)
    wait_for(lambda: terminal.prompts() == 2, f"no prompt after Ctrl-C: {terminal.output}")
    terminal.type("hello\r")
    wait_for(lambda: terminal.prompts() == 3, f"the next message was not answered: {terminal.output}")
    terminal.type(CTRL_D)

    assert terminal.process.wait(timeout=30) == 0
    assert "Which city?" in terminal.output and "Hello!" in terminal.output
    assert len(llm.requests) == 2 and llm.requests[1]["messages"][-1]["content"] == "hello"
    kinds = [e["kind"] for e in main_transcript(hermitcrab_home)]
    assert kinds == ["user", "assistant", "tool_call", "assistant", "user", "assistant"]
