"""Compaction through the real CLI: a window set by HERMITCRAB_CONTEXT_WINDOW, counted from the provider's usage."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.fake_llm import openai_text


def entries(home: Path) -> list[dict]:
    index = json.loads((home / "state" / "sessions" / "sessions.json").read_text())
    path = home / "state" / "sessions" / f"{index['main']['id']}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_small_window_from_the_environment_compacts_on_the_providers_count(hermitcrab, llm, hermitcrab_home):
    window = {"HERMITCRAB_CONTEXT_WINDOW": "4000"}
    llm.enqueue(openai_text("Stored the report for build 7f3a9c2e.", tokens=(3_600, 20)))
    assert hermitcrab("ask", "Keep this report: " + "r" * 2_000, env=window).returncode == 0
    llm.enqueue(openai_text("- The user asked to keep a report.", tokens=(900, 30)), openai_text("Still here."))

    result = hermitcrab("ask", "Are you there?", env=window)

    assert result.returncode == 0, result.stderr
    assert result.stdout == "Still here.\n"
    summarise, answer = llm.requests[1:]
    assert "Keep this report" in summarise["messages"][-1]["content"] and not summarise.get("tools")
    first = answer["messages"][1]["content"]
    assert "The user asked to keep a report." in first and "7f3a9c2e" in first  # the identifier, kept mechanically
    assert [e["kind"] for e in entries(hermitcrab_home)][-3:] == ["user", "compaction", "assistant"]
