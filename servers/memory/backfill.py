"""The one thread that fills in vectors behind the index, so that no search waits for embedding.

A sync reads the files and indexes BM25, which a search needs at once; embedding a first import takes seconds to
minutes (a 490 KB chat history: 3.5 s with `use`, 76 s with `e5` on 2 cores). This thread syncs when woken and then
embeds the chunks still without a vector, batch by batch, each searchable as it lands (`VectorStore.embed`). A
wake while it embeds (a note appended, a file changed) ends the round after the batch in hand, and the next one
starts with the newest files, so a new note has its vector within a second or two even behind a long backlog.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from .vectors import Progress, ProgressFactory, VectorStore

logger = logging.getLogger(__name__)
Work = tuple[VectorStore, list[tuple[str, str]]]  # where to embed, and the `(key, text)` pairs still without vector


@dataclass(frozen=True)
class Pace:
    """How the embedding goes: whether a round is running, and its texts per second so far (None before a batch)."""

    embedding: bool
    per_second: float | None
    error: str | None  # the last round's failure, until a round succeeds


class Backfill:
    """Syncs (`sync`) and embeds what `work` returns, on one daemon thread, whenever `wake` is called, from the
    first server session's `start` to the last one's `stop`."""

    def __init__(
        self, sync: Callable[[], object], work: Callable[[], Work | None], progress: ProgressFactory | None = None
    ) -> None:
        self._sync = sync
        self._work = work
        self._progress = progress
        self._wake = threading.Event()
        self._sessions = 0  # the server's sessions running now: the thread runs while there is one
        self._sessions_lock = threading.Lock()
        self._stop = threading.Event()  # the running thread's own: one left behind by `stop` never sees it cleared
        self._thread: threading.Thread | None = None
        self._round: _Round | None = None  # the one running
        self._last_rate: float | None = None
        self._error: str | None = None

    def start(self) -> None:
        """A server session began (each in-process client's is one): start the thread with a first round, the first
        full sync then its embedding, unless another session has it running already."""
        with self._sessions_lock:
            self._sessions += 1
            self._wake.set()
            if self._sessions == 1:
                self._stop = stop = threading.Event()
                self._thread = threading.Thread(target=self._run, args=(stop,), name="memory-backfill", daemon=True)
                self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def stop(self) -> None:
        """A server session ended: when it was the last, stop after the batch in hand (waiting for it 10 s at most:
        the file's records survive being cut short)."""
        with self._sessions_lock:
            self._sessions -= 1
            if self._sessions > 0 or self._thread is None:
                return
            thread, self._thread = self._thread, None
            self._stop.set()
            self._wake.set()
        thread.join(timeout=10)

    @property
    def pace(self) -> Pace:
        running = self._round
        rate = running.rate if running is not None and running.rate is not None else self._last_rate
        return Pace(embedding=running is not None, per_second=rate, error=self._error)

    def _run(self, stop: threading.Event) -> None:
        while True:
            self._wake.wait()
            if stop.is_set():
                return
            self._wake.clear()
            try:
                self._fill()
                self._error = None
            except Exception as exc:  # the next wake (a search, a change) tries again; memory_status says why
                logger.warning(
                    "embedding memory chunks failed (%s: %s); a later search retries", type(exc).__name__, exc
                )
                self._error = f"{type(exc).__name__}: {exc}"

    def _fill(self) -> None:
        self._sync()
        work = self._work()
        if work is None or not work[1]:
            return
        store, todo = work
        self._round = running = _Round(self._progress(len(todo)) if self._progress else None)
        try:
            store.embed(todo, running, until=self._wake.is_set)
        finally:
            running.close()
            self._last_rate = running.rate or self._last_rate
            self._round = None


class _Round:
    """One round's count of texts embedded, for its pace, passed on to the progress bar, if any."""

    def __init__(self, bar: Progress | None) -> None:
        self._bar = bar
        self._began = time.monotonic()
        self._done = 0
        self.rate: float | None = None

    def advance(self, count: int) -> None:
        self._done += count
        self.rate = self._done / max(time.monotonic() - self._began, 1e-6)
        if self._bar is not None:
            self._bar.advance(count)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
