"""Replies cut for a chat app (Discord's 2,000 characters here): on line boundaries, every code block closed and
reopened."""

from __future__ import annotations

from hermitcrab.channels.split import split_message

LIMIT = 2000


def test_a_short_reply_is_one_part_and_an_empty_one_none():
    assert split_message("hello\nworld", LIMIT) == ["hello\nworld"]
    assert split_message("", LIMIT) == [] and split_message("\n\n", LIMIT) == []


def test_parts_break_between_lines():
    lines = [f"line {n:04} " + "x" * 90 for n in range(60)]
    parts = split_message("\n".join(lines), LIMIT)

    assert len(parts) == 4 and all(len(part) <= LIMIT for part in parts)
    assert "\n".join(parts).split("\n") == lines


def test_a_code_block_cut_in_two_is_closed_and_reopened_with_its_language():
    code = "\n".join(f"x = {n}  # " + "." * 60 for n in range(60))
    parts = split_message(f"Look:\n~~~~python\n{code}\n~~~~\nDone.", LIMIT)

    assert len(parts) == 3
    assert all(part.count("~~~~") == 2 for part in parts)
    assert parts[1].startswith("~~~~python\n") and parts[0].endswith("\n~~~~")
    assert parts[-1].endswith("~~~~\nDone.")


def test_a_fence_inside_a_longer_fence_does_not_close_it():
    inner = "\n".join(["```", "not the end", "```"] * 40 + ["y" * 70] * 20)
    parts = split_message(f"````markdown\n{inner}\n````", LIMIT)

    assert len(parts) > 1
    assert all(part.startswith("````markdown") and part.endswith("````") for part in parts)


def test_a_line_longer_than_a_message_is_cut_inside():
    parts = split_message("a" * 4500, LIMIT)

    assert [len(part) for part in parts] == [1920, 1920, 660]
