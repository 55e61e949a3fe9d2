"""`hermitcrab ask` offers a question's choices numbered as `chat` does, and takes a choice's number as that choice."""

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
