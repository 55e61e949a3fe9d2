"""Opaque identifiers a summary must not lose, found mechanically rather than trusted to the model.

UUIDs, hashes, URLs, paths, hostnames, IPs and ports, emails, dates, numbers with units, ticket-like IDs and code
in backticks. Whatever the summary lacks is appended under "Exact identifiers", most recent first, within a cap.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

HEADING = "## Exact identifiers (copied from the compacted messages; most recent first)"
TOOLS_HEADING = "## Exact identifiers from tool calls and results (most recent first)"

_UNITS = (
    r"ms|µs|ns|s|sec|secs|seconds?|min|mins|minutes?|h|hrs?|hours?|days?|weeks?|months?|years?|"
    r"[KMGTP]i?B|[kKMGT]b|B|bytes?|%|°C|°F|[mck]?m|km/h|mph|kg|g|mg|lbs?|GHz|MHz|Hz|V|W|kW|kWh|"
    r"USD|EUR|GBP|CHF|JPY|tokens?|rps|qps|req/s|fps|px|pt|em"
)
_PATTERNS = [
    r"https?://[^\s<>\"'`)\]}]+",
    r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+",
    r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b",
    r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d{1,5})?\b",
    r"\[[0-9a-fA-F:]{3,39}\](?::\d{1,5})?",
    r"(?<![\w/.~-])(?:~|\.{1,2})?/(?:[\w.@+-]+/)*[\w.@+-]+/?",
    r"\b[A-Za-z]:\\(?:[\w .-]+\\)*[\w .-]+",
    r"(?<![\w@+/-])(?:[\w@+-]+/)+[\w@+-]+\.\w{1,8}\b",
    r"(?<![\w.-])[a-zA-Z0-9-]+(?:\.[a-zA-Z0-9-]+)*:\d{2,5}\b",
    r"(?<![\w.-])(?:[a-zA-Z0-9-]+\.)+[a-zA-Z]{2,24}\b",
    r"`[^`\n]{1,120}`",
    r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?(?:Z|[+-]\d{2}:?\d{2})?)?\b",
    r"[$€£]\s?\d[\d,]*(?:\.\d+)?",
    rf"\b\d[\d,]*(?:\.\d+)?\s?(?:{_UNITS})(?![\w])",
    r"\b[A-Z][A-Z0-9]{1,9}-\d+\b",
    r"#\d{2,}\b",
    r"\b[0-9a-f]{7,64}\b",
    r"(?<![\w-])(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[A-Za-z0-9][\w-]{3,}[A-Za-z0-9]\b",
]
_FINDER = re.compile("|".join(f"(?:{pattern})" for pattern in _PATTERNS))
_TRAILING = ".,;:!?'\""
_DOTTED_WORDS = re.compile(r"^(?:[a-z]\.)+[a-z]$", re.I)  # e.g., i.e.


def find(text: str) -> list[str]:
    """Identifiers in `text`, in order of appearance, each once."""
    found: dict[str, None] = {}
    for match in _FINDER.finditer(text):
        token = match.group(0).rstrip(_TRAILING)
        if token.startswith("`"):
            token = match.group(0)
        if len(token) >= 4 and not _DOTTED_WORDS.match(token) and not _plain_number(token):
            found.setdefault(token, None)
    return list(found)


def missing(
    texts_newest_first: Iterable[str], summary: str, also_kept: str = "", skip: Iterable[str] = ()
) -> list[str]:
    """Identifiers of `texts` (newest first) that neither the summary nor the verbatim part shows."""
    seen: dict[str, None] = {}
    done = set(skip)
    for text in texts_newest_first:
        for token in reversed(find(text)):
            if token not in done and not shows(summary, token) and not shows(also_kept, token):
                seen.setdefault(token, None)
    return list(seen)


def section(said: list[str], from_tools: list[str], cap_chars: int) -> str:
    """The "Exact identifiers" sections: what was said first, then what tools saw, most recent first, within a cap.

    The two keep their own headings, so the next compaction still ranks what people said above tool output.
    """
    budget = cap_chars
    blocks: list[str] = []
    dropped = 0
    for heading, tokens in ((HEADING, said), (TOOLS_HEADING, from_tools)):
        lines: list[str] = []
        for token in tokens:
            line = f"- {token}" if token.startswith("`") else f"- `{token}`"
            if len(line) + 1 > budget:
                break
            lines.append(line)
            budget -= len(line) + 1
        dropped += len(tokens) - len(lines)
        if lines:
            blocks.append(f"{heading}\n" + "\n".join(lines))
    if dropped:
        blocks.append(f"({dropped} older identifiers left out; the transcript file keeps them)")
    return "\n\n".join(blocks)


def shows(text: str, token: str) -> bool:
    """Whether `text` holds `token` as a whole (`job-1` is not shown by `job-10`)."""
    start = text.find(token)
    while start >= 0:
        end = start + len(token)
        if not (start and text[start - 1].isalnum() and token[0].isalnum()) and not (
            end < len(text) and text[end].isalnum() and token[-1].isalnum()
        ):
            return True
        start = text.find(token, start + 1)
    return False


def _plain_number(token: str) -> bool:
    return token.replace(",", "").replace(".", "").isdigit() and not re.fullmatch(r"\d{4}-\d{2}-\d{2}.*", token)
