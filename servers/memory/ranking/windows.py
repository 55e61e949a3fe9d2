"""The last stage: from scored chunks to the few results a model reads, windows of neighbouring chunks.

A result is a window of neighbouring chunks (the reply after a question, the question before an answer)
under its date and headings. Windows are chosen to hold as many likely findings as they can: each grows
only towards neighbours likely to matter, and none repeats what another shows.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache

from ..chunking import Chunk
from ..lexical import analyze
from .settings import RankSettings

SNIPPET_CHARS = 700


@dataclass
class Result:
    """A window of consecutive chunks of one file, ready to be shown."""

    path: str
    first: int
    last: int
    score: float
    full: set[int]  # chunks shown in full; the others are clipped
    date: dt.date | None = None
    room: int = SNIPPET_CHARS  # characters its snippet may use

    def as_dict(
        self, chunks: Sequence[Chunk], neighbour_chars: int, weights: Mapping[str, float] | None = None
    ) -> dict[str, object]:
        """The result as `memory_search` returns it; a chunk too long for `room` shows its part richest in the
        query's terms (`weights`: term -> IDF)."""
        head = heading_line(chunks[self.first].headings, self.date)
        texts = [
            chunks[i].text if i in self.full else _clip_text(chunks[i].text, neighbour_chars)
            for i in range(self.first, self.last + 1)
        ]
        over = len(head) + sum(len(text) + 1 for text in texts) - min(self.room, SNIPPET_CHARS)
        if over > 0:
            longest = max(range(len(texts)), key=lambda i: len(texts[i]))
            texts[longest] = focus(texts[longest], weights or {}, max(len(texts[longest]) - over, 1))
        return {
            "path": self.path,
            "start_line": chunks[self.first].start_line,
            "end_line": chunks[self.last].end_line,
            "score": round(self.score, 4),
            "snippet": snippet(texts, chunks[self.first].headings, self.date)[: self.room],
        }


def _clip_text(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


_WORD = re.compile(r"\w+")


def focus(text: str, weights: Mapping[str, float], size: int) -> str:
    """At most `size` characters of `text`: the stretch holding the most query-term weight (`weights`: term ->
    IDF, each term counted once), marked with "…" where it was cut; the start when no term occurs."""
    if len(text) <= size:
        return text
    if size <= 2:
        return text[:size]
    words = [(m.start(), m.end(), _word_terms(m[0]) & weights.keys()) for m in _WORD.finditer(text)]
    starts = [0] + [first for first, _, _ in words if first > 0]
    best, best_weight = 0, -1.0
    counts: dict[str, int] = {}  # query terms of the words in words[lo:hi], the stretch from `start`
    lo = hi = 0
    for start in starts:  # both ends only move right: one pass over the words
        end = start + size - (2 if start else 1)
        while lo < len(words) and words[lo][0] < start:
            if lo < hi:
                for term in words[lo][2]:
                    counts[term] -= 1
            lo += 1
        hi = max(hi, lo)
        while hi < len(words) and words[hi][1] <= end:
            for term in words[hi][2]:
                counts[term] = counts.get(term, 0) + 1
            hi += 1
        weight = sum(weights[term] for term in sorted(counts) if counts[term])
        if weight > best_weight:
            best, best_weight = start, weight
    end = best + size - (2 if best else 1)
    if end >= len(text):
        return "…" + text[best:]
    return ("…" if best else "") + text[best:end].rstrip() + "…"


@lru_cache(maxsize=8192)
def _word_terms(word: str) -> frozenset[str]:
    return frozenset(analyze(word))


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
    `settings.anchors` chunks: the anchor in full, neighbours clipped, at most `window_chars` characters and at
    most what the budget leaves (the first n results show at most n times `result_chars`, heading lines
    included). Its gain is the chance its not yet shown chunks hold (a clipped neighbour's in proportion to the
    part shown), less `char_cost` per character of its neighbours, so a window reaches out only to neighbours
    likely to matter, and six windows spread over six exchanges rather than repeat one.
    Chosen one at a time, `limit` = n returns the first n results of any larger `limit`. After each choice only
    the windows that could still win are chosen again (see `_most`).

    Without a model (`settings.rescore` False: plain fusion scores, for comparisons) scores are not
    probabilities and say nothing about neighbours, so windows are chosen by their anchor's score alone and
    filled up to `window_chars`.
    """
    calibrated = settings.rescore
    chance = {(path, i): score for path, i, score in ranked}
    anchors = [(path, i) for path, i, _ in ranked[: settings.anchors]]
    order = {anchor: place for place, anchor in enumerate(anchors)}
    shown: set[tuple[str, int]] = set()
    results: list[Result] = []
    best: dict[tuple[str, int], _Window] = {}
    sides: dict[tuple[str, int], tuple[_Side, _Side]] = {}
    stale = set(anchors)
    spent = 0
    heads = {
        anchor: len(heading_line(files[anchor[0]][anchor[1]].headings, dates.get(anchor[0]))) for anchor in anchors
    }
    while len(results) < limit:
        room = settings.result_chars * (len(results) + 1) - spent
        limits = {anchor: min(settings.window_chars, room - heads[anchor]) for anchor in anchors}
        stale |= {a for a, w in best.items() if w.size > limits[a] or (w.cut and w.limit < limits[a])}
        for anchor in stale & shown:
            best.pop(anchor, None)
        stale -= shown
        bounds = {
            a: (_most(best.get(a), sides.get(a), chance[a], limits[a] if a in stale else None), -order[a])
            for a in anchors
            if a not in shown
        }
        anchor: tuple[str, int] | None = None
        for candidate in sorted(bounds, key=bounds.__getitem__, reverse=True):
            if anchor is not None and bounds[candidate] < (best[anchor].gain, -order[anchor]):
                break  # the windows not looked at again cannot beat it: computing them would change nothing
            if candidate in stale:
                path, hit = candidate
                taken = [(r.first, r.last) for r in results if r.path == path]
                if candidate not in sides:
                    worth = chance if calibrated else {candidate: chance[candidate]}
                    sides[candidate] = _sides(files[path], path, hit, worth, settings)
                best[candidate] = _best_window(
                    files[path], hit, chance[candidate], sides[candidate], taken, limits[candidate]
                )
                stale.discard(candidate)
            if anchor is None or (best[candidate].gain, -order[candidate]) > (best[anchor].gain, -order[anchor]):
                anchor = candidate
        if anchor is None:
            break
        found = best.pop(anchor)
        path = anchor[0]
        missed = 1.0
        for i in range(found.first, found.last + 1):
            missed *= 1.0 - chance.get((path, i), 0.0)
        score = 1.0 - missed if calibrated else chance[anchor]
        results.append(Result(path, found.first, found.last, score, found.full, dates.get(path), room))
        spent += min(room, heads[anchor] + found.size - 1)
        shown.update((path, i) for i in range(found.first, found.last + 1))
        # only windows that looked as far as the one just taken can change
        stale |= {
            a for a, w in best.items() if a[0] == path and w.looked[0] <= found.last and found.first <= w.looked[1]
        }
    return results


def _most(window: _Window | None, sides: tuple[_Side, _Side] | None, own: float, limit: int | None) -> float:
    """The most an anchor's window can gain now. `window` was its best within a limit and the windows taken then;
    `limit` is its limit now if more windows were taken or the limit changed since (None: `window` still holds).
    Within a smaller limit and more taken windows it can only gain less; within a wider one, at most all that
    its neighbours are worth."""
    if window is None or sides is None:
        return math.inf
    if limit is not None and limit > window.limit:
        return own + sides[0].ceiling + sides[1].ceiling
    return window.gain


@dataclass(frozen=True)
class _Window:
    gain: float
    first: int
    last: int
    full: set[int]  # chunks shown in full; the rest are clipped
    size: int  # characters shown, a newline after each chunk
    limit: int  # the size it was chosen within
    cut: bool  # whether that limit kept out a neighbour
    looked: tuple[int, int]  # the first and last chunk it was chosen from, including the ones that stopped it


def _sides(
    chunks: Sequence[Chunk], path: str, hit: int, chance: Mapping[tuple[str, int], float], settings: RankSettings
) -> tuple[_Side, _Side]:
    """What lies before and after `hit` for a window to take; the same however the window is limited later."""
    price = settings.char_cost if settings.rescore else 0.0  # without a model, fill the window
    own = chance.get((path, hit), 0.0)

    def side(step: int) -> _Side:
        neighbours: list[tuple[int, float, int, bool]] = []
        used = len(chunks[hit].text) + 1
        i = hit + step
        while 0 <= i < len(chunks):
            if chunks[i].headings != chunks[hit].headings:
                return _Side(neighbours, i, too_big=False)
            length, worth = len(chunks[i].text), chance.get((path, i), 0.0)
            full = worth >= settings.full_share * own
            shown = length if full else min(length, settings.neighbour_chars)
            used += shown + 1
            if used > settings.window_chars:
                return _Side(neighbours, i, too_big=True)
            # a clipped neighbour holds the answer in the part shown only: a share of its chance
            neighbours.append((i, worth * shown / max(length, 1) - price * (shown + 1), shown + 1, full))
            i += step
        return _Side(neighbours, None, too_big=False)

    return side(-1), side(1)


@dataclass(frozen=True)
class _Side:
    """An anchor's neighbours on one side, nearest first, as far as the widest window could reach within its
    section: (chunk, value, size shown, shown in full) each. Then the chunk that ended the list (None: the file's
    edge) and whether it was too big to fit (else it starts another section)."""

    neighbours: list[tuple[int, float, int, bool]]
    stop: int | None
    too_big: bool

    @cached_property
    def ceiling(self) -> float:
        """More than any window can gain from this side (a hair more, for rounding)."""
        return sum(max(value, 0.0) for _, value, _, _ in self.neighbours) * (1 + 1e-9) + 1e-12

    def within(self, step: int, end: int, limit: int, used: int) -> tuple[list[tuple[float, int]], int, bool]:
        """(value, size) of the neighbours up to chunk `end` that fit in `limit` characters with the `used` ones;
        the last chunk looked at; whether `limit` kept one out."""
        found: list[tuple[float, int]] = []
        for i, value, size, _ in self.neighbours:
            if (i - end) * step > 0:
                return found, end, False
            used += size
            if used > limit:
                return found, i, True
            found.append((value, size))
        if self.stop is None or (self.stop - end) * step > 0:
            return found, end, False
        return found, self.stop, self.too_big


def _best_window(
    chunks: Sequence[Chunk],
    hit: int,
    own: float,
    sides: tuple[_Side, _Side],
    taken: Sequence[tuple[int, int]],
    limit: int,
) -> _Window:
    """The run of chunks around `hit` (whose chance is `own`) with the highest gain (see `select`), clear of the
    `taken` windows, at most `limit` characters (the anchor alone may be longer: it is shown as much as there is
    room for)."""
    lowest, highest = _room(len(chunks), hit, taken)
    anchor_size = len(chunks[hit].text) + 1
    before, first_looked, cut_before = sides[0].within(-1, lowest, limit, anchor_size)
    after, last_looked, cut_after = sides[1].within(1, highest, limit, anchor_size)
    cut = cut_before or cut_after
    best = (own, 0, 0, anchor_size)  # the anchor is shown whatever it costs: its size must not rank it
    left_value, left_size = own, anchor_size
    for left in range(len(before) + 1):
        if left:
            left_value, left_size = left_value + before[left - 1][0], left_size + before[left - 1][1]
            if left_size > limit:
                cut = True
                break
        value, size = left_value, left_size
        for right in range(len(after) + 1):
            if right:
                value, size = value + after[right - 1][0], size + after[right - 1][1]
                if size > limit:
                    cut = True
                    break
            if value >= best[0]:  # on a tie, the wider window
                best = (value, left, right, size)
    gain, left, right, size = best
    first, last = hit - left, hit + right
    shown_full = (i for i, _, _, full in (*sides[0].neighbours, *sides[1].neighbours) if full and first <= i <= last)
    return _Window(gain, first, last, {hit, *shown_full}, size, limit, cut, (first_looked, last_looked))


def _room(count: int, hit: int, taken: Sequence[tuple[int, int]]) -> tuple[int, int]:
    """The first and last chunk a window around `hit` may reach, short of the windows already taken."""
    lowest, highest = 0, count - 1
    for first, last in taken:
        if last < hit:
            lowest = max(lowest, last + 1)
        elif first > hit:
            highest = min(highest, first - 1)
    return lowest, highest


def heading_line(headings: Sequence[str], date: dt.date | None) -> str:
    """The line a snippet starts with, saying when and where (`[date · headings]` and a newline), or ""."""
    where = [date.isoformat()] if date else []
    where += [heading for heading in headings if not (date and heading == date.isoformat())]
    return f"[{' · '.join(where)}]\n" if where else ""


def snippet(texts: Sequence[str], headings: Sequence[str], date: dt.date | None) -> str:
    """Texts under their `heading_line`, at most SNIPPET_CHARS."""
    text = heading_line(headings, date) + "\n".join(texts)
    return text if len(text) <= SNIPPET_CHARS else text[: SNIPPET_CHARS - 1] + "…"
