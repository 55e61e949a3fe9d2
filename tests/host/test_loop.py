"""The agent loop, with a scripted provider and a small in-test toolbox."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hermitcrab.host.config import AgentSettings
from hermitcrab.host.session.transcript import SessionStore
from hermitcrab.host.turn.loop import run_turn
from tests.support.scripted_provider import ScriptedProvider
from tests.support.toolboxes import Toolbox


async def turn(tmp_path: Path, provider: ScriptedProvider, text: str = "go", **settings: Any):
    session = SessionStore(tmp_path).open("main")
    result = await run_turn(
        provider=provider,
        toolbox=Toolbox(),
        session=session,
        system="SYSTEM",
        user_text=text,
        settings=AgentSettings(**settings),
    )
    return result, session


async def test_tool_calls_in_one_response_run_concurrently(tmp_path: Path):
    provider = ScriptedProvider().call(("a", "slow", {"n": 1}), ("b", "slow", {"n": 2})).say("both done")

    result, _ = await turn(tmp_path, provider)

    assert result.reply == "both done"
    results = [m for m in provider.seen[1]["messages"] if m.role == "tool"]
    assert [(m.tool_call_id, m.content) for m in results] == [("a", "slow 1 done"), ("b", "slow 2 done")]


async def test_tool_errors_go_back_to_the_model(tmp_path: Path):
    provider = ScriptedProvider().call(("x", "broken", {})).say("sorry")

    result, _ = await turn(tmp_path, provider)

    tool = provider.seen[1]["messages"][-1]
    assert tool.is_error and "kaput" in tool.content
    assert result.reply == "sorry"


async def test_oversized_results_are_cut_with_a_marker(tmp_path: Path):
    provider = ScriptedProvider().call(("h", "huge", {})).say("ok")

    _, session = await turn(tmp_path, provider, max_tool_result_chars=1_000)

    content = provider.seen[1]["messages"][-1].content
    assert len(content) < 1_100 and content.endswith("Z") and "characters cut" in content
    assert session.transcript.entries()[-2]["text"] == content


async def test_the_loop_stops_at_max_iterations(tmp_path: Path):
    provider = ScriptedProvider()
    for i in range(3):
        provider.call((f"c{i}", "echo", {"text": "again"}))

    result, _ = await turn(tmp_path, provider, max_iterations=3)

    assert result.model_calls == 3
    assert "limit of 3 model calls" in (result.reply or "")


async def test_no_reply_is_silent_but_recorded(tmp_path: Path):
    result, session = await turn(tmp_path, ScriptedProvider().say("NO_REPLY"))

    assert result.reply is None
    assert session.transcript.entries()[-1]["text"] == "NO_REPLY"


async def test_usage_is_recorded_per_turn(tmp_path: Path):
    result, session = await turn(tmp_path, ScriptedProvider().call(("e", "echo", {"text": "x"})).say("done"))

    assert (result.usage.input_tokens, result.usage.output_tokens) == (200, 20)
    assert session.usage == result.usage
