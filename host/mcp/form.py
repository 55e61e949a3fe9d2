"""An elicitation's requested schema as a form a person fills in by typing: its fields, what each accepts, and how a
typed answer becomes the typed value the server asked for (`30`, not `"30"`).

Every value, typed or a default, is checked against the server's own schema with jsonschema before it is taken, so
a bad one is turned back with a sentence saying what is wrong instead of reaching the server.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Literal, cast
from urllib.parse import urlsplit

from jsonschema import Draft202012Validator, FormatChecker, ValidationError
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for

from hermitcrab.util.text import escape_controls

Kind = Literal["boolean", "integer", "number", "string", "choice", "choices"]
ENDINGS = ("decline", "cancel")
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+")
_SHOWN_CHARS = 80


class UnsupportedField(ValueError):
    """A field asks for a value a person cannot type here (an object, a list of free values, ...)."""


@dataclass(frozen=True)
class Option:
    label: str
    """What the person sees and types (control characters escaped)."""
    value: Any
    """What the server gets."""


@dataclass(frozen=True)
class Accepted:
    value: Any


@dataclass(frozen=True)
class Skipped:
    """An optional field left out."""


@dataclass(frozen=True)
class Ended:
    """The person ended the whole form: `decline` said no, `cancel` dismissed it."""

    action: Literal["decline", "cancel"]


@dataclass(frozen=True)
class Rejected:
    reason: str
    """A sentence saying what was wrong, for the question asked again."""


Reading = Accepted | Skipped | Ended | Rejected


class Form:
    """The fields of a requested schema, in its order, and the schema's own check of the filled-in content.

    Raises jsonschema's `SchemaError` for a schema that is no JSON Schema and `UnsupportedField` for a field nobody
    can answer by typing."""

    def __init__(self, schema: dict[str, Any]) -> None:
        cls = validator_for(schema, default=Draft202012Validator)
        cls.check_schema(schema)
        self.validator: Validator = cls(schema, format_checker=FormatChecker())
        required = set(cast(list[str], schema.get("required") or []))
        properties = cast(dict[str, Any], schema.get("properties") or {})
        self.fields = [Field(key, field, key in required, self.validator) for key, field in properties.items()]

    def problem(self, content: Mapping[str, Any]) -> str | None:
        """What is wrong with the whole content by the schema (a rule across fields); None when it is valid."""
        error = next(iter(self.validator.iter_errors(dict(content))), None)
        return None if error is None else error.message


class Field:
    """One property of the form: its kind, its choices, its default, and how an answer to it is read."""

    def __init__(self, key: str, schema: object, required: bool, validator: Validator) -> None:
        if not isinstance(schema, dict):
            raise UnsupportedField(f"field {key!r} has no schema of its own")
        self.key = key
        self.schema = cast(dict[str, Any], schema)
        self.required = required
        self._validator = validator
        self.kind, self.options = _kind(key, self.schema)

    @property
    def title(self) -> str:
        """The server's words, to be shown fenced (`elicitation.quoted`)."""
        return str(self.schema.get("title") or self.key)

    @property
    def description(self) -> str | None:
        description = self.schema.get("description")
        return str(description) if description else None

    @property
    def has_default(self) -> bool:
        return "default" in self.schema

    def choices(self) -> list[str] | None:
        """The labels to offer as the question's choices (buttons); a multiple choice is typed, so it has none."""
        return [option.label for option in self.options] if self.kind in ("boolean", "choice") else None

    def hint(self) -> str:
        """What this field accepts, its default, and the words that skip it or end the form, in the host's words."""
        parts = [self._accepts()]
        if self.has_default:
            parts.append(f"Empty or `default`: {shown(self._label(self.schema['default']))}.")
        if not self.required:
            parts.append("`skip` leaves it out." if self.has_default else "Empty or `skip` leaves it out.")
        parts.append("`decline` or `cancel` ends the form.")
        text = " ".join(parts)
        if self.kind == "choices":
            text += "\n" + "\n".join(f"{index}. {option.label}" for index, option in enumerate(self.options, 1))
        return text

    def read(self, answer: str) -> Reading:
        """A typed answer as this field's value, a skip, the end of the form, or why it cannot be taken."""
        text = answer.strip()
        word = text.lower()
        option = next((o for o in self.options if word in (o.label.lower(), str(o.value).lower())), None)
        if option is not None and self.kind != "choices":  # a choice named like one of the words is that choice
            return self._checked(option.value, text)
        if word in ENDINGS:
            return Ended(word)
        if word in ("", "default") and self.has_default:
            return self._default()
        if word in ("", "skip"):
            if not self.required:
                return Skipped()
            return Rejected("An answer is needed here." if not word else "This one cannot be skipped.")
        if word == "default":
            return Rejected("There is no default here.")
        parsed = self._parse(text)
        return parsed if isinstance(parsed, Rejected) else self._checked(parsed.value, text)

    def _parse(self, text: str) -> Accepted | Rejected:
        kind = self.kind
        if kind in ("boolean", "choice"):
            option = _pick_option(text, self.options)
            if option is not None:
                return Accepted(option.value)
            return Rejected(f"{shown(text)} is neither yes nor no." if kind == "boolean" else _not_a_choice(text))
        if kind == "choices":
            picked: list[Any] = []
            for item in (part.strip() for part in text.split(",")):
                option = _pick_option(item, self.options) if item else None
                if item and option is None:
                    return Rejected(_not_a_choice(item))
                if option is not None and option.value not in picked:
                    picked.append(option.value)
            return Accepted(picked)
        if kind in ("integer", "number"):
            return _number(text, whole=kind == "integer")
        return _string(text, self.schema.get("format"))

    def _default(self) -> Accepted | Rejected:
        """The server's default, held to the checks a typed value gets (a date must be a date)."""
        default = self.schema["default"]
        typed = self._label(default)
        text = self.kind == "string" and isinstance(default, str)
        parsed = _string(typed, self.schema.get("format")) if text else Accepted(default)
        checked = self._checked(parsed.value, typed) if isinstance(parsed, Accepted) else parsed
        if isinstance(checked, Rejected):
            return Rejected(f"The server's default is no good: {checked.reason}")
        return checked

    def _checked(self, value: Any, typed: str) -> Accepted | Rejected:
        """`value` if the server's schema takes it for this field; else the schema's complaint as a sentence."""
        errors = self._validator.iter_errors({self.key: value})
        error = next((e for e in errors if list(e.absolute_path)[:1] == [self.key]), None)
        return Accepted(value) if error is None else Rejected(_sentence(error, shown(typed)))

    def _label(self, value: Any) -> str:
        """A value as the person would type it: an option's label, yes/no, the text itself."""
        if self.kind == "choices" and isinstance(value, list):
            return ", ".join(self._label(item) for item in cast(list[Any], value))
        for option in self.options:
            if option.value == value and type(option.value) is type(value):
                return option.label
        return value if isinstance(value, str) else json.dumps(value)

    def _accepts(self) -> str:
        schema = self.schema
        match self.kind:
            case "boolean":
                return "Answer yes or no."
            case "choice":
                return "Pick one, by name or number."
            case "choices":
                return "Pick any of these, by name or number, separated by commas" + _count(schema) + "."
            case "integer" | "number":
                return ("A whole number" if self.kind == "integer" else "A number") + _range(schema) + "."
            case _:  # text
                length = _length(schema)
                return _FORMATS.get(str(schema.get("format")), "Text" if length else "Any text") + length + "."


def pick(answer: str, choices: Sequence[str]) -> str | None:
    """Match a typed answer to a choice: exactly, by a unique prefix, or by its number (1-based); else None."""
    typed = answer.strip().lower()
    if typed.isdigit() and 1 <= int(typed) <= len(choices):
        return choices[int(typed) - 1]
    exact = [c for c in choices if c.lower() == typed]
    prefixed = [c for c in choices if typed and c.lower().startswith(typed)]
    return exact[0] if exact else prefixed[0] if len(prefixed) == 1 else None


def shown(text: str, *, whole: bool = False) -> str:
    """Text from a server or a person quoted inline as code: one line, controls escaped, long text cut unless the
    person must see it `whole` (an address to open)."""
    text = escape_controls(text).replace("\n", " ")
    if len(text) > _SHOWN_CHARS and not whole:
        text = text[: _SHOWN_CHARS - 1] + "…"
    tick = fence(text, 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{tick}{pad}{text}{pad}{tick}"


def fence(text: str, least: int) -> str:
    """A run of backticks longer than any inside `text` (and at least `least`), so `text` cannot close it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(least, longest + 1)


def _kind(key: str, schema: dict[str, Any]) -> tuple[Kind, tuple[Option, ...]]:
    """The field's kind and options; the values of its options must be ones an elicitation's answer can carry (a
    string, number or boolean; strings only in a list)."""
    options = _options(schema)
    if options:
        if not all(isinstance(option.value, str | int | float | bool) for option in options):
            raise UnsupportedField(f"field {key!r} offers choices an answer cannot carry")
        return "choice", options
    kind = schema.get("type")
    if kind == "array":
        items = schema.get("items")
        options = _options(cast(dict[str, Any], items)) if isinstance(items, dict) else ()
        if options:
            if not all(isinstance(option.value, str) for option in options):
                raise UnsupportedField(f"field {key!r} offers choices a list of answers cannot carry")
            return "choices", options
    if kind == "boolean":
        return "boolean", (Option("yes", True), Option("no", False))
    if kind in ("integer", "number", "string"):
        return cast(Kind, kind), ()
    raise UnsupportedField(f"field {key!r} asks for {json.dumps(kind) if kind else 'a value of no type'}")


def _options(schema: dict[str, Any]) -> tuple[Option, ...]:
    """An enum's options: plain values, values titled by `enumNames` (the older form), or `oneOf`/`anyOf` consts
    with their titles."""
    values = schema.get("enum")
    if isinstance(values, list):
        values = cast(list[Any], values)
        names = schema.get("enumNames")
        titled = isinstance(names, list) and len(cast(list[Any], names)) == len(values)
        labels = cast(list[Any], names) if titled else values
        return tuple(_option(label, value) for label, value in zip(labels, values, strict=True))
    for keyword in ("oneOf", "anyOf"):
        alternatives = schema.get(keyword)
        if isinstance(alternatives, list) and alternatives:
            consts = cast(list[Any], alternatives)
            if all(isinstance(item, dict) and "const" in item for item in consts):
                return tuple(_option(item.get("title", item["const"]), item["const"]) for item in consts)
    return ()


def _option(label: object, value: Any) -> Option:
    return Option(escape_controls(str(label)), value)


def _pick_option(text: str, options: Sequence[Option]) -> Option | None:
    label = pick(text, [option.label for option in options])
    return next((option for option in options if option.label == label), None)


def _number(text: str, *, whole: bool) -> Accepted | Rejected:
    """A number as typed (`30`, `-2.5`, `1e3`); a whole number may be written `30.0`."""
    wanted = "a whole number" if whole else "a number"
    try:
        return Accepted(int(text))
    except ValueError:
        pass
    try:
        number = float(text)
    except ValueError:
        return Rejected(f"{shown(text)} is not {wanted}.")
    if not math.isfinite(number):
        return Rejected(f"{shown(text)} is not {wanted}.")
    if number.is_integer():
        return Accepted(int(number))
    return Rejected(f"{shown(text)} is not {wanted}.") if whole else Accepted(number)


def _string(text: str, format_: object) -> Accepted | Rejected:
    """Text, normalised for the formats a person types in more than one way (dates, times)."""
    if format_ == "email" and not _EMAIL.fullmatch(text):
        return Rejected(f"{shown(text)} is not an email address.")
    if format_ == "uri" and not _is_uri(text):
        return Rejected(f"{shown(text)} is not a URI with its scheme (such as https://example.org).")
    if format_ == "date":
        try:
            return Accepted(date.fromisoformat(text).isoformat())
        except ValueError:
            return Rejected(f"{shown(text)} is not a date written YYYY-MM-DD.")
    if format_ == "date-time":
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            return Rejected(f"{shown(text)} is not a date and time written YYYY-MM-DDTHH:MM with its zone.")
        if moment.tzinfo is None:
            return Rejected(f"{shown(text)} has no time zone: add one, such as `Z` or `+01:00`.")
        return Accepted(moment.isoformat())
    return Accepted(text)


def _is_uri(text: str) -> bool:
    try:
        parts = urlsplit(text)
    except ValueError:
        return False
    return bool(parts.scheme) and bool(parts.netloc or parts.path) and not any(c.isspace() for c in text)


def _sentence(error: ValidationError, typed: str) -> str:
    """A jsonschema complaint in words a person reads; a rule without words of its own keeps jsonschema's."""
    limit = error.validator_value
    match error.validator:
        case "minimum":
            return f"{typed} is less than the minimum, {limit}."
        case "maximum":
            return f"{typed} is more than the maximum, {limit}."
        case "exclusiveMinimum":
            return f"{typed} must be more than {limit}."
        case "exclusiveMaximum":
            return f"{typed} must be less than {limit}."
        case "minLength":
            return f"{typed} is too short: it needs at least {limit} characters."
        case "maxLength":
            return f"{typed} is too long: it may have at most {limit} characters."
        case "minItems":
            return f"Pick at least {limit}."
        case "maxItems":
            return f"Pick at most {limit}."
        case "format":
            return f"{typed} is not a valid {limit}."
        case "enum" | "const" | "oneOf" | "anyOf":
            return _not_a_choice(typed, quoted=True)
        case _:
            return f"{typed} is not accepted: {shown(error.message)}."


def _not_a_choice(text: str, *, quoted: bool = False) -> str:
    return f"{text if quoted else shown(text)} is not one of the choices."


def _range(schema: Mapping[str, Any]) -> str:
    bounds = schema.get("minimum"), schema.get("maximum")
    return _between(*bounds, " from {low} to {high}", " of at least {low}", " of at most {high}")


def _length(schema: Mapping[str, Any]) -> str:
    bounds = schema.get("minLength"), schema.get("maxLength")
    return _between(
        *bounds, " of {low} to {high} characters", " of at least {low} characters", " of at most {high} characters"
    )


def _count(schema: Mapping[str, Any]) -> str:
    bounds = schema.get("minItems"), schema.get("maxItems")
    return _between(*bounds, " ({low} to {high} of them)", " (at least {low})", " (at most {high})")


def _between(low: object, high: object, both: str, at_least: str, at_most: str) -> str:
    """A schema's bounds in words: whichever of the three phrasings the bounds it has call for, "" for none."""
    if low is not None and high is not None:
        return both.format(low=low, high=high)
    if low is not None:
        return at_least.format(low=low)
    return at_most.format(high=high) if high is not None else ""


_FORMATS = {
    "email": "An email address",
    "uri": "A URI (such as https://example.org)",
    "date": "A date, YYYY-MM-DD",
    "date-time": "A date and time with its zone, such as 2026-12-03T18:00+01:00",
}
