"""Rendering Playwright's AI snapshot into our smaller text (no browser needed)."""

from __future__ import annotations

from hermitcrab.servers.browser.snapshot import cap, diff, parse, render

RAW = """\
- generic [active] [ref=e1]:
  - navigation [ref=e2]:
    - link "Home" [ref=e3] [cursor=pointer]:
      - /url: /a.html
    - link "Top" [ref=e4] [cursor=pointer]:
      - /url: "#"
  - main [ref=e5]:
    - heading "Sign in" [level=1] [ref=e6]
    - generic [ref=e10]:
      - generic [ref=e11]:
        - text: User
        - textbox "User" [ref=e12]
      - generic [ref=e15]:
        - checkbox "Remember me" [ref=e16]
        - text: Remember me
      - 'button "a: b" [ref=e18]'
    - paragraph [ref=e19]: Some bold text here.
    - generic [ref=e20] [cursor=pointer]: Clickable div
    - img [ref=e21]
    - iframe [ref=e24]:
      - button "Inner" [ref=f1e2]
    - table [ref=e26]:
      - rowgroup [ref=e27]:
        - row [ref=e28]:
          - columnheader "A" [ref=e29]
          - cell "1" [ref=e32]"""


def test_render_keeps_refs_only_on_actionable_elements() -> None:
    snapshot = render(RAW)
    assert snapshot.refs == {"e3", "e4", "e12", "e16", "e18", "e20", "f1e2"}
    assert '- heading "Sign in" [level=1]\n' in snapshot.text
    assert "- generic [ref=e20]: Clickable div" in snapshot.text
    assert "cursor=pointer" not in snapshot.text


def test_render_drops_wrappers_repeated_labels_and_useless_urls() -> None:
    text = render(RAW).text
    assert "- generic" not in text.replace("- generic [ref=e20]", "")
    assert "rowgroup" not in text
    assert "text: User" not in text and "text: Remember me" not in text
    assert 'link "Home" [ref=e3] [url=/a.html]' in text and 'link "Top" [ref=e4]\n' in text
    assert "- img" not in text  # an unnamed, unclickable image says nothing
    assert '- button "a: b" [ref=e18]' in text  # YAML-quoted keys are unquoted
    assert len(text) < len(RAW) * 0.7


def test_compact_keeps_actionable_headings_and_frames() -> None:
    text = render(RAW, compact=True).text
    assert "paragraph" not in text and "table" not in text
    assert '- heading "Sign in" [level=1]' in text
    assert '- iframe:\n  - button "Inner" [ref=f1e2]' in text


def test_long_option_lists_are_capped_but_keep_the_selected_one() -> None:
    options = "\n".join(f'  - option "Country {n}"' + (" [selected]" if n == 90 else "") for n in range(100))
    text = render(f'- combobox "Country" [ref=e2]:\n{options}').text
    assert 'option "Country 24"' in text and 'option "Country 30"' not in text
    assert 'option "Country 90" [selected]' in text
    assert "74 more options" in text


def test_same_origin_urls_are_shortened() -> None:
    raw = '- link "Docs" [ref=e2] [cursor=pointer]:\n  - /url: https://ex.com/docs/intro'
    assert "[url=/docs/intro]" in render(raw, base_url="https://ex.com/home").text


def test_lone_text_child_is_inlined() -> None:
    raw = "- heading [level=2] [ref=e2]:\n  - text: Title"
    assert render(raw).text == "- heading [level=2]: Title"


def test_cap_cuts_at_a_line_and_says_so() -> None:
    text = "\n".join(f"- listitem: line {n}" for n in range(1000))
    capped = cap(text, 2000)
    assert len(capped) <= 2000
    assert capped.splitlines()[-1].startswith("- [truncated:")
    assert "compact=true" in capped
    assert cap("short", 2000) == "short"


def test_diff_is_small_or_none() -> None:
    old = "\n".join(f"- listitem: {n}" for n in range(50))
    new = old.replace("listitem: 25", "listitem: changed")
    changes = diff(old, new)
    assert changes is not None and "-- listitem: 25" in changes and "+- listitem: changed" in changes
    assert diff(old, old) == ""
    assert diff("- a", "- b") is None  # a diff of a tiny page is no smaller than the page


def test_parse_handles_escaped_quotes_and_values() -> None:
    [node] = parse('- button "say \\"hi\\"" [disabled] [ref=e3]: "text: with colon"')
    assert node.name == 'say "hi"' and node.attrs == ["disabled"] and node.ref == "e3"
    assert node.value == '"text: with colon"'
