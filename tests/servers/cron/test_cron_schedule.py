"""Triggers at unit level: cron's weekday numbering, time zones across DST changes, next runs in words."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from apscheduler.triggers.base import BaseTrigger

from hermitcrab.servers.cron.engine import next_after
from hermitcrab.servers.cron.schedule import ScheduleError, cron_trigger, in_words, interval_trigger, zone

BERLIN = ZoneInfo("Europe/Berlin")


def fires(trigger: BaseTrigger, start: datetime, count: int) -> list[datetime]:
    found: list[datetime] = []
    moment = start
    for _ in range(count):
        fire = next_after(trigger, moment)
        assert fire is not None
        found.append(fire)
        moment = fire
    return found


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]  # year, month, day, ...


def test_daily_job_keeps_its_wall_clock_time_across_both_dst_changes():
    trigger = cron_trigger("0 9 * * *", "Europe/Berlin")
    spring = fires(trigger, datetime(2026, 3, 27, 12, tzinfo=BERLIN), 3)
    autumn = fires(trigger, datetime(2026, 10, 23, 12, tzinfo=BERLIN), 3)
    assert [fire.astimezone(UTC) for fire in spring] == [utc(2026, 3, 28, 8), utc(2026, 3, 29, 7), utc(2026, 3, 30, 7)]
    assert [fire.astimezone(UTC) for fire in autumn] == [
        utc(2026, 10, 24, 7),
        utc(2026, 10, 25, 8),
        utc(2026, 10, 26, 8),
    ]
    assert {fire.astimezone(BERLIN).hour for fire in spring + autumn} == {9}


def test_a_fixed_time_in_the_repeated_hour_runs_once_but_hourly_jobs_run_in_both():
    daily = fires(cron_trigger("30 2 * * *", "Europe/Berlin"), datetime(2026, 10, 24, 12, tzinfo=BERLIN), 2)
    assert [fire.astimezone(UTC) for fire in daily] == [utc(2026, 10, 25, 0, 30), utc(2026, 10, 26, 1, 30)]
    hourly = fires(cron_trigger("0 * * * *", "Europe/Berlin"), datetime(2026, 10, 25, 0, 30, tzinfo=BERLIN), 4)
    assert [fire.astimezone(UTC).hour for fire in hourly] == [23, 0, 1, 2]  # 01:00, 02:00 CEST, 02:00 CET, 03:00


def test_a_time_skipped_when_clocks_go_forward_still_runs_once():
    daily = fires(cron_trigger("30 2 * * *", "Europe/Berlin"), datetime(2026, 3, 28, 12, tzinfo=BERLIN), 2)
    assert [fire.astimezone(UTC) for fire in daily] == [utc(2026, 3, 29, 1, 30), utc(2026, 3, 30, 0, 30)]


@pytest.mark.parametrize(
    ("weekdays", "expected"),
    [
        ("1-5", ["Mon", "Tue", "Wed", "Thu", "Fri"]),
        ("0", ["Sun"]),
        ("7", ["Sun"]),
        ("5-7", ["Sun", "Fri", "Sat"]),
        ("*/2", ["Sun", "Tue", "Thu", "Sat"]),
        ("mon,WED", ["Mon", "Wed"]),
    ],
)
def test_day_of_week_numbers_mean_what_they_mean_in_crontab(weekdays: str, expected: list[str]):
    trigger = cron_trigger(f"0 9 * * {weekdays}", "UTC")
    week = fires(trigger, utc(2026, 11, 29), 7)  # from Sunday 29 Nov
    names = sorted({fire.strftime("%a") for fire in week if fire < utc(2026, 12, 6)}, key=week_order)
    assert names == expected


def week_order(day: str) -> int:
    return ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"].index(day)


def test_aliases_and_intervals_keep_their_phase():
    assert next_after(cron_trigger("@daily", "UTC"), utc(2026, 12, 1, 10)) == utc(2026, 12, 2)
    since = utc(2026, 12, 1, 10, 0, 0)
    trigger = interval_trigger(60, since, "UTC")
    assert next_after(trigger, since) == since + timedelta(seconds=60)
    assert next_after(trigger, since + timedelta(seconds=150)) == since + timedelta(seconds=180)


@pytest.mark.parametrize(
    ("expr", "named"),
    [
        ("61 * * * *", "not valid"),
        ("0 9 * *", "has 4 fields"),
        ("0 9 1 * 1", "both day of month and day of week"),
        ("0 9 * * 8", "day of week '8'"),
    ],
)
def test_bad_expressions_say_what_is_wrong(expr: str, named: str):
    with pytest.raises(ScheduleError, match=named):
        cron_trigger(expr, "UTC")


def test_unknown_zone_suggests_the_nearest():
    with pytest.raises(ScheduleError, match="did you mean Europe/Berlin"):
        zone("Europe/Berln")


@pytest.mark.parametrize("name", ["x" * 10_000_000, "Europe/" + "B" * 300, "a\x00b"])
def test_a_zone_that_cannot_be_a_file_name_is_unknown_in_a_short_line(name: str):
    with pytest.raises(ScheduleError, match="unknown time zone") as caught:
        zone(name)
    assert len(str(caught.value)) < 250


def test_next_run_in_words():
    now = datetime(2026, 12, 1, 5, 0, tzinfo=UTC)  # a Tuesday
    assert (
        in_words(datetime(2026, 12, 1, 8, 0, tzinfo=UTC), "Europe/Berlin", now) == "in 3 hours, Tue 09:00 Europe/Berlin"
    )
    assert in_words(now + timedelta(seconds=45), "UTC", now) == "in 45 seconds, Tue 05:00:45 UTC"
    assert in_words(now + timedelta(days=9), "UTC", now) == "in 9 days, Thu 10 Dec 2026 05:00 UTC"
