"""Replies as Telegram HTML: escaped first, so any text the model writes is shown as written, and only the
supported Markdown (bold, italics, strike, code, fenced code, http(s) links) becomes markup; cut at 4,096."""

from __future__ import annotations

from html.parser import HTMLParser

from hypothesis import given
from hypothesis import strategies as st

from hermitcrab.channels.split import split_message
from hermitcrab.channels.telegram.delivery import LIMIT, conversation_problem
from hermitcrab.channels.telegram.markup import to_html
from tests.support.fake_telegram import visible

TAGS = {"b", "i", "s", "code", "pre", "a"}


class _Tags(HTMLParser):
    """Checks what Telegram checks: only its tags, each closed in order."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.open: list[str] = []
        self.wrong: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in TAGS:
            self.wrong.append(tag)
        self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.open or self.open.pop() != tag:
            self.wrong.append(f"/{tag}")


def well_formed(body: str) -> bool:
    tags = _Tags()
    tags.feed(body)
    tags.close()
    return not tags.wrong and not tags.open


SPECIALS = st.text(alphabet="_*[]()~<>&`\"' ab\n/:.", max_size=80)


@given(SPECIALS)
def test_any_text_becomes_html_telegram_accepts(text: str):
    assert well_formed(to_html(text))


def test_styles_that_would_cross_keep_the_later_pair_as_written():
    assert to_html("**a *b** c*") == "<b>a *b</b> c*"
    assert to_html("_a **b_ c**") == "_a <b>b_ c</b>"
    assert all(well_formed(to_html(text)) for text in ("~~a _b~~ c_", "*a **b* c**", "**a *b* c**"))


@given(st.text(alphabet=st.characters(exclude_characters="*_~`["), max_size=200))
def test_text_without_markdown_arrives_exactly_as_written(text: str):
    assert visible(to_html(text), "HTML") == text


def test_specials_that_form_no_construct_stay_as_written():
    text = "a_b_c 2 * 3 * 4 [x](y) ~ <tag> & &amp; (1) [2] snake_case * ** __ ~~ `"
    assert visible(to_html(text), "HTML") == text


def test_the_supported_markdown_becomes_telegram_html():
    assert (
        to_html("**bold** *it* _it_ ~~gone~~ `a<b`")
        == "<b>bold</b> <i>it</i> <i>it</i> <s>gone</s> <code>a&lt;b</code>"
    )
    assert (
        to_html("[site _x_](https://e.org/_a_?q=1&r=2)") == '<a href="https://e.org/_a_?q=1&amp;r=2">site <i>x</i></a>'
    )
    assert to_html("[no](javascript:alert(1))") == "[no](javascript:alert(1))"
    assert to_html("```python\nif a < b:\n    **x**\n```") == (
        '<pre><code class="language-python">if a &lt; b:\n    **x**</code></pre>'
    )


@given(st.lists(st.text(alphabet="ab <&*_`", max_size=150), max_size=120))
def test_parts_fit_a_message_and_each_converts_on_its_own(lines: list[str]):
    text = "```\n" + "\n".join(lines) + "\n```"
    parts = split_message(text, LIMIT)
    assert all(len(part) <= LIMIT and well_formed(to_html(part)) for part in parts)


def test_a_conversation_is_a_chat_id_or_a_chat_and_its_topic():
    assert [conversation_problem(to) for to in ("1001", "-1009000", "-1009000:7")] == [None, None, None]
    assert conversation_problem("#general") == "delivery.to: '#general' is not a Telegram chat id"
