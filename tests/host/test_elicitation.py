"""Forms a server asks for, through the real elicitation handler: answers typed by the requested schema, defaults
shown and applied, bad values asked again with what was wrong, the words that skip or end a form; and an answer
that fits no choice is never consent."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator, FormatChecker
from mcp import types

from hermitcrab.host.mcp.elicitation import ElicitationHandler, current_asker, quoted
from hermitcrab.host.mcp.form import pick

APPROVAL = {
    "type": "object",
    "properties": {"decision": {"type": "string", "enum": ["allow-once", "allow-always", "deny"]}},
    "required": ["decision"],
}
CONFORMANCE_DEFAULTS = {  # the conformance suite's elicitation-sep1034-client-defaults form
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    },
    "required": [],
}


class Person:
    """Answers each question with the next of `answers` (None: no answer), recording the questions."""

    def __init__(self, *answers: str | None) -> None:
        self.answers = list(answers)
        self.asked: list[tuple[str, list[str] | None]] = []

    async def __call__(self, question: str, choices: Sequence[str] | None = None) -> str | None:
        self.asked.append((question, list(choices) if choices is not None else None))
        return self.answers.pop(0)

    @property
    def questions(self) -> list[str]:
        return [question for question, _ in self.asked]


async def fill(schema: dict[str, Any], *answers: str | None) -> tuple[types.ElicitResult, Person]:
    """The server `kit` asks for `schema` during a call; the person types `answers` in turn."""
    return await elicit(types.ElicitRequestFormParams(message="Tell me", requested_schema=schema), *answers)


async def elicit(params: types.ElicitRequestParams, *answers: str | None) -> tuple[types.ElicitResult, Person]:
    person = Person(*answers)
    handler = ElicitationHandler("kit")
    token = current_asker.set(person)
    try:
        with handler.calling():
            result = await handler(cast(Any, None), params)  # the request's context is not read
    finally:
        current_asker.reset(token)
    assert isinstance(result, types.ElicitResult)
    assert not person.answers, "every answer was read"
    return result, person


def form(**properties: dict[str, Any]) -> dict[str, Any]:
    """A form whose fields are all required."""
    return {"type": "object", "properties": properties, "required": list(properties)}


async def test_numbers_come_back_as_numbers_not_text():
    result, _ = await fill(
        form(age={"type": "integer"}, score={"type": "number"}, ratio={"type": "number"}), "30", "2.5", "7"
    )

    assert result.action == "accept"
    assert result.content == {"age": 30, "score": 2.5, "ratio": 7}
    assert type(result.content["age"]) is int


async def test_the_conformance_suites_defaults_form_is_accepted_with_each_default_on_enter():
    result, person = await fill(CONFORMANCE_DEFAULTS, "", "", "", "", "")

    assert result.action == "accept"
    assert result.content == {"name": "John Doe", "age": 30, "score": 95.5, "status": "active", "verified": True}
    assert [type(value) for value in result.content.values()] == [str, int, float, str, bool]
    name, age, _, status, verified = person.asked
    assert "Empty or `default`: `John Doe`." in name[0] and "name (1 of 5): User name" in name[0]
    assert "A whole number. Empty or `default`: `30`." in age[0]
    assert status[1] == ["active", "inactive", "pending"] and "Empty or `default`: `active`." in status[0]
    assert verified[1] == ["yes", "no"] and "Empty or `default`: `yes`." in verified[0]


async def test_the_word_default_applies_it_and_skip_leaves_an_optional_field_out():
    schema = {"type": "object", "properties": {"age": {"type": "integer", "default": 30}, "nick": {"type": "string"}}}

    result, person = await fill(schema, "default", "skip")

    assert result.content == {"age": 30}
    assert "Empty or `skip` leaves it out." in person.questions[1]


async def test_an_empty_answer_to_a_required_field_is_asked_again_instead_of_ending_the_form():
    result, person = await fill(form(name={"type": "string"}), "", "skip", "Ada")

    assert result.action == "accept" and result.content == {"name": "Ada"}
    assert person.questions[1].endswith("Not taken: An answer is needed here. 2 tries left.")
    assert person.questions[2].endswith("Not taken: This one cannot be skipped. 1 try left.")


async def test_a_bad_value_is_asked_again_with_what_was_wrong_then_the_form_is_declined():
    result, person = await fill(form(age={"type": "integer", "minimum": 0, "maximum": 150}), "thirty", "3.5", "200")

    assert result.action == "decline" and result.content is None
    first, second, third = person.questions
    assert "A whole number from 0 to 150." in first and "Not taken" not in first
    assert second.endswith("Not taken: `thirty` is not a whole number. 2 tries left.")
    assert third.endswith("Not taken: `3.5` is not a whole number. 1 try left.")


async def test_bounds_and_lengths_of_the_schema_are_checked():
    schema = form(
        count={"type": "integer", "minimum": 1},
        code={"type": "string", "minLength": 3, "maxLength": 4},
    )

    result, person = await fill(schema, "0", "1", "ab", "abcde", "abc")

    assert result.content == {"count": 1, "code": "abc"}
    assert person.questions[1].endswith("Not taken: `0` is less than the minimum, 1. 2 tries left.")
    assert "Text of 3 to 4 characters." in person.questions[2]
    assert "`ab` is too short: it needs at least 3 characters." in person.questions[3]
    assert "`abcde` is too long: it may have at most 4 characters." in person.questions[4]


async def test_string_formats_are_checked_and_dates_written_the_standard_way():
    schema = form(
        email={"type": "string", "format": "email"},
        site={"type": "string", "format": "uri"},
        day={"type": "string", "format": "date"},
        at={"type": "string", "format": "date-time"},
    )
    answers = ("ada at home", "ada@example.org", "example.org", "https://example.org/x", "3/12/2026", "2026-12-03")
    result, person = await fill(schema, *answers, "2026-12-03 18:00", "2026-12-03 18:00+01:00")

    assert result.content == {
        "email": "ada@example.org",
        "site": "https://example.org/x",
        "day": "2026-12-03",
        "at": "2026-12-03T18:00:00+01:00",
    }
    reasons = [question.rsplit("\n", 1)[-1] for question in person.questions[1::2]]
    assert reasons == [
        "Not taken: `ada at home` is not an email address. 2 tries left.",
        "Not taken: `example.org` is not a URI with its scheme (such as https://example.org). 2 tries left.",
        "Not taken: `3/12/2026` is not a date written YYYY-MM-DD. 2 tries left.",
        "Not taken: `2026-12-03 18:00` has no time zone: add one, such as `Z` or `+01:00`. 2 tries left.",
    ]


async def test_titled_enums_offer_their_titles_and_return_their_values():
    schema = form(
        size={"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]},
        tone={"type": "string", "anyOf": [{"const": "warm", "title": "Warm"}, {"const": "cold", "title": "Cold"}]},
        tier={"type": "string", "enum": ["t1", "t2"], "enumNames": ["Basic", "Premium"]},
    )

    result, person = await fill(schema, "large", "1", "Prem")

    assert result.content == {"size": "l", "tone": "warm", "tier": "t2"}
    assert [choices for _, choices in person.asked] == [["Small", "Large"], ["Warm", "Cold"], ["Basic", "Premium"]]


async def test_multiple_choices_are_typed_by_name_or_number_and_their_count_is_checked():
    schema = form(
        colours={
            "type": "array",
            "items": {
                "anyOf": [
                    {"const": "r", "title": "Red"},
                    {"const": "g", "title": "Green"},
                    {"const": "b", "title": "Blue"},
                ]
            },
            "minItems": 2,
        },
        tags={"type": "array", "items": {"type": "string", "enum": ["home", "work"]}, "default": ["home"]},
    )

    result, person = await fill(schema, "Red", "purple, 2", "1, green, red", "")

    assert result.content == {"colours": ["r", "g"], "tags": ["home"]}
    first = person.asked[0]
    assert first[1] is None and first[0].endswith("1. Red\n2. Green\n3. Blue")
    assert "separated by commas (at least 2)" in first[0]
    assert "Not taken: Pick at least 2. 2 tries left." in person.questions[1]
    assert "Not taken: `purple` is not one of the choices. 1 try left." in person.questions[2]
    assert "Empty or `default`: `home`." in person.questions[3]


async def test_yes_and_no_are_booleans():
    result, _ = await fill(form(a={"type": "boolean"}, b={"type": "boolean"}, c={"type": "boolean"}), "y", "No", "true")

    assert result.content == {"a": True, "b": False, "c": True}


async def test_cancel_and_decline_end_the_form_and_no_answer_cancels_it():
    cancelled, _ = await fill(form(a={"type": "string"}, b={"type": "string"}), "x", "cancel")
    declined, _ = await fill(form(a={"type": "integer"}), "Decline")
    unanswered, _ = await fill(form(a={"type": "integer"}), None)

    assert (cancelled.action, cancelled.content) == ("cancel", None)
    assert declined.action == "decline"
    assert unanswered.action == "cancel"


async def test_a_choice_named_like_one_of_the_words_is_that_choice():
    result, _ = await fill(form(mode={"type": "string", "enum": ["default", "skip", "custom"]}), "default")

    assert result.content == {"mode": "default"}


async def test_an_approval_answered_with_anything_but_a_choice_is_never_consent():
    result, person = await fill(APPROVAL, "sure", "allow", "yes please")

    assert result.action == "decline"
    assert all(choices == ["allow-once", "allow-always", "deny"] for _, choices in person.asked)
    assert person.questions[1].endswith("Not taken: `sure` is not one of the choices. 2 tries left.")
    approved, _ = await fill(APPROVAL, "allow-o")
    assert approved.content == {"decision": "allow-once"}


async def test_a_form_nobody_can_fill_in_is_declined_without_asking():
    nested, person = await fill(form(address={"type": "object", "properties": {"city": {"type": "string"}}}))
    broken, _ = await fill({"type": "object", "properties": {"age": {"type": "integer", "minimum": "ten"}}})
    objects, _ = await fill(form(pick={"enum": [{"x": 1}, [1, 2]]}))  # answers carry strings, numbers, booleans

    assert [nested.action, broken.action, objects.action] == ["decline"] * 3
    assert person.asked == []


async def test_a_bad_default_of_the_servers_is_not_sent_back():
    schema = form(
        age={"type": "integer", "maximum": 10, "default": 30},
        at={"type": "string", "format": "date-time", "default": "yesterday"},
    )

    result, person = await fill(schema, "", "4", "default", "2026-12-03T09:00Z")

    assert result.content == {"age": 4, "at": "2026-12-03T09:00:00+00:00"}
    assert "The server's default is no good: `30` is more than the maximum, 10." in person.questions[1]
    assert "The server's default is no good: `yesterday` is not a date and time" in person.questions[3]


async def test_a_form_without_fields_asks_whether_to_go_on():
    accepted, person = await fill({"type": "object", "properties": {}}, "1")
    refused, _ = await fill({"type": "object", "properties": {}}, "whatever", "", "ok")

    assert (accepted.action, accepted.content) == ("accept", {}) and person.asked[0][1] == ["accept", "decline"]
    assert refused.action == "decline"


async def test_the_servers_words_stay_inside_the_fence_and_choices_show_no_control_characters():
    schema = form(
        a={"type": "string", "title": "```\nThe host says: approve", "enum": ["ok\x1b[2K"]},
        b={"type": "string", "description": "second"},
    )

    _, person = await fill(schema, "1", "x")

    question, choices = person.asked[0]
    assert question.startswith("The kit server asks:\n````\nTell me\n\n```\nThe host says: approve (1 of 2)\n````\n")
    assert choices == ["ok\\x1b[2K"]


async def test_an_address_to_open_is_shown_whole_with_its_host_and_only_consent_is_returned():
    url = "https://auth.example.org/connect?session=" + "x" * 100
    opened, person = await elicit(
        types.ElicitRequestURLParams(message="Link your account", url=url, elicitation_id="e1"), "accept"
    )
    refused, _ = await elicit(
        types.ElicitRequestURLParams(message="Link", url=url, elicitation_id="e2"), "sure", "", "no"
    )
    script, nobody = await elicit(
        types.ElicitRequestURLParams(message="Link", url="javascript:alert(1)", elicitation_id="e3")
    )

    ((question, choices),) = person.asked
    assert question.startswith("The kit server asks:\n```\nLink your account\n```\n")
    assert f"in your browser yourself, on `auth.example.org`:\n`{url}`\n" in question and choices == [
        "accept",
        "decline",
    ]
    assert (opened.action, opened.content) == ("accept", None)
    assert [refused.action, script.action] == ["decline", "decline"] and nobody.asked == []


async def test_an_address_on_a_look_alike_host_shows_the_hosts_ascii_name():
    lookalike = "https://\u0430pple.com/login"  # a Cyrillic a
    _, person = await elicit(
        types.ElicitRequestURLParams(message="Sign in", url=lookalike, elicitation_id="e1"), "decline"
    )

    assert "yourself, on `xn--pple-43d.com`:" in person.questions[0]


JUNK = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=6,
)
KEYWORDS = {
    "default": JUNK,
    "minimum": st.integers(-5, 5) | JUNK,
    "maxLength": st.integers(0, 4) | JUNK,
    "format": st.sampled_from(["email", "uri", "date", "date-time", "color"]),
    "enum": st.lists(st.text(max_size=4) | JUNK, max_size=3),
    "items": st.fixed_dictionaries({"enum": st.lists(st.text(max_size=4), min_size=1, max_size=3)}),
    "title": JUNK,
}
FIELD = (
    st.fixed_dictionaries(
        {"type": st.sampled_from(["string", "integer", "number", "boolean", "array", "object"])}, optional=KEYWORDS
    )
    | JUNK
)
SCHEMA = st.fixed_dictionaries(
    {"type": st.just("object"), "properties": st.dictionaries(st.text(min_size=1, max_size=4), FIELD, max_size=3)},
    optional={"required": st.lists(st.text(max_size=4), max_size=3) | JUNK},
)
ANSWER = (
    st.none() | st.text(max_size=12) | st.sampled_from(["", "default", "skip", "1", "30", "yes", "2026-01-01", "a@b.c"])
)


@settings(max_examples=150, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(schema=SCHEMA, answers=st.lists(ANSWER, min_size=10, max_size=10))
def test_no_schema_or_answer_breaks_the_handler_and_what_it_accepts_fits_the_schema(
    schema: dict[str, Any], answers: list[str | None]
):
    """Whatever a server asks for and a person types: an answer of the protocol's, and accepted content that the
    server's own schema takes."""
    person = Person(*answers, *[None] * 10)  # a form of 3 fields asks at most 9 questions

    async def ask() -> types.ElicitResult | types.ErrorData:
        handler = ElicitationHandler("kit")
        current_asker.set(person)
        with handler.calling():
            return await handler(cast(Any, None), types.ElicitRequestFormParams(message="m", requested_schema=schema))

    result = anyio.run(ask)

    assert isinstance(result, types.ElicitResult)
    if result.action == "accept":
        assert result.content is not None
        assert list(Draft202012Validator(schema, format_checker=FormatChecker()).iter_errors(result.content)) == []


def test_answers_match_a_choice_by_name_unique_prefix_or_number():
    choices = ["allow-once", "allow-always", "deny"]

    assert pick("Deny", choices) == "deny"
    assert pick("allow-o", choices) == "allow-once"
    assert pick("2", choices) == "allow-always"
    assert [pick(typed, choices) for typed in ("allow", "yes please", "7", "")] == [None] * 4


def test_server_text_is_fenced_longer_than_any_backticks_inside():
    text = quoted("exec", "Command: echo ```\nAllow? (host says yes)")

    assert text.startswith("The exec server asks:\n````\n") and text.endswith("\n````")
