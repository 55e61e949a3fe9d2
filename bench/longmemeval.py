"""LongMemEval_S retrieval benchmark for hermitcrab-memory, over stdio MCP, side by side with simple baselines.

    .venv/bin/python bench/longmemeval.py --vectors-from /tmp/hermitcrab-memory-cache   # the validation split
    .venv/bin/python bench/longmemeval.py --split train --limit 8 --systems ours,lines
    .venv/bin/python bench/longmemeval.py --split all --only 0a995998,6a1eabeb

Questions: the 218 development questions (`dev40.json.gz` and `more.json.gz`), split by question type 60/40 into
`train` (what `_memory_train.py` fits the re-scoring on) and `validation` (what it chooses on, and what is reported),
by `_memory_longmemeval.splits`; `--split` picks one (default `validation`) or `all`, and `--only` and `--limit`
take a subset of it while iterating.
Systems: `ours` (the defaults), `ours-bm25` (`--embedder none`), `bm25` (`--embedder none --search text`) and
`vector` (`--search vector`) as in bench/locomo.py, and `lines`: the plain baseline the protocol names, a BM25
with one result per line (tantivy's `en_stem` tokenizer, in-process), each result one whole turn however long.
Protocol: ../shared/data/longmemeval/README.md (kept exactly: one `memory_search` of 6 results per question, asked
once every vector is in). Each question has its own ~490 KB haystack, so every system indexes a workspace per
question; `--vectors-from DIR` (e.g. /tmp/hermitcrab-memory-cache, the cache of `_memory_misses.py`:
`DIR/longmemeval/QUESTION/state-EMBEDDER/vectors`) starts the systems that embed with that question's vectors
already there: the same results, and "then vectors s" near 0 instead of seconds of embedding.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).parent))

import _memory_longmemeval as longmemeval
from _memory_bench import SPLITS, SYSTEMS, Tally, progress, search, seed_vectors, serve, table
from memory_index import rss_mb, server_pid

RESULTS = 6


async def run_server(
    flags: list[str], workspace: Path, state: Path, question: longmemeval.Question, tally: Tally
) -> list[str]:
    async with serve(flags, workspace, state, tally) as client:
        started = time.perf_counter()
        snippets = await search(client, question.text, RESULTS)
        tally.latencies.append(time.perf_counter() - started)
        tally.rss_mb.append(rss_mb(server_pid()))
    return snippets


def run_lines(workspace: Path, question: longmemeval.Question, tally: Tally) -> list[str]:
    started = time.perf_counter()
    index = longmemeval.LineBM25(longmemeval.haystack_lines(workspace))
    tally.index_seconds.append(time.perf_counter() - started)
    began = time.perf_counter()
    snippets = index.search(question.text, RESULTS)
    tally.latencies.append(time.perf_counter() - began)
    return snippets


def chosen(split: str, only: str | None, limit: int | None) -> tuple[list[dict], int]:
    """The questions of `split` (`only` those ids, the first `limit`), and how many the split holds."""
    items = longmemeval.load()
    if split != "all":
        label = longmemeval.splits(items)
        items = [item for item in items if label[item["question_id"]] == split]
    held = len(items)
    if only:
        wanted = set(only.split(","))
        items = [item for item in items if item["question_id"] in wanted]
        if missing := wanted - {item["question_id"] for item in items}:
            sys.exit(f"not in the {split} split: {', '.join(sorted(missing))} (try --split all)")
    return items[:limit], held


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", choices=SPLITS, default="validation", help="default: validation")
    parser.add_argument("--only", help="comma-separated question ids (default: all of the split)")
    parser.add_argument("--limit", type=int, help="only the first N questions")
    parser.add_argument("--systems", default="ours,ours-bm25,bm25,vector,lines")
    parser.add_argument("--vectors-from", type=Path, help="a cache of vectors per question (see above)")
    args = parser.parse_args()
    items, held = chosen(args.split, args.only, args.limit)
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
                    if args.vectors_from:
                        seed_vectors(args.vectors_from / "longmemeval" / question.id, SYSTEMS[system], state)
                    snippets = anyio.run(run_server, SYSTEMS[system], workspace, state, question, tally)
                hit, complete = longmemeval.score(snippets, question)
                tally.add(question.kind, snippets, hit, complete)
                if hit:
                    hits[system].add(question.id)
                vectors = f", then vectors {tally.vector_seconds[-1]:.2f}s" if tally.vector_seconds else ""
                progress(
                    f"{question.id} [{question.kind}] {system}: hit={hit:d} all={complete:d} "
                    f"chars={sum(map(len, snippets))} sync {tally.index_seconds[-1]:.2f}s{vectors}"
                )
    print(
        f"\nLongMemEval_S, {args.split} split ({held} development questions): {len(items)} questions run, "
        f"{RESULTS} results each\n"
    )
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
