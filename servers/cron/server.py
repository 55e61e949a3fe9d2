"""The cron MCP server: jobs in, `cron://events` items out, acknowledged with cron_ack."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field, ValidationError

from hermitcrab.servers._common.arguments import describe_invalid
from hermitcrab.servers._common.notifier import Notifier
from hermitcrab.servers._common.origin import Caller, Origin, caller
from hermitcrab.servers._common.server import GuardedServer
from hermitcrab.util.outbound import Outbound, OutboundRefused
from hermitcrab.util.server_options import CRON

from . import webhook
from .clock import REAL_CLOCK, Clock
from .engine import Engine, Tick, next_run
from .events import EVENTS_URI, Item, render, wake_item
from .jobs import MAX_TEXT_CHARS, Delivery, Job, JobPatch, JobSpec, LastRun, Schedule, Session, check_future, new_id
from .limits import DEFAULT_MAX_JOBS, DEFAULT_MIN_INTERVAL_S, Limits
from .runs import RunLog
from .store import State, Store

DEFAULT_GRACE_S: float = CRON.option("grace_s").default
ALLOW_HINT = "start hermitcrab-cron with --allow-outbound HOST:PORT (the host: [outbound] allow in config.toml)"
INSTRUCTIONS = (
    "Scheduled jobs: reminders, daily summaries, periodic checks. A job fires on its schedule (once `at` a time, "
    "`every` N seconds, or by a `cron` expression in a time zone) and leaves an item on the resource cron://events "
    "(JSON: items plus how to acknowledge them); hosts that listen are notified. Acknowledge handled items with "
    "cron_ack. Always give cron schedules the user's time zone."
)
JobId = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]{0,39}$", description="A job's id, as cron_list shows it.")]


class JobView(BaseModel):
    id: str
    name: str
    schedule: dict[str, Any]
    payload: dict[str, Any]
    delivery: dict[str, Any]
    session_target: Session
    enabled: bool
    delete_after_run: bool
    next_run: str | None = Field(description="ISO 8601 in the job's own time zone; null when it will not run again.")
    next_run_in_words: str | None = Field(description='E.g. "in 3 hours, Tue 09:00 Europe/Berlin".')
    last_run: LastRun | None
    origin: Origin | None = Field(description="The conversation that made the job, when the host said.")


class JobList(BaseModel):
    jobs: list[JobView]


class Status(BaseModel):
    role: Literal["scheduler", "standby"]
    detail: str
    state_dir: str
    jobs: int
    enabled_jobs: int
    pending_events: int = Field(description="Items on cron://events not yet acknowledged.")
    pending_webhooks: int = Field(description="Webhook deliveries waiting for their next try.")
    next_run: str | None = Field(description="The soonest next run of any job, in words.")
    grace_s: float = Field(description="How late an overdue run may still be caught up after downtime.")
    min_interval_s: float = Field(description="How close together the runs of a job added or rescheduled may come.")
    max_jobs: int = Field(description="How many jobs this server keeps at most; cron_add beyond it is refused.")
    warnings: list[str]


class Ran(BaseModel):
    ran: bool
    event_ids: list[str]
    note: str | None = None


class Runs(BaseModel):
    runs: list[dict[str, Any]] = Field(description="Newest first: queued, sent, retrying, failed, missed, acked.")


class Removed(BaseModel):
    removed: str


class Woken(BaseModel):
    event_id: str


class Acked(BaseModel):
    removed: int = Field(description="How many of the given ids were waiting (unknown ids are ignored).")
    remaining: int


def build_server(
    state: Path,
    grace_s: float = DEFAULT_GRACE_S,
    backoff: Sequence[float] = webhook.BACKOFF_S,
    poll_s: float = 1.0,
    min_interval_s: float = DEFAULT_MIN_INTERVAL_S,
    max_jobs: int = DEFAULT_MAX_JOBS,
    outbound_allow: Sequence[str] = (),
    clock: Clock = REAL_CLOCK,
) -> MCPServer:
    """The cron server keeping its store in `state`; `backoff` is the webhook retry schedule in seconds.

    `min_interval_s` and `max_jobs` bound what cron_add and cron_update accept (see limits.py). Webhooks go only to
    public addresses and to those `outbound_allow` lists (`hermitcrab.util.outbound`). Every time the server reads
    or waits for is `clock`'s (tests pass one they move themselves).
    """
    outbound = Outbound(outbound_allow, how_to_allow=ALLOW_HINT)
    store = Store(state)
    limits = Limits(min_interval_s, max_jobs)
    notifier = Notifier(EVENTS_URI)
    engine = Engine(store, RunLog(state), notifier, grace_s, outbound, backoff, poll_s, clock)

    @asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncGenerator[None]:
        async with engine.running():
            yield

    server = GuardedServer("hermitcrab-cron", instructions=INSTRUCTIONS, lifespan=lifespan, subscriptions=notifier.bus)
    notifier.install(server)

    def view(job: Job, now: datetime) -> JobView:
        moment, words = engine.next_in_words(job, now)
        data = job.model_dump(mode="json", include={"id", "name", "schedule", "payload", "delivery"}, exclude_none=True)
        return JobView(
            **data,
            session_target=job.session,
            enabled=job.enabled,
            delete_after_run=job.delete_after_run,
            next_run=moment.isoformat() if moment else None,
            next_run_in_words=words,
            last_run=job.last_run,
            origin=job.origin,
        )

    @server.tool()
    async def cron_status(ctx: Context) -> Status:
        """Whether this server fires jobs or stands by, how many jobs and unacknowledged items there are."""
        current = await engine.current()
        jobs = visible(current, caller_of(ctx))
        now = clock.now()
        if engine.firing:
            detail = "this process holds the scheduler lock and fires the jobs"
        else:
            detail = (
                f"another hermitcrab-cron process (pid {engine.lock.owner() or 'unknown'}) fires the jobs of this "
                "store; this one serves reads and edits without firing and takes over when that one exits"
            )
        upcoming = [(moment, job) for job in jobs if (moment := next_run(job))]
        soonest = min(upcoming, key=lambda pair: pair[0], default=None)
        return Status(
            role="scheduler" if engine.firing else "standby",
            detail=detail,
            state_dir=str(store.directory),
            jobs=len(jobs),
            enabled_jobs=sum(job.enabled for job in jobs),
            pending_events=len(current.events),
            pending_webhooks=len(current.outbox),
            next_run=f"{soonest[1].name}: {engine.next_in_words(soonest[1], now)[1]}" if soonest else None,
            grace_s=grace_s,
            min_interval_s=limits.min_interval_s,
            max_jobs=limits.max_jobs,
            warnings=store.warnings,
        )

    @server.tool()
    async def cron_list(
        ctx: Context,
        include_disabled: Annotated[bool, Field(description="Also list disabled jobs (and fired one-shots).")] = False,
    ) -> JobList:
        """The jobs, soonest first, each with its next run in its own time zone and in words."""
        current = await engine.current()
        now = clock.now()
        jobs = [view(job, now) for job in visible(current, caller_of(ctx)) if job.enabled or include_disabled]
        jobs.sort(key=lambda job: (job.next_run is None, job.next_run or "", job.name))
        return JobList(jobs=jobs)

    @server.tool()
    async def cron_add(ctx: Context, job: JobSpec) -> JobView:
        """Add a job. Examples of `schedule`: {"kind": "at", "at": "2026-12-01T09:00:00+01:00"},
        {"kind": "every", "every_seconds": 1800}, {"kind": "cron", "expr": "0 9 * * 1-5", "tz": "Europe/Berlin"}.
        `payload` {"kind": "system_event", "text": ...} goes to the main session; {"kind": "agent_turn",
        "message": ...} runs in an isolated session. `delivery` (default announce) says where the reply goes.
        Runs of a repeating job must be at least the server's minimum interval apart, and the number of jobs is
        capped (cron_status shows both).
        """
        now = clock.now()
        who = caller_of(ctx)
        refuse_past("job", job.schedule, now)
        limits.refuse_too_often("job", job.schedule, now)
        refuse_beyond_rights(who, job.session, job.delivery)
        refuse_destination("job", job.delivery, outbound)

        def add(state: State) -> Job:
            limits.refuse_too_many(len(state.jobs), len(visible(state, who)))
            identity = {"id": new_id(job.name, state.jobs), "created_at": now, "since": now, "origin": who.origin}
            stored = Job.model_validate({**job.model_dump(), **identity})
            state.jobs[stored.id] = stored
            return stored

        return view(await engine.edit(add), now)

    @server.tool()
    async def cron_update(ctx: Context, job_id: JobId, patch: JobPatch) -> JobView:
        """Change a job: each field given in `patch` replaces the job's (a new schedule starts from now, and its runs
        must be at least the server's minimum interval apart)."""
        now = clock.now()
        who = caller_of(ctx)
        if patch.schedule is not None:
            refuse_past("patch", patch.schedule, now)
            limits.refuse_too_often("patch", patch.schedule, now)

        def update(state: State) -> Job:
            try:
                changed = existing(state, job_id, who).patched(patch, now)
            except ValidationError as exc:
                raise ToolError(describe_invalid("cron_update", exc)) from exc
            refuse_beyond_rights(who, changed.session, changed.delivery)
            refuse_destination("patch", changed.delivery, outbound)
            state.jobs[job_id] = changed
            return changed

        return view(await engine.edit(update), now)

    @server.tool()
    async def cron_remove(ctx: Context, job_id: JobId) -> Removed:
        """Remove a job for good (its run history stays readable with cron_runs)."""
        who = caller_of(ctx)

        def remove(state: State) -> Removed:
            del state.jobs[existing(state, job_id, who).id]
            return Removed(removed=job_id)

        return await engine.edit(remove)

    @server.tool()
    async def cron_run(
        ctx: Context,
        job_id: JobId,
        mode: Annotated[
            Literal["force", "due"],
            Field(description="force: run now whatever its schedule; due: only if a run is owed now."),
        ] = "force",
    ) -> Ran:
        """Run a job now, as if it had fired: its item goes to cron://events (or its webhook)."""
        now = clock.now()
        job = existing(await engine.current(), job_id, caller_of(ctx))
        if mode == "force":
            items = await engine.run_now(Tick(job.id, now, "manual"))
            return Ran(ran=True, event_ids=[item.id for item in items])
        owed = next_run(job)
        if owed is None or owed > now:
            _, words = engine.next_in_words(job, now)
            return Ran(ran=False, event_ids=[], note=f"not due: next run {words or 'never (disabled or finished)'}")
        items = await engine.run_now(Tick(job.id, owed, "catch-up", until=now))
        return Ran(ran=bool(items), event_ids=[item.id for item in items], note=None if items else "already ran")

    @server.tool()
    async def cron_runs(
        ctx: Context,
        job_id: JobId | None = None,
        limit: Annotated[int, Field(ge=1, le=500, description="How many records, newest first.")] = 20,
    ) -> Runs:
        """What fired and what became of it: queued on cron://events, acked, sent to a webhook, retried, missed."""
        who = caller_of(ctx)
        if who.is_owner:
            return Runs(runs=engine.runs.read(job_id, limit))
        current = await engine.current()
        jobs = [existing(current, job_id, who).id] if job_id else [job.id for job in visible(current, who)]
        return Runs(runs=engine.runs.read_jobs(jobs, limit))

    @server.tool()
    async def cron_wake(
        ctx: Context,
        text: Annotated[str, Field(min_length=1, max_length=MAX_TEXT_CHARS, description="What the agent is told.")],
    ) -> Woken:
        """Put a system event for the main session on cron://events now (no job needed)."""
        who = caller_of(ctx)
        if not who.is_owner:
            raise ToolError(
                f"cron_wake wakes the owner's main session, which a {who.principal} session may not do; add a job with "
                "session_target 'isolated' instead (it runs in a session of its own and its reply comes back to this "
                "conversation)."
            )
        item = wake_item(text, clock.now(), who.origin)
        await engine.edit(lambda state: state.events.append(item))
        return Woken(event_id=item.id)

    @server.tool()
    async def cron_ack(
        event_ids: Annotated[
            list[Annotated[str, Field(max_length=200)]],
            Field(max_length=10_000, description="Ids of cron://events items that were handled."),
        ],
    ) -> Acked:
        """Remove handled items from cron://events. Unknown ids (already acknowledged) are ignored."""
        now = clock.now().isoformat()
        wanted = set(event_ids)

        def ack(state: State) -> list[Item]:
            gone = [item for item in state.events if item.id in wanted]
            state.events = [item for item in state.events if item.id not in wanted]
            return gone

        gone = await engine.edit(ack)
        engine.runs.append([acked(item, now) for item in gone if item.job_id is not None])
        return Acked(removed=len(gone), remaining=len(store.state.events))

    @server.resource(EVENTS_URI, name="events", mime_type="application/json")
    async def events() -> str:
        """Items fired jobs and cron_wake left for the host, until acknowledged with cron_ack (see docs/cron.md)."""
        return render((await engine.current()).events)

    return server


def acked(item: Item, at: str) -> dict[str, Any]:
    """The run-history line saying the host acknowledged `item`."""
    run = item.id.partition(":")[2]
    return {"at": at, "job_id": item.job_id, "run_id": run, "event_id": item.id, "status": "acked"}


def caller_of(ctx: Context) -> Caller:
    return caller(ctx.request_context.meta)


def visible(state: State, who: Caller) -> list[Job]:
    """The jobs `who` may see: every one for the owner, else only those its own session made."""
    return [job for job in state.jobs.values() if who.owns(job.origin)]


def existing(state: State, job_id: str, who: Caller) -> Job:
    """The job, if `who` may see it; another's job is as unknown to a non-owner as one that does not exist."""
    job = state.jobs.get(job_id)
    if job is None or not who.owns(job.origin):
        raise ToolError(f"There is no job {job_id!r}; cron_list shows the ids of the jobs there are.")
    return job


def refuse_beyond_rights(who: Caller, session: Session, delivery: Delivery) -> None:
    """A non-owner's job may neither run in the owner's main session nor make this server POST anywhere."""
    if who.is_owner:
        return
    if session == "main":
        raise ToolError(
            f"A job made from a {who.principal} session cannot run in the owner's main session; give it "
            "session_target 'isolated' (it then runs in a session of its own and its reply comes back to this "
            "conversation)."
        )
    if delivery.mode == "webhook":
        raise ToolError(
            f"A job made from a {who.principal} session cannot have webhook delivery (this server would POST to that "
            "URL from the owner's machine); leave delivery at 'announce' and its reply comes back to this conversation."
        )


def refuse_destination(argument: str, delivery: Delivery, outbound: Outbound) -> None:
    """A webhook URL naming this machine or its network is refused when the job is made (and again, resolved, at
    each delivery)."""
    if delivery.mode == "webhook" and delivery.url is not None:
        try:
            outbound.precheck(delivery.url)
        except OutboundRefused as exc:
            raise ToolError(f"`{argument}.delivery.url` {exc}") from None


def refuse_past(argument: str, schedule: Schedule, now: datetime) -> None:
    try:
        check_future(schedule, now)
    except ValueError as exc:
        raise ToolError(f"`{argument}.schedule.at` {exc}; give a future time.") from exc
