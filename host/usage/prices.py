"""The price of one model call: a profile's own price, free on a local server, else genai-prices' bundled table.

genai-prices ships its prices inside the package; it fetches newer ones only when `UpdatePrices` is started, which
the host never does, so pricing makes no network request. Each call is priced alone, at the time it was made:
some models charge more per token above a prompt size, and prices change over time.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from collections.abc import Sequence
from decimal import Decimal
from functools import cache
from urllib.parse import urlsplit

import genai_prices
from genai_prices import data_snapshot
from genai_prices import types as priced

from ..config import ModelPrice, ProviderProfile
from ..providers.base import Usage

FREE = Decimal(0)
HOW_TO_PRICE = (
    "set price = {{input = ..., output = ...}} (USD per 1M tokens; cached_input and cache_write too) in the "
    "[[providers]] table of {label}, or price = 0 when it costs nothing"
)


class Prices:
    """Prices of the answers the configured profiles give; a profile is found by the label its answers carry."""

    def __init__(self, profiles: Sequence[ProviderProfile]) -> None:
        self._profiles = {profile.label: profile for profile in profiles}
        self._named = {(profile.kind, profile.name): profile for profile in profiles if profile.name}

    def cost(self, provider: str, model: str, usage: Usage, when: dt.datetime) -> Decimal | None:
        """USD for one call of `model` through the profile labelled `provider`; None when its price is not known."""
        profile = self._profile(provider)
        if profile is not None and profile.price is not None:
            return _rated(profile.price).calc_price(_counts(usage))["total_price"]
        if profile is not None and _local(profile.base_url):
            return FREE
        found = _lookup(model, None if profile is None else profile.base_url, provider.partition(":")[0])
        if found is None:
            return None
        vendor, info = found
        return info.calc_price(_counts(usage), vendor, genai_request_timestamp=when).total_price

    def summable(self, provider: str, model: str, when: dt.datetime) -> bool:
        """Whether calls of `model` may be priced summed: yes unless a rate depends on one call's prompt size (tiers),
        since the rest of the arithmetic is linear and exact (Decimal). Pricing each call alone takes ~0.1 ms."""
        profile = self._profile(provider)
        if profile is not None and (profile.price is not None or _local(profile.base_url)):
            return True
        found = _lookup(model, None if profile is None else profile.base_url, provider.partition(":")[0])
        rates = vars(found[1].get_prices(when)).values() if found is not None else ()
        return not any(isinstance(rate, priced.TieredPrices) for rate in rates)

    def _profile(self, provider: str) -> ProviderProfile | None:
        """The profile by its label; a sub-agent given another model keeps the profile's kind and name."""
        exact = self._profiles.get(provider)
        if exact is not None:
            return exact
        kind, _, rest = provider.partition(":")
        name = rest.rpartition(" (")[2].removesuffix(")") if rest.endswith(")") else ""
        return self._named.get((kind, name)) if name else None


@cache
def _lookup(model: str, base_url: str | None, kind: str) -> tuple[priced.Provider, priced.ModelInfo] | None:
    """genai-prices' entry for `model` at the profile's provider, found by its URL, else by its kind; None when not
    known there. Never a provider found by the model's name alone: a self-hosted `llama3.1` is not Groq's."""
    snapshot = data_snapshot.get_snapshot()
    for provider_id, url in (*(((None, base_url),) if base_url else ()), (kind, None)):
        try:
            return snapshot.find_provider_model(model, None, provider_id, url)
        except LookupError:
            continue
    return None


def _rated(price: ModelPrice) -> priced.ModelPrice:
    rate = Decimal(str(price.input))
    return priced.ModelPrice(
        input_mtok=rate,
        cache_read_mtok=rate if price.cached_input is None else Decimal(str(price.cached_input)),
        cache_write_mtok=rate if price.cache_write is None else Decimal(str(price.cache_write)),
        output_mtok=Decimal(str(price.output)),
    )


def _counts(usage: Usage) -> genai_prices.Usage:
    """Our counts in genai-prices' terms: both count the whole prompt as input, cached parts included."""
    return genai_prices.Usage(
        input_tokens=usage.input_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
        output_tokens=usage.output_tokens,
    )


def _local(base_url: str) -> bool:
    """Whether the profile's server runs on this machine (Ollama, vLLM, LM Studio): its calls cost nothing."""
    host = urlsplit(base_url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
