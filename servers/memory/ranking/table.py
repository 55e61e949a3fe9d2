"""Per-chunk facts the ranking stages share, by position in the index's chunk order: which terms each chunk
holds, who wrote it (in a chat log), how long its unit is and which file it is in."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

Matrix = npt.NDArray[np.float64]
SPEAKER_LINES = 3  # a name starting fewer of a file's chunks is a label ("- Coffee: oat flat white"), not a speaker

_SPEAKER = re.compile(
    r"^\s*(?:[-*+]\s+|\d{1,3}[.)]\s+)?(?:>\s*)?(?:\[[^\]\n]{1,24}\]\s*)?"  # a bullet, a quote, a [time]
    r"(?:\*\*([^*:\n]{1,40}?):?\*\*:?|<([^>\n]{1,40})>|(\w[\w.'-]*(?: \w[\w.'-]*){0,2}?)(?::|\s+wrote:?))\s"
)


def speaker_of(text: str) -> str | None:
    """`alice` for a chunk written by Alice in any common chat-log form (`- Alice: ...`, `**Alice:** ...`,
    `Alice: ...`, `[10:02] <Alice> ...`, `> Alice wrote: ...`), else None."""
    match = _SPEAKER.match(text)
    name = next((group for group in match.groups() if group), None) if match else None
    return name.strip().lower() if name else None


@dataclass(frozen=True)
class ChunkTable:
    """Per-chunk facts by position in the index's chunk order."""

    postings: Mapping[str, npt.NDArray[np.intp]]  # index term -> the positions whose text holds it
    speakers: Sequence[str | None]  # who wrote each chunk, when its file is a chat log that name speaks in
    log_lengths: Matrix
    files: npt.NDArray[np.intp]  # which file each position belongs to: neighbours are positions of the same file
    names: Speakers  # every speaker seen

    @classmethod
    def build(
        cls,
        terms: Sequence[Collection[str]],
        speakers: Sequence[str | None],
        lengths: Sequence[int],
        files: Sequence[int],
    ) -> ChunkTable:
        postings: dict[str, list[int]] = {}
        for position, held in enumerate(terms):
            for term in held:
                postings.setdefault(term, []).append(position)
        pairs = list(zip(files, speakers, strict=True))
        lines = Counter(pairs)
        speakers = [name if lines[pair] >= SPEAKER_LINES else None for pair, name in zip(pairs, speakers, strict=True)]
        return cls(
            postings={term: np.array(found, dtype=np.intp) for term, found in postings.items()},
            speakers=speakers,
            log_lengths=np.log(np.asarray(lengths, dtype=np.float64) + 1),
            files=np.asarray(files, dtype=np.intp),
            names=Speakers.of(name for name in speakers if name),
        )

    def holding(self, term: str) -> npt.NDArray[np.bool_]:
        """A mask over positions: which chunks hold `term`."""
        mask = np.zeros(len(self.files), dtype=bool)
        mask[self.postings.get(term, np.zeros(0, dtype=np.intp))] = True
        return mask

    def neighbour(
        self, positions: npt.NDArray[np.intp], offset: int
    ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.bool_]]:
        """The positions `offset` away (clamped) and whether each is in the same file."""
        moved = np.clip(positions + offset, 0, max(len(self.files) - 1, 0))
        return moved, (moved == positions + offset) & (self.files[moved] == self.files[positions])


_NAME_KEY = re.compile(r"[\w.'-]*")  # a name's first word, as the speaker pattern allows it
_WORD_START = re.compile(r"(?<!\w)\w")


@dataclass(frozen=True)
class Speakers:
    """Every speaker seen, filed by the name's first word. A chat log may hold thousands of "names" (any `Word:`
    that starts a line, in years of notes), so finding the ones a query names must cost what the query is long,
    not what the names are many."""

    by_first_word: Mapping[str, tuple[str, ...]]
    others: tuple[str, ...]  # names that do not start with a word character: tried one by one

    @classmethod
    def of(cls, names: Iterable[str]) -> Speakers:
        by_first_word: dict[str, list[str]] = {}
        others: list[str] = []
        for name in set(names):
            if _WORD_START.match(name):
                by_first_word.setdefault(_first_word(name, 0), []).append(name)
            else:
                others.append(name)
        return cls({word: tuple(found) for word, found in by_first_word.items()}, tuple(others))

    def named_in(self, query: str) -> frozenset[str]:
        """The speakers `query` names as whole words."""
        lowered = query.lower()
        found = {name for name in self.others if _names(lowered, name)}
        for start in _WORD_START.finditer(lowered):
            word = _first_word(lowered, start.start())
            for end in range(1, len(word) + 1):  # a name's first word is this word, or the start of it
                found.update(name for name in self.by_first_word.get(word[:end], ()) if _names(lowered, name))
        return frozenset(found)


def _first_word(text: str, at: int) -> str:
    found = _NAME_KEY.match(text, at)
    return found[0] if found else ""


def _names(lowered: str, name: str) -> bool:
    return name in lowered and re.search(rf"(?<!\w){re.escape(name)}(?!\w)", lowered) is not None
