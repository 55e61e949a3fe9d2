"""Load through the real gateway, pool and memory server with an instant model: 50 sessions sending at once (no
reply dropped, reordered or delivered to another session's conversation; host time per turn), and 1,000 items
queued on the cron server before the host reads them (each run once and acknowledged).

Run: .venv/bin/python bench/load.py [--sessions 50] [--messages 20] [--items 1000]
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from pathlib import Path

import anyio

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.load import queued_events, sessions_at_once  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--messages", type=int, default=20)
    parser.add_argument("--items", type=int, default=1000)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    with tempfile.TemporaryDirectory() as tmp:
        load = anyio.run(sessions_at_once, Path(tmp) / "sessions", args.sessions, args.messages)
        print(f"{args.sessions} sessions x {args.messages} messages, sent at once (each turn: memory_append, reply)")
        print(f"  sent {load.sent}  answered {load.answered}  noted in memory {load.noted}  dropped {load.dropped}")
        print(f"  sessions reordered {load.reordered}  replies in another session's conversation {load.cross_talk}")
        print(f"  turn (typing to reply) p50 {load.turn_ms_p50} ms  p99 {load.turn_ms_p99} ms")
        print(f"  {load.sent / load.seconds:.1f} turns/s, {load.seconds:.1f} s in all")
        queue = anyio.run(queued_events, Path(tmp) / "queue", args.items)
        print(f"{args.items} cron_wake items queued before the host reads them")
        print(f"  handled {queue.handled}  duplicates {queue.duplicates}  still waiting {queue.still_waiting}")
        print(f"  {queue.items / queue.seconds:.1f} items/s, {queue.seconds:.1f} s in all")


if __name__ == "__main__":
    main()
