"""A cron job's schedule in words, as the Automations page shows it: "At 09:00, Monday through Friday
(Europe/Berlin)", "Every 30 minutes", "Once, on 2026-12-01 at 09:00 (Europe/Berlin)".

The schedule is the cron server's (`cron_list`): `{"kind": "cron", "expr", "tz"}`, `{"kind": "every",
"every_seconds"}` or `{"kind": "at", "at", "tz"}`. Crontab expressions are told by cron-descriptor, which reads the
day of the week as cron does (0 and 7 are Sunday), as our cron server does; anything it cannot read is shown as
given, never an error."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cron_descriptor import ExpressionDescriptor, FormatException, Options

from .moments import parsed

ALIASES = {
    "@hourly": "Every hour, on the hour",
    "@daily": "Every day at 00:00",
    "@midnight": "Every day at 00:00",
    "@weekly": "Every Sunday at 00:00",
    "@monthly": "On the first of every month at 00:00",
    "@yearly": "Every 1 January at 00:00",
    "@annually": "Every 1 January at 00:00",
}
_UNITS = (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1))


def in_words(schedule: Mapping[str, Any]) -> str:
    kind = schedule.get("kind")
    zone = str(schedule.get("tz") or "UTC")
    if kind == "cron":
        expr = str(schedule.get("expr", ""))
        return f"{_crontab(expr)} ({zone})"
    if kind == "every" and isinstance(seconds := schedule.get("every_seconds"), int) and seconds > 0:
        return _every(seconds)
    if kind == "at" and (moment := parsed(schedule.get("at"))) is not None:
        try:
            local = moment.astimezone(ZoneInfo(zone)) if moment.tzinfo is not None else moment
        except (ZoneInfoNotFoundError, ValueError):
            local = moment
        return f"Once, on {local:%Y-%m-%d} at {local:%H:%M} ({zone})"
    return f"A schedule this page does not know: {dict(schedule)}"


def _crontab(expr: str) -> str:
    alias = ALIASES.get(expr.strip().lower())
    if alias is not None:
        return alias
    options = Options()
    options.use_24hour_time_format = True
    try:
        words: str = ExpressionDescriptor(expr, options).get_description()
    except (FormatException, ValueError, IndexError, KeyError):
        return f"By the crontab expression {expr!r}"
    return words


def _every(seconds: int) -> str:
    """E.g. "Every 30 minutes", "Every 1 hour 30 minutes", "Every day": whole units, largest first."""
    parts: list[str] = []
    left = seconds
    for unit, size in _UNITS:
        count, left = divmod(left, size)
        if count:
            parts.append(f"{count} {unit}{'' if count == 1 else 's'}")
    if len(parts) == 1 and parts[0].startswith("1 "):
        return f"Every {parts[0][2:]}"
    return f"Every {' '.join(parts)}"
