# pyarrow and lancedb ship without (complete) types: their values are unknown to pyright in this module only.
# pyright: reportUnknownMemberType=false, reportUnknownVariableType=false, reportUnknownArgumentType=false
"""Chunk embeddings: persisted in lancedb keyed by content hash (one table per embedder), searched in memory.

Memory collections are small (thousands to tens of thousands of chunks), where an exact dot product over a
numpy matrix answers in well under a millisecond; lancedb is the durable, append-only cache that makes a
restart or an edit cost only the embeddings of text never seen before.
"""

from __future__ import annotations

import logging
import re
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import lancedb
import numpy as np
import numpy.typing as npt
import pyarrow as pa  # pyright: ignore[reportMissingTypeStubs]  # ships no types

from .embed import Embedder, Vectors

logger = logging.getLogger(__name__)
BATCH = 32
Progress = Callable[[int], None]


class VectorStore:
    """Embeddings of chunk texts by key for one embedder, with exact cosine search over a chosen key set."""

    def __init__(self, directory: Path, embedder: Embedder) -> None:
        self.embedder = embedder
        self.directory = directory
        self.rebuilt = False
        self._table_name = "emb_" + re.sub(r"[^A-Za-z0-9]+", "_", f"{embedder.name}_{embedder.model}").strip("_")[:80]
        self._cache: dict[str, Vectors] = {}
        try:
            self._db = lancedb.connect(str(directory))
            self._load()
        except (OSError, ValueError, RuntimeError) as exc:  # lance and arrow errors derive from these
            logger.warning("vector cache at %s is unreadable (%s); re-embedding from the files", directory, exc)
            shutil.rmtree(directory, ignore_errors=True)
            self._db = lancedb.connect(str(directory))
            self._cache.clear()
            self.rebuilt = True
        self._keys: list[str] = []
        self._matrix: Vectors = np.zeros((0, 0), dtype=np.float32)

    def _load(self) -> None:
        if not self._exists():
            return
        table: Any = self._db.open_table(self._table_name).to_arrow()
        keys: list[str] = table.column("key").to_pylist()
        flat = np.asarray(table.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False), np.float32)
        matrix = flat.reshape(len(keys), len(flat) // max(len(keys), 1))
        for key, row in zip(keys, matrix, strict=True):
            self._cache[key] = row

    def _exists(self) -> bool:
        return self._table_name in self._db.list_tables().tables

    def missing(self, items: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
        """The `(key, text)` pairs not embedded yet, without duplicates."""
        return list({key: text for key, text in items if key not in self._cache}.items())

    def embed(self, todo: Sequence[tuple[str, str]], progress: Progress | None = None) -> None:
        """Embed and persist `todo`, the `(key, text)` pairs `missing` returned, in batches."""
        for start in range(0, len(todo), BATCH * 8):
            part = todo[start : start + BATCH * 8]
            rows: list[Vectors] = []
            for offset in range(0, len(part), BATCH):
                batch = part[offset : offset + BATCH]
                rows.append(self.embedder.passages([text for _, text in batch]))
                if progress is not None:
                    progress(len(batch))
            matrix = np.concatenate(rows)
            self._persist([key for key, _ in part], matrix)
            for (key, _), row in zip(part, matrix, strict=True):
                self._cache[key] = row

    def _persist(self, keys: list[str], matrix: Vectors) -> None:
        flat: Any = pa.array(matrix.astype(np.float32).ravel(), type=pa.float32())
        vectors: Any = pa.FixedSizeListArray.from_arrays(flat, matrix.shape[1])
        data: Any = pa.table({"key": pa.array(keys, type=pa.string()), "vector": vectors})
        if self._exists():
            self._db.open_table(self._table_name).add(data)
        else:
            self._db.create_table(self._table_name, data=data)

    def use(self, keys: Sequence[str]) -> None:
        """Make `keys` (all embedded) the searchable set, in this order."""
        if list(keys) == self._keys:
            return
        self._keys = list(keys)
        self._matrix = np.stack([self._cache[key] for key in keys]) if keys else np.zeros((0, 0), dtype=np.float32)

    def scores(self, query: str) -> Vectors:
        """Cosine similarity of `query` to every chunk of the searchable set, in its order."""
        if not self._keys:
            return np.zeros(0, dtype=np.float32)
        return self._matrix @ self.embedder.query(query)

    @property
    def cached(self) -> int:
        return len(self._cache)


def top(scores: Vectors, limit: int, among: npt.NDArray[np.bool_] | None = None) -> list[int]:
    """Positions of the `limit` highest scores (only where `among` is true, when given), best first."""
    if among is not None:
        scores = np.where(among, scores, -np.inf)
    limit = min(limit, len(scores) if among is None else int(among.sum()))
    if limit <= 0:
        return []
    best = np.argpartition(-scores, limit - 1)[:limit]
    return [int(i) for i in best[np.argsort(-scores[best])]]
