"""Choosing windows: looking again only at the windows that could still win picks what looking at all of them does."""

from __future__ import annotations

import math
import random

import pytest

from hermitcrab.servers.memory.chunking import Chunk
from hermitcrab.servers.memory.ranking import RankSettings, windows
from hermitcrab.servers.memory.ranking.windows import select


def _random_files(rng: random.Random) -> dict[str, list[Chunk]]:
    """1-3 files of 5-60 chunks of 5-400 characters under one to three headings (the windows stop at each)."""
    files: dict[str, list[Chunk]] = {}
    for number in range(rng.randint(1, 3)):
        chunks: list[Chunk] = []
        for line in range(1, rng.randint(5, 60) + 1):
            heading = ("Log", f"part {line * rng.randint(1, 3) // 20}")
            text = "w" * rng.randint(5, 400)
            chunks.append(Chunk(line, line, text, heading, len(text)))
        files[f"f{number}.md"] = chunks
    return files


def _random_ranking(rng: random.Random, files: dict[str, list[Chunk]]) -> list[tuple[str, int, float]]:
    """Chances for a random share of the chunks (most small, a few likely), best first."""
    ranked = [
        (path, i, rng.random() ** rng.choice((1, 3, 8)))
        for path, chunks in files.items()
        for i in range(len(chunks))
        if rng.random() < 0.7
    ]
    return sorted(ranked, key=lambda item: -item[2])


def _spans(results: list[windows.Result]) -> list[tuple[str, int, int, float, int]]:
    return [(r.path, r.first, r.last, r.score, r.room) for r in results]


@pytest.mark.parametrize("seed", range(300))
def test_the_windows_looked_at_again_lazily_are_those_a_full_look_picks(seed: int, monkeypatch: pytest.MonkeyPatch):
    rng = random.Random(seed)
    files = _random_files(rng)
    ranked = _random_ranking(rng, files)
    dates = dict.fromkeys(files)
    settings = RankSettings(anchors=rng.choice((5, 20, 40)), char_cost=rng.choice((0.0, 1.5e-5, 1e-3)))
    limit = rng.choice((1, 3, 6, 10))
    lazy = select(ranked, files, dates, limit, settings)
    monkeypatch.setattr(windows, "_most", lambda *_: math.inf)  # no bound: every stale window is chosen again
    full = select(ranked, files, dates, limit, settings)
    assert _spans(lazy) == _spans(full)
    taken = [(r.path, i) for r in lazy for i in range(r.first, r.last + 1)]
    assert len(taken) == len(set(taken))  # no two windows overlap
