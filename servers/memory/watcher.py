"""Keeps the index fresh in the background: a watchfiles thread that syncs after Markdown files change.

Searches also sync first, so the watcher is about keeping that first search fast, not about correctness.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from watchfiles import Change, watch

logger = logging.getLogger(__name__)


def _is_markdown(change: Change, path: str) -> bool:
    return path.endswith(".md")


class Watcher:
    """Calls `on_change` (debounced) whenever a Markdown file under `paths` is added, edited or removed."""

    def __init__(self, paths: Sequence[Path], on_change: Callable[[], object], debounce_ms: int = 300) -> None:
        self._paths = [path for path in paths if path.exists()]
        self._on_change = on_change
        self._debounce_ms = debounce_ms
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="memory-watcher", daemon=True)

    def start(self) -> None:
        if self._paths:
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _run(self) -> None:
        for _changes in watch(
            *self._paths,
            watch_filter=_is_markdown,
            debounce=self._debounce_ms,
            stop_event=self._stop,
            rust_timeout=1000,
            yield_on_timeout=False,
        ):
            try:
                self._on_change()
            except Exception:  # the watcher must outlive one failed sync; searches retry and report it
                logger.exception("background memory sync failed")
