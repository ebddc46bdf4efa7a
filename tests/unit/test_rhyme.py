import itertools
import json
import re
import shutil

import pytest

from helpers import COUPLETS, MADE, NIGHT, SKY
from poeval.errors import PoevalError
from poeval.poetry import espeak, rhyme, spelling
from poeval.poetry.metre import METRES, metre
from poeval.poetry.phones import phones
from poeval.poetry.rhyme import rhyme_relation
from poeval.poetry.schemes import (CONTEXT, POEM_VOTE, SCHEMES_4, best_partition, context_penalty, level_weights,
                                   PRIOR_WEIGHT, normalise_scheme, poem_schemes, scheme, scheme_prior, schemes,
                                   vote_labels)
from poeval.poetry.spelling import en_candidates
from poeval.text import end_word

needs_espeak = pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng not installed")


# ---------------------------------------------------------------- scheme labels

def test_normalise_scheme():
    assert normalise_scheme("ABAB") == "abab"
    assert normalise_scheme("bcbc") == "abab"
    assert normalise_scheme("xxyy") == "aabb"
    assert normalise_scheme([3, 1, 3, 1]) == "abab"
    assert normalise_scheme("") == ""


def test_schemes_4_are_the_15_partitions():
    assert len(SCHEMES_4) == 15
    assert len(set(SCHEMES_4)) == 15
    assert all(normalise_scheme(s) == s for s in SCHEMES_4)
    for s in ("aaaa", "abcd", "abab", "aabb", "abba", "abcb"):
        assert s in SCHEMES_4


def test_all_15_labels_reachable_from_pair_scores():
    import numpy as np

    for target in SCHEMES_4:
        w = np.full((4, 4), -3.0)
        for i, j in itertools.combinations(range(4), 2):
            if target[i] == target[j]:
                w[i, j] = w[j, i] = 3.0
        assert best_partition(w) == target
        # with the shipped weak prior too
        assert best_partition(w, scheme_prior("en")) == target
        assert best_partition(w, scheme_prior("de")) == target


def test_inconsistent_pairs_resolved():
    import numpy as np

    w = np.full((4, 4), -3.0)
    # 0~1 and 1~2 strongly, 0~2 weakly against: transitivity is enforced, not dropped
    w[0, 1] = w[1, 0] = 4.0
    w[1, 2] = w[2, 1] = 4.0
    w[0, 2] = w[2, 0] = -1.0
    assert best_partition(w) == "aaab"


def test_long_stanza_greedy():
    import numpy as np

    n = 14
    target = "ababcdcdefefgg"
    w = np.full((n, n), -3.0)
    for i, j in itertools.combinations(range(n), 2):
        if target[i] == target[j]:
            w[i, j] = w[j, i] = 3.0
    assert best_partition(w) == target


# ---------------------------------------------------------------- end words

def _pair_weights(n, linked, value=5.0, rest=-5.0, **pairs):
    """An n x n weight matrix: ``value`` on the pairs ``linked`` (a label) links, ``rest`` elsewhere, and
    the named pairs (``p0_2=-3.0``) set by hand."""
    import numpy as np

    w = np.full((n, n), rest)
    for i, j in itertools.combinations(range(n), 2):
        if linked[i] == linked[j]:
            w[i, j] = w[j, i] = value
    for name, x in pairs.items():
        i, j = (int(v) for v in name[1:].split("_"))
        w[i, j] = w[j, i] = x
    return w


def test_the_poem_vote_by_hand():
    """abab alone scores 5 - 3 = 2 (0~2 a loose pair), abcb 5: alone, abcb. Two sister stanzas read abab add
    the vote weight to abab: at 4, 6 > 5 (abab); at 2, 4 < 5 (abcb). Split sisters add half to each."""
    loose = _pair_weights(4, "abcb", p0_2=-3.0)
    clear = _pair_weights(4, "abab")
    assert vote_labels([loose, clear, clear], [None] * 3, 4.0) == ["abab", "abab", "abab"]
    assert vote_labels([loose, clear, clear], [None] * 3, 2.0) == ["abcb", "abab", "abab"]
    assert vote_labels([loose, clear, loose], [None] * 3, 4.0)[0] == "abcb"   # 2 + 2 < 5 + 2
    assert vote_labels([loose, clear, clear], [None] * 3, 0.0)[0] == "abcb"
    # a sister of another length does not vote, and a poem's one stanza is labelled alone
    assert vote_labels([loose, _pair_weights(5, "ababa")], [None] * 2, 8.0)[0] == "abcb"
    assert vote_labels([loose], [None], 8.0) == ["abcb"]


def test_the_poem_vote_on_a_long_stanza():
    """Beyond EXHAUSTIVE_MAX lines the vote moves each pair by weight x (share linking it - 1/2): the last
    couplet's -2 becomes -2 + 8 x 1/2 = 2 and links; the pairs the sisters keep apart lose 4."""
    target = "aabbccddee"
    weak = _pair_weights(10, target, p8_9=-2.0)
    assert best_partition(weak) == "aabbccddef"
    assert vote_labels([weak, _pair_weights(10, target)], [None] * 2, 8.0)[0] == target
    assert vote_labels([weak, _pair_weights(10, target)], [None] * 2, 3.0)[0] == "aabbccddef"  # -2 + 1.5 < 0


@needs_espeak
def test_poem_schemes_of_real_stanzas():
    """MADE's made / side (``v0c3 aɪ/eɪ``, about -2.2) alone reads abcb; beside two abab sisters, abab. A stanza
    of two exact couplets (COUPLETS, about 5 each) keeps aabb: abab would need night / tree and moonlight / free."""
    assert [scheme(s, "en") for s in (NIGHT, SKY, MADE, COUPLETS)] == ["abab", "abab", "abcb", "aabb"]
    assert poem_schemes([NIGHT, MADE, SKY], "en") == ["abab", "abab", "abab"]
    assert poem_schemes([NIGHT, COUPLETS, SKY], "en") == ["abab", "aabb", "abab"]
    assert poem_schemes([MADE], "en") == ["abcb"]
    assert poem_schemes([NIGHT, MADE, SKY], "en", vote_weight=0.0)[1] == "abcb"
    # schemes() groups by key (not only neighbours), keeps the order, and None stands alone
    got = schemes([MADE, NIGHT, MADE, SKY], "en", poems=["p", "p", None, "p"])
    assert got == ["abab", "abab", "abcb", "abab"]
    with pytest.raises(PoevalError, match="3 poem keys for 4 stanzas"):
        schemes([MADE, NIGHT, MADE, SKY], "en", poems=["p", "p", "p"])


def test_end_word():
    assert end_word("Shall I compare thee to a summer's day?") == "day"
    assert end_word("Was iſt in der Welt doch ſchlimmer/") == "ſchlimmer"
    assert end_word("O/ da hilfft kein Huͤten nicht/") == "nicht"
    assert end_word("So fair a thing o'er") == "o'er"
    assert end_word("...") == ""
    assert end_word("") == ""


def test_normalise_de():
    assert spelling.normalise_de("ſchlimmer") == "schlimmer"
    assert spelling.normalise_de("Huͤten") == "Hüten"
    assert spelling.normalise_de("ſchaͤtzen") == "schätzen"
    assert spelling.normalise_de("beliebẽ") == "belieben"
    assert spelling.normalise_de("Fiſcherey") == "Fischerei"
    assert spelling.normalise_de("vmb") == "um"
    assert spelling.normalise_de("Noth") == "Not"
    assert spelling.normalise_de("Jch ſehe/ daß") == "Ich sehe, daß"
    assert spelling.normalise_de("weꝛden") == "werden"


# ---------------------------------------------------------------- pairwise

def test_english_pairs():
    assert rhyme_relation("day", "way", "en") == "rhyme"
    assert rhyme_relation("day", "day", "en") == "repetition"
    assert rhyme_relation("Day", "day!", "en") == "repetition"
    assert rhyme_relation("day", "night", "en") == "none"
    assert rhyme_relation("table", "orange", "en") == "none"
    # historic / eye rhyme: accepted (the gold links such pairs far more often than not)
    assert rhyme_relation("love", "move", "en") == "rhyme"
    # two pronunciations of wind
    assert rhyme_relation("wind", "kind", "en") == "rhyme"
    assert rhyme_relation("wind", "sinned", "en") == "rhyme"
    # archaic spellings
    assert rhyme_relation("o'er", "more", "en") == "rhyme"
    assert rhyme_relation("lov'd", "mov'd", "en") == "rhyme"


@needs_espeak
def test_english_oov_via_espeak():
    import pronouncing

    assert pronouncing.phones_for_word("glorbday") == []
    assert rhyme_relation("glorbday", "way", "en") == "rhyme"
    assert rhyme_relation("flimflammery", "tree", "en") in ("rhyme", "none")  # defined, no crash


@needs_espeak
def test_german_pairs():
    assert rhyme_relation("Herz", "Schmerz", "de") == "rhyme"
    assert rhyme_relation("Liebe", "Triebe", "de") == "rhyme"
    assert rhyme_relation("Glück", "Blick", "de") == "rhyme"  # impure: ü ~ i
    assert rhyme_relation("Leute", "Zeite", "de") == "rhyme"  # eu ~ ei
    assert rhyme_relation("Herz", "Herz", "de") == "repetition"
    assert rhyme_relation("Herz", "Baum", "de") == "none"
    # historical spelling on both sides
    assert rhyme_relation("Huͤten", "bluͤten", "de") == "rhyme"
    assert rhyme_relation("ſchlimmer/", "Zimmer.", "de") == "rhyme"
    assert rhyme_relation("Noth", "todt", "de") == "rhyme"


def test_historical_and_eye_rhymes():
    # hand-written Early Modern English knowledge: historically rhyming vowels (level vh), eye rhymes
    for a, b in (("prove", "love"), ("join", "line"), ("sea", "obey"), ("heart", "wert"), ("blood", "good")):
        assert rhyme.rhyme_level(a, b, "en").startswith("vh"), (a, b)
        assert rhyme_relation(a, b, "en") == "rhyme", (a, b)
    assert rhyme.rhyme_level("prove", "love", "en").endswith("+eye")
    assert rhyme.rhyme_level("wind", "kind", "en") == "v2c3+eye"  # the old /aɪ/ pronunciation of wind
    assert rhyme.rhyme_level("dog", "cat", "en") == "v0c0"
    assert rhyme_relation("dog", "cat", "en") == "none"
    assert rhyme_relation("join", "lake", "en") == "none"
    # the unstressed-ending licence: -y with /aɪ/, a reduced vowel before the same consonants
    assert rhyme.rhyme_level("eternity", "die", "en") == "v0c0y"
    assert rhyme.rhyme_level("enemies", "eyes", "en") == "v0c0y"
    assert rhyme.rhyme_level("eternity", "dog", "en") == "v0c0"


@needs_espeak
def test_sounds_the_phones_write_apart():
    """Rhymes that the phone strings spell differently: German espeak-ng's h after a vowel (the spelling's
    length mark), the optional schwa of English fire-words, t between consonants, ŋk ~ ŋ and -en ~ -e
    (loose consonants, level c1)."""
    for a, b in (("geweiht", "Streit"), ("Zeit", "reiht")):
        assert rhyme.rhyme_level(a, b, "de").startswith("v2c3"), (a, b)
    assert rhyme.rhyme_level("higher", "lyre", "en") == rhyme.rhyme_level("liars", "spires", "en") == "v2c3"
    assert rhyme.rhyme_level("sex", "effects", "en") == "v2c1"
    assert rhyme.rhyme_level("krank", "Gesang", "de") == "v2c1"
    assert rhyme.rhyme_level("Hechte", "fechten", "de") == "v2c1"
    assert rhyme.rhyme_level("Hecht", "fechten", "de") == "v2c0"   # the weak n goes, the t does not


def test_a_verse_end_is_read_with_its_stress_and_as_a_word():
    """CMUdict's weak forms (o'er as ER0) and letter-by-letter readings (us as U.S.) are not how a word
    ends a verse: best ~ us was a loose rhyme through U.S.'s stressed EH S."""
    assert phones("us", "en") == ((("ʌ", True, 1), ("s", False, 0)),)
    assert phones("o'er", "en") == ((("ɔː", True, 1), ("ɹ", False, 0)),)
    assert rhyme.rhyme_level("best", "us", "en") == "v0c1"
    assert rhyme.rhyme_level("us", "fuss", "en") == "v2c3"
    assert phones("a", "en") and all(any(st for _, v, st in p if v) for p in phones("a", "en"))


def test_the_pair_table_speaks_where_dev_saw_the_detail():
    """A level that leaves the stressed vowels open (v0c3: the rest agrees) gets the pair table's ratio for
    the two vowels where dev had them, else its level's; the detail names the vowels, sorted."""
    assert rhyme.rhyme_level("yet", "flit", "en") == "v0c3"
    assert rhyme.pair_levels(["it is yet", "to flit"], "en", detail=True)[0][1] == "v0c3 ɛ/ɪ"
    assert rhyme.pair_levels(["to flit", "it is yet"], "en", detail=True)[0][1] == "v0c3 ɛ/ɪ"
    assert rhyme.pair_levels(["the ferry", "the fee"], "en", detail=True)[0][1] == "v0c0w"   # a tail: none
    # where nothing after the vowels agrees, the detail counts the shared final letters, up to SUFFIX_CAP
    assert rhyme.pair_levels(["fit", "illa", "wit", "Domitilla"], "en", detail=True)[1][3] == "v0c0 s4"
    assert rhyme.pair_levels(["even", "heaven"], "en", detail=True)[0][1].endswith(" s3")
    assert rhyme.SUFFIX_CAP == 4
    table = {"v0c3": -1.0, "v0c3 ɛ/ɪ": 0.5}
    assert rhyme.ratio("v0c3 ɛ/ɪ", table=table) == 0.5
    assert rhyme.ratio("v0c3 aɪ/ɛ", table=table) == -1.0     # unseen detail: the level's ratio
    assert rhyme.ratio("v9c9", table=table) == 0.0          # unknown level: no evidence
    fit = rhyme.fitted()
    assert rhyme.ratio("v0c3 ɛ/ɪ", "en") == fit["pair_llr"]["en"]["v0c3 ɛ/ɪ"] > fit["llr"]["en"]["v0c3"]


def test_fit_pair_llr_shrinks_towards_the_level():
    """Hand-computed on one 8-line stanza (7 of its 28 pairs linked): level v0c3 linked in 7 of 12 pairs
    (its ratio: log 7/5 less the log-odds of all pairs, log 7/21); of these, detail ɛ/ɪ linked 3 of 3
    times, detail æ/ɪ 0 of 2 times; each starts from PAIR_PRIOR pseudo-pairs at the level's rate."""
    import math

    bench = _bench()
    row = {"scheme": "aaaabbcd", "_lev": None}
    # all 28 pairs of one 8-line stanza: linked are the 6 pairs within aaaa and the one bb pair
    pairs = list(itertools.combinations(range(8), 2))
    linked = [(i, j) for i, j in pairs if row["scheme"][i] == row["scheme"][j]]
    lev = [["identical"] * 8 for _ in range(8)]
    keys = iter(["v0c3 ɛ/ɪ"] * 3 + ["v0c3"] * 4)
    for i, j in linked:
        lev[i][j] = lev[j][i] = next(keys)
    others = iter(["v0c3 æ/ɪ"] * 2 + ["v0c3"] * 3 + ["v2c3"] * 100)
    for i, j in pairs:
        if (i, j) not in linked:
            lev[i][j] = lev[j][i] = next(others)
    row["_lev"] = lev
    llr = {lev_: 0.0 for lev_ in rhyme.LEVELS}
    odds = math.log(7 / 21)
    llr["v0c3"] = round(math.log(7 / 5) - odds, 3)
    got = bench.fit_pair_llr([row], "en", llr)
    q = 1 / (1 + math.exp(-(llr["v0c3"] + odds)))
    m = bench.PAIR_PRIOR
    assert got["v0c3 ɛ/ɪ"] == pytest.approx(math.log((3 + m * q) / (0 + m * (1 - q))) - odds, abs=1e-3)
    assert got["v0c3 æ/ɪ"] == pytest.approx(math.log((0 + m * q) / (2 + m * (1 - q))) - odds, abs=1e-3)
    assert got["v0c3 æ/ɪ"] < llr["v0c3"] < got["v0c3 ɛ/ɪ"]
    assert set(got) == {"v0c3 ɛ/ɪ", "v0c3 æ/ɪ"}


@needs_espeak
def test_german_eye_rhymes_read_the_sound_of_the_letters():
    """espeak-ng stresses unknown words on the first syllable (Tapeten: tˈɑpətən), so their rhyme is found
    by the letters, read for their sound: length marks, doubled letters, ä ~ e, ö ~ e, ü ~ i."""
    for a, b in (("Tapeten", "Blumenbeeten"), ("Pokälen", "befehlen"), ("Trompete", "Purpurröte"),
                 ("Liebesketten", "Singraketen")):
        assert rhyme.rhyme_level(a, b, "de").endswith("+eye"), (a, b)
        assert rhyme_relation(a, b, "de") == "rhyme", (a, b)
    assert not rhyme.rhyme_level("Tapeten", "Tinte", "de").endswith("+eye")


def test_early_modern_spellings():
    for old, new in (("loue", "love"), ("ioy", "joy"), ("mylde", "mild"), ("penne", "pen"), ("griefe", "grief"),
                     ("despayre", "despair"), ("theefe", "thief"), ("flye", "fly"), ("vnto", "unto")):
        assert new in en_candidates(old), (old, en_candidates(old))
    # the long s misread as f comes after the modern spellings (griefe is grief, not griese)
    cands = en_candidates("griefe")
    assert cands.index("grief") < cands.index("griese")
    assert rhyme_relation("loue", "aboue", "en") == "rhyme"
    assert rhyme_relation("passe", "glass", "en") == "rhyme"  # not the French passé
    assert rhyme_relation("ioy", "employ", "en") == "rhyme"


@needs_espeak
def test_scheme_historical_rhymes():
    quatrain = [
        "Come live with me and be my love,",
        "And all the joys of earth we'll join,",
        "That valleys, groves, and hills may prove,",
        "Where every rose and lily line.",
    ]
    assert scheme(quatrain, "en") == "abab"
    couplets = ["The hawthorn bends beneath the wind,", "The shepherd's heart is ever kind;",
                "And though the sun upon the sea", "Sinks down, yet all will well obey."]
    assert scheme(couplets, "en") == "aabb"


@needs_espeak
def test_scheme_loose_rimes_across_exact_couplets(monkeypatch):
    # two exact couplets whose rimes are only loosely alike (historical vowels: vow/go, moon/run) stay two
    # couplets; without the stanza context the loose cross pairs outweigh them and join all four lines
    couplets = ["He made a solemn vow", "To wipe his weary brow", "And then he had to go", "For he was tired so"]
    moon = ["We walk beneath the moon", "the summer ends too soon", "and when the rivers run",
            "we sleep beneath the sun"]
    assert scheme(couplets, "en") == "aabb" and scheme(moon, "en") == "aabb"
    # a poet who rhymes loosely throughout (no exact pair beside the loose ones) is not held to exactness
    assert scheme(["Come live with me and be my love,", "And all the joys of earth we'll join,",
                   "That valleys, groves, and hills may prove,", "Where every rose and lily line."], "en") == "abab"
    monkeypatch.setitem(CONTEXT, "en", None)
    assert scheme(couplets, "en") == "aaaa" and scheme(moon, "en") == "aaaa"


def test_context_penalty():
    llr = {"x": 5.0, "l": 1.5, "n": -3.0}
    # aabb by exact rhymes (x), every cross pair loose (l)
    lev = [["identical", "x", "l", "l"], ["x", "identical", "l", "l"], ["l", "l", "identical", "x"],
           ["l", "l", "x", "identical"]]
    pen = context_penalty(lev, llr, 3.0, 3.0, 1.0)
    assert pen[0, 1] == pen[2, 3] == 0.0 and pen[0, 2] == pen[1, 3] == pen[0, 3] == 3.0
    w = level_weights(lev, llr, 0.0, None, (3.0, 3.0, 1.0))
    assert best_partition(w) == "aabb"
    assert best_partition(level_weights(lev, llr, 0.0, None)) == "aaaa"
    # a loose third line beside one exact pair loses `one`; a repetition and a non-rhyme are never lowered
    lev = [["identical", "x", "l", "identical"], ["x", "identical", "n", "n"], ["l", "n", "identical", "n"],
           ["identical", "n", "n", "identical"]]
    pen = context_penalty(lev, llr, 3.0, 3.0, 1.0)
    assert pen[0, 2] == 1.0 and pen[0, 3] == 0.0
    w = level_weights(lev, llr, 0.0, None, (3.0, 3.0, 1.0))
    assert w[1, 2] == -3.0 and w[0, 3] == 0.0  # unchanged
    # no strong pair at all: nothing changes
    lev = [["identical", "l", "n"], ["l", "identical", "l"], ["n", "l", "identical"]]
    assert not context_penalty(lev, llr, 3.0, 3.0, 1.0).any()


@needs_espeak
def test_repeated_end_word_is_linked():
    # the dev gold links a repeated end word (EN quatrains 38 of 42 repetitions, DE 57 of 59): so does the
    # scheme, and the repetition flag still tells it apart from a rhyme
    st = ["I saw the light", "upon the hill", "I saw the light", "and all was still"]
    assert scheme(st, "en") == "abab"
    assert rhyme.is_repetition(st[0], st[2], "en") and not rhyme.is_repetition(st[1], st[3], "en")
    de = ["Ich geh zur Nacht", "und sing ein Lied", "ich geh zur Nacht", "das niemand sieht"]
    assert scheme(de, "de") == "abab" and rhyme.is_repetition(de[0], de[2], "de")


def test_levels_defined():
    assert rhyme.rhyme_level("day", "way", "en") in rhyme.LEVELS
    assert set(rhyme.LLR["en"]) == set(rhyme.LEVELS)
    assert set(rhyme.LLR["de"]) == set(rhyme.LEVELS)


def test_bad_language():
    with pytest.raises(PoevalError):
        scheme(["a", "b"], "fr")
    with pytest.raises(PoevalError):
        rhyme_relation("a", "b", "xx")


def test_missing_phonemizer(monkeypatch):
    monkeypatch.setattr(espeak.shutil, "which", lambda name: None)
    with pytest.raises(PoevalError, match="apt-get install espeak-ng"):
        espeak.check_phonemizer()
    e = espeak.Espeak("de")
    with pytest.raises(PoevalError, match="apt-get install espeak-ng"):
        e.ipa("Haus")


# ---------------------------------------------------------------- schemes

@needs_espeak
def test_scheme_hand_cases():
    quatrain = [
        "Shall I compare thee to a summer's day?",
        "Thou art more lovely and more temperate:",
        "Rough winds do shake the darling buds of May,",
        "And summer's lease hath all too short a date:",
    ]
    assert scheme(quatrain, "en") == "abab"
    couplets = ["The cat sat on the mat", "and wore a little hat", "the dog ran in the sun", "and had a lot of fun"]
    assert scheme(couplets, "en") == "aabb"
    de = ["Mein Herz ist schwer", "die Nacht ist lang", "der Schmerz ist sehr", "mir ist so bang"]
    assert scheme(de, "de") == "abab"
    assert schemes([quatrain, couplets], "en") == ["abab", "aabb"]


def test_bad_input_stanzas():
    assert scheme([], "en") == ""
    assert scheme(["Only one line here"], "en") == "a"
    s = scheme(["12345", "!!!", "67890", "---"], "en")
    assert s == "abcd"
    s = scheme(["Привет мир", "Привет мир", "こんにちは", ""], "de")
    assert len(s) == 4 and s == normalise_scheme(s)
    s = scheme(["The night is long", "4 5 6", "and sings a song", "???"], "en")
    assert s[0] == s[2] and s[1] != s[3] and len(s) == 4
    with pytest.raises(PoevalError):
        scheme("not a list", "en")


def test_long_stanza_label_length():
    lines = ["the day is bright", "the sun is high", "we walk at night", "beneath the sky"] * 3 + ["x", "y"]
    s = scheme(lines, "en")
    assert len(s) == 14 and s == normalise_scheme(s)


# ---------------------------------------------------------------- regression on the dev gold

REACHED = {"en": 0.947, "de": 0.947}  # exact 4-line accuracy measured on the fixed subset below (300 stanzas)


def _subset(shared_data, lang, k=300):
    path = shared_data / "gold" / f"rhyme_{lang}_dev.jsonl"
    if not path.exists():
        pytest.skip(f"{path} not available")
    rows = [json.loads(x) for x in path.open(encoding="utf-8")]
    rows = [r for r in rows if len(r["lines"]) == 4]
    step = max(1, len(rows) // k)
    return rows[::step][:k]


@needs_espeak
@pytest.mark.parametrize("lang", ["en", "de"])
def test_regression_dev_subset(shared_data, lang):
    rows = _subset(shared_data, lang)
    preds = schemes([r["lines"] for r in rows], lang)
    acc = sum(p == normalise_scheme(r["scheme"]) for p, r in zip(preds, rows)) / len(rows)
    assert acc >= REACHED[lang] - 0.02, acc


@needs_espeak
def test_dev_figures_by_poet(shared_data):
    """The 5-fold cross-validation by poet of docs/results/rhyme.md and benchmarks/README.md: 4-line exact
    scheme accuracy with everything fitted (level ratios, pair table, scheme prior, distance shifts) on the
    other folds' poets; each stanza alone, and with its poem's stanzas voting (``POEM_VOTE``; the gold's ids
    name the poem). Issue 42 asks for 95 %: alone German reaches it and English does not; with the poem both."""
    bench = _bench()
    want = {"en": (1544, 1463, 1503), "de": (1701, 1625, 1650)}
    for lang, (n4, alone, voted) in want.items():
        if not (shared_data / "gold" / f"rhyme_{lang}_dev.jsonl").exists():
            pytest.skip("the dev gold is not available")
        rows = bench.load(lang)
        for r in rows:
            r["_lev"] = rhyme.pair_levels(r["lines"], lang, detail=True)
        weights = bench.fold_weights(rows, lang, 5, PRIOR_WEIGHT[lang], rhyme.LINK_BIAS[lang], True, CONTEXT[lang])
        for poem, right in ((0.0, alone), (POEM_VOTE[lang], voted)):
            res = bench.evaluate(rows, bench.vote_predict(rows, weights, poem))
            assert res["n4"] == n4 and round(res["acc4"] * n4) == right, (lang, poem)


# ---------------------------------------------------------------- metre (optional labels)

def test_metre_english():
    sonnet = [
        "Shall I compare thee to a summer's day?",
        "Thou art more lovely and more temperate:",
        "Rough winds do shake the darling buds of May,",
        "And summer's lease hath all too short a date:",
    ]
    assert metre(sonnet, "en") == "iambic"
    byron = [
        "The Assyrian came down like the wolf on the fold,",
        "And his cohorts were gleaming in purple and gold;",
    ]
    assert metre(byron, "en") == "anapaestic"
    assert metre(["", "123"], "en") == "other"                      # no syllable: no foot
    with pytest.raises(PoevalError, match="unsupported language"):
        metre(["Herz"], "fr")


def test_metre_german_by_its_stresses():
    """German stanzas get their family from espeak-ng's stresses, the alexandrine included (Gryphius's "Es ist
    alles eitel", iambic hexameter)."""
    gryphius = ["Du siehst, wohin du siehst, nur Eitelkeit auf Erden.",
                "Was dieser heute baut, reißt jener morgen ein;",
                "Wo itzund Städte stehn, wird eine Wiese sein,",
                "Auf der ein Schäferskind wird spielen mit den Herden."]
    assert metre(gryphius, "de") == "alexandrine"
    assert metre(["Sah ein Knab ein Röslein stehn,", "Röslein auf der Heiden,"], "de") == "trochaic"


# ---------------------------------------------------------------- the benchmark's cross-validation by poet

def _bench():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_rhyme.py"
    spec = importlib.util.spec_from_file_location("bench_rhyme", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_cv_folds_by_poet(monkeypatch):
    bench = _bench()
    period = {f"p{k}": 17 + k % 2 for k in range(5)} | {f"m{k}": 20 for k in range(7)}
    rows = [{"author": a, "scheme": "abab" if k % 3 else "aabbcc", "_lev": [["identical"] * 4] * 4}
            for a in period for k in range(3 + len(a) + int(a[1:]))]
    fold = bench.poet_folds(rows, 5, period)
    # the five 17th-18th-century poets are spread over the five folds
    assert sorted(fold[a] for a in period if period[a] < 20) == [0, 1, 2, 3, 4]
    # everything fitted (level ratios and pair table, scheme prior, distance shifts) sees only the training
    # poets; every poet is scored exactly once, in its own fold
    from collections import Counter

    fitted: dict[str, list[set]] = {"levels": [], "prior": [], "dist": []}

    def record(kind, out):
        return lambda train, *a: fitted[kind].append({r["author"] for r in train}) or out

    monkeypatch.setattr(bench, "POET_PERIOD", period)
    monkeypatch.setattr(bench, "fit_ratios", record("levels", {}))
    monkeypatch.setattr(bench, "scheme_counts", record("prior", Counter()))
    monkeypatch.setattr(bench, "fit_dist_bias", record("dist", []))
    scored = []
    import numpy as np

    monkeypatch.setattr(bench, "row_weights", lambda test, *a: scored.append({r["author"] for r in test})
                        or [(np.zeros((4, 4)), None)] * len(test))
    bench.cross_validate(rows, "en", 5, 0.5, 0.0, True)
    assert len(scored) == 5 and all(len(v) == 5 for v in fitted.values())
    for k, test in enumerate(scored):
        for kind in fitted:
            assert not fitted[kind][k] & test and fitted[kind][k] | test == set(period)
    assert sorted(a for t in scored for a in t) == sorted(period)


def test_nested_poem_chooses_on_the_training_poets_only(monkeypatch):
    """The poem vote's weight of each fold is chosen by a CV on that fold's training poets alone (ties to the
    smaller weight); the fold is then scored with the outer fit's weights and its fold's choice."""
    bench = _bench()
    period = {f"p{k}": 20 for k in range(6)}
    rows = [{"author": a, "id": f"c/{a}/0/{i}", "scheme": "abab", "_lev": [["identical"] * 4] * 4}
            for a in period for i in range(3)]
    monkeypatch.setattr(bench, "POET_PERIOD", period)
    fits = []

    def weights(rs, lang, k, *a):
        fits.append(({r["author"] for r in rs}, k))
        return [("w", r["author"]) for r in rs]

    def vote(rs, wp, lam):
        assert [w[1] for w in wp] == [r["author"] for r in rs]   # each row with its own weights
        return ["abab" if lam in (6.0, 8.0) else "abcd"] * len(rs)

    monkeypatch.setattr(bench, "fold_weights", weights)
    monkeypatch.setattr(bench, "vote_predict", vote)
    preds, chosen = bench.nested_poem(rows, "en", 3, 0.5, 0.0, False, None)
    assert chosen == [6.0] * 3 and preds == ["abab"] * len(rows)
    assert fits[0] == (set(period), 3)
    folds = bench.poet_folds(rows, 3)
    for f, (poets, k) in enumerate(fits[1:]):
        assert k == 2 and poets == {a for a in period if folds[a] != f}


def test_error_classes_by_hand():
    """Each wrong label by its wrong pairs and the level of the first (benchmarks/bench_rhyme.py --errors)."""
    bench = _bench()
    lev = [["identical", "v0c0 s0", "v0c0w", "v2c3+eye"], ["v0c0 s0", "identical", "identical", "vhc3"],
           ["v0c0w", "identical", "identical", "v0c1"], ["v2c3+eye", "vhc3", "v0c1", "identical"]]
    cls = bench.error_class
    assert cls(lev, "aabc", "abcd") == "missed: no shared sound"              # 0~1: v0c0 (its detail aside)
    assert cls(lev, "abab", "abcb") == "missed: a loose rhyme rated too low"  # 0~2: v0c0 with a tail
    assert cls(lev, "abcb", "abcd") == "missed: a loose rhyme rated too low"  # 1~3: historical vowels
    assert cls(lev, "aabb", "abcb") == "a link in the wrong place"            # 0~1, 2~3 missed, 1~3 added
    assert cls(lev, "abcb", "abab") == "extra: a feminine or unstressed ending only"
    assert cls(lev, "abcd", "abbc") == "extra: a repeated end word"
    assert cls(lev, "abcd", "aabc") == "extra: a rhyme the gold keeps apart"
    wrong, classes, moved = bench.error_classes(
        [{"scheme": "abab", "_lev": lev}, {"scheme": "aabc", "_lev": lev}, {"scheme": "abcde", "_lev": lev}],
        ["abcb", "aabc", "abcde"], ["abab", "abcd", "abcde"])
    assert moved == (1, 1) and wrong == {("aabc", "abcd"): 1} and classes == {"missed: no shared sound": 1}


def test_nested_context_chooses_on_the_training_poets_only(monkeypatch):
    """The stanza context of each fold is chosen by a CV on that fold's training poets alone, from the grid,
    by 4-line accuracy; each poet is scored once, with its fold's choice."""
    bench = _bench()
    period = {f"p{k}": 20 for k in range(6)}
    rows = [{"author": a, "scheme": "abab", "lines": ["x"] * 4, "_lev": [["identical"] * 4] * 4}
            for a in period for _ in range(3)]
    monkeypatch.setattr(bench, "POET_PERIOD", period)
    seen = []

    def inner(train, lang, k, weight, bias, dist, ctx, fold=None):
        seen.append(({r["author"] for r in train}, k, ctx))
        return ["abab" if ctx == (9.0, 9.0, 9.0) else "aaaa"] * len(train)   # only this setting is right

    monkeypatch.setattr(bench, "cross_validate", inner)
    used = []
    monkeypatch.setattr(bench, "predict", lambda test, llr, bias, prior, dist, ctx: used.append(
        ({r["author"] for r in test}, ctx)) or ["abab"] * len(test))
    grid = [(1.0, 1.0, 1.0), (9.0, 9.0, 9.0)]
    preds, chosen = bench.nested_context(rows, "en", 3, 0.5, 0.0, False, grid)
    assert chosen == [(9.0, 9.0, 9.0)] * 3 and preds == ["abab"] * len(rows)
    assert len(seen) == 3 * len(grid) and all(k == 2 for _, k, _ in seen)
    for (train, _, _), (test, ctx) in zip(seen[::2], used):
        assert not train & test and train | test == set(period) and ctx == (9.0, 9.0, 9.0)


def test_period_and_poet_out_folds():
    bench = _bench()
    rows = [{"author": a, "scheme": "abab"} for a in ("Richard Lovelace", "A. E. Housman", "Rupert Brooke")]
    lopo = bench.poet_out_folds(rows)
    assert sorted(lopo.values()) == [0, 1, 2]
    per = bench.period_folds(rows, "en")
    assert per["A. E. Housman"] == per["Rupert Brooke"] == 20 and per["Richard Lovelace"] == 17
    de = bench.period_folds([{"author": "Georg Trakl"}, {"author": "Friedrich von Logau"}], "de")
    assert de == {"Georg Trakl": 20, "Friedrich von Logau": 17}
    est, lo, hi = bench.poet_spread(rows * 2, ["abab", "abab", "abcb"] * 2, reps=200)
    assert abs(est - 2 / 3) < 1e-9 and 0 <= lo <= est <= hi <= 1


def test_gold_audit_fixture(shared_data):
    from pathlib import Path

    audit = [json.loads(x) for x in (Path(__file__).parents[1] / "fixtures" / "rhyme_gold_audit.jsonl").open()]
    assert len(audit) == 100 and len({a["id"] for a in audit}) == 100
    assert {a["verdict"] for a in audit} <= {"gold", "detector", "ambiguous"} and all(a["note"] for a in audit)
    for lang in ("en", "de"):
        path = shared_data / "gold" / f"rhyme_{lang}_dev.jsonl"
        if not path.exists():
            pytest.skip(f"{path} not available")
        gold = {r["id"]: r for r in map(json.loads, path.open(encoding="utf-8"))}
        for a in (a for a in audit if a["lang"] == lang):
            assert normalise_scheme(gold[a["id"]]["scheme"]) == a["gold"] != a["detector"]
            assert len(a["detector"]) == len(gold[a["id"]]["lines"])


# ---------------------------------------------------------------- the fitted tables (poetry/data/rhyme_fit.json)

def test_fitted_tables_are_the_package_file():
    import math

    from poeval.poetry import schemes as detector

    fit = rhyme.fitted()
    assert fit is rhyme.fitted()   # read once
    assert rhyme.LLR is fit["llr"] and detector.DIST_BIAS is fit["dist_bias"]
    assert detector.SCHEME_COUNTS_4 is fit["scheme_counts_4"]
    for lang in ("en", "de"):
        assert set(fit["llr"][lang]) == set(rhyme.LEVELS)
        assert all(math.isfinite(x) and abs(x) < 20 for x in fit["llr"][lang].values())
        assert len(fit["dist_bias"][lang]) == 12
        assert set(fit["scheme_counts_4"][lang]) <= set(SCHEMES_4)
    prov = fit["provenance"]
    assert prov["command"] == "python benchmarks/bench_rhyme.py --fit"
    assert all(len(prov["dev_gold"][lang]["sha256"]) == 64 for lang in ("en", "de"))


def test_fitted_tables_are_counted_on_the_dev_gold(shared_data):
    """The file's provenance names the dev gold it was counted on, and its scheme counts and distance
    shifts are what that gold gives (counted here by hand, without the detector)."""
    import hashlib
    import math
    from collections import Counter

    fit = rhyme.fitted()
    for lang in ("en", "de"):
        path = shared_data / "gold" / f"rhyme_{lang}_dev.jsonl"
        assert hashlib.sha256(path.read_bytes()).hexdigest() == fit["provenance"]["dev_gold"][lang]["sha256"]
        golds = [json.loads(x)["scheme"] for x in path.open(encoding="utf-8")]

        def first_appearance(s):
            seen = {}
            return "".join(seen.setdefault(c.lower(), "abcdefghijklmnopqrstuvwxyz"[len(seen)]) for c in s)

        assert fit["scheme_counts_4"][lang] == dict(Counter(first_appearance(s) for s in golds if len(s) == 4))
        link, non = Counter(), Counter()
        for s in golds:
            if len(s) >= 5:
                for i, j in itertools.combinations(range(len(s)), 2):
                    (link if s[i] == s[j] else non)[min(j - i, 12)] += 1
        base = math.log(sum(link.values()) / sum(non.values()))
        hand = [math.log((link[d] + 1) / (non[d] + 1)) - base for d in range(1, 13)]
        assert fit["dist_bias"][lang] == pytest.approx(hand, abs=5e-4)


@pytest.mark.parametrize("change, named", [
    (lambda t: t["llr"]["en"].pop("v2c3"), "llr.en: missing key 'v2c3'"),
    (lambda t: t["llr"]["de"].update(v9c9=1.0), "llr.de: unknown key 'v9c9'"),
    (lambda t: t["llr"]["en"].update(v2c3=float("nan")), "llr.en.v2c3: expected a finite number"),
    (lambda t: t["dist_bias"]["de"].__setitem__(2, "x"), "dist_bias.de[3]: expected a finite number"),
    (lambda t: t["scheme_counts_4"]["en"].update(abab=-1), "scheme_counts_4.en.abab: expected a count >= 0"),
    (lambda t: t["scheme_counts_4"]["en"].update(abcde=1), "scheme_counts_4.en: unknown key 'abcde'"),
    (lambda t: t["provenance"].pop("commit"), "provenance: missing key 'commit'"),
    (lambda t: t["pair_llr"]["en"].update({"v9c9 a/b": 1.0}), "pair_llr.en: 'v9c9 a/b' is not a level and a"),
    (lambda t: t["pair_llr"]["de"].update(v2c3=1.0), "pair_llr.de: 'v2c3' is not a level and a detail"),
    (lambda t: t["pair_llr"]["en"].update({"v0c3 a/b": None}), "pair_llr.en.v0c3 a/b: expected a finite"),
    (lambda t: t.pop("dist_bias"), "missing key 'dist_bias'"),
])
def test_a_bad_fit_file_is_named(tmp_path, change, named):
    table = json.loads(json.dumps(rhyme.fitted()))
    change(table)
    path = tmp_path / "fit.json"
    path.write_text(json.dumps(table), encoding="utf-8")
    with pytest.raises(PoevalError, match=re.escape(f"{path}: {named}")):
        rhyme.load_fit(path)


def test_the_fit_command_writes_the_package_format(tmp_path, monkeypatch):
    import hashlib

    bench = _bench()
    for lang in ("en", "de"):
        (tmp_path / f"rhyme_{lang}_dev.jsonl").write_text(f'{{"lang": "{lang}"}}\n', encoding="utf-8")
    monkeypatch.setattr(bench, "GOLD", tmp_path)
    fit = rhyme.fitted()
    tables = {lang: (fit["llr"][lang], None, None, fit["dist_bias"][lang], fit["scheme_counts_4"][lang],
                     fit["pair_llr"][lang]) for lang in ("en", "de")}
    bench.write_fit(tmp_path / "out.json", tables)
    out = rhyme.load_fit(tmp_path / "out.json")
    tabled = ("llr", "pair_llr", "dist_bias", "scheme_counts_4")
    assert {k: out[k] for k in tabled} == {k: fit[k] for k in tabled}
    gold = (tmp_path / "rhyme_de_dev.jsonl").read_bytes()
    assert out["provenance"]["dev_gold"]["de"]["sha256"] == hashlib.sha256(gold).hexdigest()
    assert out["provenance"]["command"] == "python benchmarks/bench_rhyme.py --fit"
