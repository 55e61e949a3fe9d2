"""`hermitcrab ask` end to end: real CLI process, real stdio MCP server, scripted OpenAI-compatible LLM."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.fake_llm import NO_PROVIDER_ENV, Reply, openai_text, openai_tool_calls


def transcript(home: Path) -> list[dict]:
    index = json.loads((home / "state" / "sessions" / "sessions.json").read_text())
    path = home / "state" / "sessions" / f"{index['main']['id']}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_tool_round_trip_prints_only_the_final_reply(hermitcrab, llm, desktop_config, hermitcrab_home):
    llm.enqueue(openai_tool_calls(("call_42", "add", '{"a": 2, "b": 40}')), openai_text("The answer is 42."))

    result = hermitcrab("ask", "--mcp-config", str(desktop_config()), "What is 2 + 40?")

    assert result.returncode == 0, result.stderr
    assert result.stdout == "The answer is 42.\n"
    first, second = llm.requests
    offered = sorted(t["function"]["name"] for t in first["tools"])
    assert offered == [
        "add",
        "ask_user",
        "big",
        "echo",
        "fail",
        "guarded",
        "hang",
        "hearsay",
        "message",
        "picture",
        "pid",
        "publish",
        "queue_ack",
        "queue_push",
        "queue_state",
    ]
    tool_message = second["messages"][-1]
    assert tool_message == {"role": "tool", "tool_call_id": "call_42", "content": "42"}
    assert second["messages"][-2]["tool_calls"][0]["id"] == "call_42"
    assert llm.headers[0]["authorization"] == "Bearer sk-test-secret"


def test_transcript_records_every_entry(hermitcrab, llm, desktop_config, hermitcrab_home):
    llm.enqueue(openai_tool_calls(("call_1", "echo", '{"text": "hello"}')), openai_text("Done."))

    assert hermitcrab("ask", "--mcp-config", str(desktop_config()), "Echo hello").returncode == 0

    entries = transcript(hermitcrab_home)
    assert [e["kind"] for e in entries] == ["user", "assistant", "tool_call", "tool_result", "assistant"]
    assert entries[2] | {"id": None, "ts": None} == {
        "id": None,
        "ts": None,
        "kind": "tool_call",
        "call_id": "call_1",
        "name": "echo",
        "arguments": {"text": "hello"},
    }
    assert entries[3]["text"] == "hello" and entries[3]["is_error"] is False
    assert all(e["id"] and e["ts"] for e in entries)
    assert entries[1]["usage"] == {
        "input_tokens": 20,
        "output_tokens": 8,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
    }


def test_system_prompt_holds_persona_files_in_order(hermitcrab, llm, hermitcrab_home):
    assert hermitcrab("init").returncode == 0
    llm.enqueue(openai_text("Hi!"))

    assert hermitcrab("ask", "hello").returncode == 0

    system = llm.requests[0]["messages"][0]["content"]
    order = ["AGENTS.md", "SOUL.md", "TOOLS.md", "IDENTITY.md", "USER.md", "HEARTBEAT.md", "BOOTSTRAP.md", "MEMORY.md"]
    positions = [system.index(f"## {name}") for name in order]
    assert positions == sorted(positions)
    assert "Channel: cli" in llm.requests[0]["messages"][-2]["content"]  # the host's note, before the message


def test_session_continues_after_restart(hermitcrab, llm):
    llm.enqueue(openai_text("Noted: your favourite colour is teal."), openai_text("Teal."))

    hermitcrab("ask", "My favourite colour is teal.")
    hermitcrab("ask", "What is my favourite colour?")

    said = [m["content"] for m in llm.requests[1]["messages"][1:]]
    history = [text for text in said if not text.startswith("[Now: ")]  # without the host's note on each turn
    assert len(said) - len(history) == 2
    assert history == [
        "My favourite colour is teal.",
        "Noted: your favourite colour is teal.",
        "What is my favourite colour?",
    ]


def test_failover_to_the_second_provider_after_three_500s(hermitcrab, llm, hermitcrab_home):
    broken = Reply({"error": {"message": "overloaded"}}, status=500)
    llm.enqueue(broken, broken, broken, openai_text("from the backup"))
    (hermitcrab_home / "config.toml").write_text(
        f"""
[[providers]]
name = "primary"
base_url = "{llm.url}"
model = "primary-model"
max_retries = 2

[[providers]]
name = "backup"
base_url = "{llm.url}"
model = "backup-model"
"""
    )

    result = hermitcrab(
        "ask",
        "hello",
        env=NO_PROVIDER_ENV,
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "from the backup"
    assert [r["model"] for r in llm.requests] == ["primary-model"] * 3 + ["backup-model"]


def test_hung_tool_call_times_out_into_an_error_result(hermitcrab, llm, desktop_config):
    llm.enqueue(openai_tool_calls(("call_h", "hang", "{}")), openai_text("The tool hung."))

    result = hermitcrab("ask", "--mcp-config", str(desktop_config(timeout_s=1)), "Run hang")

    assert result.returncode == 0, result.stderr
    tool_message = llm.requests[1]["messages"][-1]
    assert tool_message["tool_call_id"] == "call_h"
    assert "timed out after 1s" in tool_message["content"]


def test_no_reply_is_not_printed(hermitcrab, llm):
    llm.enqueue(openai_text("NO_REPLY"))

    result = hermitcrab("ask", "nothing to say")

    assert result.returncode == 0 and result.stdout == ""


def test_missing_provider_says_what_to_set(hermitcrab):
    result = hermitcrab(
        "ask",
        "hi",
        env=NO_PROVIDER_ENV,
    )

    assert result.returncode == 1
    assert "OPENAI_API_KEY" in result.stderr and "HERMITCRAB_LLM_BASE_URL" in result.stderr
    assert result.stdout == ""


def test_provider_error_exits_non_zero_with_a_message(hermitcrab, llm):
    llm.enqueue(Reply({"error": {"message": "invalid model"}}, status=400))

    result = hermitcrab("ask", "hi")

    assert result.returncode == 1
    assert "invalid model" in result.stderr
    assert "sk-test-secret" not in result.stderr


def test_ask_user_reads_the_answer_from_stdin(hermitcrab, llm):
    llm.enqueue(
        openai_tool_calls(("call_q", "ask_user", '{"question": "Which colour?"}')), openai_text("You chose blue.")
    )

    result = hermitcrab("ask", "Pick a colour with me", stdin="blue\n")

    assert result.returncode == 0, result.stderr
    assert "Which colour?" in result.stderr
    assert llm.requests[1]["messages"][-1]["content"] == "blue"


def test_the_api_key_lands_nowhere_on_disk_or_in_output(hermitcrab, llm, desktop_config, hermitcrab_home):
    llm.enqueue(
        openai_tool_calls(("c", "fail", '{"reason": "boom"}')), Reply({"error": {"message": "nope"}}, status=400)
    )

    result = hermitcrab("ask", "--verbose", "--mcp-config", str(desktop_config()), "hi")

    assert result.returncode == 1
    assert "sk-test-secret" not in result.stdout + result.stderr
    for path in hermitcrab_home.rglob("*"):
        if path.is_file():
            assert b"sk-test-secret" not in path.read_bytes(), path
