"""Times as the owner reads them: in their own zone (`[agent] timezone`, else this machine's), with how long ago.

A bare "19:40" on a page left open for a day misleads; "19:40 (3 min ago)" does not, and "ago" needs no zone."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

from hermitcrab.host.config import Settings

_UNITS = (("d", 86400), ("h", 3600), ("min", 60))


def owner_zone(settings: Settings) -> dt.tzinfo:
    """The zone the owner's times are shown in."""
    if settings.agent.timezone:
        return ZoneInfo(settings.agent.timezone)
    local = dt.datetime.now().astimezone().tzinfo
    return local if local is not None else dt.UTC


def relative(seconds: float) -> str:
    """`seconds` from now in the largest whole unit: "3 min ago", "in 2 h", "just now"."""
    amount = abs(seconds)
    if amount < 60:
        return "just now" if seconds <= 0 else "in under a minute"
    unit, size = next((unit, size) for unit, size in _UNITS if amount >= size)
    count = int(amount // size)
    return f"{count} {unit} ago" if seconds < 0 else f"in {count} {unit}"


def shown(moment: dt.datetime, zone: dt.tzinfo, now: dt.datetime | None = None) -> str:
    """E.g. "2026-12-03 19:40 (3 min ago)"; a naive `moment` is taken as UTC, as our state files write it."""
    aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=dt.UTC)
    current = now or dt.datetime.now(dt.UTC)
    local = aware.astimezone(zone)
    return f"{local:%Y-%m-%d %H:%M} ({relative((aware - current).total_seconds())})"


def parsed(text: object) -> dt.datetime | None:
    """An ISO 8601 time a server sent, or None when it sent something else."""
    if not isinstance(text, str):
        return None
    try:
        return dt.datetime.fromisoformat(text)
    except ValueError:
        return None
