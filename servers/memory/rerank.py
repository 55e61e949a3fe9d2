"""A second look at the fused candidates: a small linear model over what each leg said and a few cheap signals.

Reciprocal-rank fusion only sees ranks. Some evidence is plain in the numbers it drops: how many of the
query's rare words a line holds, or its neighbours hold; how close its meaning is to the best match, or its
neighbour's is; whether the person the question names is the one speaking. The weights are fitted by
`bench/_memory_train.py` on LoCoMo (a softmax over each query's candidates, checked on held-out halves),
and the score is a calibrated probability that the chunk holds what the query asks for.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

Matrix = npt.NDArray[np.float64]
FEATURES = (
    "text",  # place in the BM25 leg, as k / (k + rank); 0 when absent
    "vector",  # place in the vector leg, likewise
    "similarity",  # cosine to the query minus the best cosine of any chunk
    "dated_text",  # place in the BM25 leg over the days the query names
    "neighbour_similarity",  # the better cosine of the chunks just before and after, minus the best
    "coverage",  # share of the query's term weight (IDF) found in the chunk
    "near_coverage",  # share found only in the two chunks on each side
    "length",  # log of the chunk's characters
    "speaker",  # 1 when the chunk is a `- Name: ...` line and the query names Name
    "fused",  # the reciprocal-rank fusion score
    "window_similarity",  # the mean cosine of the chunk and its two neighbours, minus the best
)


@dataclass(frozen=True)
class LinearModel:
    """A weighted sum of the features ranks the candidates; a logistic curve turns it into a probability.

    The curve also weighs how far a candidate is behind the query's best one: the same score means more
    when nothing else comes close.
    """

    weights: tuple[float, ...]
    bias: float
    behind: float = 0.0

    def probability(self, rows: Matrix) -> Matrix:
        """The calibrated chance, per row, that the chunk holds what the query asks for (rows: one query's)."""
        raw = rows @ np.array(self.weights)
        gap = raw - raw.max() if len(raw) else raw
        return 1.0 / (1.0 + np.exp(-(raw + self.behind * gap + self.bias)))


# Both fitted by bench/_memory_train.py (with the default embedder, and with none).
MODEL = LinearModel(
    weights=(-0.7168, -0.8368, 3.011, 1.142, 1.745, 2.132, 1.499, 0.4461, 1.037, 1.982, 1.597),
    bias=-5.177,
    behind=1.521,
)
TEXT_MODEL = LinearModel(  # for an index without vectors
    weights=(-0.6176, 0, 0, 0.8123, 0, 2.194, 1.405, 0.2447, 0.9219, 1.663, 0),
    bias=-5.173,
    behind=1.923,
)
_SPEAKER = re.compile(r"^\s*[-*+]\s+([^:\n]{1,40}?):\s")


def speaker_of(text: str) -> str | None:
    """`alice` for a chunk written as `- Alice: ...` (a chat log or attributed note), else None."""
    match = _SPEAKER.match(text)
    return match[1].strip().lower() if match else None


@dataclass(frozen=True)
class ChunkTable:
    """Per-chunk facts the features need, by position in the index's chunk order."""

    terms: Sequence[frozenset[str]]
    speakers: Sequence[str | None]
    lengths: Sequence[int]
    files: Sequence[int]  # which file each position belongs to; neighbours are positions of the same file
    names: frozenset[str]  # every speaker seen

    def neighbours(self, position: int, span: int) -> list[int]:
        file = self.files[position]
        around = range(position - span, position + span + 1)
        return [p for p in around if p != position and 0 <= p < len(self.files) and self.files[p] == file]


@dataclass(frozen=True)
class Signals:
    """What the search found out about one query, for every candidate to draw on."""

    text: Mapping[int, int]  # position -> rank in each leg
    vector: Mapping[int, int]
    dated_text: Mapping[int, int]
    fused: Mapping[int, float]
    similarity: npt.NDArray[np.float32] | None  # cosine of every position, or None without vectors
    term_weights: Mapping[str, float]  # query term -> IDF
    named: frozenset[str]  # speakers the query names
    rrf_k: float


def features(candidates: Sequence[int], signals: Signals, table: ChunkTable) -> Matrix:
    """One row of FEATURES per candidate position; without vectors the similarity features are 0."""
    similarity = signals.similarity if signals.similarity is not None else np.zeros(len(table.files), np.float32)
    relative = similarity - (similarity.max() if len(similarity) else 0.0)
    weights = signals.term_weights
    total_weight = sum(weights.values()) or 1.0
    k = signals.rrf_k
    rows = np.zeros((len(candidates), len(FEATURES)))
    for row, position in enumerate(candidates):
        terms = table.terms[position]
        around = table.neighbours(position, 1)
        near = set[str]().union(*(table.terms[p] for p in table.neighbours(position, 2))) - terms
        rows[row] = (
            _place(signals.text, position, k),
            _place(signals.vector, position, k),
            relative[position],
            _place(signals.dated_text, position, k),
            max((relative[p] for p in around), default=0.0),
            sum(weight for term, weight in weights.items() if term in terms) / total_weight,
            sum(weight for term, weight in weights.items() if term in near) / total_weight,
            math.log(table.lengths[position] + 1),
            float(table.speakers[position] in signals.named),
            signals.fused.get(position, 0.0),
            (relative[position] + sum(relative[p] for p in around)) / (1 + len(around)),
        )
    return rows


def _place(ranks: Mapping[int, int], position: int, k: float) -> float:
    rank = ranks.get(position)
    return 0.0 if rank is None else k / (k + rank)


def named_speakers(query: str, names: frozenset[str]) -> frozenset[str]:
    """The speakers among `names` that `query` names as whole words."""
    lowered = query.lower()
    return frozenset(name for name in names if re.search(rf"(?<!\w){re.escape(name)}(?!\w)", lowered))
