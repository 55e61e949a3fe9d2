"""LoCoMo retrieval benchmark for hermitcrab-memory, over stdio MCP, side by side with simple baselines.

    .venv/bin/python bench/locomo.py                 # all conversations, all systems
    .venv/bin/python bench/locomo.py --only 26 --systems ours,bm25

Systems: `ours` (the defaults), `ours-bm25` (`--embedder none`: the same ranking without vectors), and the
plain baselines `bm25` (`--embedder none --search text`) and `vector` (`--search vector`), same chunks, ranked by
their fused scores alone (so their windows are not trimmed to what is likely: they show more characters),
`classic` (OpenClaw's classic algorithm, reimplemented in-process in `_memory_openclaw.py`), and on request
`ours-e5` (`--embedder e5`).
Protocol: ../shared/data/locomo/README.md. Index time is the server's own first full sync; hit@6, all-evidence@6,
chars@6 and the latency (measured at the client, over stdio) come from a `memory_search` with the default 6
results, hit@10 from a second one with 10.
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
from _memory_bench import SYSTEMS, Tally, progress, search, serve, table
from _memory_openclaw import ClassicIndex

from hermitcrab.servers.memory.embed import make_embedder


async def run_server(
    name: str, flags: list[str], workspace: Path, state: Path, questions: list[locomo.Question], tally: Tally
) -> None:
    async with serve(flags, workspace, state, tally) as client:
        for question in questions:
            started = time.perf_counter()
            top6 = await search(client, question.text, 6)
            tally.latencies.append(time.perf_counter() - started)
            add(tally, question, top6, await search(client, question.text, 10))
        await check_append_is_found(client, name)


def add(tally: Tally, question: locomo.Question, top6: list[str], top10: list[str]) -> None:
    """Score one question from the snippets of a 6-result and a 10-result search."""
    hit6, all6 = locomo.score(top6, question, 6)
    tally.add(locomo.CATEGORIES[question.category], top6, hit6, all6, locomo.score(top10, question, 10)[0])


async def check_append_is_found(client: Client, name: str) -> None:
    """A single appended line must be searchable on the very next call."""
    await client.call_tool("memory_append", {"text": "- Zanzibar ferry tickets are in the blue folder."})
    found = await client.call_tool("memory_search", {"query": "where are the Zanzibar ferry tickets", "max_results": 1})
    results = (found.structured_content or {}).get("results", [])
    if not results or "Zanzibar" not in results[0]["snippet"]:
        print(f"  !! {name}: an appended line was not found on the next search", file=sys.stderr)


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", help="comma-separated conversation ids (default: all)")
    parser.add_argument("--systems", default="ours,ours-bm25,bm25,vector,classic")
    parser.add_argument("--classic-embedder", default="e5", help="embedder of the OpenClaw-classic reference")
    args = parser.parse_args()
    names = args.only.split(",") if args.only else locomo.conversations()
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
                    anyio.run(
                        run_server,
                        system,
                        SYSTEMS[system],
                        copy,
                        Path(tmp) / f"state-{system}",
                        questions,
                        tallies[system],
                    )
                progress(
                    f"conversation {name}: {system} done in {time.perf_counter() - began:.1f}s "
                    f"({len(questions)} questions, index {tallies[system].index_seconds[-1]:.2f}s)"
                )
    print(f"\nLoCoMo, {len(names)} conversations, {tallies[systems[0]].questions} questions (categories 1-4)\n")
    print(table(tallies, in_process="classic"))
    ours = tallies.get(systems[0])
    if ours is not None:
        print(f"\n{systems[0]} hit@6 by category: {ours.kinds()}")


if __name__ == "__main__":
    main()
