"""The browser tools against real Chromium and local pages (one browser shared by the module)."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator

import pytest
from mcp import Client
from mcp_types import ImageContent
from playwright.async_api import Error as PlaywrightError

from hermitcrab.servers.browser import Session, build_server
from tests.support.browser import needs_chromium, ref_of, text_of

pytestmark = needs_chromium


@pytest.fixture
async def client(shared_session: Session) -> AsyncIterator[Client]:
    async with Client(build_server(session=shared_session)) as client:
        yield client
    if len(shared_session.tabs) > 1 or any(tab.modal for tab in shared_session.tabs):
        await shared_session.close()  # the next test starts from one clean tab


async def call(client: Client, tool: str, **arguments: object) -> str:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, text_of(result)
    return text_of(result)


async def test_tools_match_playwright_mcp_names(client: Client) -> None:
    names = {tool.name for tool in (await client.list_tools()).tools}
    expected = {
        "browser_navigate",
        "browser_navigate_back",
        "browser_snapshot",
        "browser_click",
        "browser_type",
        "browser_press_key",
        "browser_hover",
        "browser_select_option",
        "browser_fill_form",
        "browser_wait_for",
        "browser_tabs",
        "browser_take_screenshot",
        "browser_console_messages",
        "browser_network_requests",
        "browser_handle_dialog",
        "browser_file_upload",
        "browser_pdf_save",
        "browser_close",
        "browser_resize",
        "browser_drag",
    }
    assert expected <= names
    assert "browser_evaluate" not in names  # only with --enable-evaluate


async def test_login_form_filled_and_submitted(client: Client, site: str) -> None:
    page = await call(client, "browser_navigate", url=f"{site}/login.html")
    assert "page-content-" in page and "untrusted" in page
    assert '- heading "Sign in" [level=1]' in page
    assert "- text: Username" not in page  # label text beside its field is dropped
    fields = [
        {"name": "Username", "type": "textbox", "ref": ref_of(page, 'textbox "Username"'), "value": "alice"},
        {"name": "Password", "type": "textbox", "ref": ref_of(page, 'textbox "Password"'), "value": "s3cret"},
        {"name": "Remember me", "type": "checkbox", "ref": ref_of(page, 'checkbox "Remember me"'), "value": "true"},
        {"name": "Role", "type": "combobox", "ref": ref_of(page, 'combobox "Role"'), "value": "admin"},
    ]
    await call(client, "browser_fill_form", fields=fields)
    done = await call(client, "browser_click", element="Sign in button", ref=ref_of(page, 'button "Sign in"'))
    assert "Welcome, alice" in done
    assert "Role: admin, remember: yes" in done


async def test_type_with_submit(client: Client, site: str) -> None:
    page = await call(client, "browser_navigate", url=f"{site}/login.html")
    await call(client, "browser_type", ref=ref_of(page, 'textbox "Username"'), text="bob")
    done = await call(client, "browser_type", ref=ref_of(page, 'textbox "Password"'), text="pw", submit=True)
    assert "Welcome, bob" in done


async def test_link_followed_then_back(client: Client, site: str) -> None:
    page = await call(client, "browser_navigate", url=f"{site}/links.html")
    second = await call(client, "browser_click", ref=ref_of(page, 'link "second page"'))
    assert "/second.html" in second and '"Second page"' in second
    back = await call(client, "browser_navigate_back")
    assert "Start page" in back and "/links.html" in back


async def test_stale_ref_after_navigation_says_take_a_new_snapshot(client: Client, site: str) -> None:
    page = await call(client, "browser_navigate", url=f"{site}/links.html")
    old_ref = ref_of(page, 'link "second page"')
    await call(client, "browser_navigate", url=f"{site}/second.html")
    result = await client.call_tool("browser_click", {"ref": old_ref, "element": "second page link"})
    assert result.is_error
    assert "take a new snapshot" in text_of(result)


async def test_unknown_ref_is_refused_quickly(client: Client, site: str) -> None:
    await call(client, "browser_navigate", url=f"{site}/second.html")
    result = await client.call_tool("browser_hover", {"ref": "e999"})
    assert result.is_error and "browser_snapshot" in text_of(result)


async def test_select_checkbox_and_file_upload(client: Client, site: str) -> None:
    page = await call(client, "browser_navigate", url=f"{site}/form.html")
    await call(client, "browser_select_option", ref=ref_of(page, 'combobox "Colour"'), values=["Blue"])
    await call(client, "browser_click", ref=ref_of(page, 'checkbox "Send newsletter"'))
    opened = await call(client, "browser_click", ref=ref_of(page, 'button "Choose file"'))
    assert "file chooser is open" in opened
    done = await call(client, "browser_file_upload", paths=["notes.txt"])
    assert "Uploaded 1 file" in done
    assert "colour=b news=true file=notes.txt:13" in done


async def test_file_upload_refuses_paths_outside_roots(client: Client, site: str) -> None:
    page = await call(client, "browser_navigate", url=f"{site}/form.html")
    result = await client.call_tool(
        "browser_file_upload", {"paths": ["/etc/passwd"], "ref": ref_of(page, 'button "Attachment"')}
    )
    assert result.is_error and "outside the allowed roots" in text_of(result)


async def test_alert_is_reported_and_handled(client: Client, site: str) -> None:
    page = await call(client, "browser_navigate", url=f"{site}/dialogs.html")
    opened = await call(client, "browser_click", ref=ref_of(page, 'button "Greet"'))
    assert "alert dialog is open" in opened and "Hello from the page" in opened
    blocked = await client.call_tool("browser_click", {"ref": ref_of(page, 'button "Confirm"')})
    assert blocked.is_error and "browser_handle_dialog" in text_of(blocked)
    handled = await call(client, "browser_handle_dialog", accept=True)
    assert "Alert closed" in handled


async def test_confirm_dismissed(client: Client, site: str) -> None:
    page = await call(client, "browser_navigate", url=f"{site}/dialogs.html")
    await call(client, "browser_click", ref=ref_of(page, 'button "Confirm"'))
    handled = await call(client, "browser_handle_dialog", accept=False)
    assert "Confirmed: false" in handled


async def test_wait_for_text(client: Client, site: str) -> None:
    page = await call(client, "browser_navigate", url=f"{site}/dialogs.html")
    await call(client, "browser_click", ref=ref_of(page, 'button "Load later"'))
    waited = await call(client, "browser_wait_for", text="Loaded!")
    assert "Loaded!" in waited


async def test_iframe_button_clicked(client: Client, site: str) -> None:
    page = await call(client, "browser_navigate", url=f"{site}/frames.html")
    inner = ref_of(page, 'button "Inner button"')
    assert inner.startswith("f")
    done = await call(client, "browser_click", ref=inner)
    assert "Inner clicked" in done


async def test_two_tabs(client: Client, site: str) -> None:
    page = await call(client, "browser_navigate", url=f"{site}/links.html")
    opened = await call(client, "browser_click", ref=ref_of(page, 'link "open it in a new tab"'))
    assert "- Open tabs:" in opened and "/second.html" in opened
    listed = await call(client, "browser_tabs", action="list")
    assert "0: (current)" in listed and "1: [Second]" in listed
    second = await call(client, "browser_tabs", action="select", index=1)
    assert "Second page" in second
    await call(client, "browser_click", ref=ref_of(second, 'button "Press me"'))
    closed = await call(client, "browser_tabs", action="close")
    assert "Start page" in closed


async def test_screenshot_is_a_png(client: Client, site: str) -> None:
    page = await call(client, "browser_navigate", url=f"{site}/second.html")
    for arguments in ({}, {"ref": ref_of(page, 'button "Press me"')}, {"fullPage": True}):
        result = await client.call_tool("browser_take_screenshot", arguments)
        images = [block for block in result.content if isinstance(block, ImageContent)]
        assert len(images) == 1 and images[0].mime_type == "image/png"
        assert base64.b64decode(images[0].data).startswith(b"\x89PNG\r\n\x1a\n")


async def test_console_and_network_logs(client: Client, site: str) -> None:
    page = await call(client, "browser_navigate", url=f"{site}/links.html")
    assert "boom from links page" in page  # new console errors are reported with the action
    console = await call(client, "browser_console_messages", onlyErrors=True)
    assert "[error] boom from links page" in console
    network = await call(client, "browser_network_requests")
    assert f"[GET] {site}/links.html => 200 (document)" in network


async def test_action_returns_a_diff_when_small(client: Client, site: str) -> None:
    page = await call(client, "browser_navigate", url=f"{site}/extras.html")
    hovered = await call(client, "browser_click", ref=ref_of(page, 'button "Hover target"'))
    assert "```diff\n" in hovered and "\n-- paragraph: Idle\n+- paragraph: Hovered\n" in hovered
    assert 'link "Download notes"' not in hovered  # only the change and the line next to it
    page = await call(client, "browser_navigate", url=f"{site}/second.html")
    pressed = await call(client, "browser_click", ref=ref_of(page, 'button "Press me"'))
    assert "```diff" not in pressed and 'button "Pressed"' in pressed  # on a tiny page a diff is no shorter
    again = await call(client, "browser_snapshot", compact=True)
    assert 'button "Pressed"' in again


async def test_pdf_saved(client: Client, site: str, shared_session: Session) -> None:
    await call(client, "browser_navigate", url=f"{site}/second.html")
    saved = await call(client, "browser_pdf_save", filename="../../escape.pdf")
    path = shared_session.config.output_dir / "escape.pdf"
    assert str(path) in saved and path.read_bytes().startswith(b"%PDF")


async def test_prompt_answered_with_text(client: Client, site: str) -> None:
    page = await call(client, "browser_navigate", url=f"{site}/dialogs.html")
    await call(client, "browser_click", ref=ref_of(page, 'button "Ask name"'))
    handled = await call(client, "browser_handle_dialog", accept=True, promptText="Dora")
    assert "Name: Dora" in handled, handled


async def test_handle_dialog_without_a_dialog(client: Client, site: str) -> None:
    await call(client, "browser_navigate", url=f"{site}/second.html")
    result = await client.call_tool("browser_handle_dialog", {"accept": True})
    assert result.is_error and "No dialog is open" in text_of(result)


async def test_upload_into_a_file_input_by_ref(client: Client, site: str) -> None:
    page = await call(client, "browser_navigate", url=f"{site}/form.html")
    done = await call(client, "browser_file_upload", paths=["notes.txt"], ref=ref_of(page, 'button "Attachment"'))
    assert "file=notes.txt:13" in done
    missing = await client.call_tool("browser_file_upload", {"paths": ["notes.txt"]})
    assert missing.is_error and "No file chooser is open" in text_of(missing)


async def test_drag_hover_and_keys(client: Client, site: str) -> None:
    page = await call(client, "browser_navigate", url=f"{site}/extras.html")
    dropped = await call(
        client, "browser_drag", startRef=ref_of(page, 'button "Drag me"'), endRef=ref_of(page, 'button "Drop here"')
    )
    assert "Dropped" in dropped
    hovered = await call(client, "browser_hover", ref=ref_of(page, 'button "Hover target"'))
    assert "Hovered" in hovered
    await call(client, "browser_click", ref=ref_of(page, 'textbox "Keys"'))
    pressed = await call(client, "browser_press_key", key="ArrowDown")
    assert "Key: ArrowDown" in pressed


async def test_download_is_saved(client: Client, site: str, shared_session: Session) -> None:
    page = await call(client, "browser_navigate", url=f"{site}/extras.html")
    done = await call(client, "browser_click", ref=ref_of(page, 'link "Download notes"'))
    path = shared_session.config.output_dir / "hello.txt"
    assert f"- Downloaded a file to {path}" in done
    assert path.read_text(encoding="utf-8") == "hello file"


async def test_console_levels_and_static_requests(client: Client, site: str) -> None:
    await call(client, "browser_navigate", url=f"{site}/extras.html")
    console = await call(client, "browser_console_messages")
    assert "[log] hello from extras" in console and "[warning] careful" in console
    network = await call(client, "browser_network_requests", includeStatic=True)
    assert "/extras.html => 200 (document)" in network


async def test_wait_for_arguments(client: Client, site: str) -> None:
    page = await call(client, "browser_navigate", url=f"{site}/dialogs.html")
    nothing = await client.call_tool("browser_wait_for", {})
    assert nothing.is_error and "Give time, text or textGone" in text_of(nothing)
    await call(client, "browser_click", ref=ref_of(page, 'button "Load later"'))
    gone = await call(client, "browser_wait_for", textGone="Waiting", time=0)
    assert "'Waiting' is gone" in gone


async def test_compact_mode_sticks_for_later_actions(client: Client, site: str) -> None:
    await call(client, "browser_navigate", url=f"{site}/extras.html")
    compact = await call(client, "browser_snapshot", compact=True)
    assert "Snapshot (compact" in compact and "paragraph" not in compact
    # The hover changes only the paragraph, which a compact snapshot leaves out (a full one would show a diff).
    hovered = await call(client, "browser_click", ref=ref_of(compact, 'button "Hover target"'))
    assert "- Snapshot: unchanged since the last one" in hovered and "Hovered" not in hovered
    resized = await call(client, "browser_resize", width=500, height=600)
    assert "Resized the viewport to 500x600" in resized and "- Snapshot: unchanged since the last one" in resized
    full = await call(client, "browser_snapshot")
    assert "compact" not in full.split("```yaml")[0].split("Snapshot")[-1]
    assert "- paragraph: Hovered" in full


async def test_jpeg_screenshot_saved_to_a_file(client: Client, site: str, shared_session: Session) -> None:
    await call(client, "browser_navigate", url=f"{site}/second.html")
    result = await client.call_tool("browser_take_screenshot", {"type": "jpeg", "filename": "shot"})
    [image] = [block for block in result.content if isinstance(block, ImageContent)]
    assert image.mime_type == "image/jpeg" and base64.b64decode(image.data)[:2] == b"\xff\xd8"
    assert (shared_session.config.output_dir / "shot.jpg").exists()


async def test_tab_errors(client: Client, site: str) -> None:
    await call(client, "browser_navigate", url=f"{site}/second.html")
    no_index = await client.call_tool("browser_tabs", {"action": "select"})
    assert no_index.is_error and "Give the index" in text_of(no_index)
    wrong = await client.call_tool("browser_tabs", {"action": "select", "index": 7})
    assert wrong.is_error and "There is no tab 7 (`index`: it must be 0 to 0)" in text_of(wrong)
    opened = await call(client, "browser_tabs", action="new")
    assert "about:blank" in opened
    back = await client.call_tool("browser_navigate_back", {})
    assert back.is_error and "no previous page" in text_of(back)


async def test_closing_the_browser_and_starting_again(client: Client, site: str) -> None:
    await call(client, "browser_navigate", url=f"{site}/second.html")
    assert "Closed the browser" in await call(client, "browser_close")
    again = await call(client, "browser_navigate", url=f"{site}/second.html")
    assert "Second page" in again and "restarted" not in again


async def test_crashed_tab_is_replaced(client: Client, site: str, shared_session: Session) -> None:
    await call(client, "browser_navigate", url=f"{site}/second.html")
    tab = await shared_session.current_tab()
    async with tab.page.expect_event("crash"):
        with pytest.raises(PlaywrightError):
            await tab.page.goto("chrome://crash")  # the model cannot open chrome: URLs; the test can
    assert tab.crashed
    again = await call(client, "browser_navigate", url=f"{site}/second.html")
    assert "page had crashed" in again and "Second page" in again


async def test_navigating_to_a_download(client: Client, site: str) -> None:
    result = await call(client, "browser_navigate", url="data:application/octet-stream;base64,aGk=")
    assert "file download" in result
