"""Pairing: a stranger's direct message earns a one-time code, and the owner lets them in (or turns them down) from
the command line.

State is one JSON file, `state/pairing/pairing.json` (mode 0600), rewritten atomically under a file lock, so
`hermitcrab pairing approve` works while `hermitcrab run` is running (the channel reads the file on every stranger's
message, and watches it for approvals to announce). A code is 8 characters from an alphabet without look-alikes
(no 0, O, 1, I) and lives one hour; a user who asks again while theirs waits gets the same code.

New accounts cannot lock the door: when a channel's slots are full the oldest waiting request is dropped to make
room (the newcomer always gets a code), a user whose code expired or was dropped waits before the next one, and a
denied user is ignored for a day. Files written before denials and announcements existed load unchanged.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Generator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Literal

from filelock import FileLock

from hermitcrab.util.files import Stamp
from hermitcrab.util.store import JsonFile

ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 8
CODE_TTL_S = 3600.0  # long enough for the owner to get round to it, short enough that a leaked code soon dies
MAX_PENDING = 3  # per channel: few enough for the owner to tell the requests apart
REQUEST_COOLDOWN_S = 600.0  # after a code expired or was dropped: one account cannot keep pushing others out
DENY_BLOCK_S = 86400.0  # a "no" holds for a day: no fresh code (and owner DM) for whoever was just turned down


@dataclass(frozen=True)
class Request:
    """A stranger waiting for the owner's approval."""

    code: str
    channel: str
    user: str
    name: str
    created: float


@dataclass(frozen=True)
class Allowed:
    """A user the owner let in; `announced` once the channel told them (approvals older than that field were)."""

    channel: str
    user: str
    name: str
    approved: float
    code: str | None = None
    announced: bool = True


@dataclass(frozen=True)
class Denied:
    """A user the owner turned down: their DMs are ignored until `until`."""

    code: str
    channel: str
    user: str
    name: str
    denied: float

    @property
    def until(self) -> float:
        return self.denied + DENY_BLOCK_S


@dataclass(frozen=True)
class Ended:
    """A code that ended unused (expired or dropped): its user waits `REQUEST_COOLDOWN_S` for the next."""

    channel: str
    user: str
    ended: float


@dataclass(frozen=True)
class Issued:
    """A new code: the owners should hear of it, and of the older request dropped to make room for it, if any."""

    request: Request
    dropped: Request | None = None


@dataclass(frozen=True)
class Waiting:
    """The user's code still waits: they get it again, and nobody needs telling twice."""

    request: Request


@dataclass(frozen=True)
class Refused:
    """No code for now (the DM is ignored): the user was denied, or their last code ended too recently."""

    reason: Literal["denied", "cooling down"]
    until: float


@dataclass(frozen=True)
class Approval:
    """The user a code let in; `already` when it had been approved before (nothing changed)."""

    allowed: Allowed
    already: bool


@dataclass(frozen=True)
class Denial:
    """The user a code turned down; `already` when it had been denied before (nothing changed)."""

    denied: Denied
    already: bool


@dataclass
class _State:
    pending: list[Request]
    allowed: list[Allowed]
    denied: list[Denied]
    ended: list[Ended]


class PairingStore:
    """Pending codes, approved and denied users of every channel, shared between `hermitcrab run` and the CLI."""

    def __init__(self, root: Path, clock: Callable[[], float] = time.time) -> None:
        self.path = root / "pairing.json"
        self._file = JsonFile(self.path)
        self._lock = FileLock(root / "pairing.lock", mode=0o600)
        self._clock = clock

    def is_allowed(self, channel: str, user: str) -> bool:
        return any(a.channel == channel and a.user == user for a in self._read().allowed)

    def request(self, channel: str, user: str, name: str) -> Issued | Waiting | Refused:
        """A code for the user: their waiting one, else a new one (dropping the channel's oldest when full)."""
        with self._change() as state:
            now, key = self._clock(), (channel, user)
            denied = next((d for d in state.denied if (d.channel, d.user) == key), None)
            if denied is not None:
                return Refused("denied", denied.until)
            mine = next((r for r in state.pending if (r.channel, r.user) == key), None)
            if mine is not None:
                return Waiting(mine)
            ended = max((e.ended for e in state.ended if (e.channel, e.user) == key), default=None)
            if ended is not None:
                return Refused("cooling down", ended + REQUEST_COOLDOWN_S)
            dropped = _make_room(state, channel, now)
            request = Request(_unused_code(state), channel, user, name, now)
            state.pending.append(request)
            return Issued(request, dropped)

    def pending(self) -> list[Request]:
        return self._read().pending

    def allowed(self) -> list[Allowed]:
        return self._read().allowed

    def denied(self) -> list[Denied]:
        """The users still ignored after a denial."""
        return self._read().denied

    def approve(self, code: str) -> Approval:
        """Let the code's user in; LookupError when no such code waits (wrong, denied or expired)."""
        wanted = code.strip().upper()
        with self._change() as state:
            found = next((r for r in state.pending if r.code == wanted), None)
            if found is None:
                done = next((a for a in state.allowed if a.code == wanted), None)
                if done is not None:
                    return Approval(done, already=True)
                raise LookupError(_not_waiting(state, wanted))
            state.pending.remove(found)
            allowed = Allowed(found.channel, found.user, found.name, self._clock(), found.code, announced=False)
            state.allowed = [a for a in state.allowed if (a.channel, a.user) != (found.channel, found.user)]
            state.allowed.append(allowed)
            return Approval(allowed, already=False)

    def deny(self, code: str) -> Denial:
        """Drop the code and ignore its user for `DENY_BLOCK_S`; LookupError when no such code waits."""
        wanted = code.strip().upper()
        with self._change() as state:
            found = next((r for r in state.pending if r.code == wanted), None)
            if found is None:
                done = next((d for d in state.denied if d.code == wanted), None)
                if done is not None:
                    return Denial(done, already=True)
                raise LookupError(_not_waiting(state, wanted))
            state.pending.remove(found)
            denied = Denied(found.code, found.channel, found.user, found.name, self._clock())
            state.denied.append(denied)
            return Denial(denied, already=False)

    def revoke(self, user: str, channel: str | None = None) -> list[Allowed]:
        """Remove the user (by id, or by name) from every channel, or from `channel` only (then `user` is the id:
        the dashboard's row, which must leave a same-named user of another channel alone); returns whom it removed."""

        def matches(entry: Allowed | Request) -> bool:
            if channel is not None:
                return entry.channel == channel and entry.user == user
            return user in (entry.user, entry.name)

        with self._change() as state:
            gone = [a for a in state.allowed if matches(a)]
            state.allowed = [a for a in state.allowed if a not in gone]
            state.pending = [r for r in state.pending if not matches(r)]
            return gone

    def unannounced(self, channel: str) -> list[Allowed]:
        """The channel's users approved (by the CLI, in another process) but not told yet."""
        return [a for a in self._read().allowed if a.channel == channel and not a.announced]

    def announced(self, user: Allowed) -> None:
        """The user has been told they are in; a later approval of them (after a revoke) is told again."""
        with self._change() as state:
            state.allowed = [replace(a, announced=True) if a == user else a for a in state.allowed]

    def stamp(self) -> Stamp | None:
        """Changes whenever the file is rewritten: one stat() tells whether to read."""
        return self._file.stamp()

    def _read(self) -> _State:
        """The state; a torn file raises `Torn` (a ValueError) rather than forget who was let in."""
        try:
            data = self._file.read()
        except FileNotFoundError:
            data = {}
        now = self._clock()
        pending = [Request(**item) for item in data.get("pending", [])]
        expired = [Ended(r.channel, r.user, r.created + CODE_TTL_S) for r in pending if now - r.created >= CODE_TTL_S]
        ended = [Ended(**item) for item in data.get("ended", [])] + expired
        return _State(
            [r for r in pending if now - r.created < CODE_TTL_S],
            [Allowed(**item) for item in data.get("allowed", [])],
            [d for d in (Denied(**item) for item in data.get("denied", [])) if now < d.until],
            [e for e in ended if now - e.ended < REQUEST_COOLDOWN_S],
        )

    @contextmanager
    def _change(self) -> Generator[_State]:
        """Read, let the caller change, write back if anything changed (a no-op leaves the file, and its stamp)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock:
            state = self._read()
            before = asdict(state)
            yield state
            if asdict(state) != before:
                self._file.save(asdict(state))


def _make_room(state: _State, channel: str, now: float) -> Request | None:
    """Drop the channel's oldest waiting request when its slots are full: a newcomer is never refused."""
    waiting = [r for r in state.pending if r.channel == channel]
    if len(waiting) < MAX_PENDING:
        return None
    oldest = min(waiting, key=lambda r: r.created)
    state.pending.remove(oldest)
    state.ended.append(Ended(oldest.channel, oldest.user, now))
    return oldest


def _not_waiting(state: _State, code: str) -> str:
    """Why `code` cannot be decided now: it was decided the other way, or never issued, or expired."""
    denied = next((d for d in state.denied if d.code == code), None)
    if denied is not None:
        return f"pairing code {code!r} was denied ({denied.channel} user {denied.user} ({denied.name}))"
    allowed = next((a for a in state.allowed if a.code == code), None)
    if allowed is not None:
        return f"pairing code {code!r} was approved ({allowed.channel} user {allowed.user} ({allowed.name}))"
    return f"no pairing code {code!r} is waiting (codes expire after an hour)"


def _unused_code(state: _State) -> str:
    taken = {r.code for r in state.pending} | {a.code for a in state.allowed} | {d.code for d in state.denied}
    return next(code for code in iter(_new_code, None) if code not in taken)


def _new_code() -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))
