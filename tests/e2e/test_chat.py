"""`hermitcrab chat` end to end, typing into its stdin like a user would."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time

from tests.support.fake_llm import NO_PROVIDER_ENV, openai_text, openai_tool_calls

from .conftest import CLI, TEST_SERVER, cli_env


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


def test_chat_shows_what_a_server_queued_while_it_is_open(hermitcrab_home, llm, tmp_path):
    queue = tmp_path / "queue.json"
    queue.write_text(json.dumps([{"id": "job-1:run-1", "text": "remind the user to stretch"}]))
    server = {"command": sys.executable, "args": [str(TEST_SERVER), "--queue-file", str(queue)]}
    desktop = tmp_path / "desktop.json"
    desktop.write_text(json.dumps({"mcpServers": {"kit": server}}))
    llm.enqueue(openai_text("Time to stretch!"))
    log = tmp_path / "chat.out"

    with log.open("w") as out:
        chat = subprocess.Popen(
            [*CLI, "chat", "--mcp-config", str(desktop)],
            stdin=subprocess.PIPE,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
            env=cli_env(hermitcrab_home, llm),
        )
        try:
            deadline = time.monotonic() + 30
            while json.loads(queue.read_text()) != []:
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.05)
            chat.communicate("/exit\n", timeout=30)
        finally:
            chat.kill()

    assert chat.returncode == 0
    assert "Time to stretch!" in log.read_text()


def test_an_unknown_command_makes_no_model_call_and_context_counts_all_that_is_sent(hermitcrab, llm, desktop_config):
    commands = "/nosuchskill foo\n/context\n/status\n/exit\n"

    result = hermitcrab("chat", "--mcp-config", str(desktop_config()), stdin=commands)

    assert result.returncode == 0, result.stderr
    assert "Unknown command /nosuchskill, see /help." in result.stdout
    assert llm.requests == []
    sizes = {
        part: int(size.replace(",", ""))
        for part, size in re.findall(
            r"(System prompt|Tool schemas|History|Total): (?:\d+ \w+, )?([\d,]+) chars", result.stdout
        )
    }
    assert sizes["System prompt"] > 0 and sizes["Tool schemas"] > 0
    assert sizes["Total"] == sizes["System prompt"] + sizes["Tool schemas"] + sizes["History"]
    assert re.search(r"testkit: \d+ tools, [\d,]+ chars", result.stdout) and "AGENTS.md" in result.stdout
    assert f"~{sizes['Total'] // 4:,} tokens estimated (system prompt, tool schemas, history" in result.stdout
