"""The memory server's pieces on their own: chunking, analysis, dates, decay, windows and merging."""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import os
import random
import re
from pathlib import Path

import numpy as np
import pytest

from hermitcrab.servers.memory.chunking import MAX_UNIT_CHARS, Chunk, chunk_markdown
from hermitcrab.servers.memory.dates import ranges_in
from hermitcrab.servers.memory.files import FileStat, MemoryRoots, Written, append_entry, discover, file_date
from hermitcrab.servers.memory.index import MemoryIndex
from hermitcrab.servers.memory.lexical import LexicalIndex, analyze, doc_key
from hermitcrab.servers.memory.ranking import RankSettings
from hermitcrab.servers.memory.ranking.fusion import fuse
from hermitcrab.servers.memory.ranking.legs import Legs
from hermitcrab.servers.memory.ranking.rescoring import FEATURES, decay, features, model_for
from hermitcrab.servers.memory.ranking.table import ChunkTable, Speakers, speaker_of
from hermitcrab.servers.memory.ranking.windows import select


def test_chunks_are_bullets_and_paragraphs_with_their_headings_and_lines():
    text = (
        "# Trip\n\nIntro line one\nintro line two\n\n## Packing\n\n- boots\n  with spare laces\n- tent\n"
        "1. first\n\n```\ncode a\n\ncode b\n```\n"
    )
    chunks = chunk_markdown(text)
    assert [(c.start_line, c.end_line, c.text, c.headings) for c in chunks] == [
        (3, 4, "Intro line one\nintro line two", ("Trip",)),
        (8, 9, "- boots\nwith spare laces", ("Trip", "Packing")),
        (10, 10, "- tent", ("Trip", "Packing")),
        (11, 11, "1. first", ("Trip", "Packing")),
        (13, 17, "```\ncode a\n\ncode b\n```", ("Trip", "Packing")),
    ]


def test_long_paragraphs_are_split_at_sentences():
    sentence = "This sentence is about the long weekend in the mountains. "
    chunks = chunk_markdown(sentence * 40)
    assert len(chunks) > 1
    assert all(len(c.text) <= MAX_UNIT_CHARS and c.start_line == c.end_line == 1 for c in chunks)
    assert all(c.text.endswith("mountains.") for c in chunks)


def test_a_file_of_headings_only_is_still_findable():
    chunks = chunk_markdown("# Ideas\n## Solar kiln\n")
    assert [c.text for c in chunks] == ["Ideas\nSolar kiln"]


def test_time_headings_are_context_not_meaning():
    chunks = chunk_markdown("## 13:56\n\n- lunch\n\n## Groceries\n\n- milk\n")
    assert [c.embed_text for c in chunks] == ["- lunch", "Groceries: - milk"]


def test_analyze_stems_drops_stopwords_and_splits_han():
    assert analyze("What did Caroline's kids paint?") == ["carolin", "kid", "paint"]
    assert analyze("我去北京") == ["我", "去", "北", "京", "我去", "去北", "北京"]
    assert analyze("東京でラーメン") == ["東", "京", "東京", "でラーメン"]


def test_a_rare_query_word_outweighs_a_common_one_on_short_lines(tmp_path: Path):
    lines = [
        "- Ann: Is that recent? Looks fun!",
        "- Ann: So recent, wow.",
        "- Bo: Ann, did that happen recently?",
        "- Ann: I went to a counseling workshop last Friday with people from the clinic, and it was really "
        "enlightening: they talked about therapeutic methods and how to make a safe space for everyone.",
        "- Bo: The garden looks great this spring.",
    ]
    index = LexicalIndex(tmp_path / "tantivy")
    index.replace([], [(f"m.md\x1f{i}", "m.md", analyze(line), []) for i, line in enumerate(lines)])
    hits = index.search(index.term_weights("What workshop did Ann attend recently?"), 5)
    assert hits[0][0] == doc_key("m.md\x1f3")


def test_daily_logs_are_dated_and_other_files_are_not():
    assert file_date("memory/2024-02-29.md") == dt.date(2024, 2, 29)
    assert file_date("memory/2024-05-01-trip.md") == dt.date(2024, 5, 1)
    assert file_date("memory/2024-02-30.md") is None
    assert file_date("MEMORY.md") is None
    assert file_date("memory/projects.md") is None
    assert file_date("notes/2024-05-01.md") is None


def test_decay_is_gentle_and_spares_undated_files():
    settings = RankSettings()
    today = dt.date(2025, 6, 1)
    assert decay(None, today, settings) == 1.0
    assert decay(today, today, settings) == 1.0
    assert abs(decay(today - dt.timedelta(days=60), today, settings) - 0.95) < 1e-9
    assert 0.9 <= decay(dt.date(2001, 1, 1), today, settings) < 0.901
    assert decay(dt.date(2001, 1, 1), today, RankSettings(half_life_days=None)) == 1.0


def test_only_dated_logs_lose_score_with_age(tmp_path: Path):
    workspace = tmp_path / "workspace"
    (workspace / "memory").mkdir(parents=True)
    (workspace / "MEMORY.md").write_text("- The project codename is Bluebird.\n", encoding="utf-8")
    (workspace / "memory" / "projects.md").write_text("- Codename Bluebird, again.\n", encoding="utf-8")
    (workspace / "memory" / "2019-01-01.md").write_text("- Bluebird codename chosen: Bluebird.\n", encoding="utf-8")
    index = MemoryIndex(MemoryRoots(workspace.resolve(), ()), tmp_path / "state", None)
    index.sync()

    def scores(today: dt.date) -> dict[str, object]:
        return {str(r["path"]): r["score"] for r in index.search("Bluebird codename", 6, today=today)}

    then, later = scores(dt.date(2019, 1, 1)), scores(dt.date(2030, 1, 1))
    assert later["MEMORY.md"] == then["MEMORY.md"]
    assert later["memory/projects.md"] == then["memory/projects.md"]
    factor = decay(dt.date(2019, 1, 1), dt.date(2030, 1, 1), RankSettings())
    assert factor < 0.91
    assert later["memory/2019-01-01.md"] == pytest.approx(factor * then["memory/2019-01-01.md"], abs=1e-4)


def test_fusion_rewards_agreement_and_tops_out_at_one():
    scores = fuse([{"a": 0, "b": 1}, {"a": 0, "c": 1}, {}], k=60)
    assert scores["a"] == 1.0  # an empty list (a leg with nothing to say) does not count against it
    assert scores["b"] == scores["c"] < scores["a"]
    assert next(iter(scores)) == "a"


def _lines(count: int) -> dict[str, list[Chunk]]:
    return {"m.md": chunk_markdown("".join(f"- line {i}: {'words ' * 10}\n" for i in range(count)))}


def test_a_window_reaches_out_only_to_neighbours_likely_to_matter():
    files = _lines(30)
    ranked = [("m.md", 10, 0.6), ("m.md", 25, 0.5), ("m.md", 11, 0.3)]
    results = select(ranked, files, {"m.md": None}, 6, RankSettings())
    assert [(r.first, r.last) for r in results][:2] == [(10, 11), (25, 25)]
    assert results[0].score == pytest.approx(1 - 0.4 * 0.7)  # the chance that either line holds the answer
    shown = results[0].as_dict(files["m.md"], 100)
    assert shown["snippet"] == f"{files['m.md'][10].text}\n{files['m.md'][11].text}"
    assert (shown["start_line"], shown["end_line"]) == (11, 12)


def test_windows_stay_in_their_section_and_within_their_size():
    chunks = chunk_markdown("- one\n- two\n- three\n- four\n- five\n\n## Other\n\n- six\n")
    ranked = [("m.md", i, 0.5) for i in range(6)]
    settings = RankSettings(window_chars=25)
    results = select(ranked, {"m.md": chunks}, {"m.md": None}, 6, settings)
    assert all(chunks[r.first].headings == chunks[r.last].headings for r in results)
    assert all(sum(len(chunks[i].text) + 1 for i in range(r.first, r.last + 1)) <= 25 for r in results)
    shown = [i for r in results for i in range(r.first, r.last + 1)]
    assert sorted(shown) == list(range(6))  # every likely line shown once: no two windows overlap


def test_fewer_results_are_a_prefix_of_more():
    files = _lines(60)
    ranked = [("m.md", i, 0.9 - i / 100) for i in (5, 15, 25, 35, 45, 55, 6, 16, 26)]
    spans = [[(r.first, r.last) for r in select(ranked, files, {"m.md": None}, n, RankSettings())] for n in (2, 6, 8)]
    assert spans[0] == spans[1][:2] == spans[2][:2]
    assert spans[1] == spans[2][:6]
    assert spans[1][0] == (5, 6)


def test_likely_neighbours_are_shown_in_full_unlikely_ones_clipped():
    chunks = chunk_markdown("- short anchor line\n- " + "a long neighbouring line " * 12 + "\n")
    ranked = [("m.md", 0, 0.5), ("m.md", 1, 0.4)]

    def snippet_with(full_share: float) -> str:
        settings = RankSettings(full_share=full_share, anchors=1)
        result = select(ranked, {"m.md": chunks}, {"m.md": None}, 1, settings)[0]
        return str(result.as_dict(chunks, settings.neighbour_chars)["snippet"])

    assert snippet_with(0.5).endswith(chunks[1].text)
    assert snippet_with(1.0).endswith("…") and len(snippet_with(1.0).splitlines()[1]) == 100


def test_discovery_skips_hidden_and_non_markdown_files(tmp_path: Path):
    (tmp_path / "memory" / ".trash").mkdir(parents=True)
    (tmp_path / "memory" / ".trash" / "old.md").write_text("x", encoding="utf-8")
    (tmp_path / "memory" / "a.md").write_text("x", encoding="utf-8")
    (tmp_path / "memory" / "b.txt").write_text("x", encoding="utf-8")
    (tmp_path / "USER.md").write_text("x", encoding="utf-8")
    (tmp_path / "SOUL.md").write_text("x", encoding="utf-8")
    assert sorted(discover(MemoryRoots(tmp_path))) == ["USER.md", "memory/a.md"]


def test_discovery_walks_subfolders_and_extra_paths_but_not_symlinks(tmp_path: Path):
    workspace, notes = tmp_path / "workspace", tmp_path / "notes"
    (workspace / "memory" / "topics" / "deep").mkdir(parents=True)
    (workspace / "memory" / "topics" / "deep" / "c.md").write_text("x", encoding="utf-8")
    (workspace / "memory" / "folder.md").mkdir()
    (workspace / "memory" / "linked-folder").symlink_to(workspace / "memory" / "topics")
    (workspace / "memory" / "linked.md").symlink_to(workspace / "memory" / "topics" / "deep" / "c.md")
    (notes / "inbox").mkdir(parents=True)
    (notes / "inbox" / "n.md").write_text("note", encoding="utf-8")
    (tmp_path / "single.md").write_text("one", encoding="utf-8")
    roots = MemoryRoots(workspace, (notes, tmp_path / "single.md"))
    found = discover(roots)
    assert list(found) == [
        "memory/topics/deep/c.md",
        f"{notes.as_posix()}/inbox/n.md",
        (tmp_path / "single.md").as_posix(),
    ]
    alone = discover(MemoryRoots(workspace))
    assert discover(MemoryRoots(workspace, (workspace,))) == alone  # the workspace again: the same files, once
    holding = discover(MemoryRoots(workspace, (tmp_path,)))  # a folder that holds the workspace, likewise
    assert holding.keys() >= alone.keys() and not any(key.startswith(workspace.as_posix()) for key in holding)
    on_disk = os.stat(notes / "inbox" / "n.md")
    assert found[f"{notes.as_posix()}/inbox/n.md"] == FileStat(on_disk.st_mtime_ns, 4, on_disk.st_ino)


def test_append_reports_the_lines_it_wrote(tmp_path: Path):
    log = tmp_path / "memory" / "2025-01-01.md"
    assert append_entry(log, "first", "09:00", tmp_path / "state") == Written(3, 3)
    assert append_entry(log, "second\nthird", "10:00", tmp_path / "state") == Written(7, 8)
    log.write_text(log.read_text(encoding="utf-8") + "no newline at end", encoding="utf-8")
    fourth = append_entry(log, "fourth", None, tmp_path / "state")
    assert log.read_text(encoding="utf-8").splitlines()[fourth.start - 1 : fourth.end] == ["fourth"]


def test_dates_named_in_a_query_become_day_ranges():
    (on_day,) = ranges_in("What movie did Joanna watch on 1 May, 2022?")
    assert (on_day.start, on_day.end) == (dt.date(2022, 4, 28), dt.date(2022, 5, 11))
    (month,) = ranges_in("What did she paint in July 2023?")
    assert month.contains(dt.date(2023, 7, 31)) and month.contains(dt.date(2023, 8, 5))
    assert not month.contains(dt.date(2024, 7, 10))
    (any_june,) = ranges_in("When did Melanie go camping in June?")
    assert any_june.contains(dt.date(2019, 6, 15)) and not any_june.contains(dt.date(2019, 8, 15))
    (iso,) = ranges_in("notes from 2024-03-05")
    assert iso.contains(dt.date(2024, 3, 5))
    (year,) = ranges_in("What did John organise in 2024?")
    assert year.contains(dt.date(2024, 12, 31)) and not year.contains(dt.date(2023, 12, 31))
    assert ranges_in("I may go to the march") == []


def test_speakers_are_the_authors_of_chat_lines_in_any_common_form():
    assert speaker_of("- Caroline: I went to the LGBTQ support group.") == "caroline"
    assert speaker_of("* Dr. Lee: take it twice a day") == "dr. lee"
    assert speaker_of("- user: I moved to Lisbon last spring") == "user"
    assert speaker_of("**Alice:** the keys are under the mat") == "alice"
    assert speaker_of("Bob: see you at eight") == "bob"
    assert speaker_of("[10:02] <Bob> deploy is done") == "bob"
    assert speaker_of("> Eve wrote: the invoice is paid") == "eve"
    assert speaker_of("- Bought milk") is None
    assert speaker_of("- Met Bob at the gym and later at the pool: nice") is None
    speakers = Speakers.of(["caroline", "mel", "dr. smith", "o'neil", "@bot", "mel b"])
    assert speakers.named_in("What did Caroline paint?") == {"caroline"}
    assert speakers.named_in("What did Melanie paint?") == frozenset()  # whole words only
    assert speakers.named_in("Did Dr. Smith and O'Neil's team meet?") == {"dr. smith", "o'neil"}
    assert speakers.named_in("ask @bot, then Mel B") == {"@bot", "mel", "mel b"}


def test_speakers_named_in_a_query_are_those_a_plain_search_of_every_name_finds():
    pieces = ["al", "ali", "alice", "bo", "dr.", "o'neil", "x-ray", "_id", "@me", "é", "日本", "mel b", "3"]
    chance = random.Random(7)
    for _ in range(300):
        names = {" ".join(chance.sample(pieces, chance.randint(1, 2))) for _ in range(8)}
        query = " ".join(chance.choice([*pieces, "?", ",", "and", "alices"]) for _ in range(6))
        plain = {name for name in names if re.search(rf"(?<!\w){re.escape(name)}(?!\w)", query.lower())}
        assert Speakers.of(names).named_in(query) == plain, (names, query)


def test_a_name_is_a_speaker_only_in_a_file_where_it_starts_several_chunks():
    speakers = ["alice", "bob", "alice", "alice", "coffee", "bob", "bob"]
    table = ChunkTable.build([frozenset()] * 7, speakers, [5] * 7, [0, 0, 0, 0, 0, 1, 1])
    assert list(table.speakers) == ["alice", None, "alice", "alice", None, None, None]
    assert table.names.named_in("Did Alice or Bob mention coffee?") == {"alice"}


def test_features_measure_each_candidate_against_the_query():
    table = ChunkTable.build(
        terms=[frozenset({"tea"}), frozenset({"alic", "green", "tea"}), frozenset({"coffe"}), frozenset({"green"})],
        speakers=[None, "alice", "bob", None],
        lengths=[10, 30, 20, 5],
        files=[0, 0, 0, 1],
    )
    assert table.names.named_in("Did Alice or Bob or Carol call?") == set()  # a name on one line is a label
    legs = Legs(
        text={1: 0, 0: 1},
        vector={2: 0},
        dated_text={},
        dated_vector={},
        similarity=np.array([0.2, 0.5, 0.7, 0.1], dtype=np.float32),
        term_weights={"green": 3.0, "tea": 1.0},
        named=frozenset({"alice"}),
    )
    rows = features([1, 2], {1: 0.8, 2: 0.3}, legs, table, RankSettings())
    alice, bob = (dict(zip(FEATURES, row, strict=True)) for row in rows)
    assert alice["fused"] == 0.8 and bob["fused"] == 0.3 and alice["dated_text"] == 0.0
    spread = float(np.std(np.array([0.2, 0.5, 0.7, 0.1], dtype=np.float32)))
    assert alice["similarity"] == pytest.approx(-0.2 / spread) and bob["similarity"] == 0.0
    assert alice["neighbour_similarity"] == 0.0  # its neighbour (bob, position 2) is the best match
    assert alice["coverage"] == 1.0 and bob["coverage"] == 0.0
    assert bob["near_coverage"] == 1.0  # green and tea are on the line before (position 3 is another file)
    assert alice["near_coverage"] == 0.0  # what its neighbours hold, it holds itself
    assert alice["speaker"] == bob["speaker"] == 0.0
    assert alice["length"] == pytest.approx(math.log(31))
    chances = model_for(True).probability(rows)
    assert chances.shape == (2,) and all(0 < chance < 1 for chance in chances)
    no_vectors = dataclasses.replace(legs, similarity=None)
    without_vectors = dict(zip(FEATURES, features([1], {1: 0.8}, no_vectors, table, RankSettings())[0], strict=True))
    assert without_vectors["similarity"] == without_vectors["neighbour_similarity"] == 0.0
    assert without_vectors["coverage"] == 1.0
