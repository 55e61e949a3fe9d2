"""The job store: one JSON file, the source of truth, written atomically with the previous version kept as .bak.

Every change is a transaction under a lock file, so a second process on the same store can edit it safely; a
reader notices another process's writes by the file's identity (a new inode after every rename).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TypeVar

from filelock import FileLock
from pydantic import BaseModel, Field

from hermitcrab.util.files import Stamp
from hermitcrab.util.store import JsonFile

from .events import Item
from .jobs import Job

logger = logging.getLogger(__name__)
T = TypeVar("T")


class Outgoing(BaseModel):
    """An item to POST to a webhook, with where its retries stand."""

    item: Item
    url: str
    attempts: int = 0
    next_attempt_at: datetime


class State(BaseModel):
    version: int = 1
    jobs: dict[str, Job] = Field(default_factory=dict[str, Job])
    events: list[Item] = Field(default_factory=list[Item])
    outbox: list[Outgoing] = Field(default_factory=list[Outgoing])


class StoreUnreadable(RuntimeError):
    """Both the store and its kept previous version are missing or corrupt; nothing is overwritten."""


class Store:
    """`cron.json` in `directory`; `state` is the last version read or written by this process."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.path = directory / "cron.json"
        self.backup = directory / "cron.json.bak"
        self._file = JsonFile(self.path)
        self.warnings: list[str] = []
        self._lock = FileLock(directory / "cron.json.lock", thread_local=False, timeout=30)
        self._mutex = threading.Lock()
        self._seen: Stamp | None = None
        self.state = State()
        with self._lock:
            self._load()

    def refresh(self) -> bool:
        """Read the file again if another process replaced it; True when it did."""
        with self._mutex, self._lock:
            return self._load_if_changed()

    def transact(self, change: Callable[[State], T]) -> T:
        """Apply `change` to the newest state and write it; if `change` raises, nothing is written."""
        with self._mutex, self._lock:
            self._load_if_changed()
            try:
                result = change(self.state)
            except BaseException:
                self._seen = None  # the in-memory state may be half changed: read the file again next time
                raise
            self._write()
            return result

    def _load_if_changed(self) -> bool:
        if self._seen is not None and self._file.stamp() == self._seen:
            return False
        self._load()
        return True

    def _load(self) -> None:
        if not self.path.exists() and not self.backup.exists():
            self.state, self._seen = State(), None
            return
        try:
            self.state = State.model_validate(self._file.read())
        except (OSError, ValueError) as exc:  # missing beside its .bak, torn (Torn), or not jobs (ValidationError)
            self._recover(exc)
        self._seen = self._file.stamp()

    def _recover(self, error: OSError | ValueError) -> None:
        """Use the kept previous version, moving the bad file aside so the next write cannot rotate it into .bak."""
        reason = f"{type(error).__name__}: {error}".splitlines()[0]
        try:
            self.state = State.model_validate(JsonFile(self.backup).read())
        except (OSError, ValueError) as again:
            raise StoreUnreadable(
                f"{self.path} cannot be read ({reason}) and neither can {self.backup.name} ({type(again).__name__}); "
                "move both away to start with no jobs"
            ) from again
        if self.path.exists():
            self._file.set_aside(".corrupt")
        warning = f"{self.path.name} was unreadable ({reason}); recovered the previous version from {self.backup.name}"
        logger.warning("%s", warning)
        self.warnings.append(warning)
        self._write()

    def _write(self) -> None:
        if self.path.exists():
            link = self.backup.with_name(".cron.json.bak.tmp")
            link.unlink(missing_ok=True)
            os.link(self.path, link)  # a hard link: cron.json itself is never missing
            os.replace(link, self.backup)
        self._file.save(self.state.model_dump(mode="json"))
        self._seen = self._file.stamp()


class SchedulerLock:
    """Held for as long as this process fires jobs from the store; a second process finds it taken."""

    def __init__(self, directory: Path) -> None:
        self._lock = FileLock(directory / "scheduler.lock", thread_local=False)
        self._owner = directory / "scheduler.owner"

    def try_acquire(self) -> bool:
        if self._lock.is_locked:
            return True
        try:
            self._lock.acquire(timeout=0)
        except TimeoutError:
            return False
        self._owner.write_text(f"{os.getpid()}\n")
        return True

    def owner(self) -> str | None:
        """The process id that last took the lock, as it wrote it."""
        try:
            return self._owner.read_text().strip() or None
        except OSError:
            return None

    def release(self) -> None:
        if self._lock.is_locked:
            self._lock.release()
