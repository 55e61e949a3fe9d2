"""LongMemEval_S -> memory workspaces and scoring, exactly as ../shared/data/longmemeval/README.md describes."""

from __future__ import annotations

import datetime as dt
import gzip
import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "longmemeval" / "dev40.json.gz"
PIECE = 120
STEP = 40


@dataclass(frozen=True)
class Question:
    id: str
    kind: str
    text: str
    evidence: tuple[frozenset[str], ...]  # per evidence turn, the pieces that only that turn holds


def load(path: Path = DATA) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as file:
        return json.load(file)


def collapse(text: str) -> str:
    return " ".join(text.split())


def build_workspace(item: dict, workspace: Path) -> Question:
    """Write the question's haystack as daily logs (sessions in time order, one line per turn); return the question."""
    sessions = sorted(
        zip(item["haystack_dates"], item["haystack_sessions"], strict=True),
        key=lambda pair: parse_date(pair[0]),
    )
    days: dict[dt.date, list[str]] = defaultdict(list)
    for number, (date, turns) in enumerate(sessions, start=1):
        when = parse_date(date)
        days[when.date()].append(f"## {when:%H:%M} session {number}\n\n" + "\n".join(turn_lines(turns)))
    (workspace / "memory").mkdir(parents=True, exist_ok=True)
    for day, blocks in days.items():
        (workspace / "memory" / f"{day.isoformat()}.md").write_text("\n\n".join(blocks) + "\n", encoding="utf-8")
    turns = [collapse(turn["content"]) for _, session in sessions for turn in session]
    evidence = [collapse(turn["content"]) for _, session in sessions for turn in session if turn.get("has_answer")]
    return Question(item["question_id"], item["question_type"], item["question"], _evidence_pieces(evidence, turns))


def turn_lines(turns: list[dict]) -> list[str]:
    """A session's turns as chat-log lines, one a turn however long (`- user: ...`)."""
    return [f"- {turn['role']}: {collapse(turn['content'])}" for turn in turns]


def haystack_lines(workspace: Path) -> list[str]:
    """Every turn line of a workspace built above, for the plain one-result-per-line baseline."""
    return [
        line
        for path in sorted((workspace / "memory").glob("*.md"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.startswith("- ")
    ]


def score(snippets: list[str], question: Question) -> tuple[bool, bool]:
    """(hit, all evidence): whether the snippets hold a piece of one evidence turn, of every one."""
    shown = collapse(" ".join(snippets))
    found = [any(piece in shown for piece in pieces) for pieces in question.evidence]
    return any(found), bool(found) and all(found)


def _evidence_pieces(evidence: list[str], turns: list[str]) -> tuple[frozenset[str], ...]:
    result: list[frozenset[str]] = []
    for turn in dict.fromkeys(evidence):
        pieces = {turn} if len(turn) <= PIECE else {turn[i : i + PIECE] for i in range(0, len(turn) - PIECE + 1, STEP)}
        others = "\n".join(other for other in turns if other != turn)
        result.append(frozenset(piece for piece in pieces if piece not in others))
    return tuple(result)


def parse_date(stamp: str) -> dt.datetime:
    """`2023/05/20 (Sat) 02:21` -> datetime."""
    day, _, clock = stamp.split(" ")
    return dt.datetime.strptime(f"{day} {clock}", "%Y/%m/%d %H:%M")
