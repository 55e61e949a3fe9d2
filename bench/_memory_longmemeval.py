"""LongMemEval_S -> memory workspaces and scoring, exactly as ../shared/data/longmemeval/README.md describes."""

from __future__ import annotations

import datetime as dt
import gzip
import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import tantivy

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "longmemeval"
FILES = ("dev40.json.gz", "more.json.gz")  # 40 + 178 development questions
TRAIN_SHARE = 0.6  # of each question type; the rest is the validation split
PIECE = 120
STEP = 40


@dataclass(frozen=True)
class Question:
    id: str
    kind: str
    text: str
    evidence: tuple[frozenset[str], ...]  # per evidence turn, the pieces that only that turn holds


def load(data: Path = DATA) -> list[dict]:
    """Every development question (both files), in file order."""
    items: list[dict] = []
    for name in FILES:
        if (data / name).exists():
            with gzip.open(data / name, "rt", encoding="utf-8") as file:
                items.extend(json.load(file))
    return items


def splits(items: list[dict]) -> dict[str, str]:
    """question id -> "train" or "validation": within each question type, the first `TRAIN_SHARE` of the questions
    in the order of a hash of their ids (fixed whatever the files' order, and independent of the questions'
    content), so both splits hold every type in the same proportions."""
    by_kind: dict[str, list[str]] = defaultdict(list)
    for item in items:
        by_kind[item["question_type"]].append(item["question_id"])
    split: dict[str, str] = {}
    for ids in by_kind.values():
        ids.sort(key=lambda qid: hashlib.blake2b(qid.encode(), digest_size=8).digest())
        cut = round(len(ids) * TRAIN_SHARE)
        split.update({qid: "train" if place < cut else "validation" for place, qid in enumerate(ids)})
    return split


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


class LineBM25:
    """The plain baseline: every turn line is a document; a result is a whole line."""

    def __init__(self, lines: list[str]) -> None:
        builder = tantivy.SchemaBuilder()
        builder.add_text_field("body", stored=True, tokenizer_name="en_stem")
        self._index = tantivy.Index(builder.build())
        writer = self._index.writer(heap_size=50_000_000, num_threads=1)
        for line in lines:
            writer.add_document(tantivy.Document(body=line))
        writer.commit()
        self._index.reload()

    def search(self, query: str, k: int) -> list[str]:
        parsed, _ = self._index.parse_query_lenient(query, ["body"])
        searcher = self._index.searcher()
        return [searcher.doc(address)["body"][0] for _, address in searcher.search(parsed, k).hits]
