"""A second look at the fused candidates: a small linear model over what each leg said and a few cheap signals.

Reciprocal-rank fusion only sees ranks. Some evidence is plain in the numbers it drops: how many of the
query's rare words a line holds, or its neighbours hold; how close its meaning is to the best match, or its
neighbour's is; whether the person the question names is the one speaking. The weights are fitted by
`bench/_memory_train.py` on two benchmarks of different shapes at once, LoCoMo's short turns and LongMemEval's
long chat sessions (a softmax over each query's candidates, checked on held-out halves of each), and the score
is a calibrated probability that the chunk holds what the query asks for.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
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
    "length",  # log of the characters of the unit (line, paragraph) the chunk is, or is a piece of
    "speaker",  # 1 when the query names the chunk's author (a chat-log line: `- Name:`, `**Name:**`, `<Name>`...)
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


# Fitted by bench/_memory_train.py, one per local embedder; "none" (its similarity weights are 0) also serves an
# index whose embedder has no model of its own: vectors then still count through the fused score. "e5" is still
# fitted on LoCoMo alone (embedding LongMemEval's haystacks with it takes hours on a 2-core machine).
MODELS: Mapping[str, LinearModel] = {
    "use": LinearModel(
        weights=(-0.8272, -0.4057, 3.931, 1.01, 1.859, 2.355, 1.482, 0.03892, 1.048, 1.931, -2.365),
        bias=-3.588,
        behind=1.697,
    ),
    "e5": LinearModel(
        weights=(-0.8291, -0.4235, 6.361, 1.208, 10.21, 1.933, 1.363, 0.403, 1.13, 2.192, 9.078),
        bias=-5.361,
        behind=1.411,
    ),
    "none": LinearModel(
        weights=(-0.5378, 0, 0, 0.6171, 0, 1.914, 1.067, -0.112, 0.736, 1.245, 0),
        bias=-2.521,
        behind=2.84,
    ),
}


def model_for(models: Mapping[str, LinearModel], embedder: str | None) -> LinearModel:
    """The model fitted for `embedder` (None: no vectors), or the one for no vectors."""
    return models.get(embedder or "none", models["none"])


_SPEAKER = re.compile(
    r"^\s*(?:[-*+]\s+|\d{1,3}[.)]\s+)?(?:>\s*)?(?:\[[^\]\n]{1,24}\]\s*)?"  # a bullet, a quote, a [time]
    r"(?:\*\*([^*:\n]{1,40}?):?\*\*:?|<([^>\n]{1,40})>|(\w[\w.'-]*(?: \w[\w.'-]*){0,2}?)(?::|\s+wrote:?))\s"
)


def speaker_of(text: str) -> str | None:
    """`alice` for a chunk written by Alice in any common chat-log form (`- Alice: ...`, `**Alice:** ...`,
    `Alice: ...`, `[10:02] <Alice> ...`, `> Alice wrote: ...`), else None."""
    match = _SPEAKER.match(text)
    name = next((group for group in match.groups() if group), None) if match else None
    return name.strip().lower() if name else None


@dataclass(frozen=True)
class ChunkTable:
    """Per-chunk facts the features need, by position in the index's chunk order."""

    postings: Mapping[str, npt.NDArray[np.intp]]  # index term -> the positions whose text holds it
    speakers: Sequence[str | None]
    log_lengths: Matrix
    files: npt.NDArray[np.intp]  # which file each position belongs to: neighbours are positions of the same file
    names: Speakers  # every speaker seen

    @classmethod
    def build(
        cls,
        terms: Sequence[Collection[str]],
        speakers: Sequence[str | None],
        lengths: Sequence[int],
        files: Sequence[int],
    ) -> ChunkTable:
        postings: dict[str, list[int]] = {}
        for position, held in enumerate(terms):
            for term in held:
                postings.setdefault(term, []).append(position)
        return cls(
            postings={term: np.array(found, dtype=np.intp) for term, found in postings.items()},
            speakers=speakers,
            log_lengths=np.log(np.asarray(lengths, dtype=np.float64) + 1),
            files=np.asarray(files, dtype=np.intp),
            names=Speakers.of(name for name in speakers if name),
        )

    def holding(self, term: str) -> npt.NDArray[np.bool_]:
        """A mask over positions: which chunks hold `term`."""
        mask = np.zeros(len(self.files), dtype=bool)
        mask[self.postings.get(term, np.zeros(0, dtype=np.intp))] = True
        return mask

    def neighbour(
        self, positions: npt.NDArray[np.intp], offset: int
    ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.bool_]]:
        """The positions `offset` away (clamped) and whether each is in the same file."""
        moved = np.clip(positions + offset, 0, max(len(self.files) - 1, 0))
        return moved, (moved == positions + offset) & (self.files[moved] == self.files[positions])


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
    at = np.asarray(candidates, dtype=np.intp)
    similarity = signals.similarity if signals.similarity is not None else np.zeros(len(table.files), np.float32)
    relative = (similarity - (similarity.max() if len(similarity) else 0.0)).astype(np.float64)
    before, has_before = table.neighbour(at, -1)
    after, has_after = table.neighbour(at, 1)
    around = np.stack([np.where(has_before, relative[before], -np.inf), np.where(has_after, relative[after], -np.inf)])
    best_around = around.max(axis=0)
    count = 1 + has_before.astype(int) + has_after.astype(int)
    window = (
        relative[at] + np.where(has_before, relative[before], 0) + np.where(has_after, relative[after], 0)
    ) / count
    total_weight = sum(signals.term_weights.values()) or 1.0
    coverage, near_coverage = np.zeros(len(at)), np.zeros(len(at))
    nearby = [table.neighbour(at, offset) for offset in (-2, -1, 1, 2)]
    for term, weight in signals.term_weights.items():
        held = table.holding(term)
        near = np.zeros(len(at), dtype=bool)
        for moved, same_file in nearby:
            near |= same_file & held[moved]
        coverage += weight * held[at]
        near_coverage += weight * (near & ~held[at])
    k = signals.rrf_k
    columns = (
        _places(signals.text, candidates, k),
        _places(signals.vector, candidates, k),
        relative[at],
        _places(signals.dated_text, candidates, k),
        np.where(np.isfinite(best_around), best_around, 0.0),
        coverage / total_weight,
        near_coverage / total_weight,
        table.log_lengths[at],
        [float(table.speakers[p] in signals.named) for p in candidates],
        [signals.fused.get(p, 0.0) for p in candidates],
        window,
    )
    return np.column_stack([np.asarray(column, dtype=np.float64) for column in columns]).reshape(len(at), len(FEATURES))


def _places(ranks: Mapping[int, int], positions: Sequence[int], k: float) -> Matrix:
    """k / (k + rank) of each position in one leg; 0 where the leg does not have it."""
    found = np.array([ranks.get(position, math.inf) for position in positions], dtype=np.float64)
    return k / (k + found)


_NAME_KEY = re.compile(r"[\w.'-]*")  # a name's first word, as the speaker pattern allows it
_WORD_START = re.compile(r"(?<!\w)\w")


@dataclass(frozen=True)
class Speakers:
    """Every speaker seen, filed by the name's first word. A chat log may hold thousands of "names" (any `Word:`
    that starts a line, in years of notes), so finding the ones a query names must cost what the query is long,
    not what the names are many."""

    by_first_word: Mapping[str, tuple[str, ...]]
    others: tuple[str, ...]  # names that do not start with a word character: tried one by one

    @classmethod
    def of(cls, names: Iterable[str]) -> Speakers:
        by_first_word: dict[str, list[str]] = {}
        others: list[str] = []
        for name in set(names):
            if _WORD_START.match(name):
                by_first_word.setdefault(_first_word(name, 0), []).append(name)
            else:
                others.append(name)
        return cls({word: tuple(found) for word, found in by_first_word.items()}, tuple(others))

    def named_in(self, query: str) -> frozenset[str]:
        """The speakers `query` names as whole words."""
        lowered = query.lower()
        found = {name for name in self.others if _names(lowered, name)}
        for start in _WORD_START.finditer(lowered):
            word = _first_word(lowered, start.start())
            for end in range(1, len(word) + 1):  # a name's first word is this word, or the start of it
                found.update(name for name in self.by_first_word.get(word[:end], ()) if _names(lowered, name))
        return frozenset(found)


def _first_word(text: str, at: int) -> str:
    found = _NAME_KEY.match(text, at)
    return found[0] if found else ""


def _names(lowered: str, name: str) -> bool:
    return name in lowered and re.search(rf"(?<!\w){re.escape(name)}(?!\w)", lowered) is not None
