"""The `cron://events` contract: the items a job leaves for the host, their ids, and the resource's JSON."""

from __future__ import annotations

import json
import secrets
from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict, Field

from hermitcrab.servers._common.origin import Origin

from .jobs import Job, Session
from .schedule import zone

EVENTS_URI = "cron://events"
ACK = {"tool": "cron_ack", "argument": "event_ids"}


class Item(BaseModel):
    """One thing for the host to act on; it stays on `cron://events` until acknowledged with cron_ack."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(description="Unique: '<job_id>:<run_id>', or 'wake:<run_id>' for cron_wake.")
    text: str = Field(description="What the agent gets, under a line naming the job.")
    session: Session
    delivery: dict[str, str] = Field(description="mode, and channel/to when given.")
    job_id: str | None
    fired_at: datetime
    scheduled_at: datetime | None = None
    origin: Origin | None = Field(
        default=None, description="The conversation the job (or cron_wake) came from, as the host gave it; else null."
    )


def run_id(moment: datetime, manual: bool = False) -> str:
    """The run's id from its scheduled time (UTC, to the millisecond): the same tick always gets the same id."""
    utc = moment.astimezone(UTC)
    return utc.strftime("%Y%m%dT%H%M%S.") + f"{utc.microsecond // 1000:03d}Z" + ("-manual" if manual else "")


def job_item(job: Job, scheduled_at: datetime, fired_at: datetime, manual: bool) -> Item:
    """The item a firing of `job` leaves, its text headed by when it fired (in the job's zone) and why."""
    local = fired_at.astimezone(zone(job.schedule.tz))
    header = f'[cron job "{job.name}" {"run by hand" if manual else "fired"} at {local.isoformat(timespec="seconds")}'
    late = (fired_at - scheduled_at).total_seconds()
    if not manual and late >= 60:
        scheduled = scheduled_at.astimezone(local.tzinfo).isoformat(timespec="seconds")
        header += f", {round(late / 60)} min late: scheduled for {scheduled}"
    return Item(
        id=f"{job.id}:{run_id(scheduled_at, manual)}",
        text=f"{header}]\n{job.text}",
        session=job.session,
        delivery=job.delivery.model_dump(exclude_none=True, exclude={"url"}),
        job_id=job.id,
        fired_at=fired_at,
        scheduled_at=scheduled_at,
        origin=job.origin,
    )


def wake_item(text: str, now: datetime, origin: Origin | None = None) -> Item:
    return Item(
        id=f"wake:{run_id(now)}-{secrets.token_hex(2)}",
        text=text,
        session="main",
        delivery={"mode": "announce"},
        job_id=None,
        fired_at=now,
        origin=origin,
    )


def render(items: list[Item]) -> str:
    """The resource's JSON: the items waiting, oldest first, and how to acknowledge them."""
    return json.dumps({"items": [item.model_dump(mode="json") for item in items], "ack": ACK}, ensure_ascii=False)
