"""Recorded calls summed by model, session, day or kind, each with its cost, and how that is shown to a person."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from typing import Literal

from ..providers.base import Usage
from .calls import Call, recorded_calls
from .prices import HOW_TO_PRICE, Prices

GroupBy = Literal["model", "session", "day", "kind"]


@dataclass
class Totals:
    """Tokens, calls and cost of a group of calls; `unpriced` names the profiles and models without a price."""

    usage: Usage = field(default_factory=Usage)
    calls: int = 0
    cost: Decimal = Decimal(0)
    unpriced: set[tuple[str, str]] = field(default_factory=set[tuple[str, str]])

    def add(self, call: Call, cost: Decimal | None) -> None:
        self.usage = self.usage + call.usage
        self.calls += call.count
        if cost is None:
            self.unpriced.add((call.provider, call.model))
        else:
            self.cost += cost

    @property
    def cached_share(self) -> float:
        """The part of the prompt tokens read from the provider's cache."""
        return self.usage.cache_read_tokens / self.usage.input_tokens if self.usage.input_tokens else 0.0

    @property
    def shown_cost(self) -> str:
        """`$0.0123`; `?` when no call has a price, `$0.0123 + ?` when some lack one (never a made-up 0)."""
        if self.unpriced and not self.cost:
            return "?"
        return f"${self.cost:,.4f}" + (" + ?" if self.unpriced else "")


def tally(
    state: Path,
    prices: Prices,
    since: dt.datetime,
    by: GroupBy,
    zone: dt.tzinfo | None = None,
    calls: Iterable[Call] | None = None,
) -> tuple[dict[str, Totals], Totals]:
    """The calls from `since` on in the home's `state`, summed by `by` (days in `zone`, default local), and all;
    `calls` when the caller read them already (to group one reading several ways).

    Calls of one row, model and UTC day are priced once, summed, where the price allows (`Prices.summable`)."""
    summed: dict[tuple[str, str, str, dt.date], Call] = {}
    summable: dict[tuple[str, str, dt.date], bool] = {}
    alone: list[tuple[str, Call]] = []
    for call in recorded_calls(state, since) if calls is None else calls:
        key, day = _key(call, by, zone), call.when.astimezone(dt.UTC).date()
        together = summable.get((call.provider, call.model, day))
        if together is None:
            together = summable[call.provider, call.model, day] = prices.summable(call.provider, call.model, call.when)
        if not together:
            alone.append((key, call))
            continue
        bucket = (key, call.provider, call.model, day)
        earlier = summed.get(bucket)
        summed[bucket] = (
            call
            if earlier is None
            else replace(earlier, usage=earlier.usage + call.usage, count=earlier.count + call.count)
        )
    groups: dict[str, Totals] = {}
    total = Totals()
    for key, call in [*((bucket[0], call) for bucket, call in summed.items()), *alone]:
        cost = prices.cost(call.provider, call.model, call.usage, call.when)
        groups.setdefault(key, Totals()).add(call, cost)
        total.add(call, cost)
    return dict(sorted(groups.items())), total


def _key(call: Call, by: GroupBy, zone: dt.tzinfo | None) -> str:
    if by == "model":
        return f"{call.model or '?'} ({call.provider.partition(':')[0] or '?'})"
    if by == "session":
        return call.session
    if by == "day":
        return f"{call.when.astimezone(zone):%Y-%m-%d}"
    return call.kind


def price_hints(unpriced: Iterable[tuple[str, str]]) -> list[str]:
    """One line per profile whose model has no known price, saying how to give it one."""
    return [
        f"no price known for {model or '?'}: {HOW_TO_PRICE.format(label=provider)}"
        for provider, model in sorted(unpriced)
    ]


def today_line(totals: Totals) -> str:
    """Today's spending in one sentence (`/usage`)."""
    usage = totals.usage
    return (
        f"Today: {totals.calls:,} model calls, {usage.input_tokens:,} tokens in ({totals.cached_share:.0%} cached), "
        f"{usage.output_tokens:,} out, cost {totals.shown_cost}."
    )
