"""The constants of the ranking stages. None of them is fitted: each is a size or a shape, chosen once and
explained where it is used; the fitted numbers are the re-scoring model's (`models/*.json`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RankSettings:
    """Sizes and shapes of the search. For comparisons, `legs` "text" or "vector" keeps one kind of leg, and
    `rescore` False ranks by fusion alone."""

    legs: str = "hybrid"
    candidates: int = 150  # from each leg
    place_k: float = 10.0  # a place in a leg counts k / (k + rank): a small k trusts the first places more
    rescore: bool = True
    anchors: int = 40  # windows are centred on one of this many best chunks
    window_chars: int = 660  # a window's size at most (its snippet adds a date line, within SNIPPET_CHARS)
    result_chars: int = 500  # the first n results together show at most n times this many characters
    char_cost: float = 1.5e-5  # chance a shown character must earn: a window stops where neighbours stop mattering
    neighbour_chars: int = 100  # neighbours are shown clipped to this
    full_share: float = 1.0  # neighbours at least this likely, relative to the anchor, are shown in full
    near_span: int = 2  # how many chunks on each side count as a chunk's context (BM25 and coverage)
    embed_context_chars: int = 200  # a short chunk is embedded after the start of the one before it
    half_life_days: float | None = 60.0  # gentle: an old log loses at most about one place to a new one
    decay_floor: float = 0.9
