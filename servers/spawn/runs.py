"""The run records: one JSON file shared by every spawn server on the state dir, each change a locked transaction.

A run belongs to the server process that accepted it (its `owner`), which runs it and announces its end. Each
process holds `owners/<token>.lock` while it lives, so a run whose owner's lock is free was cut off by a crash or a
restart: it is marked `interrupted` and announced by the next server to start.
"""

from __future__ import annotations

import logging
import secrets
import shutil
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, TypeVar

from filelock import FileLock, Timeout
from pydantic import BaseModel, Field

from hermitcrab.servers._common.origin import Origin, Principal
from hermitcrab.util.store import JsonFile

logger = logging.getLogger(__name__)
T = TypeVar("T")
Status = Literal["queued", "running", "ok", "failed", "timed_out", "killed", "interrupted"]
Runtime = Literal["agent", "cli"]
ACTIVE: frozenset[Status] = frozenset({"queued", "running"})
KEEP_FINISHED = 500


class Run(BaseModel):
    id: str
    session: str = Field(description="The session that spawned it: where its announcement goes.")
    depth: int = Field(description="1 for a child of a top-level session, 2 for a grandchild, ...")
    label: str
    task: str
    runtime: Runtime
    cli: str | None = None
    model: str | None = None
    timeout_s: float
    status: Status = "queued"
    owner: str
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    exit_code: int | None = None
    error: str | None = Field(default=None, description="Why it failed, in a sentence, when it did.")
    acked: bool = False
    principal: Principal = Field(default="owner", description="Whose rights the spawning turn had: the child's too.")
    origin: Origin | None = Field(default=None, description="The conversation it was spawned from, as the host said.")

    @property
    def active(self) -> bool:
        return self.status in ACTIVE

    @property
    def announced(self) -> bool:
        """Finished and acknowledged: nothing more will happen to it."""
        return not self.active and self.acked


class State(BaseModel):
    version: int = 1
    runs: dict[str, Run] = Field(default_factory=dict[str, Run])


def new_run_id(now: datetime) -> str:
    return now.strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3)


class Store:
    """`runs.json` in `directory`, plus `runs/<id>/` folders; this process's liveness lock under `owners/`."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.path = directory / "runs.json"
        self._file = JsonFile(self.path)
        (directory / "owners").mkdir(parents=True, exist_ok=True)
        (directory / "runs").mkdir(exist_ok=True)
        self.owner = secrets.token_hex(8)
        self._alive = FileLock(self._owner_lock(self.owner), thread_local=False)
        self._lock = FileLock(directory / "runs.json.lock", thread_local=False, timeout=30)
        self._mutex = threading.Lock()

    def run_dir(self, run_id: str) -> Path:
        return self.directory / "runs" / run_id

    def read(self) -> State:
        with self._mutex, self._lock:
            return self._load()

    def transact(self, change: Callable[[State], T]) -> T:
        """Apply `change` to the newest state and write it; if `change` raises, nothing is written."""
        with self._mutex, self._lock:
            state = self._load()
            result = change(state)
            self._file.save(state.model_dump(mode="json"))
            return result

    def adopt_orphans(self) -> list[str]:
        """Take over the runs of owners that are gone: active ones become interrupted, unacknowledged ones are
        announced from here. The ids of the runs taken over."""

        gone = self._gone_owners(self.read())
        if not gone:
            return []

        def adopt(state: State) -> list[str]:
            now = datetime.now(UTC)
            adopted: list[str] = []
            for run in state.runs.values():
                if run.owner in gone and (run.active or not run.acked):
                    if run.active:
                        run.status, run.finished_at = "interrupted", now
                        run.error = "the spawn server stopped (a restart or a crash) while this run was going"
                    run.owner = self.owner
                    adopted.append(run.id)
            return adopted

        return self.transact(adopt)

    def trim(self, state: State) -> None:
        """Forget the oldest announced runs beyond `KEEP_FINISHED`, with their folders."""
        done = sorted((run for run in state.runs.values() if run.announced), key=lambda run: run.created_at)
        for run in done[: max(0, len(done) - KEEP_FINISHED)]:
            del state.runs[run.id]
            shutil.rmtree(self.run_dir(run.id), ignore_errors=True)

    def open(self) -> None:
        """Hold this process's liveness lock: from now on other servers leave its runs alone."""
        self._alive.acquire()

    def close(self) -> None:
        self._alive.release()
        self._owner_lock(self.owner).unlink(missing_ok=True)

    def _gone_owners(self, state: State) -> set[str]:
        owners = {run.owner for run in state.runs.values() if run.active or not run.acked}
        return {owner for owner in owners if not self._owner_alive(owner)}

    def _owner_alive(self, owner: str) -> bool:
        if owner == self.owner:
            return True
        probe = FileLock(self._owner_lock(owner), thread_local=False, timeout=0)
        try:
            probe.acquire()
        except Timeout:
            return True
        probe.release()
        self._owner_lock(owner).unlink(missing_ok=True)
        return False

    def _owner_lock(self, owner: str) -> Path:
        return self.directory / "owners" / f"{owner}.lock"

    def _load(self) -> State:
        try:
            return State.model_validate(self._file.read())
        except FileNotFoundError:
            return State()
        except ValueError as exc:  # torn or not runs (a ValidationError): a hand edit or a disk fault
            aside = self._file.set_aside(f".corrupt-{datetime.now(UTC):%Y%m%dT%H%M%S}")
            logger.warning("%s was unreadable (%s); moved it to %s, starting with no runs", self.path, exc, aside.name)
            return State()
