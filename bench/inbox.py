"""What exactly-once costs a message: the inbox's accepted and ended lines plus the tries counter's start and
clear (`hermitcrab run` does these four around every turn), beside one transcript line, the floor of a durable write.

Run: .venv/bin/python bench/inbox.py [--messages 300]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT))

from hermitcrab.host.events import OWNER, Event, Target  # noqa: E402
from hermitcrab.host.inbox.log import Inbox  # noqa: E402
from hermitcrab.host.inbox.retries import Retries  # noqa: E402
from hermitcrab.host.session.transcript import Transcript  # noqa: E402


def timed(messages: int, work: Callable[[int], None]) -> list[float]:
    times: list[float] = []
    for number in range(messages):
        start = time.perf_counter()
        work(number)
        times.append((time.perf_counter() - start) * 1000)
    return sorted(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=300)
    messages = parser.parse_args().messages
    base = Path(tempfile.mkdtemp())
    inbox, retries = Inbox(base / "inbox.jsonl"), Retries(base / "state")
    transcript = Transcript(base / "transcript.jsonl")

    def bookkeeping(number: int) -> None:
        key = f"discord:{number}"
        target = Target("discord", "1", "2", reply_to=str(number))
        inbox.accept(Event("message", f"question {number}", target, chat="direct", principal=OWNER, inbound_id=key))
        retries.started(key)
        inbox.end(key)
        retries.succeeded(key)

    rows = [
        ("inbox + tries, per message", timed(messages, bookkeeping)),
        ("one transcript line (the floor)", timed(messages, lambda n: transcript.append("user", text=f"m{n}"))),
    ]
    for name, times in rows:
        p99 = times[min(len(times) - 1, int(len(times) * 0.99))]
        print(f"{name:34} p50 {statistics.median(times):6.2f} ms  p99 {p99:6.2f} ms")


if __name__ == "__main__":
    main()
