"""`hermitcrab chat` end to end, typing into its stdin like a user would."""

from __future__ import annotations

from tests.support.fake_llm import NO_PROVIDER_ENV, openai_text, openai_tool_calls


def test_chat_replies_shows_tools_and_takes_commands(hermitcrab, llm, desktop_config):
    llm.enqueue(openai_tool_calls(("c1", "add", '{"a": 20, "b": 22}')), openai_text("It is **42**."))

    result = hermitcrab("chat", "--mcp-config", str(desktop_config()), stdin="what is 20+22?\n/status\n/exit\n")

    assert result.returncode == 0, result.stderr
    assert "It is 42." in result.stdout
    assert "↳ add" in result.stdout
    assert "Tokens used: 30 in / 13 out" in result.stdout
    assert "tools from 1 servers" in result.stdout


def test_chat_answers_ask_user_from_the_next_line(hermitcrab, llm):
    llm.enqueue(openai_tool_calls(("q", "ask_user", '{"question": "Which city?"}')), openai_text("Booked for Lyon."))

    result = hermitcrab("chat", stdin="book a trip\nLyon\n/exit\n")

    assert result.returncode == 0, result.stderr
    assert "Which city?" in result.stdout and "Booked for Lyon." in result.stdout
    assert llm.requests[1]["messages"][-1]["content"] == "Lyon"


def test_chat_without_provider_explains_what_to_set(hermitcrab):
    result = hermitcrab("chat", stdin="/exit\n", env=NO_PROVIDER_ENV)

    assert result.returncode == 1
    assert "No LLM provider is configured" in result.stderr
