"""What a job is: the pydantic models the tools take and the store keeps, validated with errors that name the field."""

from __future__ import annotations

import re
import secrets
from datetime import datetime
from typing import Annotated, Any, Literal

from apscheduler.triggers.base import BaseTrigger
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from hermitcrab.servers._common.origin import Origin

from .schedule import cron_trigger, date_trigger, interval_trigger, zone

MAX_TEXT_CHARS = 20_000
Session = Literal["main", "isolated"]
_TZ_HELP = "IANA time zone, e.g. Europe/Berlin (default UTC); pass the user's own zone."


def _strict() -> ConfigDict:
    return ConfigDict(extra="forbid")


def _valid_zone(name: str) -> str:
    zone(name)  # a ScheduleError (a ValueError) names the nearest valid zones
    return name


class AtSchedule(BaseModel):
    """Once, at a moment."""

    model_config = _strict()
    kind: Literal["at"]
    at: datetime = Field(description="ISO 8601 with UTC offset, e.g. 2026-12-01T09:00:00+01:00 (no offset: in tz).")
    tz: str = Field(default="UTC", description=_TZ_HELP)

    _zone = field_validator("tz")(_valid_zone)

    @model_validator(mode="after")
    def _aware(self) -> AtSchedule:
        if self.at.tzinfo is None:
            self.at = self.at.replace(tzinfo=zone(self.tz))
        return self

    def trigger(self, since: datetime) -> BaseTrigger:
        return date_trigger(self.at, self.tz)


class EverySchedule(BaseModel):
    """Repeatedly, a fixed number of seconds apart, the first time one interval after the job is added."""

    model_config = _strict()
    kind: Literal["every"]
    every_seconds: int = Field(ge=1, le=366 * 86400, description="Seconds between runs, e.g. 3600 for hourly.")
    tz: str = Field(default="UTC", description="Time zone the run times are shown in. " + _TZ_HELP)

    _zone = field_validator("tz")(_valid_zone)

    def trigger(self, since: datetime) -> BaseTrigger:
        return interval_trigger(self.every_seconds, since, self.tz)


class CronSchedule(BaseModel):
    """By a crontab expression read in a time zone (wall-clock time: 09:00 stays 09:00 across DST changes)."""

    model_config = _strict()
    kind: Literal["cron"]
    expr: str = Field(
        max_length=200,
        description="5 fields: minute hour day-of-month month day-of-week (0 or 7 = Sunday), e.g. '0 9 * * 1-5'; "
        "or @hourly, @daily, @weekly, @monthly, @yearly.",
    )
    tz: str = Field(default="UTC", description=_TZ_HELP)

    _zone = field_validator("tz")(_valid_zone)

    @model_validator(mode="after")
    def _parses(self) -> CronSchedule:
        self.trigger(datetime.now().astimezone())
        return self

    def trigger(self, since: datetime) -> BaseTrigger:
        return cron_trigger(self.expr, self.tz)


Schedule = Annotated[AtSchedule | EverySchedule | CronSchedule, Field(discriminator="kind")]


class SystemEvent(BaseModel):
    """Text put into the main session, as if the user's system had said it."""

    model_config = _strict()
    kind: Literal["system_event"]
    text: str = Field(min_length=1, max_length=MAX_TEXT_CHARS, description="What the agent is told when it fires.")


class AgentTurn(BaseModel):
    """A message the agent handles in a fresh session of its own."""

    model_config = _strict()
    kind: Literal["agent_turn"]
    message: str = Field(min_length=1, max_length=MAX_TEXT_CHARS, description="The task for the agent.")


Payload = Annotated[SystemEvent | AgentTurn, Field(discriminator="kind")]


class Delivery(BaseModel):
    """Where the agent's reply goes: announce (to a channel, default the owner's last conversation), a webhook, none."""

    model_config = _strict()
    mode: Literal["none", "announce", "webhook"] = "announce"
    channel: str | None = Field(default=None, max_length=200, description="announce: channel name, e.g. discord.")
    to: str | None = Field(default=None, max_length=500, description="announce: conversation or user within it.")
    url: str | None = Field(
        default=None, max_length=2000, description="webhook: the http(s) URL the event is POSTed to as JSON."
    )

    @model_validator(mode="after")
    def _url_matches_mode(self) -> Delivery:
        if self.mode == "webhook" and (self.url is None or not re.match(r"^https?://[^/\s]+", self.url)):
            raise ValueError("webhook delivery needs `url`, an http:// or https:// URL")
        if self.mode != "webhook" and self.url is not None:
            raise ValueError("`url` is only used with mode 'webhook'")
        return self


class JobSpec(BaseModel):
    """A job as given to cron_add: everything about it that the caller decides."""

    model_config = _strict()
    name: str = Field(min_length=1, max_length=200, description="Short name, shown when it fires, e.g. 'standup'.")
    schedule: Schedule
    payload: Payload
    delivery: Delivery = Field(default_factory=Delivery)
    session_target: Session | None = Field(
        default=None, description="main or isolated; default main for system_event, isolated for agent_turn."
    )
    enabled: bool = True
    delete_after_run: bool = Field(default=False, description="Remove an `at` job once it has fired.")

    @property
    def session(self) -> Session:
        if self.session_target is not None:
            return self.session_target
        return "main" if self.payload.kind == "system_event" else "isolated"

    @property
    def text(self) -> str:
        return self.payload.text if isinstance(self.payload, SystemEvent) else self.payload.message


class JobPatch(BaseModel):
    """Fields of a job to replace (each one whole); the rest stay."""

    model_config = _strict()
    name: str | None = Field(default=None, min_length=1, max_length=200)
    schedule: Schedule | None = None
    payload: Payload | None = None
    delivery: Delivery | None = None
    session_target: Session | None = None
    enabled: bool | None = None
    delete_after_run: bool | None = None


class LastRun(BaseModel):
    run_id: str
    scheduled_at: datetime
    fired_at: datetime
    status: str


class Job(JobSpec):
    """A job as stored: the spec plus its id and where its schedule stands."""

    id: str
    created_at: datetime
    since: datetime = Field(description="When the current schedule was set: runs before it are never owed.")
    cursor: datetime | None = Field(default=None, description="The scheduled time of the last tick handled.")
    last_run: LastRun | None = None
    origin: Origin | None = Field(
        default=None, description="The conversation that made the job, as the host described it; never patched."
    )

    def trigger(self) -> BaseTrigger:
        return self.schedule.trigger(self.since)

    def patched(self, patch: JobPatch, now: datetime) -> Job:
        """This job with `patch` applied and validated whole.

        A new schedule starts counting from `now`, and so does a job enabled again: runs it skipped while disabled
        are not owed.
        """
        changes = patch.model_dump(exclude_unset=True)
        data: dict[str, Any] = {**self.model_dump(), **changes}
        if "schedule" in changes:
            data.update(since=now, cursor=None)
        elif changes.get("enabled") and not self.enabled:
            data.update(cursor=now)
        return Job.model_validate(data)


def new_id(name: str, taken: set[str] | dict[str, Any]) -> str:
    """A short id readable in logs and chat, e.g. 'standup-3f2a'."""
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:24] or "job"
    while True:
        candidate = f"{slug}-{secrets.token_hex(2)}"
        if candidate not in taken:
            return candidate


def check_future(schedule: AtSchedule | EverySchedule | CronSchedule, now: datetime) -> None:
    """An `at` in the past can never fire: refuse it when the schedule is set."""
    if isinstance(schedule, AtSchedule) and schedule.at <= now:
        shown = now.astimezone(zone(schedule.tz)).isoformat(timespec="seconds")
        raise ValueError(f"{schedule.at.isoformat()} is in the past (now it is {shown} in {schedule.tz})")
