"""Pairing: a stranger's direct message earns a one-time code, and the owner lets them in from the command line.

State is one JSON file, `state/pairing/pairing.json`, rewritten atomically under a file lock, so `hermitcrab
pairing approve` works while `hermitcrab run` is running (the channel reads the file on every stranger's message).
A code is 8 characters from an alphabet without look-alikes (no 0, O, 1, I), lives one hour, and at most three
codes wait per channel at a time; a user who asks again while theirs waits gets the same code.
"""

from __future__ import annotations

import json
import os
import secrets
import time
import uuid
from collections.abc import Callable, Generator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, cast

from filelock import FileLock

ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 8
CODE_TTL_S = 3600.0
MAX_PENDING = 3


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
    """A user the owner let in."""

    channel: str
    user: str
    name: str
    approved: float


@dataclass
class _State:
    pending: list[Request]
    allowed: list[Allowed]


class PairingStore:
    """Pending codes and approved users of every channel, shared between `hermitcrab run` and the CLI."""

    def __init__(self, root: Path, clock: Callable[[], float] = time.time) -> None:
        self.path = root / "pairing.json"
        self._lock = FileLock(root / "pairing.lock")
        self._clock = clock

    def is_allowed(self, channel: str, user: str) -> bool:
        return any(a.channel == channel and a.user == user for a in self._read().allowed)

    def request(self, channel: str, user: str, name: str) -> Request | None:
        """The user's waiting code, or a new one; None when the channel already has its maximum waiting."""
        with self._change() as state:
            mine = [r for r in state.pending if r.channel == channel and r.user == user]
            if mine:
                return mine[0]
            if sum(r.channel == channel for r in state.pending) >= MAX_PENDING:
                return None
            taken = {r.code for r in state.pending}
            code = next(c for c in iter(_new_code, None) if c not in taken)
            request = Request(code, channel, user, name, self._clock())
            state.pending.append(request)
            return request

    def pending(self) -> list[Request]:
        return self._read().pending

    def allowed(self) -> list[Allowed]:
        return self._read().allowed

    def approve(self, code: str) -> Allowed:
        """Let the code's user in; LookupError when no such code waits (wrong, used or expired)."""
        wanted = code.strip().upper()
        with self._change() as state:
            found = next((r for r in state.pending if r.code == wanted), None)
            if found is None:
                raise LookupError(f"no pairing code {wanted!r} is waiting (codes expire after an hour)")
            state.pending.remove(found)
            allowed = Allowed(found.channel, found.user, found.name, self._clock())
            state.allowed = [a for a in state.allowed if (a.channel, a.user) != (found.channel, found.user)]
            state.allowed.append(allowed)
            return allowed

    def revoke(self, user: str) -> list[Allowed]:
        """Remove the user (by id, or by name) from every channel; returns whom it removed."""
        with self._change() as state:
            gone = [a for a in state.allowed if user in (a.user, a.name)]
            state.allowed = [a for a in state.allowed if a not in gone]
            state.pending = [r for r in state.pending if user not in (r.user, r.name)]
            return gone

    def _read(self) -> _State:
        try:
            data = cast(dict[str, Any], json.loads(self.path.read_text(encoding="utf-8")))
        except FileNotFoundError:
            data = {}
        now = self._clock()
        pending = [Request(**item) for item in data.get("pending", [])]
        return _State(
            [r for r in pending if now - r.created < CODE_TTL_S],
            [Allowed(**item) for item in data.get("allowed", [])],
        )

    @contextmanager
    def _change(self) -> Generator[_State]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock:
            state = self._read()
            yield state
            _write_atomically(
                self.path,
                {"pending": [asdict(r) for r in state.pending], "allowed": [asdict(a) for a in state.allowed]},
            )


def _new_code() -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))


def _write_atomically(path: Path, data: object) -> None:
    tmp = path.with_suffix(f".{uuid.uuid4().hex[:6]}.tmp")
    with tmp.open("w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=1)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
