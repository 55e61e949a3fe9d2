"""Split a Markdown memory file into small units (a bullet, a paragraph, a piece of a long one) with line ranges.

Memory is written as bullets and short paragraphs, so one unit is one thing remembered; its neighbours and
the headings above it travel with it as context (shown in the snippet, and indexed with a lower weight).

The empty fields of a persona template (`- Name:`, `* **Pronouns:**`, `1. 名前` with a full-width colon) are not
units: they hold nothing remembered, yet their labels are the very words questions ask with ("cat name" found a
blank `- Name:` above "The user's cat is called Miso"). They are recognised by shape, not by language.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_UNIT_CHARS = 600
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^\s{0,3}(?:[-*+]|\d{1,3}[.)])\s+")
_FENCE = re.compile(r"^\s*(```|~~~)")
_SENTENCE_END = re.compile(r"(?<=[.!?\u3002\uff01\uff1f])\s+|(?<=[\u3002\uff01\uff1f])")
# A field: an optional bullet or number, a short label without a colon, a colon (ASCII or full-width), a value.
_FIELD = re.compile(r"^\s*(?:[-*+]\s+|\d{1,3}[.)]\s*)?(?P<label>[^:\uff1a]{1,48}?)\s*[:\uff1a](?P<value>.*)$")
# What a template puts where a value goes: the shipped ones write `(not chosen yet)`.
_PLACEHOLDER = re.compile(r"[(\uff08][^()\uff08\uff09]*[)\uff09]")


@dataclass(frozen=True)
class Chunk:
    """One unit of a file (or a piece of a long one): its 1-based inclusive line range, text, the headings above
    it, and the characters of the whole unit it is part of (a piece of a 5,000-character chat turn is rarely
    what a question asks for)."""

    start_line: int
    end_line: int
    text: str
    headings: tuple[str, ...]
    unit_chars: int

    @property
    def embed_text(self) -> str:
        topic = " / ".join(h for h in self.headings if not _is_time_like(h))
        return f"{topic}: {self.text}" if topic else self.text


def _is_time_like(heading: str) -> bool:
    """Headings such as `13:56` or `2024-05-01` say when, not what: they are shown but not embedded."""
    return re.fullmatch(r"[\d:\-./ apmAPM]+", heading) is not None


def chunk_markdown(text: str) -> list[Chunk]:
    """Units of `text` in file order; headings are context, not units (unless a file has nothing else but
    headings: a template of empty fields under its heading has no units at all)."""
    lines = text.splitlines()
    chunks: list[Chunk] = []
    template = False
    headings: list[tuple[int, str]] = []
    block: list[tuple[int, str]] = []
    in_fence = False

    def flush() -> None:
        if block:
            chunks.extend(_split_unit(block, tuple(h for _, h in headings)))
            block.clear()

    for number, line in enumerate(lines, start=1):
        if _FENCE.match(line):
            if not in_fence:
                flush()
            in_fence = not in_fence
            block.append((number, line))
            if not in_fence:
                flush()
            continue
        if in_fence:
            block.append((number, line))
            continue
        heading = _HEADING.match(line)
        if heading:
            flush()
            level = len(heading[1])
            headings = [(lv, h) for lv, h in headings if lv < level] + [(level, heading[2])]
            continue
        if not line.strip():
            flush()
        elif _is_unfilled_field(lines, number - 1):
            flush()
            template = True
        elif _BULLET.match(line) or (block and _BULLET.match(block[0][1]) and not line.startswith((" ", "\t"))):
            flush()
            block.append((number, line))
        else:
            block.append((number, line))
    flush()
    if not chunks and headings and not template:
        text = "\n".join(h for _, h in headings)
        chunks.append(Chunk(1, len(lines), text, (), len(text)))
    return chunks


def _is_unfilled_field(lines: list[str], index: int) -> bool:
    """Is `lines[index]` a template's field with nothing (or only a placeholder) after its colon? Not when it
    labels what follows it: deeper-indented lines, or (with nothing after its colon) a paragraph or list that
    is not more fields (`Things to buy:` above `- milk`)."""
    value = _field_value(lines[index])
    if value is None or (value and _PLACEHOLDER.fullmatch(value) is None):
        return False
    following = next((lines[j] for j in range(index + 1, len(lines)) if lines[j].strip()), None)
    if following is None or _HEADING.match(following):
        return True
    if _indent(following) > _indent(lines[index]):
        return False
    return bool(value) or _field_value(following) is not None


def _field_value(line: str) -> str | None:
    """The value of a `Label: value` line without its emphasis (`**Label:** value`); None if not a field."""
    field = _FIELD.match(line)
    if field is None or not any(c.isalnum() for c in field["label"]):
        return None
    return field["value"].strip().strip("*_").strip()


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _split_unit(block: list[tuple[int, str]], headings: tuple[str, ...]) -> list[Chunk]:
    """One chunk per block, or several when it is long: split at line, then sentence, boundaries."""
    pieces: list[tuple[int, int, str]] = []
    for number, line in block:
        for part in _pieces(line.strip()):
            if pieces and len(pieces[-1][2]) + len(part) + 1 <= MAX_UNIT_CHARS:
                first, last, joined = pieces[-1]
                pieces[-1] = (first, number, joined + (" " if last == number else "\n") + part)
            else:
                pieces.append((number, number, part))
    unit_chars = sum(len(line.strip()) + 1 for _, line in block) - 1
    return [Chunk(first, last, body, headings, unit_chars) for first, last, body in pieces if body.strip()]


def _pieces(line: str) -> list[str]:
    """A line cut at sentence ends (or, failing that, hard) into parts of at most MAX_UNIT_CHARS."""
    if len(line) <= MAX_UNIT_CHARS:
        return [line]
    parts: list[str] = []
    current = ""
    for sentence in _SENTENCE_END.split(line):
        while len(sentence) > MAX_UNIT_CHARS:
            parts.append(sentence[:MAX_UNIT_CHARS])
            sentence = sentence[MAX_UNIT_CHARS:]
        if current and len(current) + len(sentence) + 1 > MAX_UNIT_CHARS:
            parts.append(current)
            current = sentence
        else:
            current = f"{current} {sentence}".strip()
    if current:
        parts.append(current)
    return parts
