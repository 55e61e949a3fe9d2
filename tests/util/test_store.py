"""A JSON store on disk: whole or not at all, even when the writer is killed mid-save; a torn file is named, not
trusted."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hermitcrab.util.store import JsonFile, Torn


def test_no_file_is_an_empty_store(tmp_path: Path):
    store = JsonFile(tmp_path / "state.json")

    assert store.load("starting empty") == {}
    assert store.stamp() is None
    with pytest.raises(FileNotFoundError):
        store.read()


def test_a_saved_object_reads_back_from_a_private_file(tmp_path: Path):
    store = JsonFile(tmp_path / "new" / "state.json")

    store.save({"name": "Zoë", "count": 2})

    assert store.read() == {"name": "Zoë", "count": 2}
    assert store.path.stat().st_mode & 0o777 == 0o600
    assert store.path.read_text(encoding="utf-8").endswith("\n") and "Zoë" in store.path.read_text(encoding="utf-8")


def test_each_save_changes_the_stamp(tmp_path: Path):
    store = JsonFile(tmp_path / "state.json")
    store.save({"n": 1})
    first = store.stamp()

    store.save({"n": 1})

    assert first is not None and store.stamp() != first


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b'{"letters": [{"id": "ab', "Unterminated string"),
        (b'{"name": "\xff"}', "codec can't decode"),
        (b"[1, 2]", "a JSON list, not an object"),
    ],
)
def test_a_torn_file_is_refused_by_read_and_read_as_empty_by_load_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, raw: bytes, reason: str
):
    store = JsonFile(tmp_path / "state.json")
    store.path.write_bytes(raw)

    with pytest.raises(Torn, match=reason) as caught:
        store.read()
    assert caught.value.path == store.path
    with caplog.at_level(logging.WARNING, logger="hermitcrab.util.store"):
        assert store.load("starting empty") == {}

    assert f"{store.path} is torn (" in caplog.text and caplog.text.rstrip().endswith("; starting empty")
    assert store.path.read_bytes() == raw  # left for the next save to replace


def test_a_torn_file_set_aside_is_kept_beside_the_store(tmp_path: Path):
    store = JsonFile(tmp_path / "state.json")
    store.path.write_text('{"half')

    aside = store.set_aside(".torn")

    assert aside == tmp_path / "state.json.torn" and aside.read_text() == '{"half'
    assert not store.path.exists()


def test_a_save_that_fails_leaves_the_old_file_and_no_temporary_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    store = JsonFile(tmp_path / "store" / "state.json")
    store.save({"version": 1})

    def disk_full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(OSError, match="No space left"):
        store.save({"version": 2})
    monkeypatch.undo()

    assert store.read() == {"version": 1}
    assert [path.name for path in store.path.parent.iterdir()] == ["state.json"]


WRITER = """
import sys
from pathlib import Path
from hermitcrab.util.store import JsonFile

store = JsonFile(Path(sys.argv[1]))
n = 0
while True:
    n += 1
    store.save({"n": n, "body": str(n % 10) * 200_000})
    if n == 1:
        print("saved", flush=True)
"""


def test_a_writer_killed_mid_save_leaves_one_whole_version(tmp_path: Path):
    """SIGKILL at a few moments into a loop of saves of 200 KB: each time the file reads as one whole version."""
    store = JsonFile(tmp_path / "state.json")
    for delay in (0.0, 0.01, 0.05, 0.13, 0.3):
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(store.path)], stdout=subprocess.PIPE)
        assert writer.stdout is not None and writer.stdout.readline() == b"saved\n"
        time.sleep(delay)
        writer.send_signal(signal.SIGKILL)
        writer.wait()
        writer.stdout.close()

        data = store.read()
        assert data["body"] == str(data["n"] % 10) * 200_000
        assert json.loads(store.path.read_bytes()) == data
