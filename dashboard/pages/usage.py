"""The Usage page: tokens, model calls and cost by day, model and session over the last 7 or 30 days, and today's
spending against the daily budget (`[budget]`).

The sums and prices are `hermitcrab usage`'s and `/usage`'s own (`host/usage/tally.py`): the transcripts of the home,
so every process's calls count, sub-agents' too. Days are the agent's days (`agent.timezone`), as the budget's are.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from hermitcrab.host.turn.budget import DEFAULT_LIMITS, TOTAL, Limit
from hermitcrab.host.usage.calls import recorded_calls
from hermitcrab.host.usage.prices import Prices
from hermitcrab.host.usage.tally import GroupBy, Totals, price_hints, tally

from ..context import context
from ..moments import owner_zone
from ..numbers import whole_number
from ..render import page

TITLE = "Usage"
PATH = "/usage"
PERIODS = (7, 30)
GROUPS: tuple[tuple[GroupBy, str], ...] = (("day", "Day"), ("model", "Model"), ("session", "Session"))


@dataclass(frozen=True)
class Table:
    """One grouping of the period's calls: its rows, newest day first, else the most tokens first."""

    by: GroupBy
    label: str
    rows: list[tuple[str, Totals]]

    @property
    def most(self) -> int:
        """The tokens of the largest row: the full length of every row's bar."""
        return max((_tokens(totals) for _, totals in self.rows), default=0)


@dataclass(frozen=True)
class Spent:
    """Today's spending on one of the budget's measures, against its daily limit (None: no limit)."""

    measure: str
    used: float
    shown: str
    limit: float | None
    shown_limit: str


async def show(request: Request) -> Response:
    host = context(request)
    asked = request.query_params.get("days", "7")
    days = whole_number(asked, PERIODS[0])
    days = days if days in PERIODS else PERIODS[0]
    problem = None if asked == str(days) else f"The period is {PERIODS[0]} or {PERIODS[1]} days; showing {days}."
    settings = host.settings
    zone = owner_zone(settings)
    midnight = host.agent.now().replace(hour=0, minute=0, second=0, microsecond=0).astimezone()  # naive is local
    since = midnight - dt.timedelta(days=days - 1)
    prices = Prices(settings.providers)
    tables, total = await anyio.to_thread.run_sync(_tables, settings.state, prices, since, zone)
    today = dict(tables[0].rows).get(f"{midnight.astimezone(zone):%Y-%m-%d}", Totals())
    return page(
        request,
        "usage.html",
        TITLE,
        days=days,
        periods=PERIODS,
        problem=problem,
        since=since.astimezone(zone),
        tables=tables,
        total=total,
        hints=price_hints(total.unpriced),
        today=today,
        budget=_budget(today, settings.budget.get(TOTAL, DEFAULT_LIMITS[TOTAL])),
        tokens=_tokens,
    )


def _tables(state: Path, prices: Prices, since: dt.datetime, zone: dt.tzinfo) -> tuple[list[Table], Totals]:
    """The period's calls, read once from the transcripts, grouped each of the page's ways."""
    calls = list(recorded_calls(state, since))
    tables: list[Table] = []
    total = Totals()
    for by, label in GROUPS:
        groups, total = tally(state, prices, since, by, zone, calls)
        order = sorted(groups.items(), reverse=True) if by == "day" else sorted(groups.items(), key=_most_first)
        tables.append(Table(by, label, order))
    return tables, total


def _most_first(row: tuple[str, Totals]) -> tuple[int, str]:
    return -_tokens(row[1]), row[0]


def _tokens(totals: Totals) -> int:
    return totals.usage.input_tokens + totals.usage.output_tokens


def _budget(today: Totals, limit: Limit) -> list[Spent]:
    """Today's calls, tokens and cost beside the total daily budget (what the budget counts: input plus output)."""
    usd = limit.usd_per_day
    return [
        Spent("Model calls", today.calls, f"{today.calls:,}", limit.calls_per_day, _limit(limit.calls_per_day)),
        Spent("Tokens", _tokens(today), f"{_tokens(today):,}", limit.tokens_per_day, _limit(limit.tokens_per_day)),
        Spent("Cost", float(today.cost), today.shown_cost, usd, "no money limit" if usd is None else f"${usd:,.2f}"),
    ]


def _limit(value: int | None) -> str:
    return "no limit" if value is None else f"{value:,}"


routes: list[BaseRoute] = [Route(PATH, show)]
