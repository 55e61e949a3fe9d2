"""The memory index: keeps BM25 and vectors in step with the Markdown files, and answers searches.

Files are the source of truth; everything under the state directory can be deleted and rebuilt. A sync
compares each file's stat (cheap, done before every search) and re-reads only what changed; a file lock
serialises writers, so two processes sharing one state directory never corrupt it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from filelock import FileLock

from hermitcrab.util.store import JsonFile

from . import files as memfiles
from .chunking import Chunk, chunk_markdown
from .embed import Embedder, warm_up
from .lexical import LEXICAL_VERSION, LexicalIndex, analyze, doc_key
from .ranking import RankSettings
from .ranking.fusion import fuse
from .ranking.legs import Legs, Sources, find
from .ranking.rescoring import decay, features, model_for
from .ranking.table import ChunkTable, speaker_of
from .ranking.windows import Result, select
from .vectors import ProgressFactory, VectorStore

logger = logging.getLogger(__name__)
META_VERSION = 1
CONTEXT_UNTIL_CHARS = 400  # shorter chunks are embedded after the start of the chunk before them


@dataclass
class FileRecord:
    """What the index knows of one file."""

    stat: memfiles.FileStat
    digest: str
    chunks: list[Chunk]
    date: dt.date | None
    embed_texts: list[str] = field(default_factory=list[str])
    keys: list[str] = field(default_factory=list[str])
    terms: list[tuple[str, ...]] = field(default_factory=list[tuple[str, ...]])  # each chunk's distinct terms


class MemoryIndex:
    """BM25 + vector index over the memory files of one workspace."""

    def __init__(
        self,
        roots: memfiles.MemoryRoots,
        state: Path,
        embedder: Embedder | None,
        settings: RankSettings | None = None,
    ) -> None:
        self.roots = roots
        self.state = state
        self.embedder = embedder
        self.settings = settings or RankSettings()
        self.model = model_for(embedder is not None)  # re-scoring; a benchmark may swap it
        self._model_without_vectors = model_for(False)  # while none is embedded yet
        state.mkdir(parents=True, exist_ok=True)
        self._lock = FileLock(str(state / "index.lock"), timeout=120)
        self.files: dict[str, FileRecord] = {}
        # Files left out of the index: the stat they had when tried, and why.
        self.skipped: dict[str, tuple[memfiles.FileStat, str]] = {}
        self.warnings: list[str] = []
        self.last_error: str | None = None
        self.last_sync: float | None = None
        self.last_sync_seconds = 0.0
        self.last_sync_phases: dict[str, float] = {}  # seconds spent reading and chunking, on BM25, embedding...
        self._order: list[tuple[str, int]] = []  # (file, chunk index) by position
        self._positions: dict[int, int] = {}  # BM25 document key -> position
        self._chunks: dict[str, list[Chunk]] = {}
        self._dates: dict[str, dt.date | None] = {}
        self._decays: tuple[dt.date, RankSettings, npt.NDArray[np.float64]] | None = None  # see _decay
        self.table = ChunkTable.build([], [], [], [])  # per-position facts for re-scoring
        with self._lock:
            self.lexical = LexicalIndex(state / "tantivy")
            self.vectors = VectorStore(state / "vectors", embedder) if embedder else None
        self._sources = Sources(self.lexical, self.vectors, {}, self.table, [], [], np.zeros(0, dtype=bool))
        for part in (self.lexical, self.vectors):
            if part is not None and part.rebuilt:
                self.warnings.append(f"{part.directory.name} index was unreadable and has been rebuilt from the files")

    # -- keeping in step -------------------------------------------------------------------------------------

    def pending(self) -> tuple[dict[str, memfiles.FileStat], list[str]]:
        """What a sync would do: files new or changed on disk (with their stat), and files no longer there."""
        on_disk = memfiles.discover(self.roots)
        stale = {rel: stat for rel, stat in on_disk.items() if self._known(rel) != stat}
        gone = [rel for rel in (*self.files, *self.skipped) if rel not in on_disk]  # never in both
        return stale, gone

    def _known(self, rel: str) -> memfiles.FileStat | None:
        """The stat `rel` had when last indexed (or skipped); None for a file never seen."""
        if rel in self.skipped:
            return self.skipped[rel][0]
        record = self.files.get(rel)
        return record.stat if record is not None else None

    def sync(self, progress: ProgressFactory | None = None, embed: bool = True) -> None:
        """Bring the index up to date with the files; cheap when nothing changed. BM25 is searchable when it
        returns; so are the vectors with `embed` (the `index` command, benchmarks), while without it (a server)
        the chunks without a vector are left to `unembedded` and a background thread."""
        started = time.perf_counter()
        clock = _PhaseClock()  # its "read" includes finding what changed
        stale, gone = self.pending()
        if not stale and not gone and self.last_sync is not None:
            return
        if stale and self.vectors is not None and not self.vectors.cached:
            warm_up(self.embedder)  # a first index will embed: load a local model while the files are read
        with self._lock:
            meta = self._read_meta()
            indexed: dict[str, dict[str, Any]] = meta.get("files", {})
            for rel, stat in stale.items():
                record = self._load(rel, stat)
                if record is None:
                    self.files.pop(rel, None)
                else:
                    self.files[rel] = record
            for rel in gone:
                self.files.pop(rel, None)
                self.skipped.pop(rel, None)
            if self.unembedded():
                warm_up(self.embedder)  # or at least while BM25 indexes
            clock.lap("read")
            clear = meta.get("lexical") != self._lexical_signature() or (
                self.last_sync is None and self._lexical_mismatch(indexed)
            )
            done = {} if clear else {rel: entry.get("digest") for rel, entry in indexed.items()}
            rewrite = [rel for rel, record in self.files.items() if done.get(rel) != record.digest]
            drop = [rel for rel in done if rel not in self.files or rel in rewrite]
            if rewrite or drop or clear:
                self.lexical.replace(drop, [row for rel in rewrite for row in self._lexical_rows(rel)], clear=clear)
            clock.lap("bm25")
            self._write_meta()
        self.lexical.refresh()  # another process may have committed the documents of these files
        self._reorder()
        clock.lap("other")
        if embed:
            self._embed_all(progress)
            clock.lap("embed")
        self.last_sync = time.time()
        self.last_sync_seconds = time.perf_counter() - started
        self.last_sync_phases = clock.laps

    def _load(self, rel: str, stat: memfiles.FileStat) -> FileRecord | None:
        path = self.roots.absolute(rel)
        if escaped := self.roots.escape(path):
            self.skipped[rel] = (stat, escaped)
            return None
        try:
            text = memfiles.read_text(path)
        except memfiles.UnreadableFile as exc:
            self.skipped[rel] = (stat, str(exc))
            return None
        self.skipped.pop(rel, None)
        digest = hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()
        chunks = chunk_markdown(text)
        texts = _embed_texts(chunks, self.settings.embed_context_chars)
        keys = [hashlib.blake2b(t.encode("utf-8"), digest_size=16).hexdigest() for t in texts]
        terms = [tuple(dict.fromkeys(analyze(chunk.text))) for chunk in chunks]  # a tuple: a fifth of a set's size
        return FileRecord(stat, digest, chunks, memfiles.file_date(rel), texts, keys, terms)

    def _embed_all(self, progress: ProgressFactory | None) -> None:
        todo = self.unembedded()
        if not todo or self.vectors is None:
            return
        bar = progress(len(todo)) if progress else None
        try:
            self.vectors.embed(todo, bar)
        finally:
            if bar is not None:
                bar.close()

    def _lexical_mismatch(self, indexed: dict[str, dict[str, Any]]) -> bool:
        """On start: is the BM25 index missing, from another version or out of step with its meta?"""
        should_have = sum(int(entry.get("chunks", 0)) for entry in indexed.values())
        if self.lexical.count() == should_have:
            return False
        self.warnings.append("BM25 index did not match its record and has been rebuilt from the files")
        return True

    def _lexical_rows(self, rel: str) -> list[tuple[str, str, list[str], list[str]]]:
        """BM25 rows of a file's chunks: the terms of each chunk with its headings, and those of its neighbours
        (each chunk's text is analysed once here, not once more for every neighbour that quotes it; `_load` keeps
        only each chunk's distinct terms, for re-scoring, not these lists)."""
        chunks = self.files[rel].chunks
        terms = [analyze(chunk.text) for chunk in chunks]
        headings = {chunk.headings: analyze(" ".join(chunk.headings)) for chunk in chunks}
        span = self.settings.near_span
        rows: list[tuple[str, str, list[str], list[str]]] = []
        for i, chunk in enumerate(chunks):
            around = range(max(0, i - span), min(len(chunks), i + span + 1))
            near = [term for j in around if j != i for term in terms[j]]
            rows.append((_chunk_id(rel, i), rel, headings[chunk.headings] + terms[i], near))
        return rows

    def unembedded(self) -> list[tuple[str, str]]:
        """The `(key, text)` pairs of chunks whose vectors are not cached yet, those of the files changed last
        first and within a file its last chunks first: a note just appended, to a new file or behind an old import
        in the same one, gets its vector before that import's backlog."""
        if self.vectors is None:
            return []
        newest = sorted(self.files.values(), key=lambda record: -record.stat.mtime_ns)
        return self.vectors.missing(
            [item for r in newest for item in reversed(list(zip(r.keys, r.embed_texts, strict=True)))]
        )

    def _reorder(self) -> None:
        self._order = [(rel, i) for rel in sorted(self.files) for i in range(len(self.files[rel].chunks))]
        self._positions = {doc_key(_chunk_id(rel, i)): position for position, (rel, i) in enumerate(self._order)}
        self._chunks = {rel: record.chunks for rel, record in self.files.items()}
        self._dates = {rel: record.date for rel, record in self.files.items()}
        self._decays = None
        numbers = {rel: number for number, rel in enumerate(sorted(self.files))}
        self.table = ChunkTable.build(
            terms=[self.files[rel].terms[i] for rel, i in self._order],
            speakers=[speaker_of(self.files[rel].chunks[i].text) for rel, i in self._order],
            lengths=[self.files[rel].chunks[i].unit_chars for rel, i in self._order],
            files=[numbers[rel] for rel, _ in self._order],
        )
        keys = [self.files[rel].keys[i] for rel, i in self._order]
        if self.vectors is not None:
            self.vectors.use(keys)
        # A vector shared by the pieces of a long line ranks once in the vector leg, as the line's first piece.
        own_vector = np.fromiter(
            (not _continues_line(self.files[rel].chunks, i) for rel, i in self._order), dtype=bool, count=len(keys)
        )
        paths = sorted(self.files)
        dates = [self.files[rel].date for rel in paths]
        self._sources = Sources(self.lexical, self.vectors, self._positions, self.table, paths, dates, own_vector)

    def _read_meta(self) -> dict[str, Any]:
        try:
            meta = JsonFile(self.state / "meta.json").load("the index is built again from the files")
        except OSError:
            return {}
        return meta if meta.get("version") == META_VERSION else {}

    def _write_meta(self) -> None:
        entries = {rel: {"digest": r.digest, "chunks": len(r.chunks)} for rel, r in self.files.items()}
        meta = {"version": META_VERSION, "lexical": self._lexical_signature(), "files": entries}
        JsonFile(self.state / "meta.json").save(meta)

    def _lexical_signature(self) -> str:
        """What the BM25 documents depend on besides the files: a change means re-indexing them all."""
        return f"{LEXICAL_VERSION}/near{self.settings.near_span}"

    def reset(self) -> None:
        """Delete the derived state, for a rebuild from the files after it was found corrupt mid-run."""
        with self._lock:
            for name in ("tantivy", "vectors", "lancedb", "meta.json"):
                target = self.state / name
                if target.is_dir():
                    shutil.rmtree(target, ignore_errors=True)
                else:
                    target.unlink(missing_ok=True)

    # -- searching -------------------------------------------------------------------------------------------

    def search(
        self,
        query: str,
        limit: int,
        min_score: float = 0.0,
        today: dt.date | None = None,
        visible: Callable[[str], bool] | None = None,
    ) -> list[dict[str, object]]:
        """Up to `limit` result windows for `query`, best first, each as the dict `memory_search` returns.

        `visible` keeps only the files it accepts (for a caller who may not see them all). They are dropped after
        scoring and before the windows are chosen, so `limit` and the character budget count only what is shown."""
        legs = self.legs(query)
        candidates, scores = self.candidates(legs)
        decayed = scores * self._decay(today or dt.date.today())[np.asarray(candidates, dtype=np.intp)]
        best_first: list[int] = np.argsort(-decayed, kind="stable").tolist()
        ranked = [(*self._order[candidates[j]], float(decayed[j])) for j in best_first]
        if visible is not None:
            ranked = [entry for entry in ranked if visible(entry[0])]
        results: list[Result] = select(ranked, self._chunks, self._dates, limit, self.settings)
        return [
            result.as_dict(self._chunks[result.path], self.settings.neighbour_chars, legs.term_weights)
            for result in results
            if result.score >= min_score
        ]

    def _decay(self, today: dt.date) -> npt.NDArray[np.float64]:
        """Each position's recency weight as of `today` (kept until the day, the settings or the files change)."""
        if self._decays is None or self._decays[:2] != (today, self.settings):
            factors = {rel: decay(date, today, self.settings) for rel, date in self._dates.items()}
            weights = np.array([factors[rel] for rel, _ in self._order], dtype=np.float64)
            self._decays = (today, self.settings, weights)
        return self._decays[2]

    def legs(self, query: str) -> Legs:
        """What each retriever found for `query` (see `ranking.legs`)."""
        return find(query, self._sources, self.settings.candidates)

    def candidates(self, legs: Legs) -> tuple[list[int], npt.NDArray[np.float64]]:
        """Positions worth a look for a query (what its `legs` found) and their scores before decay: probabilities
        from the re-scoring model, or plain fusion scores when `settings.rescore` is False."""
        fused = fuse(legs.lists(self.settings.legs), self.settings.place_k)
        positions = list(fused)
        if not self.settings.rescore:
            return positions, np.array(list(fused.values()), dtype=np.float64)
        waiting = legs.similarity is None and self.embedder is not None  # no vector embedded yet
        model = self._model_without_vectors if waiting else self.model
        return positions, model.probability(features(positions, fused, legs, self.table, self.settings))

    def chunk(self, position: int) -> Chunk:
        rel, i = self._order[position]
        return self._chunks[rel][i]

    def chunk_count(self) -> int:
        return len(self._order)


class _PhaseClock:
    """Seconds spent in each named phase of a sync, for `memory_status` and the indexing benchmark."""

    def __init__(self) -> None:
        self.laps: dict[str, float] = {}
        self._last = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.laps[name] = round(self.laps.get(name, 0.0) + now - self._last, 3)
        self._last = now


def _chunk_id(rel: str, i: int) -> str:
    return f"{rel}\x1f{i}"


def _embed_texts(chunks: list[Chunk], before: int) -> list[str]:
    """What is embedded for each chunk. A long line cut into pieces is embedded once, as its first piece, and
    each later piece shares that vector: on LongMemEval's long chat turns this embeds 2.4 times less text for
    the same hybrid hit@6, since BM25 tells the pieces apart."""
    texts: list[str] = []
    for i in range(len(chunks)):
        texts.append(texts[-1] if _continues_line(chunks, i) else _embed_text(chunks, i, before))
    return texts


def _continues_line(chunks: list[Chunk], i: int) -> bool:
    """Whether chunk `i` is a later piece of the line the chunk before it is on."""
    return i > 0 and chunks[i].start_line == chunks[i - 1].end_line


def _embed_text(chunks: list[Chunk], i: int, before: int) -> str:
    """A chunk as embedded, after the start of the unit before it (what it answers) when it is short: a reply
    such as "Yes, last Friday!" needs its question, a long passage says what it is about itself (and context
    embedded with it would cost as much again)."""
    chunk = chunks[i]
    parts = [chunk.embed_text]
    if before > 0 and len(chunk.text) < CONTEXT_UNTIL_CHARS and i > 0 and chunks[i - 1].headings == chunk.headings:
        parts.insert(0, chunks[i - 1].text[:before])
    return "\n".join(parts)
