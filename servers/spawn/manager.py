"""Running the runs: limits checked when one is asked for, a queue under `max_concurrent`, deadlines, kills, and the
end of every run recorded before listeners are told."""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import anyio
from anyio.abc import TaskGroup

from hermitcrab.servers._common.arguments import shorten
from hermitcrab.servers._common.notifier import Notifier
from hermitcrab.servers._common.origin import Origin, Principal

from .launcher import TASK_FILE, Child, OptionLike, fill
from .runs import Run, Runtime, State, Status, Store, new_run_id

logger = logging.getLogger(__name__)
SUBAGENT_SESSION = "subagent:"
ADOPT_EVERY_S = 2.0
OWN_TOOLS = ("sessions_spawn", "sessions_list", "sessions_status", "sessions_result", "sessions_kill", "sessions_ack")


class Refused(Exception):
    """A request the limits or the configuration do not allow; the message says which and what to do."""


@dataclass(frozen=True)
class Limits:
    max_depth: int = 1
    max_children: int = 5
    max_concurrent: int = 8
    timeout_s: float = 1800.0


@dataclass(frozen=True)
class Commands:
    """How runs are started: the agent runtime's command (None: unavailable) and the named `cli` templates."""

    agent: tuple[str, ...] | None
    cli: Mapping[str, tuple[str, ...]] = field(default_factory=dict[str, tuple[str, ...]])


@dataclass(frozen=True)
class Request:
    session: str
    task: str
    label: str | None
    model: str | None
    timeout_s: float | None
    runtime: Runtime
    cli: str | None
    principal: Principal = "owner"
    origin: Origin | None = None


class Manager:
    """Accepts runs, starts them in order as slots free up, and records how each one ended."""

    def __init__(self, store: Store, commands: Commands, limits: Limits, notifier: Notifier) -> None:
        self.store, self.commands, self.limits, self.notifier = store, commands, limits, notifier
        self._children: dict[str, Child] = {}
        self._slots: set[str] = set()
        self._wake = anyio.Event()
        self._group: TaskGroup | None = None

    @asynccontextmanager
    async def running(self) -> AsyncGenerator[Manager]:
        """Run what is queued until the context exits, then kill every child; a nested entry shares it."""
        if self._group is not None:
            yield self
            return
        self.store.open()
        self._adopt_orphans()
        try:
            async with anyio.create_task_group() as group:
                self._group = group
                group.start_soon(self._schedule_forever)
                try:
                    yield self
                finally:
                    group.cancel_scope.cancel()
        finally:
            self._group = None
            self.store.close()

    def spawn(self, request: Request) -> Run:
        """Record a queued run, or raise Refused naming the limit or the missing command."""
        self._check_command(request)
        now = datetime.now(UTC)

        def add(state: State) -> Run:
            depth = self._depth_of(state, request.session) + 1
            if depth > self.limits.max_depth:
                raise Refused(
                    f"sessions_spawn refused: this session is a sub-agent at depth {depth - 1} and the depth limit is "
                    f"{self.limits.max_depth}, so it cannot start sub-agents of its own; do the work yourself."
                )
            active = [run for run in state.runs.values() if run.session == request.session and run.active]
            if len(active) >= self.limits.max_children:
                raise Refused(
                    f"sessions_spawn refused: this session already has {len(active)} active sub-agents (the limit is "
                    f"{self.limits.max_children}); wait for one to finish or stop one with sessions_kill."
                )
            run = Run(
                id=new_run_id(now),
                session=request.session,
                depth=depth,
                label=request.label or _label_from(request.task),
                task=request.task,
                runtime=request.runtime,
                cli=request.cli,
                model=request.model,
                timeout_s=request.timeout_s or self.limits.timeout_s,
                owner=self.store.owner,
                created_at=now,
                principal=request.principal,
                origin=request.origin,
            )
            state.runs[run.id] = run
            self.store.trim(state)
            return run

        run = self.store.transact(add)
        self._wake.set()
        return run

    async def kill(self, run_id: str) -> Run:
        with anyio.fail_after(10):
            while run_id in self._slots and run_id not in self._children:
                await anyio.sleep(0.01)  # being started right now: kill it once it is
        child = self._children.get(run_id)
        if child is not None:
            await child.stop("killed")
            with anyio.fail_after(10):
                while run_id in self._slots:
                    await anyio.sleep(0.02)
            return self.store.read().runs[run_id]

        def cancel_queued(state: State) -> Run:
            run = existing(state, run_id)
            if run.status == "queued" and run.owner == self.store.owner:
                _finish(run, "killed", None, "killed with sessions_kill before it started")
            elif run.active:
                raise Refused(
                    f"run {run_id} is run by another hermitcrab-spawn process on this state dir; kill it there."
                )
            return run

        run = self.store.transact(cancel_queued)
        if run.status == "killed" and not run.acked:
            await self.notifier.changed()
        return run

    def pending(self, state: State) -> list[Run]:
        """Finished runs this process announces, oldest first, until they are acknowledged."""
        mine = [
            run for run in state.runs.values() if run.owner == self.store.owner and not run.active and not run.acked
        ]
        return sorted(mine, key=lambda run: run.finished_at or run.created_at)

    def _check_command(self, request: Request) -> None:
        if request.runtime == "cli" and request.principal != "owner":
            raise Refused(
                f'sessions_spawn refused: runtime "cli" runs an external agent with the owner\'s rights, which '
                f'a {request.principal} session does not have; use runtime "agent" (it works with this session\'s '
                "rights)."
            )
        if request.runtime == "agent":
            if self.commands.agent is None:
                raise Refused(
                    'the agent runtime is not available here (no `hermitcrab` command was found); use runtime "cli"'
                    + _named_clis(self.commands.cli)
                )
            return
        if request.cli is None or request.cli not in self.commands.cli:
            given = f"there is no cli named {request.cli!r}" if request.cli else 'runtime "cli" needs `cli`'
            raise Refused(f"{given}{_named_clis(self.commands.cli) or '; none are configured (--cli NAME=TEMPLATE)'}")
        label = request.label or _label_from(request.task)
        try:
            fill(self.commands.cli[request.cli], _values(request.task, request.model, label, Path(TASK_FILE)))
        except OptionLike as exc:
            raise Refused(f"sessions_spawn refused for cli {request.cli!r}: {exc}.") from None

    def _depth_of(self, state: State, session: str) -> int:
        run = state.runs.get(session.removeprefix(SUBAGENT_SESSION)) if session.startswith(SUBAGENT_SESSION) else None
        return run.depth if run is not None else 0

    def _adopt_orphans(self) -> bool:
        adopted = self.store.adopt_orphans()
        if adopted:
            logger.warning("took over %d run(s) of a spawn server that is gone: %s", len(adopted), ", ".join(adopted))
        return bool(adopted)

    async def _schedule_forever(self) -> None:
        """Start queued runs as slots free up; now and then, take over the runs of a spawn server that went away
        (one that was still shutting down when this one started)."""
        while True:
            self._wake = anyio.Event()
            if self._adopt_orphans():
                await self.notifier.changed()
            state = self.store.read()
            queued = sorted(
                (
                    run
                    for run in state.runs.values()
                    if run.owner == self.store.owner and run.status == "queued" and run.id not in self._slots
                ),
                key=lambda run: run.created_at,
            )
            for run in queued[: max(0, self.limits.max_concurrent - len(self._slots))]:
                self._slots.add(run.id)
                assert self._group is not None
                self._group.start_soon(self._run, run)
            with anyio.move_on_after(ADOPT_EVERY_S):
                await self._wake.wait()

    async def _run(self, run: Run) -> None:
        run_dir = self.store.run_dir(run.id)
        try:
            if not self.store.transact(lambda state: _claim(state.runs[run.id])):
                return  # killed while it waited for its slot
            try:
                child = await Child.start(self._argv(run, run_dir), run_dir, run.task)
            except OptionLike as exc:
                self._record(run.id, "failed", None, f"not started: {exc}")
                await self.notifier.changed()
                return
            except OSError as exc:
                self._record(run.id, "failed", None, f"could not start the run's process: {exc.strerror or exc}")
                await self.notifier.changed()
                return
            self._children[run.id] = child
            try:
                code = await child.wait(run.timeout_s)
            except BaseException:  # the server is shutting down: nothing of the run may outlive it
                with anyio.CancelScope(shield=True):
                    await child.close()
                    self._record(run.id, "interrupted", None, "the spawn server shut down while this run was going")
                raise
            await child.close()
            status: Status = "ok" if code == 0 else "failed"
            if child.stopped_because == "timed_out":
                status = "timed_out"
            elif child.stopped_because == "killed":
                status = "killed"
            self._record(run.id, status, code, _why(status, code, run))
            await self.notifier.changed()
        finally:
            self._children.pop(run.id, None)
            self._slots.discard(run.id)
            self._wake.set()

    def _argv(self, run: Run, run_dir: Path) -> list[str]:
        """The command line of a run; the task itself is on its stdin (see launcher), in argv only where a `cli`
        template puts `{task}`."""
        if run.runtime == "cli":
            return fill(self.commands.cli[run.cli or ""], _values(run.task, run.model, run.label, run_dir / TASK_FILE))
        assert self.commands.agent is not None
        argv = [*self.commands.agent, "--run-dir", str(run_dir), "--session", SUBAGENT_SESSION + run.id]
        if run.label != _label_from(run.task):  # a name the caller chose; one taken from the task stays out of `ps`
            argv += ["--label", run.label]
        argv += ["--model", run.model] if run.model else []
        if run.principal != "owner":
            argv += ["--principal", run.principal]
        if run.depth >= self.limits.max_depth:
            argv += [option for tool in OWN_TOOLS for option in ("--hide-tool", tool)]
        return argv

    def _record(self, run_id: str, status: Status, code: int | None, error: str | None) -> None:
        self.store.transact(lambda state: _finish(state.runs[run_id], status, code, error))


def existing(state: State, run_id: str) -> Run:
    run = state.runs.get(run_id)
    if run is None:
        raise unknown_run(run_id)
    return run


def unknown_run(run_id: str) -> Refused:
    return Refused(f"there is no run {run_id!r}; sessions_list shows this session's runs.")


def _claim(run: Run) -> bool:
    """Mark a queued run as running; False when it is no longer queued."""
    if run.status != "queued":
        return False
    run.status, run.started_at = "running", datetime.now(UTC)
    return True


def _finish(run: Run, status: Status, code: int | None, error: str | None) -> None:
    run.status, run.exit_code, run.error, run.finished_at = status, code, error, datetime.now(UTC)


def _why(status: Status, code: int | None, run: Run) -> str | None:
    if status == "timed_out":
        return f"stopped after its timeout of {run.timeout_s:g} s"
    if status == "killed":
        return "killed with sessions_kill"
    if status == "failed":
        return f"exited with code {code}" if code is not None else "its process was killed from outside"
    return None


def _values(task: str, model: str | None, label: str, task_file: Path) -> dict[str, str]:
    return {"task": task, "task_file": str(task_file), "model": model or "", "label": label}


def _label_from(task: str) -> str:
    first = " ".join(task.split())
    return shorten(first, 40)


def _named_clis(cli: Mapping[str, tuple[str, ...]]) -> str:
    return f"; the clis here: {', '.join(sorted(cli))}" if cli else ""
