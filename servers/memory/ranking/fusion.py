"""The second stage: the legs' lists become one set of candidates.

Re-scoring looks at every candidate anyway, so the union of the legs is all it needs; reciprocal-rank fusion
(each list counting alike) orders them when there is no model to re-score them (`RankSettings.rescore` False, for
comparisons), and is the tie-break of the union's order.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

Key = TypeVar("Key", bound=Hashable)


def fuse(lists: Sequence[Mapping[Key, int]], k: float) -> dict[Key, float]:
    """Reciprocal-rank fusion of ranked lists (key -> rank), scaled so a first place in every non-empty list
    scores 1, best first."""
    used = [ranks for ranks in lists if ranks]
    scores: dict[Key, float] = {}
    for ranks in used:
        for key, rank in ranks.items():
            scores[key] = scores.get(key, 0.0) + (k + 1) / (k + 1 + rank) / len(used)
    return dict(sorted(scores.items(), key=lambda item: -item[1]))
