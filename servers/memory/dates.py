"""Dates named in a query ("in July 2023", "on 1 May, 2022", "2024-03-05", "in June") as day ranges.

Daily logs are dated by their file name, so a question about a time can look first at the logs written
then. A range reaches a little past its end because things are usually written down days after they happen.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from dataclasses import dataclass

REPORT_LAG_DAYS = 10
_MONTHS = {name.lower()[:3]: i for i, name in enumerate(calendar.month_abbr) if name}
_MONTH = (
    r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\b"
)
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d\d)"
_PATTERNS = [
    ("ymd", re.compile(rf"\b{_YEAR}-(\d\d)-(\d\d)\b")),
    ("dmy", re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}[,.]?\s*{_YEAR}?", re.I)),
    ("mdy", re.compile(rf"\b{_MONTH}\.?\s+{_DAY}\b(?:,?\s*{_YEAR})?", re.I)),
    ("my", re.compile(rf"\b{_MONTH}[,.]?\s+(?:of\s+)?{_YEAR}", re.I)),
    ("m", re.compile(rf"\b(?:in|during|of|since|last|this|early|late|mid|beginning|end)\s+(?:of\s+)?{_MONTH}", re.I)),
    ("y", re.compile(rf"\b(?:in|during|of|since|throughout)\s+(?:the\s+year\s+)?{_YEAR}\b", re.I)),
]


@dataclass(frozen=True)
class DayRange:
    """Inclusive days; `year` None means the same days in any year (a month named without a year)."""

    start: dt.date
    end: dt.date
    any_year: bool = False

    def contains(self, day: dt.date) -> bool:
        if not self.any_year:
            return self.start <= day <= self.end
        shifted = [
            (day.replace(year=year) if not (day.month == 2 and day.day == 29) else day)
            for year in (self.start.year, self.start.year + 1)
        ]
        return any(self.start <= d <= self.end for d in shifted)


def ranges_in(query: str) -> list[DayRange]:
    """Every date or month the query names, widened by the reporting lag; empty when it names none."""
    found: list[DayRange] = []
    taken: list[tuple[int, int]] = []
    for kind, pattern in _PATTERNS:
        for match in pattern.finditer(query):
            if any(a < match.end() and match.start() < b for a, b in taken):
                continue
            day_range = _range(kind, match.groups())
            if day_range is not None:
                found.append(day_range)
                taken.append(match.span())
    return found


def _range(kind: str, groups: tuple[str | None, ...]) -> DayRange | None:
    lag = dt.timedelta(days=REPORT_LAG_DAYS)
    try:
        if kind == "ymd":
            day = dt.date(int(groups[0] or 0), int(groups[1] or 0), int(groups[2] or 0))
            return DayRange(day - dt.timedelta(days=3), day + lag)
        if kind in ("dmy", "mdy"):
            day_text, month_text, year_text = groups if kind == "dmy" else (groups[1], groups[0], groups[2])
            month = _MONTHS[(month_text or "").lower()[:3]]
            year = int(year_text) if year_text else 2000
            day = dt.date(year, month, int(day_text or 0))
            return DayRange(day - dt.timedelta(days=3), day + lag, any_year=year_text is None)
        if kind == "y":
            year = int(groups[0] or 0)
            return DayRange(dt.date(year, 1, 1), dt.date(year, 12, 31) + lag)
        month_text = groups[0] or ""
        month = _MONTHS[month_text.lower()[:3]]
        year = int(groups[1]) if kind == "my" and groups[1] else 2000
        last = calendar.monthrange(year, month)[1]
        return DayRange(dt.date(year, month, 1), dt.date(year, month, last) + lag, any_year=kind == "m")
    except (ValueError, KeyError):
        return None
