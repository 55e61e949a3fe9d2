"""The policy check, off the event loop and on a time budget, so no command line can freeze the server.

The check is pure Python (bashlex and our rules) and holds the GIL while it runs; a thread could not be stopped
at the budget and would keep running, and competing for the GIL, long after its answer stopped mattering. So it
runs in one worker process, kept between calls, and a check over its budget is refused as too complex, the
worker killed and replaced. A checker that crashes takes only its worker with it. Other tools never wait for a
check: the loop only waits on a pipe, from a thread.

The worker is forked: it has every module it needs already, so a restart takes milliseconds (a forkserver or
spawn child imports the server's main module again, ~1 s). The child does nothing but read the pipe, check and
answer; it drops the server's other descriptors (an MCP host's stdio must see EOF when the server ends, not
when its worker does), and a lock some other thread held at the fork can at worst stall it, which the budget
then ends.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path

import anyio
import anyio.to_thread

from .leaving import Leaves
from .policy import Ask, Checker, Security, Verdict
from .tiers import RiskTiers

logger = logging.getLogger(__name__)
BUDGET_S = 1.5  # a refusal then still arrives within 2 s; ordinary lines take a few milliseconds
TOO_COMPLEX = "the command is too complex to check within {budget:g} s; split it into shorter commands"
_CONTEXT = multiprocessing.get_context("fork")


@dataclass(frozen=True)
class Judge:
    """The verdict the gate acts on, for the effective ask mode: the parser's, with the tiers' questions added
    (on-change), or with its misses replaced by what leaves the sandbox (on-leave). In the sandbox (`leaves` given)
    the parser modes ask about leaving too, so that their approval opens what the line writes outside."""

    checker: Checker
    ask: Ask
    security: Security
    tiers: RiskTiers | None = None
    leaves: Leaves | None = None

    def __call__(
        self, command: str, workdir: Path, env: Mapping[str, str] | None, approved: Iterable[str], running: list[str]
    ) -> Verdict:
        verdict = self.checker.check(command, workdir, env, approved=approved, running=running)
        if self.ask == "on-change" and self.tiers is not None:
            verdict = self.tiers.apply(verdict, command, workdir)
        if self.leaves is None or self.security == "full":
            return verdict
        if self.ask == "on-leave":
            return self.leaves.judge(verdict, command, workdir)
        return self.leaves.add(verdict, command, workdir)


class CheckWorker:
    """Runs `judge` in a worker process, one check at a time, each within `budget_s`."""

    def __init__(self, judge: Judge, budget_s: float = BUDGET_S) -> None:
        self.judge = judge
        self.budget_s = budget_s
        self._lock = anyio.Lock()
        self._process: BaseProcess | None = None
        self._connection: Connection | None = None
        self._guard = threading.Lock()  # stop() may come from the lifespan while a thread starts the worker

    async def verdict(
        self, command: str, workdir: Path, env: Mapping[str, str] | None, approved: Iterable[str], running: list[str]
    ) -> Verdict:
        async with self._lock:
            # Shielded: a call cancelled mid-check must not leave its answer in the pipe for the next line to read.
            # The budget bounds the wait.
            verdict = Verdict(refusal="the policy check was interrupted; try again")  # fail closed, whatever stops it
            with anyio.CancelScope(shield=True):
                verdict = await self._exchange((command, workdir, dict(env or {}), frozenset(approved), running))
        return verdict

    async def _exchange(self, request: tuple[object, ...]) -> Verdict:
        connection = await anyio.to_thread.run_sync(self._started)
        try:
            connection.send(request)
            answered = await anyio.to_thread.run_sync(connection.poll, self.budget_s)
            result: Verdict | str = connection.recv() if answered else TOO_COMPLEX.format(budget=self.budget_s)
        except (EOFError, OSError) as exc:  # the worker died mid-check (killed, out of memory)
            answered, result = False, f"the policy check stopped ({type(exc).__name__}); try a simpler command"
        if not answered:
            await anyio.to_thread.run_sync(self.stop)
        return result if isinstance(result, Verdict) else Verdict(refusal=result)

    def stop(self) -> None:
        """Kill the worker (a new one starts at the next check)."""
        with self._guard:
            self._discard()

    def _started(self) -> Connection:
        with self._guard:
            if self._connection is None or self._process is None or not self._process.is_alive():
                self._discard()
                ours, theirs = _CONTEXT.Pipe()
                process = _CONTEXT.Process(target=_serve, args=(theirs, self.judge), daemon=True, name="exec-check")
                process.start()
                theirs.close()
                self._process, self._connection = process, ours
            return self._connection

    def _discard(self) -> None:
        process, connection = self._process, self._connection
        self._process = self._connection = None
        if connection is not None:
            connection.close()
        if process is not None:
            process.kill()
            process.join(5)
            process.close()


def _serve(connection: Connection, judge: Judge) -> None:
    """The worker's loop: a check per request until the server closes the pipe."""
    keep = connection.fileno()
    os.closerange(3, keep)
    os.closerange(keep + 1, os.sysconf("SC_OPEN_MAX"))
    os.dup2(os.open(os.devnull, os.O_RDWR), 1)  # stdin is /dev/null already (multiprocessing); stderr keeps logs
    while True:
        try:
            command, workdir, env, approved, running = connection.recv()
        except (EOFError, OSError):
            return
        try:
            answer: Verdict | str = judge(command, workdir, env, approved, running)
        except Exception as exc:  # a checker bug must refuse the line, not run it
            logger.exception("the policy check failed")
            answer = f"the policy check failed ({type(exc).__name__}); try a simpler command"
        connection.send(answer)
