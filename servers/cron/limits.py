"""What a model may ask of the scheduler: runs at least `--min-interval-s` apart, at most `--max-jobs` jobs.

Every cron_add and cron_update is a model's tool call, and every run of a job is a model turn the owner pays for: a
job every second, or hundreds of jobs, would be a runaway bill nobody asked for. The owner sets both bounds with the
server's flags. Jobs already in the store are never checked again, so lowering a bound can never stop a start.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from mcp.server.mcpserver.exceptions import ToolError

from hermitcrab.servers._common.arguments import quote
from hermitcrab.util.server_options import CRON

from .engine import next_after
from .jobs import CronSchedule, EverySchedule, Schedule
from .schedule import zone

DEFAULT_MIN_INTERVAL_S: float = CRON.option("min_interval_s").default
DEFAULT_MAX_JOBS: int = CRON.option("max_jobs").default
CRON_RUNS_CHECKED = 100  # enough to see a close pair that comes once a day (23:59 then 00:00)


@dataclass(frozen=True)
class Limits:
    """The owner's bounds on the jobs a model makes; `min_interval_s` 0 lets any schedule through."""

    min_interval_s: float = DEFAULT_MIN_INTERVAL_S
    max_jobs: int = DEFAULT_MAX_JOBS

    def refuse_too_often(self, argument: str, schedule: Schedule, now: datetime) -> None:
        """An `every` or `cron` schedule whose runs come closer than the minimum is refused; `at` runs once."""
        if isinstance(schedule, EverySchedule) and schedule.every_seconds < self.min_interval_s:
            raise ToolError(
                f"`{argument}.schedule`: every_seconds {schedule.every_seconds} is {self._below()}; use every_seconds "
                f"{_seconds(self.min_interval_s)} or more."
            )
        if isinstance(schedule, CronSchedule):
            close = closest_runs(schedule, now, timedelta(seconds=self.min_interval_s))
            if close is not None:
                first, second = (moment.astimezone(zone(schedule.tz)).isoformat() for moment in close)
                gap = _seconds((close[1] - close[0]).total_seconds())
                raise ToolError(
                    f"`{argument}.schedule`: cron expression {quote(schedule.expr)} runs {gap} s apart ({first}, then "
                    f"{second}), which is {self._below()}; choose one whose runs are at least that far apart."
                )

    def refuse_too_many(self, jobs: int, removable: int) -> None:
        """cron_add beyond the cap; `removable` is how many of the `jobs` the caller may remove."""
        if jobs < self.max_jobs:
            return
        head = (
            f"This server already has {_count(jobs, 'job')} and keeps at most {self.max_jobs} (the owner can raise "
            "that with --max-jobs)"
        )
        if removable == 0:
            raise ToolError(f"{head}, and none of them was made from this conversation; ask the owner to remove some.")
        raise ToolError(
            f"{head}; remove one that is no longer needed with cron_remove (cron_list with include_disabled lists "
            "them, fired one-shots too), then add this one again."
        )

    def _below(self) -> str:
        return (
            f"below this server's minimum interval of {_seconds(self.min_interval_s)} s (the owner can lower it with "
            "--min-interval-s)"
        )


def closest_runs(schedule: CronSchedule, now: datetime, minimum: timedelta) -> tuple[datetime, datetime] | None:
    """The first two consecutive runs, among the next CRON_RUNS_CHECKED, less than `minimum` apart (by the clock, in
    UTC, as the engine fires them)."""
    if minimum <= timedelta(0):
        return None
    trigger = schedule.trigger(now)
    previous = next_after(trigger, now)
    for _ in range(CRON_RUNS_CHECKED - 1):
        if previous is None:
            return None
        following = next_after(trigger, previous)
        if following is not None and following - previous < minimum:
            return previous, following
        previous = following
    return None


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def _seconds(value: float) -> str:
    """300.0 as "300", 0.5 as "0.5"."""
    return str(int(value)) if value.is_integer() else str(value)
