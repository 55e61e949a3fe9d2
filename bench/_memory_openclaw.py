"""OpenClaw's classic memory search, reimplemented as the reference to beat (see reference.md, Memory).

1,600-character line-based chunks with 320 characters of overlap; a text leg in which every query word must
appear (FTS5-style AND, unicode61 tokens, BM25 scaled to 0..1); a cosine vector leg; 0.7 vector + 0.3 text
over the top 24 of each leg; results below 0.35 dropped; snippets cut at 700 characters.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hermitcrab.servers.memory.embed import Embedder

CHUNK_CHARS, OVERLAP_CHARS, CANDIDATES, MIN_SCORE, SNIPPET = 1600, 320, 24, 0.35, 700
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class ClassicChunk:
    path: str
    text: str


def chunk_file(path: str, text: str) -> list[ClassicChunk]:
    """Whole lines packed up to 1,600 chars; the next chunk starts with the last ~320 chars of lines."""
    lines = text.splitlines()
    chunks: list[ClassicChunk] = []
    start = 0
    while start < len(lines):
        end, size = start, 0
        while end < len(lines) and (size == 0 or size + len(lines[end]) + 1 <= CHUNK_CHARS):
            size += len(lines[end]) + 1
            end += 1
        chunks.append(ClassicChunk(path, "\n".join(lines[start:end])))
        if end >= len(lines):
            break
        back, carried = end, 0
        while back - 1 > start and carried + len(lines[back - 1]) + 1 <= OVERLAP_CHARS:
            back -= 1
            carried += len(lines[back]) + 1
        start = back
    return chunks


class ClassicIndex:
    """The reference search over one workspace."""

    def __init__(self, workspace: Path, embedder: Embedder) -> None:
        self.embedder = embedder
        self.chunks: list[ClassicChunk] = []
        for path in sorted([workspace / "MEMORY.md", *(workspace / "memory").rglob("*.md")]):
            if path.is_file():
                self.chunks += chunk_file(path.relative_to(workspace).as_posix(), path.read_text(encoding="utf-8"))
        self.tokens = [Counter(_WORD.findall(chunk.text.lower())) for chunk in self.chunks]
        self.lengths = [sum(counts.values()) for counts in self.tokens]
        self.avg_length = sum(self.lengths) / max(len(self.lengths), 1)
        self.df: Counter[str] = Counter(term for counts in self.tokens for term in counts)
        self.vectors = embedder.passages([chunk.text for chunk in self.chunks])

    def _bm25(self, i: int, terms: list[str]) -> float:
        n, score = len(self.chunks), 0.0
        for term in terms:
            tf = self.tokens[i][term]
            idf = math.log(1 + (n - self.df[term] + 0.5) / (self.df[term] + 0.5))
            score += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * self.lengths[i] / self.avg_length))
        return score

    def search(self, query: str, k: int) -> list[str]:
        terms = list(dict.fromkeys(_WORD.findall(query.lower())))
        matching = [i for i, counts in enumerate(self.tokens) if terms and all(counts[t] for t in terms)]
        text = sorted(((self._bm25(i, terms), i) for i in matching), reverse=True)[:CANDIDATES]
        best = text[0][0] if text else 1.0
        text_scores = {i: score / best for score, i in text}
        cosines = self.vectors @ self.embedder.query(query)
        top = np.argsort(-cosines)[:CANDIDATES]
        vector_scores = {int(i): float(cosines[i]) for i in top}
        merged = {
            i: 0.7 * vector_scores.get(i, 0.0) + 0.3 * text_scores.get(i, 0.0)
            for i in set(text_scores) | set(vector_scores)
        }
        ranked = sorted((i for i, score in merged.items() if score >= MIN_SCORE), key=lambda i: -merged[i])
        return [self.chunks[i].text[:SNIPPET] for i in ranked[:k]]
