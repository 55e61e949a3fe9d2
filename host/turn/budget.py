"""A daily budget of model calls, tokens and money, per kind of principal and in total, so that nobody (a group, a
job the model scheduled, a loop) spends the owner's money without limit.

Spending is counted per day in `state/usage/YYYY-MM-DD.json`, shared under a file lock by every process of the home
(`run`, `chat`, `ask`). A turn is checked before it starts and charged when it ends, so one turn may overshoot by
at most its own calls; once a budget is spent, turns of that kind are answered with a sentence saying so, and the
owner is told once a day. Money is counted in USD at the prices `hermitcrab usage` shows (`host/usage/prices.py`);
an answer whose price is not known counts 0 and is logged, so a money budget needs a price for every model it pays.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Generator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from filelock import FileLock

from hermitcrab.util.store import JsonFile

from ..events import Rights

if TYPE_CHECKING:  # config imports this module, and the providers and prices import config
    from ..providers.base import Completion, Usage
    from ..usage.prices import Prices

logger = logging.getLogger(__name__)

TOTAL = "total"
WHO = {"owner": "you", "peer": "approved friends", "group": "group conversations", "system": "webhooks and programs"}


@dataclass(frozen=True)
class Limit:
    """At most this many model calls, tokens (input plus output) and US dollars a day; None is no limit."""

    calls_per_day: int | None = None
    tokens_per_day: int | None = None
    usd_per_day: float | None = None


DEFAULT_LIMITS: Mapping[str, Limit] = {
    "owner": Limit(2_000, 20_000_000),
    "peer": Limit(200, 1_000_000),
    "group": Limit(300, 1_500_000),
    "system": Limit(200, 1_000_000),
    TOTAL: Limit(3_000, 30_000_000),
}
"""Generous for the owner (a busy day of work is a few hundred calls), small for everyone else: a group that chats
all day stays under a dollar or two on a small model, and a runaway job stops within the day."""


@dataclass(frozen=True)
class Spent:
    """A budget that is used up: whose, and the sentence that answers the turn."""

    key: str
    reply: str
    owner_note: str


class Budget:
    """Today's spending against the limits."""

    def __init__(self, root: Path, limits: Mapping[str, Limit] = DEFAULT_LIMITS, prices: Prices | None = None) -> None:
        self.root = root
        self.limits = limits
        self.prices = prices

    def spent(self, rights: Rights, today: dt.date) -> Spent | None:
        """The first budget a turn with these rights would go over, or None when it may run."""
        usage = self._read(today)
        for key in (rights, TOTAL):
            limit = self.limits.get(key, DEFAULT_LIMITS[key])
            used = usage.get(key, {})
            over = _over(limit, used.get("calls", 0), used.get("tokens", 0), used.get("usd", 0.0))
            if over:
                whose = "my daily budget" if key == TOTAL else f"my daily budget for {WHO[key]}"
                table = "[budget]" if key == TOTAL else f"[budget.{key}]"
                return Spent(
                    key,
                    f"Sorry, {whose} ({over}) is used up for today; it starts again at midnight.",
                    f"The daily model budget {table} ({over}) is used up for today: such turns are answered with a "
                    f"note until midnight. Raise it in config.toml if that is expected.",
                )
        return None

    def charge(
        self, rights: Rights, today: dt.date, calls: int, usage: Usage, answers: Sequence[Completion] = ()
    ) -> None:
        """Count a turn's model calls, tokens and the price of its `answers` against today's budgets of `rights`
        and the total."""
        tokens = usage.input_tokens + usage.output_tokens
        if not calls and not tokens:
            return
        usd = self._usd(answers)
        with self._change(today) as spending:
            for key in (rights, TOTAL):
                used = spending.setdefault(key, {})
                used["calls"] = used.get("calls", 0) + calls
                used["tokens"] = used.get("tokens", 0) + tokens
                used["usd"] = used.get("usd", 0.0) + usd

    def _usd(self, answers: Sequence[Completion]) -> float:
        """What the answers cost, priced only when some budget is in money."""
        if self.prices is None or all(limit.usd_per_day is None for limit in self.limits.values()):
            return 0.0
        usd = 0.0
        now = dt.datetime.now(dt.UTC)
        for answer in answers:
            cost = self.prices.cost(answer.provider, answer.model, answer.usage, now)
            if cost is None:
                logger.warning(
                    "no price is known for %s (%s): the money budget counts it as 0", answer.model, answer.provider
                )
            else:
                usd += float(cost)
        return usd

    def first_to_tell(self, spent: Spent, today: dt.date) -> bool:
        """Whether the owner has not been told today that this budget is spent (and remember that now they are)."""
        with self._change(today) as usage:
            told = usage.setdefault("told", {})
            if told.get(spent.key):
                return False
            told[spent.key] = 1
            return True

    def _file(self, today: dt.date) -> JsonFile:
        return JsonFile(self.root / f"{today:%Y-%m-%d}.json")

    def _read(self, today: dt.date) -> dict[str, dict[str, float]]:
        return self._file(today).load("today's spending counts from zero")

    @contextmanager
    def _change(self, today: dt.date) -> Generator[dict[str, dict[str, float]]]:
        self.root.mkdir(parents=True, exist_ok=True)
        with FileLock(self.root / "usage.lock"):
            usage = self._read(today)
            yield usage
            self._file(today).save(usage)


def _over(limit: Limit, calls: float, tokens: float, usd: float) -> str | None:
    if limit.calls_per_day is not None and calls >= limit.calls_per_day:
        return f"{limit.calls_per_day:,} model calls"
    if limit.tokens_per_day is not None and tokens >= limit.tokens_per_day:
        return f"{limit.tokens_per_day:,} tokens"
    if limit.usd_per_day is not None and usd >= limit.usd_per_day:
        return f"{limit.usd_per_day:g} USD"
    return None
