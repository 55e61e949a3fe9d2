"""Dead letters: the server items and messages whose turn or delivery kept failing, set aside for the owner.

Without them a poison item (one whose turn fails every time) comes back forever: its server is never told it was
handled, so every restart replays it, and every replay costs model calls. The host counts an item's failures in
`Attempts` (a file, so a crash loop is counted too), waits `backoff_s` between tries and after `MAX_ATTEMPTS` moves
the item to `DeadLetters`. The owner sees them (`hermitcrab deadletters list`, doctor, /status) and drops one or asks
for a retry, which the running host notices by polling `stamp()` and collects with `take_retries()`.

Both stores are JSON files in `state/deadletters/` (mode 0600, folder 0700), rewritten atomically under a file lock,
so the CLI works while `hermitcrab run` runs. A missing file is empty. A torn one reads as empty, and a malformed
letter is left out, each with a warning; such a file is kept beside as `<name>.torn` when it is next rewritten, so
what it held is never lost silently.
"""

from __future__ import annotations

import json
import logging
import secrets
import time
from collections.abc import Callable, Generator, Iterable, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

from filelock import FileLock

from hermitcrab.util.files import Stamp
from hermitcrab.util.store import JsonFile, Torn

logger = logging.getLogger(__name__)

FOLDER = "deadletters"
"""Under the state folder (`Settings.state`): where both stores live."""
MAX_ATTEMPTS = 3  # a transient failure gets two more chances; a poison item costs at most three turns
SUMMARY_CHARS = 200
REASON_CHARS = 500
BACKOFF_FIRST_S = 5.0  # long enough for a restarted server or a provider's brief 5xx to pass
BACKOFF_FACTOR = 4.0  # 5 s, 20 s, 80 s: quick for a blip, yet a real outage is not hammered
BACKOFF_MAX_S = 300.0  # a host configured for more attempts still tries every five minutes at least
STALE_S = 7 * 86400.0  # a count not bumped for a week is an item that went away (or succeeded unseen): forget it

Kind = Literal["server-item", "message"]
KINDS: tuple[Kind, ...] = ("server-item", "message")
_T = TypeVar("_T")


@dataclass(frozen=True)
class Letter:
    """One item that ended. `key` is its source's own id (`<server>:<item id>`, `discord:<message id>`), `id` the
    short one the owner types; `event` is whatever the host needs to rebuild the event, kept as given."""

    id: str
    key: str
    kind: Kind
    source: str
    session: str
    summary: str
    reason: str
    attempts: int
    created: float
    announced: bool = False
    retry: bool = False
    event: dict[str, Any] = field(default_factory=dict[str, Any])


class DeadLetters:
    """The items that ended, shared between `hermitcrab run` (adds, announces, resubmits) and the CLI."""

    def __init__(self, root: Path, clock: Callable[[], float] = time.time) -> None:
        self._file = _SharedFile(root / "deadletters.json")
        self._clock = clock

    @property
    def path(self) -> Path:
        return self._file.path

    def add(
        self,
        *,
        key: str,
        kind: Kind,
        source: str,
        session: str,
        text: str,
        reason: str,
        attempts: int,
        event: Mapping[str, Any],
    ) -> Letter:
        """Set an item aside. One already there under `key` is updated in place: it keeps its id (the one the owner
        may have copied), its `created` and whether the owner was told, so a replayed item never shows up twice.

        `event` is copied through JSON here, so one that cannot be stored fails now, not halfway through a write.
        """
        stored: dict[str, Any] = json.loads(json.dumps(dict(event)))
        with self._change() as letters:
            old = next((letter for letter in letters if letter.key == key), None)
            letter = Letter(
                id=old.id if old else _unused_id(letters),
                key=key,
                kind=kind,
                source=source,
                session=session,
                summary=_one_line(text, SUMMARY_CHARS),
                reason=_one_line(reason, REASON_CHARS),
                attempts=attempts,
                created=old.created if old else self._clock(),
                announced=old.announced if old else False,
                retry=old.retry if old else False,
                event=stored,
            )
            if old is None:
                letters.append(letter)
            else:
                letters[letters.index(old)] = letter
            return letter

    def list(self) -> list[Letter]:
        """Oldest first."""
        return sorted(self._read()[0], key=lambda letter: letter.created)

    def get(self, id: str) -> Letter | None:
        wanted = _normal(id)
        return next((letter for letter in self._read()[0] if letter.id == wanted), None)

    def drop(self, id: str) -> Letter:
        """Forget the letter for good; LookupError naming `id` when there is none."""
        with self._change() as letters:
            letter = _find(letters, id)
            letters.remove(letter)
            return letter

    def request_retry(self, id: str) -> Letter:
        """Mark the letter for the running host to resubmit; LookupError naming `id` when there is none."""
        with self._change() as letters:
            old = _find(letters, id)
            letter = replace(old, retry=True)
            letters[letters.index(old)] = letter
            return letter

    def take_retries(self) -> list[Letter]:
        """Remove and return the letters marked for a retry, in one locked change: two hosts (or a host and a slow
        CLI) can never both resubmit one. An item that fails again comes back as a new letter. Cheap when none
        is marked: no lock, no write."""
        if not any(letter.retry for letter in self._read()[0]):
            return []
        with self._change() as letters:
            taken = [letter for letter in letters if letter.retry]
            letters[:] = [letter for letter in letters if not letter.retry]
            return taken

    def unannounced(self) -> list[Letter]:
        """The letters the owner has not been told of yet, oldest first."""
        return [letter for letter in self.list() if not letter.announced]

    def mark_announced(self, ids: Iterable[str]) -> None:
        told = {_normal(id) for id in ids}
        with self._change() as letters:
            letters[:] = [replace(letter, announced=True) if letter.id in told else letter for letter in letters]

    def stamp(self) -> Stamp | None:
        """Changes whenever the file is rewritten (each write is a new file); None while there is none."""
        return self._file.stamp()

    def changed_since(self, stamp: Stamp | None) -> bool:
        """One stat(): whether the file is no longer the one `stamp` was taken of, so a poller reads only then."""
        return self.stamp() != stamp

    def _read(self) -> tuple[list[Letter], bool]:
        """The letters, and whether anything was unreadable (left out with a warning)."""
        raw, torn = self._file.load()
        entries = raw.get("letters", [])
        if not isinstance(entries, list):
            logger.warning("%s: its letters are not a list; reading none", self.path)
            return [], True
        letters: list[Letter] = []
        for item in cast(list[object], entries):
            try:
                letters.append(_letter(item))
            except (KeyError, TypeError, ValueError) as exc:
                logger.warning("%s: leaving out a malformed dead letter (%s)", self.path, exc)
                torn = True
        return letters, torn

    @contextmanager
    def _change(self) -> Generator[list[Letter]]:
        """Read under the lock, let the caller change the list, write it back only if it changed."""
        with self._file.locked():
            letters, torn = self._read()
            before = list(letters)
            yield letters
            if letters != before:
                self._file.save({"letters": [asdict(letter) for letter in letters]}, torn)


@dataclass(frozen=True)
class _Tally:
    count: int
    error: str
    last: float


class Attempts:
    """How often each item (by its key) has failed, kept on disk so a host that crashes in the item's turn still
    counts it on the next start. The host bumps a key on each failure, clears it when the item succeeds or ends."""

    def __init__(self, root: Path, clock: Callable[[], float] = time.time) -> None:
        self._file = _SharedFile(root / "attempts.json")
        self._clock = clock

    def bump(self, key: str, error: str) -> int:
        """Count one more failure of `key`; returns the new count. Counts stale for a week are dropped meanwhile."""
        now = self._clock()
        with self._file.locked():
            tallies, torn = self._read()
            fresh = {k: t for k, t in tallies.items() if now - t.last < STALE_S}
            count = fresh[key].count + 1 if key in fresh else 1
            fresh[key] = _Tally(count, _one_line(error, REASON_CHARS), now)
            self._file.save({k: asdict(t) for k, t in fresh.items()}, torn)
            return count

    def note(self, key: str, error: str) -> None:
        """Say why the attempt under way failed, without counting another (it was counted when it started)."""
        with self._file.locked():
            tallies, torn = self._read()
            tally = tallies.get(key)
            if tally is not None:
                tallies[key] = _Tally(tally.count, _one_line(error, REASON_CHARS), tally.last)
                self._file.save({k: asdict(t) for k, t in tallies.items()}, torn)

    def clear(self, key: str) -> None:
        with self._file.locked():
            tallies, torn = self._read()
            if tallies.pop(key, None) is not None:
                self._file.save({k: asdict(t) for k, t in tallies.items()}, torn)

    def count(self, key: str) -> int:
        tally = self._read()[0].get(key)
        return tally.count if tally else 0

    def last_error(self, key: str) -> str:
        """The error of the latest failure ("" when none), for the letter's reason after a restart."""
        tally = self._read()[0].get(key)
        return tally.error if tally else ""

    def _read(self) -> tuple[dict[str, _Tally], bool]:
        raw, torn = self._file.load()
        tallies: dict[str, _Tally] = {}
        for key, value in raw.items():
            try:
                item = _mapping(value)
                tallies[key] = _Tally(_typed(item, "count", int), _typed(item, "error", str), _number(item, "last"))
            except (KeyError, TypeError, ValueError) as exc:
                logger.warning("%s: leaving out a malformed count for %r (%s)", self._file.path, key, exc)
                torn = True
        return tallies, torn


def backoff_s(attempts: int, first_s: float = BACKOFF_FIRST_S) -> float:
    """How long to wait after the `attempts`-th failure before the next try: 5 s, 20 s, 80 s, then at most 5 min.

    Growing fast, because the failures worth retrying pass within seconds (a server restarting, a provider's brief
    5xx, a dropped connection), while one still there after that is an outage or a poison item, where quick tries
    only spend model calls. With `MAX_ATTEMPTS` an item ends after 25 s of waiting; more attempts wait longer."""
    if attempts < 1:
        return 0.0
    return min(first_s * BACKOFF_FACTOR ** (attempts - 1), BACKOFF_MAX_S)


class _SharedFile:
    """A JSON object in a file two processes share: read without the lock (every write is an atomic rename),
    changed under it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = JsonFile(path)
        self._lock = FileLock(path.with_suffix(".lock"), mode=0o600)

    def load(self) -> tuple[dict[str, object], bool]:
        """The object ({} when missing), and whether the file was torn (then {} too, with a warning)."""
        try:
            return self._file.read(), False
        except FileNotFoundError:
            return {}, False
        except Torn as torn:
            logger.warning("%s is torn (%s); reading it as empty", self.path, torn)
            return {}, True

    @contextmanager
    def locked(self) -> Generator[None]:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with self._lock:
            yield

    def save(self, data: dict[str, Any], torn: bool) -> None:
        """Replace the file (0600); a torn one is first kept as `<name>.torn`, for a person to look into."""
        if torn and self.path.exists():
            self._file.set_aside(".torn")
        self._file.save(data)

    def stamp(self) -> Stamp | None:
        return self._file.stamp()


def _letter(raw: object) -> Letter:
    item = _mapping(raw)
    kind = _typed(item, "kind", str)
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}")
    return Letter(
        id=_typed(item, "id", str),
        key=_typed(item, "key", str),
        kind=kind,
        source=_typed(item, "source", str),
        session=_typed(item, "session", str),
        summary=_typed(item, "summary", str),
        reason=_typed(item, "reason", str),
        attempts=_typed(item, "attempts", int),
        created=_number(item, "created"),
        announced=_typed(item, "announced", bool),
        retry=_typed(item, "retry", bool),
        event=_mapping(item["event"]),
    )


def _mapping(value: object) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TypeError(f"{type(value).__name__} is not an object")
    return cast(dict[str, Any], value)


def _typed(item: Mapping[str, object], name: str, kind: type[_T]) -> _T:
    value = item[name]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise TypeError(f"{name} is not {kind.__name__}")
    return value


def _number(item: Mapping[str, object], name: str) -> float:
    value = item[name]
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise TypeError(f"{name} is not a number")
    return float(value)


def _one_line(text: str, limit: int) -> str:
    """Whitespace (newlines too) made single spaces, then cut to `limit` with an ellipsis: one line of the list."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _normal(id: str) -> str:
    return id.strip().lower()


def _find(letters: list[Letter], id: str) -> Letter:
    wanted = _normal(id)
    found = next((letter for letter in letters if letter.id == wanted), None)
    if found is None:
        raise LookupError(f"no dead letter {id.strip()}")
    return found


def _unused_id(letters: list[Letter]) -> str:
    taken = {letter.id for letter in letters}
    return next(id for id in iter(lambda: secrets.token_hex(4), None) if id not in taken)
