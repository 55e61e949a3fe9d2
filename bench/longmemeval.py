"""LongMemEval_S retrieval benchmark for hermitcrab-memory, over stdio MCP, side by side with simple baselines.

    .venv/bin/python bench/longmemeval.py                          # all 40 development questions, all systems
    .venv/bin/python bench/longmemeval.py --limit 8 --systems ours,lines
    .venv/bin/python bench/longmemeval.py --only 0a995998,6a1eabeb

Systems: `ours` (the defaults), `ours-bm25` (`--embedder none`), `bm25` (`--embedder none --search text`) and
`vector` (`--search vector`) as in bench/locomo.py, and `lines`: the plain baseline the protocol names, a BM25
with one result per line (tantivy's `en_stem` tokenizer, in-process), each result one whole turn however long.
Protocol: ../shared/data/longmemeval/README.md (kept exactly: one `memory_search` of 6 results per question).
Each question has its own ~490 KB haystack, so every system indexes 40 workspaces; `--limit` and `--only` take
a subset while iterating, and `--vectors-from DIR` (e.g. /tmp/hermitcrab-memory-cache, the cache of
`_memory_misses.py`) starts the systems that embed with that question's vectors already cached: the same
results, but their index times are then those of BM25 and reading alone.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).parent))

import _memory_longmemeval as longmemeval
from _memory_bench import SYSTEMS, Tally, progress, search, serve, table

RESULTS = 6


async def run_server(
    flags: list[str], workspace: Path, state: Path, question: longmemeval.Question, tally: Tally
) -> list[str]:
    async with serve(flags, workspace, state, tally) as client:
        started = time.perf_counter()
        snippets = await search(client, question.text, RESULTS)
        tally.latencies.append(time.perf_counter() - started)
    return snippets


def run_lines(workspace: Path, question: longmemeval.Question, tally: Tally) -> list[str]:
    started = time.perf_counter()
    index = longmemeval.LineBM25(longmemeval.haystack_lines(workspace))
    tally.index_seconds.append(time.perf_counter() - started)
    began = time.perf_counter()
    snippets = index.search(question.text, RESULTS)
    tally.latencies.append(time.perf_counter() - began)
    return snippets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", help="comma-separated question ids (default: all)")
    parser.add_argument("--limit", type=int, help="only the first N questions")
    parser.add_argument("--systems", default="ours,ours-bm25,bm25,vector,lines")
    parser.add_argument("--vectors-from", type=Path, help="a cache of vectors per question (see above)")
    args = parser.parse_args()
    items = longmemeval.load()
    if args.only:
        wanted = set(args.only.split(","))
        items = [item for item in items if item["question_id"] in wanted]
    items = items[: args.limit]
    systems = args.systems.split(",")
    tallies = {system: Tally() for system in systems}
    hits: dict[str, set[str]] = {system: set() for system in systems}
    for item in items:
        with tempfile.TemporaryDirectory(prefix="longmemeval-") as tmp:
            workspace = Path(tmp) / "workspace"
            question = longmemeval.build_workspace(item, workspace)
            for system in systems:
                tally = tallies[system]
                if system == "lines":
                    snippets = run_lines(workspace, question, tally)
                else:
                    state = Path(tmp) / f"state-{system}"
                    cached = args.vectors_from and args.vectors_from / "longmemeval" / question.id / "state-use"
                    if cached and "none" not in SYSTEMS[system]:
                        shutil.copytree(cached / "vectors", state / "vectors")
                    snippets = anyio.run(run_server, SYSTEMS[system], workspace, state, question, tally)
                hit, complete = longmemeval.score(snippets, question)
                tally.add(question.kind, snippets, hit, complete)
                if hit:
                    hits[system].add(question.id)
                progress(
                    f"{question.id} [{question.kind}] {system}: hit={hit:d} all={complete:d} "
                    f"chars={sum(map(len, snippets))} index {tally.index_seconds[-1]:.2f}s"
                )
    print(f"\nLongMemEval_S development set, {len(items)} questions, {RESULTS} results each\n")
    print(table(tallies, in_process="lines"))
    print()
    for system in systems:
        print(f"{system} hit@6 by question type: {tallies[system].kinds()}")
    if len(systems) > 1:
        first = systems[0]
        for other in systems[1:]:
            print(
                f"{first} found {len(hits[first] - hits[other])} that {other} missed; "
                f"{other} found {len(hits[other] - hits[first])} that {first} missed"
            )


if __name__ == "__main__":
    main()
