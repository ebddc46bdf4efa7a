"""A verse's end word is its last *word* (poeval.text.verse_end), wherever verses are read: a marginal line
number, a dash run, a bracket, a quote or a footnote mark after it never becomes the word rhyme is judged on.

The "without" versions of the verses are written out by hand (or cut with a plain regex), never built with
the function under test."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from poeval.bpomp import pairs
from poeval.data import quatrains as Q
from poeval.generators.poetic import common
from poeval.metrics import schemes
from poeval.poetry import rhyme
from poeval.poetry.schemes import scheme
from poeval.text import END_STRIP_KINDS, end_word, verse_end

needs_espeak = pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng not installed")
GOLD_EN = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "gold" / "rhyme_en_dev.jsonl"


# --- the function ---------------------------------------------------------------------------------

@pytest.mark.parametrize("line, word, stripped", [
    ("Shall I compare thee to a summer's day?", "day", ()),
    ("And every shepherd's tongue each had charms;        25", "charms", ("line_number",)),
    ("Who can affure it to continue long ? 120", "long", ("line_number",)),
    ("All that we doe, yet 'tis within our harts 80", "harts", ("line_number",)),
    ("And curled up like some crumpled, lonely flower-petal --", "flower-petal", ("dashes",)),
    ("Thrice on the Gate, and entered with a cry--", "cry", ("dashes",)),
    ("Der Mond ging unter — jetzt iſt's Zeit. —", "Zeit", ("dashes",)),
    ("O hide me in thy shade ——", "shade", ("dashes",)),
    ("Yet thou ne shalt sustain (be not adread)", "adread", ("bracket",)),
    ("And let eternall night so sad [sight]", "sight", ("bracket",)),
    ('DEATH IS THE END, THE END!"', "END", ("quote",)),
    ("He said: “the day is done.”", "done", ("quote",)),
    ("He replied, 'Yes, it does!'", "does", ("quote",)),
    ("Where the wild thyme blows[12]", "blows", ("footnote_mark",)),
    ("Where the wild thyme blows*", "blows", ("footnote_mark",)),
    ("Where the wild thyme blows†", "blows", ("footnote_mark",)),
    ("Where the wild thyme blows[F]", "blows", ("footnote_mark",)),
    ("We faint beneath the Aromatick Pain, [a ]", "Pain", ("footnote_mark",)),
    ("The flocks by moonlight there, [1]", "there", ("footnote_mark",)),
    ("As He in sovereign dignity is odd,9", "odd", ("footnote_mark",)),
    ("Though all the world would him therefrom bereaven32", "bereaven", ("footnote_mark",)),
    ("And rest upon the hill²", "hill", ("footnote_mark",)),
    ("'The woods shall answer, and their echo ring.'0]", "ring", ("quote", "footnote_mark", "bracket")),
    ('Farewell, my love!"  [3] 40', "love", ("quote", "footnote_mark", "line_number")),
    # apostrophes inside words stay; 'tis keeps its leading one; th' and o' their final one
    ("So fair a thing o'er", "o'er", ()),
    ("The dew that walk'd", "walk'd", ()),
    ("’Tis", "'Tis", ()),
    ("I bade him come to th'", "th'", ()),
    ("It’s a cat’s", "cat's", ()),
    ("And I was singin'", "singin", ("quote",)),
    # an editor's completion in brackets belongs to the word; a Roman numeral is a word
    ("And do behold our grandsire[s]", "grandsires", ()),
    ("Great Charles the II", "II", ()),
    ("And so am I", "I", ()),
    ("Was iſt in der Welt doch ſchlimmer/", "ſchlimmer", ()),
    ("O/ da hilfft kein Huͤten nicht/", "nicht", ()),
    # no letter: no word, nothing stripped
    ("1914", "", ()),
    ("    25", "", ()),
    ("...", "", ()),
    ("-- * --", "", ()),
    ("", "", ()),
])
def test_verse_end_hand_written(line, word, stripped):
    end = verse_end(line)
    assert (end.word, end.stripped) == (word, stripped)
    assert end_word(line) == rhyme.end_word(line) == word
    if word:
        start, stop = end.span
        as_written = line[start:stop].replace("’", "'").replace("[", "").replace("]", "")
        assert as_written == word
    else:
        assert end.span is None


def test_verse_end_leaves_the_verse_alone_and_takes_non_strings():
    line = "each had charms;        25"
    verse_end(line)
    assert line == "each had charms;        25"
    assert verse_end(None).word == "" and verse_end(None).span is None
    assert set(END_STRIP_KINDS) == {"line_number", "dashes", "bracket", "quote", "footnote_mark"}


# --- every reader takes the same word -------------------------------------------------------------

ENDED = ["each had charms;        25", "the end!\"", "thyme blows[12]", "a crumpled petal --", "(be not adread)",
         "and rest upon the hill²", "odd,9"]
BARE = ["charms", "end", "blows", "petal", "adread", "hill", "odd"]


def test_samples_ports_and_bpomp_read_the_same_end_word():
    assert schemes.end_words(ENDED) == BARE
    assert [common.end_word(common.tokenize(v)) for v in ENDED] == BARE
    for verse, word in zip(ENDED, BARE):
        toks = common.tokenize(verse)
        assert toks[common.end_token_index(toks)] == (word + "²" if verse.endswith("²") else word)   # \w+ keeps ²
    assert common.end_word(common.tokenize("-- 25 --")) is None
    # the repetition check of the paper's code: a line number is not a repeated end word
    numbered = ["The sun goes down the way   5", "and night comes on the sea", "we sing along the day   10",
                "and wander to the lea"]
    assert schemes.end_words(numbered) == ["way", "sea", "day", "lea"]


def test_bpomp_line_surgery_keeps_the_ending():
    assert pairs.replace_end_word("each had charms;        25", "arms") == "each had arms;        25"
    assert pairs.replace_end_word("Where the wild thyme blows[12]", "grows") == "Where the wild thyme grows[12]"
    assert pairs.replace_end_word('THE END!"', "close") == 'THE close!"'
    assert pairs.split_tail("each had charms;   25") == ("each had charms", ";   25")
    assert pairs.split_tail("And woke in a hat!' ") == ("And woke in a hat", "!' ")


# --- the scheme is the same with and without the endings ------------------------------------------

# (with endings, without them: written out by hand)
HAND_STANZAS = [
    (["The sun goes down behind the hill,        5", "The birds have left the sky;", "The air is soft and still,",
      "And night is drawing nigh.        10"],
     ["The sun goes down behind the hill,", "The birds have left the sky;", "The air is soft and still,",
      "And night is drawing nigh."]),
    (["I wandered lonely on the shore --", "And heard the breakers roar --", "The gulls were crying overhead——",
      "And all the light had fled——"],
     ["I wandered lonely on the shore", "And heard the breakers roar", "The gulls were crying overhead",
      "And all the light had fled"]),
    (["(She came to me at night)", "And sang a song of May,", "[Her eyes were burning bright]",
      "And then she went away."],
     ["She came to me at night", "And sang a song of May,", "Her eyes were burning bright", "And then she went away."]),
    (['"Come home," she said, "the day is done!"', "The cattle wander by,", "“The race is over, and is won,”",
      "'And stars are in the sky.'"],
     ['"Come home," she said, "the day is done!', "The cattle wander by,", "“The race is over, and is won,",
      "'And stars are in the sky."]),
    (["Where the wild thyme grows[12]", "And the river runs*", "The cold wind blows†", "Beneath the summer suns[F]"],
     ["Where the wild thyme grows", "And the river runs", "The cold wind blows", "Beneath the summer suns"]),
    (["My heart is sore,9", "For love is gone;10", "I weep therefore,11", "And walk alone.12"],
     ["My heart is sore,", "For love is gone;", "I weep therefore,", "And walk alone."]),
]


@needs_espeak
@pytest.mark.parametrize("ended, bare", HAND_STANZAS)
def test_hand_made_endings_do_not_change_the_scheme(ended, bare):
    assert scheme(ended, "en") == scheme(bare, "en")
    assert scheme(bare, "en") in ("abab", "aabb")


MARGINAL = re.compile(r"\s+\d+\s*$")   # the 22 dev stanzas: a number after a space ends some verse


def _dev_stanzas_with_marginal_numbers() -> list[dict]:
    if not GOLD_EN.is_file():
        return []
    rows = [json.loads(x) for x in GOLD_EN.open(encoding="utf-8")]
    return [r for r in rows if any(MARGINAL.search(v) for v in r["lines"])]


@needs_espeak
@pytest.mark.skipif(not GOLD_EN.is_file(), reason="dev gold (../shared/data/gold) not here")
def test_the_22_dev_stanzas_with_marginal_numbers():
    stanzas = _dev_stanzas_with_marginal_numbers()
    assert len(stanzas) == 22
    for r in stanzas:
        bare = [MARGINAL.sub("", v) for v in r["lines"]]
        assert bare != r["lines"]
        assert scheme(r["lines"], "en") == scheme(bare, "en"), r["id"]


# --- the corpus report ----------------------------------------------------------------------------

def test_corpus_report_counts_what_was_stripped(tmp_path):
    """Hand count over the kept quatrains' verses (a verse with two kinds counts under both); q3 repeats a
    verse of q1 and is removed by the de-duplication, so its endings are not counted."""
    quatrains = {
        "q1": ["The sun goes down behind the hill,     5", "The birds have left the darkening sky ——",
               "The air is soft and very still,", "And night is drawing nigh.     10"],
        "q2": ['"Come home," she said, "the day is done!"', "The cattle wander slowly by,[1]",
               "(The race is over, and is won)", "And stars are in the sky.*"],
        "q3": ["The sun goes down behind the hill,     5", "A line that is never counted —",
               "Another line that is not counted —", "A last line never counted —"],
        "q4": ["A verse that ends in a plain way.", "Another verse with nothing more.",
               "A third one, ending; as they say,", 'Her last word: "evermore"  20'],
    }
    path = tmp_path / "q.jsonl"
    path.write_text("".join(json.dumps({"id": k, "text": v}) + "\n" for k, v in quatrains.items()))
    records, rep = Q.build_quatrains("quatrain", str(path), progress=False)
    assert [r["source"] for r in records] == ["q1", "q2", "q4"]
    assert [r["lines"] for r in records] == [quatrains[k] for k in ("q1", "q2", "q4")]   # verses unchanged
    assert rep["end_word_stripped"] == {"line_number": 3, "dashes": 1, "bracket": 1, "quote": 2,
                                        "footnote_mark": 2}


def test_write_quatrains_report_has_the_counts(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps({"id": "q1", "text": ["The sun goes down behind the hill,   5", "The birds have flown",
                                                      "The air is soft and still —", "And night has grown"]}) + "\n")
    out, report = tmp_path / "quatrains.jsonl", tmp_path / "corpus_report.json"
    Q.write_quatrains("en", Q.Corpus.from_dict({"format": "quatrain", "path": str(path)}), Q.QuatrainRules.from_dict({}),
                      str(out), str(report))
    rep = json.loads(report.read_text())
    assert rep["end_word_stripped"] == {"line_number": 1, "dashes": 1, "bracket": 0, "quote": 0, "footnote_mark": 0}
