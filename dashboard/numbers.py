"""Whole numbers read from a query, a form or a header: only ASCII digits count, since `str.isdigit` also takes
`²` and other digits `int` refuses, and a page must answer bad input, never fail on it."""

from __future__ import annotations

MAX_DIGITS = 18  # more than any page, line or offset the dashboard counts; a longer one is not worth converting


def whole_number(text: str | None, default: int) -> int:
    """`text` as a whole number, or `default` when it is missing or not one."""
    if text is None or not text.isascii() or not text.isdigit() or len(text) > MAX_DIGITS:
        return default
    return int(text)
