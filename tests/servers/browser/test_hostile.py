"""Arguments a confused model might send: refused up front, in a line or two naming the argument, the rule and
what to do instead, quoting at most ~200 characters of what was sent."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest
from mcp import Client

from hermitcrab.servers.browser import Session, build_server
from tests.support.browser import needs_chromium, text_of

pytestmark = needs_chromium
MEGABYTE = "x" * 1_000_000


@pytest.fixture
async def client(shared_session: Session) -> AsyncIterator[Client]:
    async with Client(build_server(session=shared_session)) as client:
        yield client


async def refusal(client: Client, tool: str, **arguments: object) -> str:
    started = time.monotonic()
    result = await client.call_tool(tool, arguments)
    assert result.is_error, text_of(result)
    assert time.monotonic() - started < 1.0
    text = text_of(result)
    assert len(text.splitlines()) <= 2 and len(text) < 600, text
    assert "pydantic" not in text and text.rstrip(".") != f"Error executing tool {tool}"
    return text


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("javascript:alert(1)", "use browser_evaluate"),
        ("tel:+15550100", "it is a phone number, not a page: give it to the user instead"),
        ("mailto:someone@example.com", "it is an e-mail address, not a page"),
        ("file:///etc/passwd", "files on this machine are not opened"),
    ],
)
async def test_non_web_schemes_are_refused_as_such(client: Client, url: str, says: str) -> None:
    text = await refusal(client, "browser_navigate", url=url)
    scheme = url.split(":")[0]
    assert f"`url` '{url}' uses the {scheme}: scheme, but this browser opens only http:, https:" in text
    assert says in text and "https://" not in text


@pytest.mark.parametrize(
    ("tool", "arguments", "complaint"),
    [
        ("browser_navigate", {"url": "https://" + MEGABYTE}, "`url` is too long (1,000,008 characters; the limit is"),
        ("browser_click", {"ref": MEGABYTE}, "`ref` is too long (1,000,000 characters; the limit is 32)"),
        ("browser_hover", {"ref": "e1", "element": MEGABYTE}, "`element` is too long"),
        ("browser_type", {"ref": "e1", "text": MEGABYTE}, "`text` is too long (1,000,000 characters; the limit is"),
        ("browser_press_key", {"key": MEGABYTE}, "`key` is too long"),
        ("browser_select_option", {"ref": "e1", "values": ["a"] * 5_000}, "`values` has too many items (5,000;"),
        ("browser_wait_for", {"text": MEGABYTE}, "`text` is too long"),
        ("browser_file_upload", {"paths": ["/" + MEGABYTE]}, "`paths.0` is too long"),
        ("browser_take_screenshot", {"filename": MEGABYTE}, "`filename` is too long"),
    ],
)
async def test_absurd_sizes_are_refused_up_front(
    client: Client, tool: str, arguments: dict[str, object], complaint: str
) -> None:
    text = await refusal(client, tool, **arguments)
    assert text.startswith(f"Invalid arguments for {tool}: ") and complaint in text


async def test_typing_slowly_has_its_own_bound(client: Client) -> None:
    text = await refusal(client, "browser_type", ref="e1", text="z" * 5_000, slowly=True)
    assert "`text` is too long to type slowly (5,000 characters; the limit is 2,000): call without slowly" in text


async def test_wrong_types_read_as_one_line_per_argument(client: Client) -> None:
    text = await refusal(client, "browser_resize", width=1, height="tall")
    assert "`width`: input should be greater than or equal to 100, got '1'" in text
    assert "`height`: input should be a valid integer" in text


async def test_an_unknown_key_says_which_names_work(client: Client, site: str) -> None:
    await client.call_tool("browser_navigate", {"url": f"{site}/second.html"})
    text = await refusal(client, "browser_press_key", key="NotAKey")
    assert "`key` 'NotAKey' is not a key name: use one such as Enter" in text


async def test_errors_quote_a_long_url_only_in_part(client: Client) -> None:
    host = "a" * 60 + "." + "b" * 60 + "." + "c" * 60 + ".invalid"
    text = await refusal(client, "browser_navigate", url=f"http://{host}/" + "p" * 5_000)
    assert "ERR_NAME_NOT_RESOLVED" in text and "Check the URL" in text and len(text) < 400


async def test_a_very_long_file_name_is_cut_not_a_crash(client: Client, site: str, shared_session: Session) -> None:
    await client.call_tool("browser_navigate", {"url": f"{site}/second.html"})
    result = await client.call_tool("browser_take_screenshot", {"filename": "é" * 250})
    assert not result.is_error, text_of(result)  # was a bare "Error executing tool" (ENAMETOOLONG)
    [saved] = [path for path in shared_session.config.output_dir.iterdir() if path.name.startswith("é")]
    assert saved.name == "é" * 60 + ".png" and str(saved) in text_of(result)
