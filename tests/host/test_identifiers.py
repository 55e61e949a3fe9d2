"""Identifiers are found mechanically, and the ones a summary lacks are listed, most recent first, within a cap."""

from __future__ import annotations

from hermitcrab.host.turn import identifiers

TEXT = (
    "Deploy https://api.example.com/v2/items?id=3. to db1.internal.lan:5432 (10.0.0.12:8080), see "
    "/etc/nginx/nginx.conf and src/app/main.py; mail bob@corp.io about 3f2a9c1e-1b2c-4d5e-8f90-123456789abc, "
    "commit a1b2c3d, OPS-1234, "
    "#4521: 250 ms, 12.5 GB, $1,200.50, run `make test` by 2026-12-01. e.g. job-42, version 3.11, and/or 42 apples."
)


def test_every_kind_is_found_and_plain_words_are_not():
    assert identifiers.find(TEXT) == [
        "https://api.example.com/v2/items?id=3",
        "db1.internal.lan:5432",
        "10.0.0.12:8080",
        "/etc/nginx/nginx.conf",
        "src/app/main.py",
        "bob@corp.io",
        "3f2a9c1e-1b2c-4d5e-8f90-123456789abc",
        "a1b2c3d",
        "OPS-1234",
        "#4521",
        "250 ms",
        "12.5 GB",
        "$1,200.50",
        "`make test`",
        "2026-12-01",
        "job-42",
    ]


def test_missing_ones_are_listed_newest_first_and_a_longer_one_does_not_hide_a_shorter_one():
    summary = "Working on job-10 at /srv/a."

    lacking = identifiers.missing(["newest job-1 /srv/a", "older job-2 job-10"], summary)

    assert lacking == ["job-1", "job-2"]


def test_said_identifiers_come_before_tool_output_within_the_cap():
    said = [f"id-{n:04d}" for n in range(3)]
    section = identifiers.section(said, [f"/tmp/f{n}" for n in range(50)], cap_chars=120)

    assert section.startswith(identifiers.HEADING) and all(f"- `{i}`" in section for i in said)
    assert identifiers.TOOLS_HEADING in section and "- `/tmp/f0`" in section and "/tmp/f49" not in section
    assert section.endswith("older identifiers left out; the transcript file keeps them)")
