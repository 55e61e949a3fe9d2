"""The spawn MCP server: sessions_* tools in, one `spawn://events` item out per finished run, acknowledged with
sessions_ack."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from hermitcrab.servers._common.arguments import shorten
from hermitcrab.servers._common.notifier import Notifier
from hermitcrab.servers._common.origin import Caller, caller
from hermitcrab.servers._common.server import GuardedServer

from .manager import Commands, Limits, Manager, Refused, Request, unknown_run
from .runs import Run, Runtime, State, Status, Store

EVENTS_URI = "spawn://events"
ACK = {"tool": "sessions_ack", "argument": "run_ids"}
MAX_TASK_CHARS = 20_000
MAX_ITEM_RESULT_CHARS = 20_000
MAX_RESULT_CHARS = 200_000
LOG_TAIL_CHARS = 2_000
INSTRUCTIONS = (
    "Sub-agents: hand a task to another agent that works on it in the background, in parallel with you. "
    "sessions_spawn returns a run id at once; when the run finishes, its result is put on the resource spawn://events "
    "(JSON items naming the session that spawned it) and hosts that listen are told, so there is no need to poll. "
    "Give each task everything the sub-agent needs: it cannot see this conversation or ask the user anything."
)
RunId = Annotated[str, Field(pattern=r"^[0-9a-zA-Z-]{1,64}$", description="A run's id, as sessions_spawn returned it.")]


class Accepted(BaseModel):
    run_id: str
    status: Literal["accepted"] = "accepted"
    label: str
    runtime: Runtime
    note: str = "The result arrives by itself when the run finishes; no need to poll."


class RunView(BaseModel):
    run_id: str
    label: str
    status: Status
    runtime: Runtime
    cli: str | None
    session: str = Field(description="The session that spawned it.")
    task: str = Field(description="The task, cut to 300 characters.")
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    elapsed_s: float | None = Field(description="Running time so far, or in total once finished.")
    timeout_s: float
    exit_code: int | None
    error: str | None
    announced: bool = Field(description="The host acknowledged the finished run's item on spawn://events.")


class RunList(BaseModel):
    runs: list[RunView]


class Result(BaseModel):
    run_id: str
    status: Status
    result: str = Field(description="What the run printed (its final answer); empty while it is still running.")
    error: str | None
    log_tail: str = Field(description="The end of the run's stderr log.")


class Acked(BaseModel):
    acknowledged: int = Field(description="How many of the given ids were waiting (unknown ids are ignored).")
    remaining: int


def build_server(state: Path, commands: Commands, limits: Limits | None = None) -> MCPServer:
    """The spawn server keeping its runs in `state`, starting them with `commands` within `limits`."""
    store = Store(state)
    notifier = Notifier(EVENTS_URI)
    manager = Manager(store, commands, limits or Limits(), notifier)

    @asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncGenerator[None]:
        async with manager.running():
            yield

    server = GuardedServer("hermitcrab-spawn", instructions=INSTRUCTIONS, lifespan=lifespan, subscriptions=notifier.bus)
    notifier.install(server)

    @server.tool()
    async def sessions_spawn(
        ctx: Context,
        task: Annotated[
            str,
            Field(
                min_length=1,
                max_length=MAX_TASK_CHARS,
                description="The whole task, self-contained: the sub-agent sees nothing else.",
            ),
        ],
        label: Annotated[str | None, Field(max_length=60, description="A short name for the run.")] = None,
        model: Annotated[str | None, Field(max_length=200, description="Another model for this run.")] = None,
        timeout_s: Annotated[
            float | None, Field(ge=1, le=86_400, description="Stop the run after this long (default 30 min).")
        ] = None,
        runtime: Annotated[
            Runtime, Field(description="agent: a hermitcrab sub-agent with your tools; cli: an external agent CLI.")
        ] = "agent",
        cli: Annotated[str | None, Field(max_length=60, description="Which configured CLI, for runtime cli.")] = None,
    ) -> Accepted:
        """Start a sub-agent on `task` in the background and return its run id at once. Its final answer comes back
        by itself as a message in this session when it finishes (ok, failed, timed out or killed)."""
        who = caller_of(ctx)
        chosen = cli if runtime == "cli" else None
        request = Request(who.session, task, label, model, timeout_s, runtime, chosen, who.principal, who.origin)
        try:
            run = manager.spawn(request)
        except Refused as exc:
            raise ToolError(str(exc)) from exc
        return Accepted(run_id=run.id, label=run.label, runtime=run.runtime)

    @server.tool()
    async def sessions_list(
        ctx: Context,
        active_only: Annotated[bool, Field(description="Only runs that are queued or running.")] = False,
    ) -> RunList:
        """The runs this session spawned, newest first."""
        session = caller_of(ctx).session
        runs = [run for run in store.read().runs.values() if run.session == session and (run.active or not active_only)]
        runs.sort(key=lambda run: run.created_at, reverse=True)
        return RunList(runs=[view(run) for run in runs])

    @server.tool()
    async def sessions_status(ctx: Context, run_id: RunId) -> RunView:
        """Where one run stands: queued, running, ok, failed, timed_out, killed or interrupted."""
        return view(found(run_id, caller_of(ctx)))

    @server.tool()
    async def sessions_result(ctx: Context, run_id: RunId) -> Result:
        """The whole result of a run (what it printed), its error if it failed, and the end of its log."""
        run = found(run_id, caller_of(ctx))
        return Result(
            run_id=run.id,
            status=run.status,
            result=read_text(store.run_dir(run.id) / "output", MAX_RESULT_CHARS),
            error=run.error,
            log_tail=read_text(store.run_dir(run.id) / "log", LOG_TAIL_CHARS),
        )

    @server.tool()
    async def sessions_kill(ctx: Context, run_id: RunId) -> RunView:
        """Stop a run and everything it started; it is then announced as killed."""
        try:
            return view(await manager.kill(found(run_id, caller_of(ctx)).id))
        except Refused as exc:
            raise ToolError(str(exc)) from exc

    @server.tool()
    async def sessions_ack(
        run_ids: Annotated[
            list[Annotated[str, Field(max_length=64)]],
            Field(max_length=10_000, description="Ids of spawn://events items that were handled."),
        ],
    ) -> Acked:
        """Remove handled items from spawn://events. Unknown ids (already acknowledged) are ignored."""
        wanted = set(run_ids)

        def ack(state: State) -> int:
            hits = [run for run in state.runs.values() if run.id in wanted and not run.active and not run.acked]
            for run in hits:
                run.acked = True
            store.trim(state)
            return len(hits)

        acknowledged = store.transact(ack)
        return Acked(acknowledged=acknowledged, remaining=len(manager.pending(store.read())))

    @server.resource(EVENTS_URI, name="events", mime_type="application/json")
    async def events() -> str:
        """One item per finished run, naming the session that spawned it, until acknowledged with sessions_ack."""
        items = [item(run, store.run_dir(run.id)) for run in manager.pending(store.read())]
        return json.dumps({"items": items, "ack": ACK}, ensure_ascii=False)

    def found(run_id: str, who: Caller) -> Run:
        """The run, if `who` may see it: a non-owner sees only the runs its own session spawned."""
        run = store.read().runs.get(run_id)
        if run is None or not who.owns(run.origin):
            raise ToolError(str(unknown_run(run_id)))
        return run

    return server


def caller_of(ctx: Context) -> Caller:
    """Who the call acts for (`hermitcrab/session`, `/principal`, `/origin` in its `_meta`); the owner's `main` for
    other hosts."""
    return caller(ctx.request_context.meta)


def view(run: Run) -> RunView:
    end = run.finished_at or (datetime.now(UTC) if run.started_at else None)
    return RunView(
        run_id=run.id,
        label=run.label,
        status=run.status,
        runtime=run.runtime,
        cli=run.cli,
        session=run.session,
        task=shorten(run.task, 300),
        created_at=run.created_at,
        started_at=run.started_at,
        finished_at=run.finished_at,
        elapsed_s=round((end - run.started_at).total_seconds(), 3) if end and run.started_at else None,
        timeout_s=run.timeout_s,
        exit_code=run.exit_code,
        error=run.error,
        announced=run.acked,
    )


def item(run: Run, run_dir: Path) -> dict[str, Any]:
    """The server-event item announcing a finished run in the session that spawned it."""
    output = read_text(run_dir / "output", MAX_ITEM_RESULT_CHARS, f"sessions_result {run.id} has the whole result")
    parts = [output] if run.status == "ok" else [run.error or "", output]
    if run.status == "failed":
        parts.append(read_text(run_dir / "log", LOG_TAIL_CHARS))
    result = "\n".join(part for part in parts if part) or "(no output)"
    return {
        "id": run.id,
        "text": f"[sub-agent {run.label} finished: {run.status.replace('_', ' ')}] {result}",
        "session": run.session,
        "kind": "subagent",
        "delivery": {"mode": "announce"},
        "run_id": run.id,
        "label": run.label,
        "status": run.status,
        "origin": run.origin,
    }


def read_text(path: Path, limit: int, hint: str = "cut") -> str:
    """The file's text, stripped; a longer one keeps its head and tail around a marker."""
    try:
        text = path.read_bytes().decode("utf-8", errors="replace").strip()
    except OSError:
        return ""
    if len(text) <= limit:
        return text
    marker = f"\n[... {len(text) - limit:,} characters left out: {hint} ...]\n"
    head = int(limit * 0.7)
    return text[:head] + marker + text[len(text) - (limit - head) :]
