"""Chunk embeddings: persisted in an append-only file keyed by content hash (one file per embedder), searched in
memory, and filled in batch by batch while searches go on.

Memory collections are small (thousands to tens of thousands of chunks), where an exact dot product over a
numpy matrix answers in well under a millisecond; the file is the durable cache that makes a restart or an edit
cost only the embeddings of text never seen before. It is a header (magic and dimension) and then fixed-size
records (a 16-byte key, the float32 vector), each batch appended with one write and fsynced under a lock file, so
processes sharing the file take turns and each reads what the others appended: a record torn by a crash is cut
off before the next append or read. (A lancedb table did this before; importing lancedb and pyarrow cost an idle
server about 90 MB.)
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import struct
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import numpy.typing as npt
from filelock import FileLock

from hermitcrab.util.cpus import usable_cpus

from .embed import Embedder, Vectors

logger = logging.getLogger(__name__)
MAGIC = b"HCVEC1\n"
HEADER = struct.Struct("<7sI")
KEY_BYTES = 16
BATCH_S = 0.25  # a batch takes about this long: a search waiting for the model (for its query) waits no longer
# ...but holds at least a few texts per core: the local models spread a batch's texts over the cores, and one text
# at a time made e5 2.6 times slower a text on a busy machine (its threads wait for each other in every layer).
# Capped: the CPUs counted may be more than a CPU quota lets run, and a search's query waits for the batch in hand.
MIN_BATCH = min(4 * usable_cpus(), 16)
MAX_BATCH = 256
Mask = npt.NDArray[np.bool_]


class Progress(Protocol):
    """Told how many texts each batch embedded, and closed when the embedding stops (done or not)."""

    def advance(self, count: int) -> None: ...

    def close(self) -> None: ...


ProgressFactory = Callable[[int], Progress]  # called with how many texts are about to be embedded


@dataclass(frozen=True)
class Similarity:
    """A query's cosine to every chunk of the searchable set. A chunk whose vector is not in yet has the median of
    the others' cosines, so that it is neither favoured nor buried by the features that compare cosines."""

    cosines: Vectors
    embedded: Mask  # by position: the cosine is the chunk's own (rank only these in the vector leg)


@dataclass(frozen=True)
class _View:
    """The searchable set as searches see it, swapped whole when a batch lands. Rows not yet embedded are written in
    place, but only while `present` says they are not: a search reading an older view never looks at them."""

    keys: list[str]  # by position
    row_of: dict[str, int]  # distinct key -> its row
    matrix: Vectors | None  # one row per distinct key (None until the dimension is known)
    rows: npt.NDArray[np.intp]  # by position: its row
    present: Mask  # by row: embedded
    embedded: Mask  # by position: present[rows]


def _view(keys: list[str], row_of: dict[str, int], matrix: Vectors | None, present: Mask) -> _View:
    rows = np.array([row_of[key] for key in keys], dtype=np.intp)
    return _View(keys, row_of, matrix, rows, present, present[rows])


class VectorStore:
    """Embeddings of chunk texts by key for one embedder, with exact cosine search over a chosen key set."""

    def __init__(self, directory: Path, embedder: Embedder) -> None:
        self.embedder = embedder
        self.directory = directory
        self.rebuilt = False
        name = re.sub(r"[^A-Za-z0-9]+", "_", f"{embedder.name}_{embedder.model}").strip("_")[:80]
        self._path = directory / f"{name}.vec"
        self._file_lock = FileLock(str(directory / f"{name}.lock"), timeout=120, mode=0o600)
        self._guard = threading.Lock()  # the cache and the view, between the embedding thread and syncs
        self._cache: dict[str, Vectors] = {}
        self._dim: int = 0
        self._read: int = 0  # bytes of the file taken in so far
        self._view = _view([], {}, None, np.zeros(0, dtype=bool))
        try:
            directory.mkdir(parents=True, exist_ok=True)
            with self._file_lock:
                self._catch_up()
        except (OSError, ValueError) as exc:
            logger.warning("vector cache at %s is unreadable (%s); re-embedding from the files", directory, exc)
            shutil.rmtree(directory, ignore_errors=True)
            directory.mkdir(parents=True, exist_ok=True)
            self._cache.clear()
            self._dim, self._read = 0, 0
            self.rebuilt = True

    def _catch_up(self) -> None:
        """Take in the records appended since the last look (by this process or another), cutting off a torn one;
        called under the file lock, so no writer is half-way through a record."""
        try:
            size = self._path.stat().st_size
        except FileNotFoundError:
            self._read = 0
            return
        if size < self._read:  # the file was deleted and started again: read it all
            self._read = 0
        if size == self._read:
            return
        with self._path.open("rb") as handle:
            if self._read == 0:
                head = handle.read(HEADER.size)
                if len(head) < HEADER.size:
                    raise ValueError("the file is shorter than its header")
                magic, dim = HEADER.unpack(head)
                dim = int(dim)
                if magic != MAGIC or not 0 < dim <= 65_536 or (self._dim and dim != self._dim):
                    raise ValueError("the header is not a vector cache's")
                self._dim, self._read = dim, HEADER.size
            handle.seek(self._read)
            data = handle.read(size - self._read)
        record = KEY_BYTES + 4 * self._dim
        count = len(data) // record
        if count * record != len(data):  # a batch torn by a crash: keep the whole records
            os.truncate(self._path, self._read + count * record)
        self._read += count * record
        records = np.frombuffer(data, np.uint8, count * record).reshape(count, record)
        vectors = records[:, KEY_BYTES:].copy().view(np.float32)
        self._take([key.tobytes().hex() for key in records[:, :KEY_BYTES]], vectors)

    def missing(self, items: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
        """The `(key, text)` pairs not embedded yet, without duplicates, in their order."""
        return list({key: text for key, text in items if key not in self._cache}.items())

    def embed(
        self,
        todo: Sequence[tuple[str, str]],
        progress: Progress | None = None,
        until: Callable[[], bool] | None = None,
    ) -> None:
        """Embed and persist `todo`, the `(key, text)` pairs `missing` returned, in batches of about BATCH_S seconds,
        each searchable as soon as it is on disk; stop between batches once `until()` is true. Texts another
        process sharing the file embedded meanwhile are taken from it instead."""
        queue = list(todo)
        size = MIN_BATCH
        while queue and not (until is not None and until()):
            before = len(queue)
            with self._file_lock:
                self._catch_up()
            left = [item for item in queue if item[0] not in self._cache]
            batch, queue = left[:size], left[size:]
            if batch:
                began = time.perf_counter()
                matrix = self.embedder.passages([text for _, text in batch])
                self._add([key for key, _ in batch], matrix)
                per_text = (time.perf_counter() - began) / len(batch)
                size = max(MIN_BATCH, min(MAX_BATCH, 2 * len(batch), round(BATCH_S / max(per_text, 1e-6))))
            if progress is not None:
                progress.advance(before - len(queue))

    def _add(self, keys: list[str], matrix: Vectors) -> None:
        """Append a batch to the file (what no other process appended first) and to the searchable set."""
        with self._file_lock:
            self._catch_up()
            new = [row for row, key in enumerate(keys) if key not in self._cache]
            if not new:
                return
            if self._dim and matrix.shape[1] != self._dim:
                raise ValueError(f"the embedder gave {matrix.shape[1]} dimensions where the cache holds {self._dim}")
            keys, matrix = [keys[row] for row in new], np.ascontiguousarray(matrix[new], dtype=np.float32)
            key_bytes = np.frombuffer(b"".join(bytes.fromhex(key) for key in keys), np.uint8).reshape(len(keys), -1)
            records = np.concatenate([key_bytes, matrix.view(np.uint8).reshape(len(keys), -1)], axis=1).tobytes()
            fd = os.open(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                if self._read == 0:
                    os.write(fd, HEADER.pack(MAGIC, matrix.shape[1]))
                    self._dim, self._read = matrix.shape[1], HEADER.size
                os.write(fd, records)
                os.fsync(fd)
            finally:
                os.close(fd)
            self._read += len(records)
            self._take(keys, matrix)

    def _take(self, keys: list[str], vectors: Vectors) -> None:
        """Cache vectors and fill the rows of those in the searchable set, then swap in the view that shows them."""
        with self._guard:
            view = self._view
            matrix = view.matrix
            if matrix is None and len(keys):
                matrix = np.zeros((len(view.row_of), vectors.shape[1]), dtype=np.float32)
            present = view.present.copy()
            for key, vector in zip(keys, vectors, strict=True):
                row = view.row_of.get(key)
                if row is None or matrix is None:
                    self._cache[key] = vector
                    continue
                matrix[row] = vector
                self._cache[key] = matrix[row]
                present[row] = True
            self._view = _View(view.keys, view.row_of, matrix, view.rows, present, present[view.rows])

    def use(self, keys: Sequence[str]) -> None:
        """Make `keys` the searchable set, in this order; those not embedded yet show up as their vectors land."""
        with self._guard:
            if list(keys) == self._view.keys:
                return
            distinct = list(dict.fromkeys(keys))
            row_of = {key: row for row, key in enumerate(distinct)}
            held = [self._cache.get(key) for key in distinct]
            present = np.array([vector is not None for vector in held], dtype=bool)
            matrix = np.zeros((len(distinct), self._dim), dtype=np.float32) if self._dim else None
            if matrix is not None:
                for row, vector in enumerate(held):
                    if vector is not None:
                        matrix[row] = vector
                        self._cache[distinct[row]] = matrix[row]
            # vectors of texts no longer in the files stay cached for an undo, copied out of the arrays they came in
            for key, vector in self._cache.items():
                if key not in row_of and vector.base is not None:
                    self._cache[key] = vector.copy()
            self._view = _view(list(keys), row_of, matrix, present)

    def scores(self, query: str) -> Similarity | None:
        """Cosine similarity of `query` to every chunk of the searchable set, in its order; None while none of them
        has a vector (the search then goes as without vectors)."""
        view = self._view
        if view.matrix is None or not view.present.any():
            return None
        cosines = view.matrix @ self.embedder.query(query)
        if not view.present.all():
            cosines = np.where(view.present, cosines, np.median(cosines[view.present])).astype(np.float32)
        return Similarity(cosines[view.rows], view.embedded)

    @property
    def counts(self) -> tuple[int, int]:
        """How many of the searchable set's distinct texts have a vector, and how many it has."""
        present = self._view.present
        return int(present.sum()), len(present)

    @property
    def cached(self) -> int:
        return len(self._cache)


def top(scores: Vectors, limit: int, among: Mask | None = None) -> list[int]:
    """Positions of the `limit` highest scores (only where `among` is true, when given), best first."""
    if among is not None:
        scores = np.where(among, scores, -np.inf)
    limit = min(limit, len(scores) if among is None else int(among.sum()))
    if limit <= 0:
        return []
    best = np.argpartition(-scores, limit - 1)[:limit]
    return [int(i) for i in best[np.argsort(-scores[best])]]
