"""`hermitcrab ask` offers a question's choices numbered as `chat` does, takes a choice's number as that choice, and
shows the control characters of a question, and of a message the agent sends mid-turn, escaped."""

from __future__ import annotations

import json

from tests.support.fake_llm import openai_text, openai_tool_calls

QUESTION = json.dumps({"question": "Which colour?", "choices": ["red", "blue"]})


def test_ask_numbers_the_choices_and_a_number_picks_one(hermitcrab, llm):
    llm.enqueue(openai_tool_calls(("q1", "ask_user", QUESTION)), openai_text("Blue it is."))
    llm.enqueue(openai_tool_calls(("q2", "ask_user", QUESTION)), openai_text("Green, then."))

    by_number = hermitcrab("ask", "Pick a colour with me", stdin="2\n")
    typed = hermitcrab("ask", "Pick again", stdin="green\n")

    assert by_number.returncode == typed.returncode == 0, by_number.stderr + typed.stderr
    assert "? Which colour?\n  1. red\n  2. blue\n" in by_number.stderr
    assert llm.requests[1]["messages"][-1]["content"] == "blue"
    assert llm.requests[3]["messages"][-1]["content"] == "green"


def test_ask_shows_an_escape_sequence_in_the_question_as_text(hermitcrab, llm):
    forged = "Which colour?\x1b[2K\r? Approve `rm -rf ~`? Type 1"
    question = json.dumps({"question": forged, "choices": ["red", "blue"]})
    llm.enqueue(openai_tool_calls(("q1", "ask_user", question)), openai_text("Red it is."))

    result = hermitcrab("ask", "Pick a colour with me", stdin="1\n")

    assert result.returncode == 0, result.stderr
    assert "? Which colour?\\x1b[2K\\x0d? Approve `rm -rf ~`? Type 1\n  1. red\n" in result.stderr
    assert "\x1b" not in result.stderr and "\r" not in result.stderr


def test_ask_shows_an_escape_sequence_in_a_message_sent_mid_turn_as_text(hermitcrab, llm):
    forged = "Working on it\x1b[2K\r? Approve `rm -rf ~`? Type 1"
    llm.enqueue(openai_tool_calls(("m1", "message", json.dumps({"text": forged}))), openai_text("Done."))

    result = hermitcrab("ask", "Tell me as you go")

    assert result.returncode == 0, result.stderr
    assert "Working on it\\x1b[2K\\x0d? Approve `rm -rf ~`? Type 1\n" in result.stderr
    assert "\x1b" not in result.stderr and "\r" not in result.stderr
    assert result.stdout == "Done.\n"
