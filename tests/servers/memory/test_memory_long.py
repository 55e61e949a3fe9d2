"""Long input: a 5,000-character chat turn is found by the part that matches, and results keep to their budget."""

from __future__ import annotations

import random
from pathlib import Path

from mcp import Client

from hermitcrab.servers.memory.embed import Embedder
from hermitcrab.servers.memory.ranking import RankSettings
from tests.servers.memory.conftest import MemoryServer
from tests.support.tools import search

RESULT_CHARS = RankSettings().result_chars
WORDS = ("garden", "recipe", "budget", "travel", "laptop", "meeting", "weather", "novel", "museum", "coffee")


def _prose(seed: int, chars: int) -> str:
    """Filler sentences of common words, different for each seed."""
    rng = random.Random(seed)
    text = ""
    while len(text) < chars:
        text += " ".join(rng.choice(WORDS) for _ in range(12)).capitalize() + ". "
    return text[:chars].strip()


async def test_a_5000_character_turn_shows_the_part_that_matches_with_its_line(
    memory_server: MemoryServer, workspace: Path
):
    fact = "My grandmother's sourdough starter is called Bubbles and lives in the pantry."
    turn = _prose(1, 2700) + " " + fact + " " + _prose(2, 2300)
    assert len(turn) > 5000
    log = f"## 09:15 session 1\n\n- user: {_prose(3, 200)}\n- assistant: {turn}\n- user: {_prose(4, 150)}\n"
    (workspace / "memory" / "2025-04-02.md").write_text(log, encoding="utf-8")
    async with Client(memory_server()) as client:
        top = (await search(client, "What is the sourdough starter called?", max_results=1))[0]
    assert top["path"] == "memory/2025-04-02.md"
    assert top["start_line"] == top["end_line"] == 4  # the long turn's own line
    assert fact in top["snippet"]
    assert not top["snippet"].split("\n", 1)[1].startswith("- assistant:")  # not the line's start
    assert len(top["snippet"]) <= RESULT_CHARS


async def test_results_keep_to_their_budget_whatever_the_input(
    memory_server: MemoryServer, workspace: Path, use_embedder: Embedder
):
    heading = "A heading far longer than any snippet could show " * 20
    lines = [f"# {heading}", ""]
    for i in range(40):  # long turns, long paragraphs and short lines, all about the same thing
        lines.append(f"- user: the harbour ferry timetable {i} " + _prose(i, 150 * (i % 7) ** 2))
        lines.append("")
        lines.append(f"The harbour ferry note {i}: " + _prose(100 + i, 900))
        lines.append("")
    (workspace / "memory" / "2025-05-01.md").write_text("\n".join(lines), encoding="utf-8")
    async with Client(memory_server(embedder=use_embedder)) as client:
        for limit in (1, 3, 6, 12):
            results = await search(client, "harbour ferry timetable", max_results=limit)
            assert len(results) == limit
            sizes = [len(result["snippet"]) for result in results]
            assert sum(sizes) <= RESULT_CHARS * limit, sizes
            assert all(n <= RESULT_CHARS * (i + 1) - sum(sizes[:i]) for i, n in enumerate(sizes))
