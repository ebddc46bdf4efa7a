"""BPoMP synonyms in context: part of speech from the line, the closest candidate in a pretrained encoder,
and the hand-checked sample (tests/fixtures/bpomp_synonym_check.jsonl) the figures of docs/results/bpomp.md come from."""

from pathlib import Path

import pytest

from poeval import bpomp
from poeval.bpomp import context, pairs, synonyms
from poeval.bpomp.wordnet import default
from poeval.errors import PoevalError
from poeval.io import read_jsonl

FIXTURE = Path(__file__).parents[1] / "fixtures" / "bpomp_synonym_check.jsonl"


@pytest.fixture(scope="module")
def wn():
    return default()


@pytest.fixture(scope="module")
def encoder():
    return context.load("default")


@pytest.mark.parametrize("line, pos", [
    ("Thinks it funny to piss in the well.", "n"),           # the tagger says RB; after "the": noun
    ("'E's a stunning good fuck,", "n"),                      # determiner, adjectives, then the word
    ('Said he, "If you glue', "v"),
    ("Who complained that it hurt him to pee,", "v"),
    ("And the leaves of the tree fell out", context.NO_SYNONYM),  # a particle
    ("A mathematician named Hall", context.NO_SYNONYM),      # a proper noun
    ("Found his software intensely erotic.", "a"),
])
def test_part_of_speech_in_the_line(wn, line, pos):
    """Through make_pairs: the line is the first of a limerick whose other verses end in a function word,
    so the only synonym it can make replaces this line's end word, with a synonym of the part of speech
    the word has in the line; a proper noun or a particle gets none."""
    filler = ["He went to the", "And sat by the", "Then ran to the", "And looked at the"]
    limerick = [{"id": "l", "lines": [line, *filler]}]
    if pos == context.NO_SYNONYM:
        with pytest.raises(PoevalError, match=r"skipped: proper_or_function_word 1$"):
            bpomp.make_pairs(limerick, "synonym", synonym_choice="first", check_scheme=False, wordnet=wn)
        return
    (pair,), _ = bpomp.make_pairs(limerick, "synonym", synonym_choice="first", check_scheme=False, wordnet=wn)
    assert pair["changed"]["lines"] == [0] and pair["changed"]["words"][0] == pairs.end_word(line)
    assert pair["changed"]["pos"] == pos


def test_part_of_speech_of_the_line_is_not_the_words_most_frequent_reading(wn):
    """The control: with synonym_pos any, "well" after "the" takes its most frequent reading (not the noun)."""
    filler = ["He went to the", "And sat by the", "Then ran to the", "And looked at the"]
    limerick = [{"id": "l", "lines": ["Thinks it funny to piss in the well.", *filler]}]
    (pair,), _ = bpomp.make_pairs(limerick, "synonym", synonym_choice="first", check_scheme=False, wordnet=wn,
                                  synonym_pos="any")
    assert pair["changed"]["pos"] != "n"


def test_candidates_keep_the_part_of_speech_of_the_line(wn):
    every = {c.form for c in synonyms.candidates(wn, "well", ["hell"], {})[0]}
    nouns = synonyms.candidates(wn, "well", ["hell"], {}, pos="n")[0]
    assert "good" in every and "good" not in {c.form for c in nouns}   # the "piss in the good"
    assert nouns and {c.pos for c in nouns} == {"n"}
    # a part of speech the word lacks in WordNet falls back to every reading
    assert {c.form for c in synonyms.candidates(wn, "well", ["hell"], {}, pos="v")[0]} <= every


def test_preferred_drops_rare_lemmas_and_extensions_of_the_word(wn):
    cands = synonyms.candidates(wn, "night", ["light"], {}, pos="n")[0]
    assert "nighttime" in {c.form for c in cands}
    kept = {c.form for c in context.preferred(wn, cands)}
    assert kept and "nighttime" not in kept
    week = synonyms.candidates(wn, "week", ["cheek"], {}, pos="n")[0]
    assert {c.form for c in context.preferred(wn, week)} == {c.form for c in week}  # nothing better: all kept


def test_word_vectors_average_the_word_pieces(encoder):
    import torch

    model, tok = encoder
    text = "He had a hexhedronical ball,"
    start = text.index("hexhedronical")
    got = context.word_vectors(model, tok, [text], [(start, start + len("hexhedronical"))])[0]
    enc = tok(text, return_tensors="pt")
    word = enc.word_ids(0)[enc.char_to_token(0, start)]
    pieces = [k for k, w in enumerate(enc.word_ids(0)) if w == word]
    assert len(pieces) > 1                                  # a word of several pieces
    with torch.no_grad():
        ref = model(**enc).last_hidden_state[0, pieces].mean(0)
    assert torch.allclose(got, ref, atol=1e-5)


def test_context_chooser_takes_the_closest_preferred_candidate(wn, encoder):
    import torch

    model, tok = encoder
    lines = ["There once was a man from Peru", "Who fell asleep in his canoe", "He found a new way",
             "To sleep through the day", "And he woke with a start in the blue"]
    cands = synonyms.candidates(wn, "way", ["day"], {}, pos="n")[0]
    keep = context.preferred(wn, cands)
    assert len(keep) > 2
    chosen = pairs.context_chooser("default", wn)(lines, 2, cands, None)

    def vec(line, word):
        enc = tok(line, return_tensors="pt")
        first = enc.char_to_token(0, line.rindex(word))
        ids = [k for k, w in enumerate(enc.word_ids(0)) if w == enc.word_ids(0)[first]]
        with torch.no_grad():
            return model(**enc).last_hidden_state[0, ids].mean(0)

    ref = vec(lines[2], "way")
    sims = [float(torch.cosine_similarity(ref, vec(lines[2].replace("way", c.form), c.form), 0)) for c in keep]
    assert chosen == keep[max(range(len(keep)), key=lambda k: sims[k])]


def test_bad_synonym_params():
    recs = [{"id": "x", "lines": ["a"] * 5}]
    with pytest.raises(PoevalError, match="synonym_pos"):
        bpomp.make_pairs(recs, "synonym", synonym_pos="line")
    with pytest.raises(PoevalError, match="synonym_encoder"):
        bpomp.make_pairs(recs, "synonym", synonym_encoder=str(FIXTURE.parent / "no-such-encoder"))


def test_hand_checked_sample_matches_the_code(shared_data):
    """The verdicts belong to these exact replacements: the code must still make them (else re-check the
    sample), and the share that fits their line must not be lower after the contextual choice."""
    rows = list(read_jsonl(FIXTURE))
    ids = {r["id"].split("/")[0] for r in rows}
    lims = [r for r in read_jsonl(shared_data / "limericks" / "fortune_limericks.jsonl") if r["id"] in ids]
    assert len(lims) == len(ids) >= 50
    share = {}
    for method, opts in (("before", {"synonym_choice": "first", "synonym_pos": "any"}), ("after", {})):
        # check_scheme off: the verdicts are about the synonyms; every fixture limerick was read as AABBA when
        # the sample was checked (the reading of one, Toulouse/prepuce/loose, moved with the stanza context)
        made = {p["id"]: p for p in bpomp.make_pairs(lims, "synonym", check_scheme=False, **opts)[0]}
        checked = [r for r in rows if r["method"] == method]
        for r in checked:
            assert made[r["id"]]["corrupted"][r["line"]] == r["corrupted"], (method, r["id"])
        share[method] = sum(r["fits"] for r in checked) / len(checked)
    assert share == {"before": 0.30, "after": 0.42}
