"""Crash trials: each part with durable state is killed with SIGKILL at a random moment under load, started again on
the same state and checked (tests/e2e/test_chaos.py runs one per part). Prints trials, failures and each failure.

- host: `hermitcrab ask` turns of tool calls -> transcripts readable, entries written before the kill kept, no
  dangling tool call in the model's view, the session goes on;
- memory: appends and searches (re-indexing) -> every acknowledged append on disk once, found after the restart;
- exec: write_file / edit_file on four files -> each file one whole version, never a mix;
- cron: five jobs every second and one falling due while the server is down -> no run queued twice, the overdue
  job run exactly once;
- spawn: runs finishing -> every run announced exactly once, no process of a run outliving the server;
- messages: `hermitcrab run` answering the owner's Discord DMs (the real discord.py client, a fake Discord) with
  streamed replies, killed 0-1.5 s after each DM and started again -> every DM answered by exactly one message, and
  finished (its answer, or the restart notice), never a draft left behind.

Run: .venv/bin/python bench/chaos.py [--trials 100] [--parts host,memory,exec,cron,spawn,messages] [--embedder none]
"""

from __future__ import annotations

import argparse
import functools
import logging
import random
import sys
import tempfile
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT))

from tests.support import chaos  # noqa: E402
from tests.support.fake_llm import running_fake_llm  # noqa: E402

PARTS = ("host", "memory", "exec", "cron", "spawn", "messages")


async def run(part: str, trials: int, seed: int, embedder: str) -> None:
    rng = random.Random(f"{part}{seed}")
    failed: list[str] = []
    start = time.perf_counter()
    with running_fake_llm() as llm:
        trial: chaos.Trial = {
            "host": chaos.host_trial_for(llm),
            "memory": functools.partial(chaos.memory_trial, embedder=embedder),
            "exec": chaos.exec_trial,
            "cron": chaos.cron_trial,
            "spawn": chaos.spawn_trial,
            "messages": chaos.messages_trial_for(llm),
        }[part]
        for number in range(trials):
            with tempfile.TemporaryDirectory() as tmp:
                failed += [f"trial {number}: {failure}" for failure in await trial(Path(tmp), rng)]
    failures = len({line.split(":")[0] for line in failed})
    print(f"{part:7} trials {trials:4}  failed {failures:3}  ({time.perf_counter() - start:.0f} s)", flush=True)
    for line in failed[:10]:
        print(f"        {line}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--parts", default=",".join(PARTS))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--embedder", default="none", help="the memory server's embedder (use: with vectors)")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    for part in args.parts.split(","):
        anyio.run(run, part, args.trials, args.seed, args.embedder)


if __name__ == "__main__":
    main()
