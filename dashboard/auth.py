"""Who is logged in: one-time login links minted by `hermitcrab dashboard`, and the browser sessions they open.

Both live under `state/dashboard/` as digests of their secrets (a copy of the state folder logs nobody in), each file
rewritten atomically under a file lock: the CLI mints a link while `hermitcrab run` redeems them. Sessions survive a
restart of the host, so a restart does not log the owner out.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Callable
from pathlib import Path

from filelock import FileLock

from hermitcrab.util.store import JsonFile

LINK_TTL_S = 600.0  # long enough to copy the link into a browser; a link left in a scrollback soon dies
SESSION_TTL_S = 30 * 86400.0  # a month: the owner's own browser on the owner's own machine
COOKIE = "hermitcrab_session"
LOCK_TIMEOUT_S = 10.0  # the lock is held for one small file's rewrite; a longer wait means a stuck holder


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def csrf_token(session: str) -> str:
    """The token every state-changing request of `session` must carry: derived from the cookie, which another site's
    page can make the browser send but never read."""
    return hmac.new(session.encode(), b"csrf", hashlib.sha256).hexdigest()


def csrf_matches(session: str, token: str) -> bool:
    return hmac.compare_digest(csrf_token(session), token)


class _Secrets:
    """Digests of live secrets with their expiry, in one locked JSON file."""

    def __init__(self, path: Path, clock: Callable[[], float]) -> None:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._file = JsonFile(path)
        self._lock = FileLock(str(path.with_suffix(".lock")), timeout=LOCK_TIMEOUT_S)
        self._clock = clock

    def add(self, ttl_s: float) -> str:
        secret = secrets.token_urlsafe(32)
        with self._lock:
            live = self._live()
            live[_digest(secret)] = self._clock() + ttl_s
            self._file.save(live)
        return secret

    def has(self, secret: str) -> bool:
        return _digest(secret) in self._live()

    def remove(self, secret: str) -> bool:
        """Take `secret` out; whether it was live."""
        with self._lock:
            live = self._live()
            found = live.pop(_digest(secret), None) is not None
            self._file.save(live)
        return found

    def _live(self) -> dict[str, float]:
        now = self._clock()
        stored = self._file.load("every login link and dashboard session is forgotten")
        return {key: until for key, until in stored.items() if isinstance(until, int | float) and until > now}


class LoginLinks:
    """One-time secrets for `/login?token=...`, each good for `LINK_TTL_S`."""

    def __init__(self, folder: Path, clock: Callable[[], float] = time.time) -> None:
        self._secrets = _Secrets(folder / "logins.json", clock)

    def mint(self) -> str:
        return self._secrets.add(LINK_TTL_S)

    def redeem(self, secret: str) -> bool:
        """Whether `secret` was a live link; it never works again."""
        return self._secrets.remove(secret)


class Sessions:
    """The browsers logged in, by their cookie's secret."""

    def __init__(self, folder: Path, clock: Callable[[], float] = time.time) -> None:
        self._secrets = _Secrets(folder / "sessions.json", clock)

    def open(self) -> str:
        return self._secrets.add(SESSION_TTL_S)

    def valid(self, session: str) -> bool:
        return bool(session) and self._secrets.has(session)

    def close(self, session: str) -> None:
        self._secrets.remove(session)
