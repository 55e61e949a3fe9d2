"""Chunk embeddings: persisted in an append-only file keyed by content hash (one file per embedder), searched in
memory.

Memory collections are small (thousands to tens of thousands of chunks), where an exact dot product over a
numpy matrix answers in well under a millisecond; the file is the durable cache that makes a restart or an edit
cost only the embeddings of text never seen before. It is a header (magic and dimension) and then fixed-size
records (a 16-byte key, the float32 vector), each batch appended with one write and fsynced: a record torn by a
crash is cut off on the next start. (A lancedb table did this before; importing lancedb and pyarrow cost an idle
server about 90 MB.)
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import struct
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from .embed import Embedder, Vectors

logger = logging.getLogger(__name__)
BATCH = 32
MAGIC = b"HCVEC1\n"
HEADER = struct.Struct("<7sI")
KEY_BYTES = 16
Progress = Callable[[int], None]


class VectorStore:
    """Embeddings of chunk texts by key for one embedder, with exact cosine search over a chosen key set."""

    def __init__(self, directory: Path, embedder: Embedder) -> None:
        self.embedder = embedder
        self.directory = directory
        self.rebuilt = False
        name = re.sub(r"[^A-Za-z0-9]+", "_", f"{embedder.name}_{embedder.model}").strip("_")[:80]
        self._path = directory / f"{name}.vec"
        self._cache: dict[str, Vectors] = {}
        try:
            directory.mkdir(parents=True, exist_ok=True)
            self._load()
        except (OSError, ValueError) as exc:
            logger.warning("vector cache at %s is unreadable (%s); re-embedding from the files", directory, exc)
            shutil.rmtree(directory, ignore_errors=True)
            directory.mkdir(parents=True, exist_ok=True)
            self._cache.clear()
            self.rebuilt = True
        self._keys: list[str] = []
        # the searchable set's distinct vectors, and which of them each of its keys has: the pieces of a long
        # line share one vector, and the rows the cache holds become the matrix's, so nothing is held twice
        self._matrix: Vectors = np.zeros((0, 0), dtype=np.float32)
        self._rows: npt.NDArray[np.intp] = np.zeros(0, dtype=np.intp)

    def _load(self) -> None:
        if not self._path.exists():
            return
        data = self._path.read_bytes()
        if len(data) < HEADER.size:
            raise ValueError("the file is shorter than its header")
        magic, dim = HEADER.unpack_from(data)
        if magic != MAGIC or not 0 < dim <= 65_536:
            raise ValueError("the header is not a vector cache's")
        size = KEY_BYTES + 4 * dim
        count = (len(data) - HEADER.size) // size
        if HEADER.size + count * size != len(data):  # a batch torn by a crash: keep the whole records
            os.truncate(self._path, HEADER.size + count * size)
        records = np.frombuffer(data, np.uint8, count * size, HEADER.size).reshape(count, size)
        vectors = records[:, KEY_BYTES:].copy().view(np.float32)
        for row, key in enumerate(records[:, :KEY_BYTES]):
            self._cache[key.tobytes().hex()] = vectors[row]

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
        rows = np.ascontiguousarray(matrix, dtype=np.float32)
        keys_bytes = np.frombuffer(b"".join(bytes.fromhex(key) for key in keys), np.uint8).reshape(len(keys), -1)
        records = np.concatenate([keys_bytes, rows.view(np.uint8).reshape(len(keys), -1)], axis=1)
        fresh = not self._path.exists()
        with self._path.open("ab") as handle:
            if fresh:
                handle.write(HEADER.pack(MAGIC, rows.shape[1]))
            handle.write(records.tobytes())
            handle.flush()
            os.fsync(handle.fileno())

    def use(self, keys: Sequence[str]) -> None:
        """Make `keys` (all embedded) the searchable set, in this order."""
        if list(keys) == self._keys:
            return
        distinct = list(dict.fromkeys(keys))
        row_of = {key: row for row, key in enumerate(distinct)}
        matrix = np.stack([self._cache[key] for key in distinct]) if keys else np.zeros((0, 0), dtype=np.float32)
        self._matrix, self._rows = matrix, np.array([row_of[key] for key in keys], dtype=np.intp)
        self._cache.update(zip(distinct, matrix, strict=True))
        # vectors of texts no longer in the files stay cached for an undo, copied out of the arrays they came in
        for key, vector in self._cache.items():
            if key not in row_of and vector.base is not None:
                self._cache[key] = vector.copy()
        self._keys = list(keys)

    def scores(self, query: str) -> Vectors:
        """Cosine similarity of `query` to every chunk of the searchable set, in its order."""
        if not self._keys:
            return np.zeros(0, dtype=np.float32)
        return (self._matrix @ self.embedder.query(query))[self._rows]

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
