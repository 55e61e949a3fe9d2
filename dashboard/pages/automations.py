"""The Automations page: the cron server's jobs (schedule in words, next run in the job's zone, last run and what
became of it) with enable, disable, run now and delete; and the dead letters, retried or dropped.

Jobs are read and changed only through the cron server's own tools over MCP (`cron_list`, `cron_runs`,
`cron_update`, `cron_run`, `cron_remove`), found by the tool rather than by a server name. Dead letters are the
host's (`inbox/deadletters.py`): a retry only marks the letter, exactly as `hermitcrab deadletters retry` does, and
the running host takes it from there, so a retried message is answered once however often the button is pressed.
"""

from __future__ import annotations

from typing import Any, TypeVar, cast

from pydantic import BaseModel, ConfigDict, ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from hermitcrab.host.inbox.deadletters import FOLDER, DeadLetters

from ..context import context
from ..moments import parsed
from ..render import done, page
from ..schedules import in_words
from ..tools import Server, Unavailable, server_with

TITLE = "Automations"
PATH = "/automations"
RECENT_RUNS = 20
MAX_LETTERS = 100
OUTCOMES = {
    "queued": "fired, waiting for the host",
    "acked": "handled by the host",
    "sending": "fired, being sent to its webhook",
    "sent": "sent to its webhook",
    "retrying": "its webhook failed, trying again",
    "failed": "its webhook failed for good",
    "missed": "missed",
}
JOB_ACTIONS = ("enable", "disable", "run")


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")


def _timestamp(text: str | None) -> float | None:
    moment = parsed(text)
    return moment.timestamp() if moment is not None and moment.tzinfo is not None else None


class LastRun(_Lenient):
    run_id: str
    fired_at: str | None = None
    status: str

    @property
    def fired(self) -> float | None:
        return _timestamp(self.fired_at)


class Job(_Lenient):
    """One job of `cron_list`, as far as this page reads it."""

    id: str
    name: str
    schedule: dict[str, Any]
    enabled: bool
    payload: dict[str, Any] = {}
    next_run_in_words: str | None = None
    last_run: LastRun | None = None

    @property
    def schedule_words(self) -> str:
        return in_words(self.schedule)

    @property
    def task(self) -> str:
        """What it does when it fires: the text it puts in the main session or the message of its own turn."""
        return str(self.payload.get("text") or self.payload.get("message") or "")


class Run(_Lenient):
    """One line of `cron_runs`."""

    at: str = ""
    job_id: str | None = None
    run_id: str = ""
    status: str = ""
    trigger: str | None = None
    detail: str | None = None

    @property
    def fired(self) -> float | None:
        return _timestamp(self.at)


_Row = TypeVar("_Row", bound=_Lenient)


def outcome(status: str) -> str:
    return OUTCOMES.get(status, status)


async def show(request: Request) -> Response:
    return await _page(request)


async def _page(request: Request, problem: str | None = None, status: int = 200) -> Response:
    found = context(request)
    values: dict[str, Any] = {"outcome": outcome}
    try:
        cron = server_with(found, "cron_list", "cron")
        jobs, unread = _read(Job, await cron.call("cron_list", {"include_disabled": True}), "jobs")
        records, _ = _read(Run, await cron.call("cron_runs", {"limit": 2 * RECENT_RUNS}), "runs")
        runs = _folded(records)[:RECENT_RUNS]  # a run has a record when it fires and one when it is handled
        values.update(jobs=jobs, unread=unread, runs=runs, names={job.id: job.name for job in jobs})
        values["latest"] = {(run.job_id, run.run_id): run.status for run in runs}
        values["server"] = cron.name
    except Unavailable as exc:
        values["cron_problem"] = str(exc)
    letters = DeadLetters(found.settings.state / FOLDER).list()
    values.update(letters=letters[:MAX_LETTERS], letter_count=len(letters))
    return page(request, "automations.html", TITLE, status=status, problem=problem, **values)


def _read(model: type[_Row], answer: dict[str, Any], key: str) -> tuple[list[_Row], int]:
    """The rows of `answer[key]` the page can read, and how many it could not (a newer or another server's)."""
    listed = answer.get(key)
    items = cast(list[object], listed) if isinstance(listed, list) else []
    rows: list[_Row] = []
    for item in items:
        try:
            rows.append(model.model_validate(item))
        except ValidationError:
            continue
    return rows, len(items) - len(rows)


def _folded(records: list[Run]) -> list[Run]:
    """One row a run, newest first: when it fired (its first record), and what became of it (its last: a run queued
    and then acked was handled by the host); `records` are `cron_runs`'s, newest first."""
    runs: dict[tuple[str | None, str], Run] = {}
    for record in records:
        key = (record.job_id, record.run_id)
        newer = runs.get(key)
        if newer is None:
            runs[key] = record
        else:
            runs[key] = newer.model_copy(update={"at": record.at, "trigger": newer.trigger or record.trigger})
    return list(runs.values())


def _cron(request: Request) -> Server:
    return server_with(context(request), "cron_list", "cron")


async def act_on_job(request: Request) -> Response:
    """Enable, disable or run now one job (a form's `job` and `action`)."""
    form = await request.form()
    job, action, name = (str(form.get(field, "")) for field in ("job", "action", "name"))
    if action not in JOB_ACTIONS:
        return await _page(request, f"Unknown action {action!r}: use one of the job's buttons.", 400)
    try:
        cron = _cron(request)
        if action == "run":
            ran = await cron.call("cron_run", {"job_id": job, "mode": "force"})
            notice = f"Ran {name or job} now." if ran.get("ran") else f"{name or job} did not run: {ran.get('note')}"
        else:
            await cron.call("cron_update", {"job_id": job, "patch": {"enabled": action == "enable"}})
            notice = f"{name or job} is {action}d."
    except Unavailable as exc:
        return await _page(request, f"Could not {action} {name or job}: {exc}", 502)
    return done(request, PATH, notice)


async def confirm_delete(request: Request) -> Response:
    """Ask before a job is deleted for good."""
    job = request.query_params.get("job", "")
    try:
        jobs, _ = _read(Job, await _cron(request).call("cron_list", {"include_disabled": True}), "jobs")
    except Unavailable as exc:
        return await _page(request, str(exc), 502)
    chosen = next((listed for listed in jobs if listed.id == job), None)
    if chosen is None:
        return await _page(request, f"There is no job {job!r} (deleted already?).", 404)
    return page(request, "automations_delete.html", TITLE, job=chosen)


async def delete(request: Request) -> Response:
    form = await request.form()
    job, name = str(form.get("job", "")), str(form.get("name", ""))
    try:
        await _cron(request).call("cron_remove", {"job_id": job})
    except Unavailable as exc:
        return await _page(request, f"Could not delete {name or job}: {exc}", 502)
    return done(request, PATH, f"Deleted {name or job}; its past runs stay in the cron server's history.")


async def act_on_letter(request: Request) -> Response:
    """Retry or drop one dead letter (a form's `letter` and `action`), as `hermitcrab deadletters` does."""
    form = await request.form()
    letter, action = str(form.get("letter", "")), str(form.get("action", ""))
    letters = DeadLetters(context(request).settings.state / FOLDER)
    try:
        if action == "retry":
            letters.request_retry(letter)
            notice = f"Dead letter {letter} will be tried again: the host takes it up within a few seconds."
        elif action == "drop":
            letters.drop(letter)
            notice = f"Dropped dead letter {letter}: it will not be tried again."
        else:
            return await _page(request, f"Unknown action {action!r}: use the letter's buttons.", 400)
    except LookupError as exc:
        return await _page(request, f"{str(exc.args[0]).capitalize()} (dropped or retried already?).", 404)
    return done(request, PATH, notice)


routes: list[BaseRoute] = [
    Route(PATH, show),
    Route(f"{PATH}/job", act_on_job, methods=["POST"]),
    Route(f"{PATH}/delete", confirm_delete),
    Route(f"{PATH}/delete", delete, methods=["POST"]),
    Route(f"{PATH}/deadletter", act_on_letter, methods=["POST"]),
]
