"""From ranked candidate lists to the few results a model reads: fusion, time decay, context windows, merging.

Each hit is shown with its neighbours (the reply after a question, the question before an answer) under its
date and headings; hits that fall into one window, or touch it, become one result, so the top results are
never several copies of one exchange.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from .chunking import Chunk
from .rerank import MODEL, LinearModel

SNIPPET_CHARS = 700
Key = TypeVar("Key", bound=Hashable)


@dataclass(frozen=True)
class RankSettings:
    """Knobs chosen with `bench/locomo.py`; the defaults are what it measured best."""

    rrf_k: float = 10.0  # a small k trusts the first places of each leg more
    vector_weight: float = 0.5
    text_weight: float = 1.0
    date_weight: float = 1.0  # legs restricted to the daily logs of the days a query names
    candidates: int = 100
    model: LinearModel | None = MODEL  # re-scores the fused candidates (with vectors); None keeps the fusion's order
    layout_results: int = 12  # windows are laid out for at least this many results, whatever is asked for
    window_chars: int = 450  # the hit plus neighbours up to this size
    neighbour_chars: int = 100  # neighbours are shown clipped to this; the hits in full
    near_weight: float = 1.0  # BM25 weight of a chunk's neighbours' words
    near_span: int = 2  # how many neighbours on each side count as its context
    embed_context_chars: int = 200  # embed each chunk after the start of the one before it
    embed_after_chars: int = 0
    half_life_days: float | None = 60.0  # gentle: an old log loses at most about one place to a new one
    decay_floor: float = 0.9


@dataclass
class Result:
    """A window of consecutive chunks of one file, ready to be shown."""

    path: str
    first: int
    last: int
    score: float
    hits: set[int]
    date: dt.date | None = None

    def as_dict(self, chunks: Sequence[Chunk], neighbour_chars: int) -> dict[str, object]:
        texts = [
            chunks[i].text if i in self.hits else _clip_text(chunks[i].text, neighbour_chars)
            for i in range(self.first, self.last + 1)
        ]
        return {
            "path": self.path,
            "start_line": chunks[self.first].start_line,
            "end_line": chunks[self.last].end_line,
            "score": round(self.score, 4),
            "snippet": snippet(texts, chunks[self.first].headings, self.date),
        }


def _clip_text(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def fuse(lists: Sequence[tuple[Sequence[Key], float]], k: float) -> dict[Key, float]:
    """Weighted reciprocal-rank fusion, scaled so a first place in every list scores 1."""
    total = sum(weight for _, weight in lists) / (k + 1)
    scores: dict[Key, float] = {}
    for ids, weight in lists:
        if weight <= 0:
            continue
        for rank, chunk_id in enumerate(ids):
            scores[chunk_id] = scores.get(chunk_id, 0.0) + weight / (k + 1 + rank)
    return {chunk_id: score / total for chunk_id, score in scores.items()} if total else scores


def decay(date: dt.date | None, today: dt.date, settings: RankSettings) -> float:
    """Gentle recency weight for dated daily logs: 1 today, falling towards `decay_floor`; undated files: 1."""
    if date is None or settings.half_life_days is None:
        return 1.0
    age = max((today - date).days, 0)
    return settings.decay_floor + (1 - settings.decay_floor) * 0.5 ** (age / settings.half_life_days)


def window(chunks: Sequence[Chunk], hit: int, budget: int, neighbour_chars: int) -> tuple[int, int]:
    """The hit plus as many neighbours (next first, then previous; each clipped to `neighbour_chars`) under the
    same headings as fit `budget` chars."""
    first = last = hit
    used = len(chunks[hit].text)
    grow_next = True
    while True:
        candidates = [last + 1, first - 1] if grow_next else [first - 1, last + 1]
        grown = False
        for index in candidates:
            if 0 <= index < len(chunks) and chunks[index].headings == chunks[hit].headings:
                size = min(len(chunks[index].text), neighbour_chars) + 1
                if used + size <= budget:
                    used += size
                    first, last = min(first, index), max(last, index)
                    grown = True
                    break
        grow_next = not grow_next
        if not grown:
            return first, last


def select(
    ranked: Sequence[tuple[str, int, float]],
    files: Mapping[str, Sequence[Chunk]],
    dates: Mapping[str, dt.date | None],
    limit: int,
    settings: RankSettings,
) -> list[Result]:
    """Turn `(path, chunk index, score)` hits, best first, into at most `limit` non-overlapping windows.

    Windows are laid out as if at least `settings.layout_results` were wanted, then cut to `limit`: hits a
    little further down still widen the top windows they fall into or touch, and any `limit` up to
    `layout_results` returns a prefix of the same list.
    """
    wanted = max(limit, settings.layout_results)
    results: list[Result] = []
    for path, hit, score in ranked:
        chunks = files[path]
        first, last = window(chunks, hit, settings.window_chars, settings.neighbour_chars)
        same_file = [r for r in results if r.path == path]
        inside = [r for r in same_file if r.first <= hit <= r.last]
        if inside:
            inside[0].hits.add(hit)
            continue
        touching = [
            r
            for r in same_file
            if r.first <= last + 1 and first <= r.last + 1 and chunks[r.first].headings == chunks[hit].headings
        ]
        if touching:
            merged = touching[0]
            lo, hi = min(merged.first, hit), max(merged.last, hit)
            if _chars(chunks, lo, hi) <= SNIPPET_CHARS:
                merged.first, merged.last = lo, hi
                merged.hits.add(hit)
                continue
            first, last = _clip(first, last, hit, touching)
        results.append(Result(path, first, last, score, {hit}, dates.get(path)))
        if len(results) >= wanted:
            break
    return results[:limit]


def _clip(first: int, last: int, hit: int, others: Sequence[Result]) -> tuple[int, int]:
    """Shrink a window around `hit` so it does not overlap windows already chosen."""
    for other in others:
        if other.last < hit:
            first = max(first, other.last + 1)
        elif other.first > hit:
            last = min(last, other.first - 1)
    return first, last


def _chars(chunks: Sequence[Chunk], first: int, last: int) -> int:
    return sum(len(chunk.text) + 1 for chunk in chunks[first : last + 1])


def snippet(texts: Sequence[str], headings: Sequence[str], date: dt.date | None) -> str:
    """Texts under one line saying when and where (date, headings), at most SNIPPET_CHARS."""
    where = [date.isoformat()] if date else []
    where += [heading for heading in headings if not (date and heading == date.isoformat())]
    head = " · ".join(where)
    body = "\n".join(texts)
    text = f"[{head}]\n{body}" if head else body
    return text if len(text) <= SNIPPET_CHARS else text[: SNIPPET_CHARS - 1] + "…"
