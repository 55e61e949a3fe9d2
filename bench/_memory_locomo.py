"""LoCoMo -> memory workspaces and scoring, exactly as ../shared/data/locomo/README.md describes."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_STAMP = re.compile(r"(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+(\w+),?\s+(\d{4})", re.I)


@dataclass(frozen=True)
class Question:
    text: str
    category: int
    evidence: tuple[str, ...]  # the first 60 characters of each evidence turn


def parse_stamp(stamp: str) -> dt.datetime:
    """`1:56 pm on 8 May, 2023` -> datetime."""
    match = _STAMP.search(stamp)
    if match is None:
        raise ValueError(f"unparsed session time {stamp!r}")
    hour, minute, half, day, month, year = match.groups()
    hour_24 = int(hour) % 12 + (12 if half.lower() == "pm" else 0)
    month_number = dt.datetime.strptime(month[:3], "%b").month
    return dt.datetime(int(year), month_number, int(day), hour_24, int(minute))


def build_workspace(conversation: dict, workspace: Path) -> dict[str, str]:
    """Write one daily log per session date; returns dia_id -> turn text."""
    sessions: dict[dt.date, list[tuple[dt.datetime, list[dict]]]] = defaultdict(list)
    turns: dict[str, str] = {}
    number = 1
    while f"session_{number}" in conversation:
        when = parse_stamp(conversation[f"session_{number}_date_time"])
        sessions[when.date()].append((when, conversation[f"session_{number}"]))
        number += 1
    (workspace / "memory").mkdir(parents=True, exist_ok=True)
    for day, parts in sessions.items():
        blocks: list[str] = []
        for index, (when, session) in enumerate(sorted(parts, key=lambda part: part[0])):
            lines = []
            for turn in session:
                line = f"- {turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    line += f" [shares a photo: {turn['blip_caption']}]"
                lines.append(line)
                turns[turn["dia_id"]] = turn["text"]
            heading = f"## {when:%H:%M}\n\n" if index else ""
            blocks.append(heading + "\n".join(lines))
        (workspace / "memory" / f"{day.isoformat()}.md").write_text("\n\n".join(blocks) + "\n", encoding="utf-8")
    return turns


def questions(data: dict, turns: dict[str, str]) -> list[Question]:
    """Categories 1-4 (5 is adversarial and has no answer); evidence as 60-character prefixes."""
    found: list[Question] = []
    for qa in data["qa"]:
        if qa.get("category") == 5:
            continue
        evidence = tuple(turns[e][:60] for e in _evidence_ids(qa["evidence"]) if e in turns)
        if evidence:
            found.append(Question(qa["question"], qa["category"], evidence))
    return found


def _evidence_ids(raw: list[str]) -> list[str]:
    ids: list[str] = []
    for item in raw:
        ids.extend(part.strip() for part in re.split(r"[;,]", item) if part.strip())
    return ids


def load(name: str) -> dict:
    return json.loads((DATA / f"{name}.json").read_text(encoding="utf-8"))


def conversations() -> list[str]:
    return sorted(path.stem for path in DATA.glob("*.json"))


def score(snippets: list[str], question: Question, k: int) -> tuple[bool, bool]:
    """(hit: any evidence in the top k snippets, all: every evidence there)."""
    shown = "\n".join(snippets[:k])
    present = [prefix in shown for prefix in question.evidence]
    return any(present), all(present)
