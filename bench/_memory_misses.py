"""In-process runs of the memory index on LoCoMo and LongMemEval for ranking work: per-half scores, misses spelled out.

    .venv/bin/python bench/_memory_misses.py                          # both benchmarks, scores per half
    .venv/bin/python bench/_memory_misses.py --bench locomo --show 20 --only 26   # plus 20 misses, top snippets
    .venv/bin/python bench/_memory_misses.py --set rrf_k=20 --set vector_weight=0.3

Same workspaces and scoring as `bench/locomo.py` and `bench/longmemeval.py`, but without MCP, so a variant of
`RankSettings` is measured in seconds. State (cached vectors) is kept under `--cache`, so only the first run
per embedder pays for it. Each benchmark is split into two halves (LoCoMo by conversation, LongMemEval by
alternate questions of each type): a change is kept only if it helps both halves of both.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import _memory_locomo as locomo
import _memory_longmemeval as longmemeval

from hermitcrab.servers.memory.embed import Embedder, make_embedder
from hermitcrab.servers.memory.files import MemoryRoots
from hermitcrab.servers.memory.index import MemoryIndex
from hermitcrab.servers.memory.ranking import RankSettings

BENCHES = ("locomo", "longmemeval")
LOCOMO_SPLITS = {"train": ("26", "30", "41"), "validation": ("42", "43")}
CACHE = Path("/tmp/hermitcrab-memory-cache")


@dataclass(frozen=True)
class Probe:
    """One question as the in-process runs need it."""

    kind: str
    text: str
    score: Callable[[list[str]], tuple[bool, bool]]  # snippets -> (hit, all evidence)
    holds_evidence: Callable[[str], bool]  # chunk text -> does it hold (part of) an evidence turn
    evidence: tuple[str, ...]  # for printing misses


@dataclass(frozen=True)
class Case:
    """One workspace of a benchmark with its questions, and the split it belongs to."""

    bench: str
    name: str
    split: str  # "train" or "validation"
    workspace: Path
    probes: tuple[Probe, ...]


def cases(bench: str, cache: Path, only: set[str] | None = None) -> Iterator[Case]:
    """The workspaces of `bench` (built under `cache` once), `only` those named when given."""
    if bench == "locomo":
        for name in locomo.conversations():
            if only and name not in only:
                continue
            data = locomo.load(name)
            workspace = cache / "locomo" / name / "workspace"
            questions = locomo.questions(data, locomo.build_workspace(data, workspace))
            split = next(label for label, names in LOCOMO_SPLITS.items() if name in names)
            yield Case(bench, name, split, workspace, tuple(_locomo_probe(q) for q in questions))
        return
    items = longmemeval.load()
    split = longmemeval.splits(items)
    for item in items:
        if only and item["question_id"] not in only:
            continue
        workspace = cache / "longmemeval" / item["question_id"] / "workspace"
        question = longmemeval.build_workspace(item, workspace)
        yield Case(bench, question.id, split[question.id], workspace, (_longmemeval_probe(question),))


def _locomo_probe(question: locomo.Question) -> Probe:
    return Probe(
        kind=locomo.CATEGORIES[question.category],
        text=question.text,
        score=lambda snippets: locomo.score(snippets, question, 6),
        holds_evidence=lambda text: any(prefix in text for prefix in question.evidence),
        evidence=question.evidence,
    )


def _longmemeval_probe(question: longmemeval.Question) -> Probe:
    pieces = [piece for turn in question.evidence for piece in turn]
    return Probe(
        kind=question.kind,
        text=question.text,
        score=lambda snippets: longmemeval.score(snippets, question),
        holds_evidence=lambda text: any(piece in longmemeval.collapse(text) for piece in pieces),
        evidence=tuple(min(turn, key=len, default="")[:100] for turn in question.evidence),
    )


def open_index(case: Case, embedder_name: str, settings: RankSettings, cache: Path) -> MemoryIndex:
    """The case's index, synced; its state (and vectors) cached under `cache`. Indexes share one embedder of each
    name: a model per index would be loaded again for each of hundreds of workspaces."""
    state = cache / case.bench / case.name / f"state-{embedder_name}"
    roots = MemoryRoots(case.workspace.resolve(), ())
    index = MemoryIndex(roots, state, _embedder(embedder_name), settings)
    index.sync()
    return index


@cache
def _embedder(name: str) -> Embedder | None:
    return make_embedder(name, idle_s=3600)


def _value(text: str) -> object:
    if text == "None":
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def settings_from(pairs: list[str]) -> RankSettings:
    """`RankSettings` with `name=value` overrides."""
    changes = {name: _value(value) for name, _, value in (pair.partition("=") for pair in pairs)}
    return dataclasses.replace(RankSettings(), **changes)  # pyright: ignore[reportArgumentType]  # CLI values


Row = tuple[str, bool, bool, int]  # kind, hit@6, all@6, chars@6


def run(index: MemoryIndex, case: Case, show: int, limit: int) -> list[Row]:
    """One row per question of `case`; prints up to `show` misses."""
    rows: list[Row] = []
    shown = 0
    for probe in case.probes:
        snippets = [str(item["snippet"]) for item in index.search(probe.text, limit)][:6]
        hit, every = probe.score(snippets)
        rows.append((probe.kind, hit, every, sum(len(s) for s in snippets)))
        if (not every) and shown < show:
            shown += 1
            _print_miss(case.name, probe, snippets, hit)
    return rows


def _print_miss(name: str, probe: Probe, snippets: list[str], hit: bool) -> None:
    print(f"\n=== {name} [{probe.kind}] {'PARTIAL' if hit else 'MISS'}: {probe.text}")
    for evidence in probe.evidence:
        print(f"  evidence: {evidence}")
    for rank, text in enumerate(snippets, 1):
        print(f"  --- {rank}: " + text.replace("\n", "\n      "))


def summary(label: str, rows: list[Row]) -> str:
    n = max(len(rows), 1)
    hits = {kind.replace("single-session-", "ss-")[:12]: [r[1] for r in rows if r[0] == kind] for kind, *_ in rows}
    per_kind = " ".join(f"{kind}={sum(v) / len(v):.3f}" for kind, v in sorted(hits.items()))
    return (
        f"{label}: n={len(rows)} hit@6={sum(r[1] for r in rows) / n:.3f} all@6={sum(r[2] for r in rows) / n:.3f} "
        f"chars={sum(r[3] for r in rows) / n:.0f}  {per_kind}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bench", choices=BENCHES, action="append", help="default: both")
    parser.add_argument("--only", help="comma-separated conversation or question ids (default: all)")
    parser.add_argument("--embedder", default="use")
    parser.add_argument("--set", action="append", default=[], help="a RankSettings override, name=value")
    parser.add_argument("--show", type=int, default=0, help="print this many misses per workspace")
    parser.add_argument("--limit", type=int, default=6, help="max_results asked for (the first 6 are scored)")
    parser.add_argument("--cache", type=Path, default=CACHE)
    args = parser.parse_args()
    settings = settings_from(args.set)
    only = set(args.only.split(",")) if args.only else None
    for bench in args.bench or BENCHES:
        halves: dict[str, list[Row]] = {}
        for case in cases(bench, args.cache, only):
            index = open_index(case, args.embedder, settings, args.cache)
            halves.setdefault(case.split, []).extend(run(index, case, args.show, args.limit))
        for half, rows in sorted(halves.items()):
            print(summary(f"{bench} {half}", rows))
        print(summary(f"{bench} all", [row for rows in halves.values() for row in rows]))


if __name__ == "__main__":
    main()
