"""APScheduler triggers for the three schedule kinds, and their next run told in words.

APScheduler 3.x reads a crontab's day-of-week numbers Monday-first (0 = Monday, where cron says Sunday) and runs a
fixed-time job twice in the hour repeated when clocks fall back; both are corrected here, so `0 9 * * 1-5` means
weekdays and a daily `30 2 * * *` runs once on the night clocks go back, as cron does.
"""

from __future__ import annotations

import difflib
import re
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import cast
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.date import DateTrigger
from apscheduler.triggers.interval import IntervalTrigger

from hermitcrab.servers._common.arguments import quote

_ALIASES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_DAY_NAMES = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")  # cron's numbering: 0 (and 7) is Sunday
_DAY_PART = re.compile(r"^(?P<range>\*|\w+(?:-\w+)?)(?:/(?P<step>\d+))?$")


class ScheduleError(ValueError):
    """A schedule that cannot be used; the message says which part and what to write instead."""


@cache
def zone(name: str) -> ZoneInfo:
    """The IANA zone `name`; an unknown name raises ScheduleError suggesting the nearest valid ones."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):  # OSError: a name too long to be a file name
        close = [] if len(name) > 100 else difflib.get_close_matches(name, sorted(available_timezones()), n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else " such as Europe/Berlin or America/New_York"
        raise ScheduleError(f"unknown time zone {quote(name, 80)}: use an IANA name{hint}") from None


def _day_number(token: str) -> int:
    lowered = token.lower()
    if lowered[:3] in _DAY_NAMES and len(lowered) >= 3:
        return _DAY_NAMES.index(lowered[:3])
    if token.isdigit() and int(token) <= 7:
        return int(token) % 7
    raise ScheduleError(f"day of week {token!r} is not 0-7 or a day name (sun, mon, ...)")


def _weekdays(field: str) -> str:
    """Cron's day-of-week field as the day names APScheduler reads the same way."""
    if field in ("*", "?"):
        return "*"
    days: set[int] = set()
    for part in field.split(","):
        match = _DAY_PART.match(part)
        if match is None:
            raise ScheduleError(f"day of week {part!r} is not understood: write e.g. 1-5, mon,wed or */2")
        span, step = match["range"], int(match["step"] or 1)
        if span == "*":
            first, last = 0, 6
        else:
            first_token, _, last_token = span.partition("-")
            first = _day_number(first_token)
            last = _day_number(last_token) if last_token else first
            if last_token.strip() == "7":
                last = 7  # "5-7" runs Friday through Sunday
        if step < 1 or last < first:
            raise ScheduleError(f"day of week {part!r} is an empty range")
        days.update(day % 7 for day in range(first, last + 1, step))
    return ",".join(_DAY_NAMES[day] for day in sorted(days))


class _CronOnce(CronTrigger):
    """A CronTrigger that skips the second pass of a fixed hour repeated when clocks go back, like cron."""

    def __init__(self, *, fixed_hour: bool, **fields: str) -> None:
        super().__init__(**fields)  # pyright: ignore[reportUnknownMemberType]  # APScheduler 3 is untyped
        self._fixed_hour = fixed_hour

    def get_next_fire_time(self, previous_fire_time: datetime | None, now: datetime) -> datetime | None:
        fire = self._cron_next(previous_fire_time, now)
        while fire is not None and self._fixed_hour and _second_pass(fire):
            after = fire.astimezone(UTC) + timedelta(microseconds=1)  # in UTC: local arithmetic loses the pass
            fire = self._cron_next(None, after)
        return fire

    def _cron_next(self, previous_fire_time: datetime | None, now: datetime) -> datetime | None:
        fire = super().get_next_fire_time(previous_fire_time, now)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]  # APScheduler 3 is untyped
        return cast(datetime | None, fire)


def _second_pass(moment: datetime) -> bool:
    """True when `moment`'s wall-clock time already happened once earlier that night (clocks went back)."""
    wall = moment.replace(tzinfo=None)
    first = wall.replace(tzinfo=moment.tzinfo, fold=0)
    return first.timestamp() < moment.timestamp()


def cron_trigger(expr: str, tz: str) -> CronTrigger:
    """A trigger for a 5-field crontab expression (or @daily and the like) in zone `tz`."""
    fields = _ALIASES.get(expr.strip().lower(), expr).split()
    if len(fields) != 5:
        raise ScheduleError(
            f"cron expression {expr!r} has {len(fields)} fields; write 5: minute hour day-of-month month day-of-week"
        )
    minute, hour, day, month, weekdays = fields
    if day not in ("*", "?") and weekdays not in ("*", "?"):
        raise ScheduleError(
            f"cron expression {expr!r} restricts both day of month and day of week, which cron reads as 'either' "
            "and APScheduler as 'both'; use two jobs"
        )
    try:
        return _CronOnce(
            fixed_hour=not hour.startswith("*"),
            minute=minute,
            hour=hour,
            day=day,
            month=month,
            day_of_week=_weekdays(weekdays),
            timezone=zone(tz),  # pyright: ignore[reportArgumentType]  # APScheduler takes a tzinfo here
        )
    except ScheduleError as exc:
        raise ScheduleError(f"cron expression {expr!r}: {exc}") from None
    except ValueError as exc:
        raise ScheduleError(f"cron expression {expr!r} is not valid: {exc}") from None


def interval_trigger(seconds: int, since: datetime, tz: str) -> IntervalTrigger:
    """Every `seconds`, the first time one interval after `since`, so restarts keep the same phase."""
    return IntervalTrigger(seconds=seconds, start_date=since + timedelta(seconds=seconds), timezone=zone(tz))


def date_trigger(at: datetime, tz: str) -> DateTrigger:
    return DateTrigger(run_date=at, timezone=zone(tz))


def in_words(moment: datetime, tz: str, now: datetime) -> str:
    """E.g. "in 3 hours, Tue 09:00 Europe/Berlin" (the date is added when it is a week or more away)."""
    local = moment.astimezone(zone(tz))
    delta = (moment - now).total_seconds()
    shown = local.strftime("%a %d %b %Y %H:%M" if abs(delta) >= 6 * 86400 else "%a %H:%M")
    if local.second:
        shown += local.strftime(":%S")
    return f"{_relative(delta)}, {shown} {tz}"


def _relative(seconds: float) -> str:
    """The largest unit the rounded amount reaches: 59 min 50 s is "1 hour", not "60 minutes"."""
    amount = abs(seconds)
    if amount < 0.5:
        return "now"
    units = (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1))
    for (unit, size), (_, smaller) in zip(units, [*units[1:], ("", 1)], strict=True):
        if amount >= size - smaller / 2 or unit == "second":
            count = max(1, round(amount / size))
            text = f"{count} {unit}{'' if count == 1 else 's'}"
            return f"in {text}" if seconds > 0 else f"{text} ago"
    raise AssertionError("unreachable")  # pragma: no cover
