"""In-process LoCoMo runs of the memory index for ranking work: per-split scores, and the misses spelled out.

    .venv/bin/python bench/_memory_misses.py                      # scores for {26,30,41} and {42,43}
    .venv/bin/python bench/_memory_misses.py --show 20 --only 26  # plus 20 misses with their top snippets
    .venv/bin/python bench/_memory_misses.py --set rrf_k=20 --set vector_weight=0.3

Same workspaces and scoring as `bench/locomo.py`, but without MCP, so a variant of `RankSettings` is measured
in seconds. State (cached vectors) is kept under `--cache`, so only the first run per embedder pays for it.
The split into two halves is the guard against overfitting: a change is kept only if it helps both.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import _memory_locomo as locomo

from hermitcrab.servers.memory.embed import make_embedder
from hermitcrab.servers.memory.files import MemoryRoots
from hermitcrab.servers.memory.index import MemoryIndex
from hermitcrab.servers.memory.ranking import RankSettings

SPLITS = {"A": ["26", "30", "41"], "B": ["42", "43"]}
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


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


def run(
    name: str, settings: RankSettings, embedder_name: str, cache: Path, show: int, limit: int
) -> list[tuple[int, bool, bool, int]]:
    """(category, hit@6, all@6, chars@6) per question of conversation `name`; prints up to `show` misses."""
    data = locomo.load(name)
    workspace = cache / name / "workspace"
    turns = locomo.build_workspace(data, workspace)
    questions = locomo.questions(data, turns)
    embedder = make_embedder(embedder_name)
    index = MemoryIndex(
        MemoryRoots(workspace.resolve(), ()), cache / name / f"state-{embedder_name}", embedder, settings
    )
    index.sync()
    rows: list[tuple[int, bool, bool, int]] = []
    shown = 0
    for question in questions:
        snippets = [str(item["snippet"]) for item in index.search(question.text, limit)][:6]
        hit, every = locomo.score(snippets, question, 6)
        rows.append((question.category, hit, every, sum(len(s) for s in snippets)))
        if (not every) and shown < show:
            shown += 1
            _print_miss(name, question, snippets, hit)
    return rows


def _print_miss(name: str, question: locomo.Question, snippets: list[str], hit: bool) -> None:
    shown = "\n".join(snippets)
    print(f"\n=== {name} [{CATEGORIES[question.category]}] {'PARTIAL' if hit else 'MISS'}: {question.text}")
    for prefix in question.evidence:
        print(f"  evidence {'+' if prefix in shown else '-'} {prefix}")
    for rank, text in enumerate(snippets, 1):
        print(f"  --- {rank}: " + text.replace("\n", "\n      "))


def summary(label: str, rows: list[tuple[int, bool, bool, int]]) -> str:
    n = max(len(rows), 1)
    cats = " ".join(
        f"{CATEGORIES[c][:5]}={sum(r[1] for r in rows if r[0] == c) / max(sum(r[0] == c for r in rows), 1):.3f}"
        for c in sorted(CATEGORIES)
    )
    return (
        f"{label}: n={len(rows)} hit@6={sum(r[1] for r in rows) / n:.3f} all@6={sum(r[2] for r in rows) / n:.3f} "
        f"chars={sum(r[3] for r in rows) / n:.0f}  {cats}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", help="comma-separated conversation ids (default: all)")
    parser.add_argument("--embedder", default="use")
    parser.add_argument("--set", action="append", default=[], help="a RankSettings override, name=value")
    parser.add_argument("--show", type=int, default=0, help="print this many misses per conversation")
    parser.add_argument("--limit", type=int, default=6, help="max_results asked for (the first 6 are scored)")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/hermitcrab-locomo-cache"))
    args = parser.parse_args()
    settings = settings_from(args.set)
    names = args.only.split(",") if args.only else locomo.conversations()
    rows = {name: run(name, settings, args.embedder, args.cache, args.show, args.limit) for name in names}
    for label, members in SPLITS.items():
        part = [row for name in members if name in rows for row in rows[name]]
        if part:
            print(summary(f"{label} {{{','.join(members)}}}", part))
    print(summary("all", [row for part in rows.values() for row in part]))


if __name__ == "__main__":
    main()
