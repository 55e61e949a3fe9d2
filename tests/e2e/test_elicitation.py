"""A server's form (an elicitation) reaches the person at `hermitcrab ask` in every protocol era and transport the
pool speaks, and the answer comes back typed by the schema: `30` for an integer field, never `"30"` (the form server
refuses a string, as servers built on the TypeScript SDK do)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.fake_llm import free_port, openai_text, openai_tool_calls
from tests.support.processes import serving

FORM_SERVER = str(Path(__file__).parents[1] / "support" / "form_server.py")
LEGACY_STDIO = {"command": sys.executable, "args": [FORM_SERVER], "protocol": "legacy"}


@pytest.fixture
def form_server_url() -> Iterator[str]:
    port = free_port()
    with serving([sys.executable, FORM_SERVER, "--http-port", str(port)], port) as url:
        yield url


def ask_for_the_profile(hermitcrab, llm, tmp_path: Path, server: dict[str, object], typed: str):
    """`hermitcrab ask` whose model calls the form server's `profile` tool, with `typed` on stdin; the run and the
    tool result the model was given."""
    config = tmp_path / "forms.json"
    config.write_text(json.dumps({"mcpServers": {"forms": server}}))
    llm.enqueue(openai_tool_calls(("call_1", "profile", "{}")), openai_text("Noted."))
    result = hermitcrab("ask", "--mcp-config", str(config), "ask my age", stdin=typed)
    assert result.returncode == 0, result.stderr
    return result, llm.requests[1]["messages"][-1]["content"]


def test_a_legacy_era_stdio_server_asks_the_person_and_gets_an_integer(hermitcrab, llm, tmp_path: Path):
    result, tool_result = ask_for_the_profile(hermitcrab, llm, tmp_path, LEGACY_STDIO, "30\n")

    assert "The forms server asks:" in result.stderr and "How old are you?" in result.stderr
    assert "A whole number from 0 to 150. Empty or `default`: `30`." in result.stderr
    assert tool_result == "age 30 (int) over 2025-11-25"
    assert result.stdout == "Noted.\n"


def test_the_default_is_applied_when_the_person_presses_enter_on_a_2026_era_http_server(
    hermitcrab, llm, tmp_path: Path, form_server_url: str
):
    result, tool_result = ask_for_the_profile(hermitcrab, llm, tmp_path, {"url": form_server_url}, "\n")

    assert "How old are you?" in result.stderr
    assert tool_result == "age 30 (int) over 2026-07-28"


def test_a_bad_value_is_asked_again_with_what_was_wrong(hermitcrab, llm, tmp_path: Path):
    result, tool_result = ask_for_the_profile(hermitcrab, llm, tmp_path, LEGACY_STDIO, "thirty\n200\n41\n")

    assert result.stderr.count("How old are you?") == 3
    assert "Not taken: `thirty` is not a whole number. 2 tries left." in result.stderr
    assert "Not taken: `200` is more than the maximum, 150. 1 try left." in result.stderr
    assert tool_result == "age 41 (int) over 2025-11-25"


def test_three_bad_values_decline_the_form(hermitcrab, llm, tmp_path: Path):
    result, tool_result = ask_for_the_profile(hermitcrab, llm, tmp_path, LEGACY_STDIO, "a\nb\nc\n30\n")

    assert result.stderr.count("How old are you?") == 3
    assert tool_result == "decline over 2025-11-25"


def test_chat_shows_the_form_in_the_terminal_and_enter_takes_the_default(hermitcrab, llm, tmp_path: Path):
    config = tmp_path / "forms.json"
    config.write_text(json.dumps({"mcpServers": {"forms": LEGACY_STDIO}}))
    llm.enqueue(openai_tool_calls(("call_1", "profile", "{}")), openai_text("Noted."))

    result = hermitcrab("chat", "--mcp-config", str(config), stdin="ask my age\n\n/exit\n")

    assert result.returncode == 0, result.stderr
    assert "How old are you?" in result.stdout
    assert "A whole number from 0 to 150. Empty or default: 30." in result.stdout
    assert llm.requests[1]["messages"][-1]["content"] == "age 30 (int) over 2025-11-25"
