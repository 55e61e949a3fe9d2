"""LoCoMo retrieval benchmark for hermitcrab-memory, over stdio MCP, side by side with simple baselines.

    .venv/bin/python bench/locomo.py --vectors-from /tmp/hermitcrab-memory-cache   # the validation split, all systems
    .venv/bin/python bench/locomo.py --split train --only 26 --systems ours,bm25

Conversations: the five development ones, split as `_memory_train.py` fits and chooses on them
(`_memory_misses.LOCOMO_SPLITS`: 26, 30, 41 `train`; 42, 43 `validation`); `--split` picks one (default
`validation`) or `all`, and `--only` some conversations of it.
Systems: `ours` (the defaults), `ours-bm25` (`--embedder none`: the same ranking without vectors), and the
plain baselines `bm25` (`--embedder none --search text`) and `vector` (`--search vector`), same chunks, ranked by
their fused scores alone (so their windows are not trimmed to what is likely: they show more characters),
`classic` (OpenClaw's classic algorithm, reimplemented in-process in `_memory_openclaw.py`), and on request
`ours-e5` (`--embedder e5`).
Protocol: ../shared/data/locomo/README.md. "sync s" is the server's own first sync (reading and BM25: searchable
from then on), "then vectors s" the background embedding after it, which every question waits for;
`--vectors-from DIR` (e.g. /tmp/hermitcrab-memory-cache, the cache of `_memory_misses.py`:
`DIR/locomo/CONVERSATION/state-EMBEDDER/vectors`) starts the servers with those vectors already there. hit@6,
all-evidence@6, chars@6 and the latency (measured at the client, over stdio) come from a `memory_search` with the
default 6 results, hit@10 from a second one with 10.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client

sys.path.insert(0, str(Path(__file__).parent))

import _memory_locomo as locomo
from _memory_bench import SPLITS, SYSTEMS, Tally, progress, search, seed_vectors, serve, table
from _memory_misses import LOCOMO_SPLITS
from _memory_openclaw import ClassicIndex
from memory_index import rss_mb, server_pid

from hermitcrab.servers.memory.embed import make_embedder

VECTOR_WITHIN_S = 2.0


async def run_server(
    name: str, flags: list[str], workspace: Path, state: Path, questions: list[locomo.Question], tally: Tally
) -> None:
    async with serve(flags, workspace, state, tally) as client:
        for question in questions:
            started = time.perf_counter()
            top6 = await search(client, question.text, 6)
            tally.latencies.append(time.perf_counter() - started)
            add(tally, question, top6, await search(client, question.text, 10))
        tally.rss_mb.append(rss_mb(server_pid()))
        await check_append_is_found(client, name, flags)


def add(tally: Tally, question: locomo.Question, top6: list[str], top10: list[str]) -> None:
    """Score one question from the snippets of a 6-result and a 10-result search."""
    hit6, all6 = locomo.score(top6, question, 6)
    tally.add(locomo.CATEGORIES[question.category], top6, hit6, all6, locomo.score(top10, question, 10)[0])


async def check_append_is_found(client: Client, name: str, flags: list[str]) -> None:
    """A single appended line must be found by BM25 on the very next search, and by its vector (all that a
    vector-only search has) within `VECTOR_WITHIN_S`, as docs/memory.md promises."""
    await client.call_tool("memory_append", {"text": "- Zanzibar ferry tickets are in the blue folder."})
    began = time.perf_counter()
    patience = VECTOR_WITHIN_S if "vector" in flags else 0.0
    while True:
        top = await search(client, "where are the Zanzibar ferry tickets", 1)
        if top and "Zanzibar" in top[0]:
            return
        if time.perf_counter() - began > patience:
            later = f"within {patience:.0f} s" if patience else "on the next search"
            progress(f"  !! {name}: an appended line was not found {later}")
            return
        await anyio.sleep(0.05)


def run_classic(workspace: Path, questions: list[locomo.Question], tally: Tally, embedder_name: str) -> None:
    embedder = make_embedder(embedder_name)
    assert embedder is not None, "the classic reference needs an embedder"
    started = time.perf_counter()
    index = ClassicIndex(workspace, embedder)
    tally.index_seconds.append(time.perf_counter() - started)
    for question in questions:
        began = time.perf_counter()
        snippets = index.search(question.text, 10)
        tally.latencies.append(time.perf_counter() - began)
        add(tally, question, snippets[:6], snippets)


def chosen(split: str, only: str | None) -> list[str]:
    """The conversations of `split`, `only` those named when given."""
    names = locomo.conversations() if split == "all" else list(LOCOMO_SPLITS[split])
    if not only:
        return names
    wanted = only.split(",")
    if missing := [name for name in wanted if name not in names]:
        sys.exit(f"not in the {split} split: {', '.join(missing)} (try --split all)")
    return wanted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", choices=SPLITS, default="validation")
    parser.add_argument("--only", help="comma-separated conversation ids (default: all of the split)")
    parser.add_argument("--systems", default="ours,ours-bm25,bm25,vector,classic")
    parser.add_argument("--classic-embedder", default="e5", help="embedder of the OpenClaw-classic reference")
    parser.add_argument("--vectors-from", type=Path, help="a cache of vectors per conversation (see above)")
    args = parser.parse_args()
    names = chosen(args.split, args.only)
    systems = args.systems.split(",")
    tallies = {system: Tally() for system in systems}
    for name in names:
        data = locomo.load(name)
        with tempfile.TemporaryDirectory(prefix=f"locomo-{name}-") as tmp:
            workspace = Path(tmp) / "workspace"
            turns = locomo.build_workspace(data, workspace)
            questions = locomo.questions(data, turns)
            for system in systems:
                began = time.perf_counter()
                if system == "classic":
                    run_classic(workspace, questions, tallies[system], args.classic_embedder)
                else:
                    copy = Path(tmp) / f"workspace-{system}"
                    locomo.build_workspace(data, copy)
                    state = Path(tmp) / f"state-{system}"
                    if args.vectors_from:
                        seed_vectors(args.vectors_from / "locomo" / name, SYSTEMS[system], state)
                    anyio.run(
                        run_server,
                        system,
                        SYSTEMS[system],
                        copy,
                        state,
                        questions,
                        tallies[system],
                    )
                tally = tallies[system]
                vectors = f", then vectors {tally.vector_seconds[-1]:.2f}s" if tally.vector_seconds else ""
                progress(
                    f"conversation {name}: {system} done in {time.perf_counter() - began:.1f}s "
                    f"({len(questions)} questions, sync {tally.index_seconds[-1]:.2f}s{vectors})"
                )
    print(
        f"\nLoCoMo, {args.split} split: {len(names)} conversations ({', '.join(names)}), "
        f"{tallies[systems[0]].questions} questions (categories 1-4)\n"
    )
    print(table(tallies, in_process="classic"))
    ours = tallies.get(systems[0])
    if ours is not None:
        print(f"\n{systems[0]} hit@6 by category: {ours.kinds()}")


if __name__ == "__main__":
    main()
