"""Times on the dashboard read in the owner's zone, with how long ago (or ahead) they are."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest

from hermitcrab.dashboard.render import moment

NOW = dt.datetime(2026, 12, 3, 18, 45, tzinfo=ZoneInfo("Europe/Berlin"))


@pytest.mark.parametrize(
    ("seconds_before", "shown"),
    [
        (20, "2026-12-03 18:44 (just now)"),
        (3 * 60 + 5, "2026-12-03 18:41 (3 min ago)"),
        (2 * 3600, "2026-12-03 16:45 (2 h ago)"),
        (86400, "2026-12-02 18:45 (1 d ago)"),
        (3 * 86400 + 60, "2026-11-30 18:44 (3 d ago)"),
        (-10 * 60, "2026-12-03 18:55 (in 10 min)"),
    ],
)
def test_a_moment_is_shown_in_the_owners_zone_with_how_long_ago(seconds_before: int, shown: str):
    assert moment(NOW.timestamp() - seconds_before, NOW) == shown


def test_the_zone_is_the_clocks_not_the_machines():
    utc = NOW.astimezone(dt.UTC)
    assert moment(NOW.timestamp(), utc) == "2026-12-03 17:45 (just now)"
