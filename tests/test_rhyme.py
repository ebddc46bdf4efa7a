import itertools
import json
import shutil

import pytest

from poeval import rhyme
from poeval.errors import PoevalError
from poeval.rhyme import SCHEMES_4, end_word, normalise_scheme, rhyme_relation, scheme, schemes

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
        assert rhyme.best_partition(w) == target
        # with the shipped weak prior too
        assert rhyme.best_partition(w, rhyme.scheme_prior("en")) == target
        assert rhyme.best_partition(w, rhyme.scheme_prior("de")) == target


def test_inconsistent_pairs_resolved():
    import numpy as np

    w = np.full((4, 4), -3.0)
    # 0~1 and 1~2 strongly, 0~2 weakly against: transitivity is enforced, not dropped
    w[0, 1] = w[1, 0] = 4.0
    w[1, 2] = w[2, 1] = 4.0
    w[0, 2] = w[2, 0] = -1.0
    assert rhyme.best_partition(w) == "aaab"


def test_long_stanza_greedy():
    import numpy as np

    n = 14
    target = "ababcdcdefefgg"
    w = np.full((n, n), -3.0)
    for i, j in itertools.combinations(range(n), 2):
        if target[i] == target[j]:
            w[i, j] = w[j, i] = 3.0
    assert rhyme.best_partition(w) == target


# ---------------------------------------------------------------- end words

def test_end_word():
    assert end_word("Shall I compare thee to a summer's day?") == "day"
    assert end_word("Was iſt in der Welt doch ſchlimmer/") == "ſchlimmer"
    assert end_word("O/ da hilfft kein Huͤten nicht/") == "nicht"
    assert end_word("So fair a thing o'er") == "o'er"
    assert end_word("...") == ""
    assert end_word("") == ""


def test_normalise_de():
    assert rhyme.normalise_de("ſchlimmer") == "schlimmer"
    assert rhyme.normalise_de("Huͤten") == "Hüten"
    assert rhyme.normalise_de("ſchaͤtzen") == "schätzen"
    assert rhyme.normalise_de("beliebẽ") == "belieben"
    assert rhyme.normalise_de("Fiſcherey") == "Fischerei"
    assert rhyme.normalise_de("vmb") == "um"
    assert rhyme.normalise_de("Noth") == "Not"
    assert rhyme.normalise_de("Jch ſehe/ daß") == "Ich sehe, daß"
    assert rhyme.normalise_de("weꝛden") == "werden"


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
    monkeypatch.setattr(rhyme.shutil, "which", lambda name: None)
    with pytest.raises(PoevalError, match="apt-get install espeak-ng"):
        rhyme.check_phonemizer()
    e = rhyme._Espeak("de")
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

REACHED = {"en": 0.896, "de": 0.94}  # exact 4-line accuracy measured on the fixed subset below (~300 stanzas)


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


# ---------------------------------------------------------------- metre (optional labels)

def test_metre_english():
    sonnet = [
        "Shall I compare thee to a summer's day?",
        "Thou art more lovely and more temperate:",
        "Rough winds do shake the darling buds of May,",
        "And summer's lease hath all too short a date:",
    ]
    assert rhyme.metre(sonnet, "en") == "iambic"
    byron = [
        "The Assyrian came down like the wolf on the fold,",
        "And his cohorts were gleaming in purple and gold;",
    ]
    assert rhyme.metre(byron, "en") == "anapaestic"
    assert rhyme.metre(["", "123"], "en") in rhyme.METRES
    with pytest.raises(PoevalError):
        rhyme.metre(["Herz"], "de")


def test_metre_from_measures():
    assert rhyme.metre_from_measures(["iambic.tetra", "iambic.tri", "trochaic.tetra"]) == "iambic"
    assert rhyme.metre_from_measures(["trochaic.tetra", None, "other"]) == "trochaic"
    assert rhyme.metre_from_measures(["alexandrine"]) == "iambic"
    assert rhyme.metre_from_measures([]) == "other"
