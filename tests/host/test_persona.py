"""Bootstrap files are injected in order, within budgets, with visible truncation and missing markers."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from hermitcrab.host.turn.persona import BOOTSTRAP_ORDER, PersonaReader, load_persona, render_persona

TODAY = dt.date(2026, 11, 30)


def workspace(tmp_path: Path, names=BOOTSTRAP_ORDER) -> Path:
    for name in names:
        (tmp_path / name).write_text(f"content of {name}")
    return tmp_path


def test_files_come_in_order_with_daily_logs_last(tmp_path: Path):
    ws = workspace(tmp_path)
    (ws / "memory").mkdir()
    (ws / "memory" / "2026-11-29.md").write_text("yesterday")
    (ws / "memory" / "2026-11-30.md").write_text("today")
    (ws / "memory" / "2026-11-01.md").write_text("old")

    files = load_persona(ws, today=TODAY)

    assert [f.name for f in files] == [*BOOTSTRAP_ORDER, "memory/2026-11-29.md", "memory/2026-11-30.md"]


def test_memory_is_private_to_the_main_session_and_bootstrap_ends_when_deleted(tmp_path: Path):
    ws = workspace(tmp_path, [n for n in BOOTSTRAP_ORDER if n != "BOOTSTRAP.md"])

    names = [f.name for f in load_persona(ws, today=TODAY, private=False)]

    assert "MEMORY.md" not in names and "BOOTSTRAP.md" not in names


def test_bootstrap_ends_when_emptied_as_the_ritual_does_with_write_file(tmp_path: Path):
    ws = workspace(tmp_path)
    (ws / "BOOTSTRAP.md").write_text(" \n")

    names = [f.name for f in load_persona(ws, today=TODAY)]

    assert "BOOTSTRAP.md" not in names and "SOUL.md" in names


def test_subagents_get_only_who_they_are(tmp_path: Path):
    names = [f.name for f in load_persona(workspace(tmp_path), today=TODAY, subagent=True)]

    assert names == ["AGENTS.md", "SOUL.md", "TOOLS.md", "IDENTITY.md", "USER.md"]


def test_missing_file_is_named_as_missing(tmp_path: Path):
    ws = workspace(tmp_path, ["AGENTS.md"])

    text = render_persona(load_persona(ws, today=TODAY))

    assert "[missing: SOUL.md does not exist in the workspace]" in text


def test_long_file_keeps_head_and_tail_with_a_marker(tmp_path: Path):
    ws = workspace(tmp_path)
    (ws / "MEMORY.md").write_text("HEAD" + "x" * 30_000 + "TAIL")

    memory = next(f for f in load_persona(ws, today=TODAY) if f.name == "MEMORY.md")

    assert memory.truncated and memory.chars == 30_008
    assert memory.text.startswith("HEAD") and memory.text.endswith("TAIL")
    assert "characters cut" in memory.text
    assert len(memory.text) <= 20_000 + 100


def test_total_budget_caps_the_sum(tmp_path: Path):
    ws = workspace(tmp_path)
    for name in BOOTSTRAP_ORDER:
        (ws / name).write_text("y" * 19_000)

    files = load_persona(ws, today=TODAY, max_total_chars=50_000)

    assert sum(len(f.text) for f in files) <= 50_000 + 8 * 100


def test_a_file_linked_in_from_elsewhere_is_named_but_never_injected(tmp_path: Path):
    (tmp_path / "ws").mkdir()
    ws = workspace(tmp_path / "ws")
    secret = tmp_path / "id_ed25519"
    secret.write_text("-----BEGIN OPENSSH PRIVATE KEY-----")
    (ws / "MEMORY.md").unlink()
    (ws / "MEMORY.md").hardlink_to(secret)
    (ws / "USER.md").unlink()
    (ws / "USER.md").symlink_to(secret)

    files = {f.name: f.text for f in load_persona(ws, today=TODAY)}

    assert "hard link" in files["MEMORY.md"] and "outside the workspace" in files["USER.md"]
    assert "PRIVATE KEY" not in render_persona(load_persona(ws, today=TODAY))
    assert files["SOUL.md"] == "content of SOUL.md"


def test_a_reader_reads_a_file_again_only_when_a_stat_says_it_changed_and_still_checks_links(tmp_path: Path):
    (tmp_path / "ws").mkdir()
    ws = workspace(tmp_path / "ws")
    reader = PersonaReader()
    soul = ws / "SOUL.md"
    seen = soul.stat()
    assert texts(ws, reader)["SOUL.md"] == "content of SOUL.md"

    soul.write_text("CONTENT OF SOUL.md")  # same size, then the same time: not read again
    os.utime(soul, ns=(seen.st_atime_ns, seen.st_mtime_ns))
    assert texts(ws, reader)["SOUL.md"] == "content of SOUL.md"
    soul.write_text("a new soul")
    assert texts(ws, reader)["SOUL.md"] == "a new soul"

    secret = tmp_path / "key"
    secret.write_text("PRIVATE KEY")
    soul.unlink()
    os.link(secret, soul)  # a hard link to a file from elsewhere, once read: still omitted
    assert "omitted" in texts(ws, reader)["SOUL.md"]
    assert texts(ws, reader) == texts(ws, None)


def texts(ws: Path, reader: PersonaReader | None) -> dict[str, str]:
    return {f.name: f.text for f in load_persona(ws, today=TODAY, reader=reader)}
