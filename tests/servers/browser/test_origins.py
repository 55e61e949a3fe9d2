"""Origin allow/block rules and URL normalisation."""

from __future__ import annotations

import pytest
from mcp.server.mcpserver.exceptions import ToolError

from hermitcrab.servers.browser.navigation import normalize_url
from hermitcrab.servers.browser.origins import OriginPolicy, parse_origins


def test_no_rules_allow_everything() -> None:
    policy = OriginPolicy()
    assert not policy.active and policy.allows("https://anything.example/x")


def test_blocked_host_and_wildcard() -> None:
    policy = OriginPolicy(blocked=("ads.example", "*.tracker.net"))
    assert not policy.allows("https://ads.example/x")
    assert not policy.allows("http://a.b.tracker.net:8080/")
    assert not policy.allows("https://tracker.net/")
    assert policy.allows("https://example.com/")


def test_allow_list_with_exact_origins() -> None:
    policy = OriginPolicy(allowed=("https://example.com", "http://127.0.0.1:8000"))
    assert policy.allows("https://example.com/page")
    assert policy.allows("https://example.com:443/")
    assert not policy.allows("http://example.com/")  # another scheme is another origin
    assert policy.allows("http://127.0.0.1:8000/")
    assert not policy.allows("http://127.0.0.1:9000/")
    assert policy.allows("data:text/html,hi") and policy.allows("about:blank")


def test_blocked_wins_over_allowed() -> None:
    policy = OriginPolicy(allowed=("*.example.com",), blocked=("evil.example.com",))
    assert policy.allows("https://www.example.com/")
    assert not policy.allows("https://evil.example.com/")


def test_parse_origins() -> None:
    assert parse_origins("https://a.com; b.org,*.c.net") == ("https://a.com", "b.org", "*.c.net")
    assert parse_origins(None) == ()


def test_normalize_url() -> None:
    policy = OriginPolicy(blocked=("blocked.example",))
    assert normalize_url("example.com", policy) == "https://example.com"
    assert normalize_url("localhost:8000/x", policy) == "http://localhost:8000/x"
    assert normalize_url("intranet:8080", policy) == "https://intranet:8080"
    with pytest.raises(ToolError, match="uses the file: scheme"):
        normalize_url("file:///etc/passwd", policy)
    for url in ("javascript:alert(1)", "tel:123", "mailto:a@b.c", "chrome://crash", "view-source:https://a.b"):
        with pytest.raises(ToolError, match=f"uses the {url.split(':')[0]}: scheme"):
            normalize_url(url, policy)
    with pytest.raises(ToolError, match="outside the origins"):
        normalize_url("https://blocked.example/", policy)
    for url in ("http://[::1", "https://example.com:99999/", "http://example.com:port/"):
        with pytest.raises(ToolError, match="is not a valid URL"):
            normalize_url(url, OriginPolicy())
