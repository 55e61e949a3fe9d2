"""The first stage: for one query, a ranked list of chunks from each retriever (a leg).

BM25 over every chunk, cosine similarity over every chunk's vector, and, when the query names days ("in July
2023", "last Friday" is not a day), both again over the daily logs of those days only: a question about a date is
then answered from that date's notes even where other days use the same words more.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ..dates import ranges_in
from ..lexical import LexicalIndex
from ..vectors import VectorStore, top
from .table import ChunkTable


@dataclass(frozen=True)
class Legs:
    """What each leg found for one query: position -> rank in each list, and what re-scoring draws on."""

    text: Mapping[int, int]
    vector: Mapping[int, int]
    dated_text: Mapping[int, int]
    dated_vector: Mapping[int, int]
    similarity: npt.NDArray[np.float32] | None  # cosine of every position, or None without vectors
    term_weights: Mapping[str, float]  # query term -> IDF
    named: frozenset[str]  # speakers the query names

    def lists(self, kind: str = "hybrid") -> tuple[Mapping[int, int], ...]:
        """The ranked lists of one `kind` of leg ("text", "vector"), or of both ("hybrid")."""
        text, vector = (self.text, self.dated_text), (self.vector, self.dated_vector)
        return {"text": text, "vector": vector}.get(kind, text + vector)


@dataclass(frozen=True)
class Sources:
    """What the legs search, as the index holds it after a sync."""

    lexical: LexicalIndex
    vectors: VectorStore | None
    positions: Mapping[int, int]  # BM25 document key -> position
    table: ChunkTable
    paths: Sequence[str]  # by file number, as in `table.files`
    dates: Sequence[dt.date | None]  # by file number
    own_vector: npt.NDArray[np.bool_]  # by position: not a later piece sharing its line's vector


def find(query: str, sources: Sources, limit: int) -> Legs:
    """Every leg's best `limit` chunks for `query`."""
    weights = sources.lexical.term_weights(query)
    ranges = ranges_in(query)
    dated = [n for n, day in enumerate(sources.dates) if day and any(r.contains(day) for r in ranges)]
    scored = sources.vectors.scores(query) if sources.vectors is not None else None
    similarity = scored.cosines if scored is not None else None
    ranked = sources.own_vector & scored.embedded if scored is not None else sources.own_vector  # has its vector

    def text(files: list[int] | None) -> dict[int, int]:
        paths = None if files is None else [sources.paths[n] for n in files]
        hits = sources.lexical.search(weights, limit, paths)
        return _ranks(sources.positions[key] for key, _ in hits if key in sources.positions)

    def vector(files: list[int] | None) -> dict[int, int]:
        if similarity is None:
            return {}
        among = ranked if files is None else ranked & np.isin(sources.table.files, files)
        return _ranks(top(similarity, limit, among))

    return Legs(
        text=text(None),
        vector=vector(None),
        dated_text=text(dated) if dated else {},
        dated_vector=vector(dated) if dated else {},
        similarity=similarity,
        term_weights=weights,
        named=sources.table.names.named_in(query),
    )


def _ranks(positions: Iterable[int]) -> dict[int, int]:
    ranked: dict[int, int] = {}
    for position in positions:
        ranked.setdefault(position, len(ranked))
    return ranked
