"""The third stage: every candidate scored again, by a small linear model over a few standardised features.

Fusion only sees ranks. Some evidence is plain in what it drops: how many of the query's rare words a chunk holds,
or its neighbours hold; how close its meaning is to the best match, or its neighbour's is; whether the person the
question names is the one speaking. Each feature says one thing, so each weight reads as "one standard deviation
more of this is worth so much". Similarities are measured in standard deviations of the query's cosines to every
chunk, not in cosine: embedders spread their cosines differently (e5's lie within a few hundredths, `use`'s over
tenths), and so one model serves any embedder. The weights are data (`models/hybrid.json` and, for an index without
vectors, `models/bm25.json`, each with its provenance), fitted by `bench/_memory_train.py` on a training split and
chosen on a validation split; a logistic curve turns the score into a calibrated probability that the chunk holds
what the query asks for. Dated daily logs then lose a little of it with age (`decay`).
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from .legs import Legs
from .settings import RankSettings
from .table import ChunkTable, Matrix

MODELS = Path(__file__).parent / "models"  # package data, next to this module
FEATURES = (
    "fused",  # the legs' reciprocal-rank fusion: 1 for a first place in every leg, 0 when in none
    "dated_text",  # place in the BM25 leg over the days the query names, as k / (k + rank); 0 when absent
    "similarity",  # cosine to the query less the best cosine of any chunk, in standard deviations of all cosines
    "neighbour_similarity",  # the better of the chunks just before and after, likewise
    "coverage",  # share of the query's term weight (IDF) found in the chunk
    "near_coverage",  # share found only in the chunks around it (`near_span` on each side)
    "length",  # log of the characters of the unit (line, paragraph) the chunk is, or is a piece of
    "speaker",  # 1 when the query names the chunk's author (a chat-log line: `- Name:`, `**Name:**`, `<Name>`...)
)


@dataclass(frozen=True)
class LinearModel:
    """Weights over standardised features rank one query's candidates; a logistic curve of that score and of
    its gap to the best candidate's makes it a probability (the same score means more when nothing else comes
    close). `mean` and `scale` are the training data's, not fitted: they only put the features in one unit."""

    weights: Mapping[str, float]
    mean: Mapping[str, float]
    scale: Mapping[str, float]
    bias: float
    behind: float

    def probability(self, rows: Matrix) -> Matrix:
        """The calibrated chance, per row of FEATURES, that the chunk holds what the query asks for."""
        weights = np.array([self.weights.get(name, 0.0) / self.scale.get(name, 1.0) for name in FEATURES])
        means = np.array([self.mean.get(name, 0.0) for name in FEATURES])
        raw = (rows - means) @ weights
        gap = raw - raw.max() if len(raw) else raw
        return 1.0 / (1.0 + np.exp(-(raw + self.behind * gap + self.bias)))

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LinearModel:
        """The model in `models/*.json`'s shape: per feature its weight, mean and scale; a bias; `behind`."""
        features: Mapping[str, Mapping[str, float]] = data["features"]
        unknown = set(features) - set(FEATURES)
        if unknown:
            raise ValueError(f"the model names features this version does not have: {sorted(unknown)}")
        return cls(
            weights={name: float(entry["weight"]) for name, entry in features.items()},
            mean={name: float(entry["mean"]) for name, entry in features.items()},
            scale={name: float(entry["scale"]) for name, entry in features.items()},
            bias=float(data["bias"]),
            behind=float(data["behind"]),
        )


def model_for(vectors: bool) -> LinearModel:
    """The model for an index with vectors (any embedder: fitted with `use`'s), or for one without."""
    return _model("hybrid" if vectors else "bm25")


@cache
def _model(name: str) -> LinearModel:
    text = (MODELS / f"{name}.json").read_text(encoding="utf-8")
    return LinearModel.from_json(json.loads(text))


def features(
    candidates: Sequence[int], fused: Mapping[int, float], legs: Legs, table: ChunkTable, settings: RankSettings
) -> Matrix:
    """One row of FEATURES per candidate position (`fused`: their fusion scores); without vectors the similarity
    features are 0."""
    at = np.asarray(candidates, dtype=np.intp)
    similarity = legs.similarity if legs.similarity is not None else np.zeros(len(table.files), np.float32)
    spread = float(similarity.std()) if len(similarity) else 0.0
    relative = (similarity - (similarity.max() if len(similarity) else 0.0)).astype(np.float64) / (spread or 1.0)
    before, has_before = table.neighbour(at, -1)
    after, has_after = table.neighbour(at, 1)
    around = np.stack([np.where(has_before, relative[before], -np.inf), np.where(has_after, relative[after], -np.inf)])
    best_around = around.max(axis=0)
    total_weight = sum(legs.term_weights.values()) or 1.0
    coverage, near_coverage = np.zeros(len(at)), np.zeros(len(at))
    span = settings.near_span
    nearby = [table.neighbour(at, offset) for offset in range(-span, span + 1) if offset]
    for term, weight in legs.term_weights.items():
        held = table.holding(term)
        near = np.zeros(len(at), dtype=bool)
        for moved, same_file in nearby:
            near |= same_file & held[moved]
        coverage += weight * held[at]
        near_coverage += weight * (near & ~held[at])
    k = settings.place_k
    columns = (
        [fused.get(p, 0.0) for p in candidates],
        _places(legs.dated_text, candidates, k),
        relative[at],
        np.where(np.isfinite(best_around), best_around, 0.0),
        coverage / total_weight,
        near_coverage / total_weight,
        table.log_lengths[at],
        [float(table.speakers[p] in legs.named) for p in candidates],
    )
    return np.column_stack([np.asarray(column, dtype=np.float64) for column in columns]).reshape(len(at), len(FEATURES))


def _places(ranks: Mapping[int, int], positions: Sequence[int], k: float) -> Matrix:
    """k / (k + rank) of each position in one leg; 0 where the leg does not have it."""
    found = np.array([ranks.get(position, math.inf) for position in positions], dtype=np.float64)
    return k / (k + found)


def decay(date: dt.date | None, today: dt.date, settings: RankSettings) -> float:
    """Gentle recency weight for dated daily logs: 1 today, falling towards `decay_floor`; undated files: 1."""
    if date is None or settings.half_life_days is None:
        return 1.0
    age = max((today - date).days, 0)
    return settings.decay_floor + (1 - settings.decay_floor) * 0.5 ** (age / settings.half_life_days)
