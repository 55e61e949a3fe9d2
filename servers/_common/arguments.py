"""Tool arguments from an untrusted caller: size limits, short quotes for error text, readable validation errors.

A confused model can send a 10 MB path. Declaring limits on the arguments (`Field(max_length=...)`) rejects it
before any work is done, and quoting at most ~200 characters of an argument keeps the reply and the log small.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

MAX_PATH_CHARS = 4_096  # PATH_MAX on Linux
MAX_QUERY_CHARS = 2_000
QUOTE_CHARS = 200
_SHOWN_ERRORS = 2


def quote(value: object, limit: int = QUOTE_CHARS) -> str:
    """`value` as a quoted string of about `limit` characters at most; a longer one says how long it was."""
    text = value if isinstance(value, str) else str(value)
    if len(text) <= limit:
        return repr(text)
    return f"{text[: limit - 40]!r}... ({len(text):,} characters)"


def shorten(text: str, limit: int = QUOTE_CHARS) -> str:
    """`text` cut to about `limit` characters, with a mark where it was cut."""
    return text if len(text) <= limit else f"{text[: limit - 1]}\u2026"


def describe_invalid(tool: str, error: ValidationError) -> str:
    """One or two lines saying which arguments of `tool` are wrong, by which rule, and what to do."""
    problems = [_problem(detail) for detail in error.errors(include_url=False)]
    shown = "; ".join(problems[:_SHOWN_ERRORS])
    more = f" (and {len(problems) - _SHOWN_ERRORS} more)" if len(problems) > _SHOWN_ERRORS else ""
    return f"Invalid arguments for {tool}: {shown}{more}.\nFix them as the tool's input schema says and call again."


def _short(part: str) -> str:
    return part if len(part) <= 40 else part[:20] + "\u2026"


def _problem(detail: Any) -> str:
    name = ".".join(_short(str(part)) for part in detail["loc"])
    kind: str = detail["type"]
    given: Any = detail.get("input")
    context: dict[str, Any] = detail.get("ctx") or {}
    if kind == "missing":
        return f"`{name}` is required"
    if kind == "string_too_long":
        return f"`{name}` is too long ({len(given):,} characters; the limit is {context['max_length']:,})"
    if kind == "too_long":
        count = context.get("actual_length", len(given))
        return f"`{name}` has too many items ({count:,}; the limit is {context['max_length']:,})"
    message = str(detail["msg"])  # may quote the whole input (a union's tag), so it is cut like one
    message = message[:1].lower() + (message[1:] if len(message) <= QUOTE_CHARS else message[1:QUOTE_CHARS] + "\u2026")
    if isinstance(given, str | int | float | bool):
        return f"`{name}`: {message}, got {quote(given, 60)}"
    return f"`{name}`: {message}"
