"""From ranked candidate lists to the few results a model reads: fusion, time decay, context windows.

A result is a window of neighbouring chunks (the reply after a question, the question before an answer)
under its date and headings. Windows are chosen to hold as many likely findings as they can: each grows
only towards neighbours likely to matter, and none repeats what another shows.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from .chunking import Chunk
from .rerank import MODELS, LinearModel

SNIPPET_CHARS = 700
Key = TypeVar("Key", bound=Hashable)


@dataclass(frozen=True)
class RankSettings:
    """Knobs chosen with `bench/_memory_misses.py` and `bench/_memory_train.py` (LoCoMo, split in halves)."""

    rrf_k: float = 10.0  # a small k trusts the first places of each leg more
    vector_weight: float = 0.5
    text_weight: float = 1.0
    date_weight: float = 1.0  # legs restricted to the daily logs of the days a query names
    candidates: int = 150  # from each leg
    models: Mapping[str, LinearModel] | None = field(default_factory=lambda: MODELS)  # None: the fusion's scores
    anchors: int = 40  # windows are centred on one of this many best chunks
    window_chars: int = 660  # a window's size at most (its snippet adds a date line, within SNIPPET_CHARS)
    char_cost: float = 1.5e-5  # chance a shown character must earn: a window stops where neighbours stop mattering
    neighbour_chars: int = 100  # neighbours are shown clipped to this
    full_share: float = 1.0  # neighbours at least this likely, relative to the anchor, are shown in full
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
    full: set[int]  # chunks shown in full; the others are clipped
    date: dt.date | None = None

    def as_dict(self, chunks: Sequence[Chunk], neighbour_chars: int) -> dict[str, object]:
        texts = [
            chunks[i].text if i in self.full else _clip_text(chunks[i].text, neighbour_chars)
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


def select(
    ranked: Sequence[tuple[str, int, float]],
    files: Mapping[str, Sequence[Chunk]],
    dates: Mapping[str, dt.date | None],
    limit: int,
    settings: RankSettings,
) -> list[Result]:
    """Up to `limit` windows, each the one that adds the most expected findings to those chosen before it.

    `ranked` holds `(path, chunk index, chance)`, best first, where chance is the probability that the chunk
    holds what the query asks for. A window is a run of chunks under one heading around one of the best
    `settings.anchors` chunks: the anchor in full, neighbours clipped, at most `window_chars` characters. Its
    gain is the chance its not yet shown chunks hold, less `char_cost` per character of its neighbours, so a
    window reaches out only to neighbours likely to matter, and six windows spread over six exchanges rather
    than repeat one.
    Chosen one at a time, `limit` = n returns the first n results of any larger `limit`.

    Without a model (`settings.models` None: plain fusion scores, for comparisons) scores are not
    probabilities and say nothing about neighbours, so windows are chosen by their anchor's score alone and
    filled up to `window_chars`.
    """
    calibrated = settings.models is not None
    chance = {(path, i): score for path, i, score in ranked}
    anchors = [(path, i) for path, i, _ in ranked[: settings.anchors]]
    order = {anchor: place for place, anchor in enumerate(anchors)}
    shown: set[tuple[str, int]] = set()
    results: list[Result] = []
    best: dict[tuple[str, int], _Window] = {}
    stale = set(anchors)
    while len(results) < limit:
        for path, hit in stale - shown:
            taken = [(r.first, r.last) for r in results if r.path == path]
            worth = chance if calibrated else {(path, hit): chance[(path, hit)]}
            best[(path, hit)] = _best_window(files[path], path, hit, worth, taken, settings)
        for anchor in stale & shown:
            best.pop(anchor, None)
        if not best:
            break
        anchor = max(best, key=lambda a: (best[a].gain, -order[a]))
        found = best.pop(anchor)
        path = anchor[0]
        missed = 1.0
        for i in range(found.first, found.last + 1):
            missed *= 1.0 - chance.get((path, i), 0.0)
        score = 1.0 - missed if calibrated else chance[anchor]
        results.append(Result(path, found.first, found.last, score, found.full, dates.get(path)))
        shown.update((path, i) for i in range(found.first, found.last + 1))
        stale = {a for a in best if a[0] == path}
    return results


@dataclass(frozen=True)
class _Window:
    gain: float
    first: int
    last: int
    full: set[int]  # chunks shown in full; the rest are clipped


def _best_window(
    chunks: Sequence[Chunk],
    path: str,
    hit: int,
    chance: Mapping[tuple[str, int], float],
    taken: Sequence[tuple[int, int]],
    settings: RankSettings,
) -> _Window:
    """The run of chunks around `hit` with the highest gain (see `select`), clear of the `taken` windows."""
    lowest, highest = _room(len(chunks), hit, taken)
    price = settings.char_cost if settings.models is not None else 0.0  # without a model, fill the window
    own = chance.get((path, hit), 0.0)

    def shown_in_full(i: int) -> bool:
        return i == hit or chance.get((path, i), 0.0) >= settings.full_share * own

    def reach(step: int, end: int) -> list[tuple[float, int]]:
        """(value, size) of each neighbour from `hit` towards `end`, as far as the window could reach within
        its section."""
        found: list[tuple[float, int]] = []
        used = len(chunks[hit].text) + 1
        for i in range(hit + step, end + step, step):
            if chunks[i].headings != chunks[hit].headings:
                break
            size = (len(chunks[i].text) if shown_in_full(i) else min(len(chunks[i].text), settings.neighbour_chars)) + 1
            used += size
            if used > settings.window_chars:
                break
            found.append((chance.get((path, i), 0.0) - price * size, size))
        return found

    before, after = reach(-1, lowest), reach(1, highest)
    best = (own, 0, 0)  # the anchor is shown whatever it costs: its size must not rank it
    left_value, left_size = own, len(chunks[hit].text) + 1
    for left in range(len(before) + 1):
        if left:
            left_value, left_size = left_value + before[left - 1][0], left_size + before[left - 1][1]
            if left_size > settings.window_chars:
                break
        value, size = left_value, left_size
        for right in range(len(after) + 1):
            if right:
                value, size = value + after[right - 1][0], size + after[right - 1][1]
                if size > settings.window_chars:
                    break
            if value >= best[0]:  # on a tie, the wider window
                best = (value, left, right)
    gain, left, right = best
    first, last = hit - left, hit + right
    return _Window(gain, first, last, {i for i in range(first, last + 1) if shown_in_full(i)})


def _room(count: int, hit: int, taken: Sequence[tuple[int, int]]) -> tuple[int, int]:
    """The first and last chunk a window around `hit` may reach, short of the windows already taken."""
    lowest, highest = 0, count - 1
    for first, last in taken:
        if last < hit:
            lowest = max(lowest, last + 1)
        elif first > hit:
            highest = min(highest, first - 1)
    return lowest, highest


def snippet(texts: Sequence[str], headings: Sequence[str], date: dt.date | None) -> str:
    """Texts under one line saying when and where (date, headings), at most SNIPPET_CHARS."""
    where = [date.isoformat()] if date else []
    where += [heading for heading in headings if not (date and heading == date.isoformat())]
    head = " · ".join(where)
    body = "\n".join(texts)
    text = f"[{head}]\n{body}" if head else body
    return text if len(text) <= SNIPPET_CHARS else text[: SNIPPET_CHARS - 1] + "…"
