"""poeval.poetry.stress and poeval.poetry.feet (the metre labeller by feet), and the metre gold it is fitted on."""

import collections
import hashlib
import importlib.util
import json
from pathlib import Path

import pytest

from poeval.errors import PoevalError
from poeval.poetry import feet, stress

ROOT = Path(__file__).resolve().parents[2]
GOLD = ROOT / "resources" / "gold"
# a fit with no preference, so that a pattern's cost is its mismatches and licences alone
PLAIN = {lang: {"weak": 0.5, "head": 0.3, "tail": 0.3, "other": 9.0, "bias": dict.fromkeys(feet.FOOT, 0.0)}
         for lang in ("en", "de")}


def _bench():
    spec = importlib.util.spec_from_file_location("bench_metre", ROOT / "benchmarks" / "bench_metre.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# --- stress ------------------------------------------------------------------------------------------

def test_english_stress_from_cmudict_and_the_function_words():
    # Shall I com-PARE thee to a SUM-mer's DAY: CMUdict's compare (0 1) and summer's (1 0); the monosyllables by
    # the function-word list
    assert stress.line_stress("Shall I compare thee to a summer's day?", "en") == "wwUSwwwSUs"
    assert stress.word_stress("tyger", "en") == "SU"          # an early modern spelling, looked up as tiger
    assert stress.word_stress("blorptastic", "en") == "xxx"   # not in CMUdict: its vowel groups, either way


def test_german_stress_from_espeak_ng():
    assert stress.line_stress("In diesen lichten Tagen.", "de") == "wSUSUSU"
    assert stress.word_stress("Vergänglichkeit", "de") == "USUx"   # fɛɾɡˈɛŋlɪçkˌaɪt: secondary, either way
    with pytest.raises(PoevalError, match="unsupported language"):
        stress.word_stress("word", "fr")


def test_a_final_function_word_counts_as_either_way():
    assert feet.codes_of("Who said it was me", "en").endswith("x")


# --- patterns and scanning -----------------------------------------------------------------------------

def test_patterns_with_their_licences():
    """(pattern, head licence, tail licence, feet), each written out by hand."""
    assert ("01010101", 0, 0, 4) in feet.patterns("iambic", 8)
    assert ("1010101", 1, 0, 4) in feet.patterns("iambic", 7)          # headless
    assert ("010101010", 0, 1, 4) in feet.patterns("iambic", 9)        # feminine ending
    assert ("1010100", 1, 1, 3) in feet.patterns("iambic", 7)          # both
    assert ("1010101", 0, 1, 4) in feet.patterns("trochaic", 7)        # catalectic
    assert ("01001001", 1, 0, 3) in feet.patterns("anapaestic", 8)     # begun as an iamb
    assert ("1001001", 1, 0, 3) in feet.patterns("anapaestic", 7)      # begun on the stress
    assert feet.patterns("dactylic", 5) == (("10010", 0, 1, 2),)       # one slack syllable dropped
    assert feet.patterns("dactylic", 4) == (("1001", 0, 1, 2),)        # two
    assert feet.patterns("amphibrachic", 5) == (("01001", 0, 1, 2), ("10010", 1, 0, 2))
    assert not feet.patterns("trochaic", 0)


@pytest.mark.parametrize("codes, family, n_feet", [
    ("USUSUSUSUS", "iambic", 5), ("SUSUSUSU", "trochaic", 4), ("UUSUUSUUS", "anapaestic", 3),
    ("SUUSUUSUU", "dactylic", 3), ("USUUSUUSU", "amphibrachic", 3)])
def test_a_regular_verse_scans_as_its_foot(codes, family, n_feet):
    assert feet.scan(codes, "en", PLAIN)[:2] == (family, n_feet)


def test_german_iambic_hexameter_is_the_alexandrine_and_short_verses_are_other():
    assert feet.scan("US" * 6 + "U", "de", PLAIN)[:2] == ("alexandrine", 6)
    assert feet.scan("US" * 6 + "U", "en", PLAIN)[:2] == ("iambic", 6)
    assert feet.scan("SS", "en", PLAIN)[0] == "other"
    assert feet.scan("SSSSSS", "en", PLAIN | {"en": PLAIN["en"] | {"other": 0.2}})[0] == "other"


def test_stanza_takes_its_verses_majority():
    lines = ["Tyger! tyger! burning bright", "In the forests of the night,", "What immortal hand or eye",
             "Could frame thy fearful symmetry?"]
    labels = [feet.line_metre(x, "en", PLAIN) for x in lines]
    top = collections.Counter(labels).most_common(1)[0][0]
    assert feet.stanza_metre(lines, "en", PLAIN) == top


def test_candidates_label_as_scan_does():
    codes = ["USUSUSUS", "SUSUSUS", "UUSUUSUUS", "sSUwsSUUUSU", "wSUUSUwUS", "S"]
    for lang in ("en", "de"):
        assert feet.Candidates(codes, lang).labels(PLAIN[lang]) == [feet.scan(c, lang, PLAIN)[0] for c in codes]


def test_a_fit_file_needs_every_constant(tmp_path):
    bad = tmp_path / "fit.json"
    bad.write_text(json.dumps({"en": {"weak": 0.5, "head": 0.3, "bias": {}}}))
    with pytest.raises(PoevalError, match="expected weak, head, tail, other"):
        feet.load_fit(bad)


# --- the gold, the shipped fit and the dev figures --------------------------------------------------

def _gold(lang):
    return [json.loads(x) for x in (GOLD / f"metre_{lang}.jsonl").open(encoding="utf-8")]


def test_the_gold_is_split_by_poet():
    for lang, n in (("en", 2253), ("de", 3507)):
        rows = _gold(lang)
        assert len(rows) == n and len({r["id"] for r in rows}) == n
        assert {r["label"] for r in rows} <= set(feet.LABELS)
        parts = collections.defaultdict(set)
        for r in rows:
            parts[r["split"]].add(r["poet"])
        assert set(parts) == {"dev", "test"} and not parts["dev"] & parts["test"]


def test_the_shipped_constants_are_the_fit_on_dev():
    """poetry/data/metre_fit.json is what bench_metre.py --fit writes: the fit on the dev part of the gold whose
    sha256 it records."""
    shipped = json.loads((ROOT / "src" / "poeval" / "poetry" / "data" / "metre_fit.json").read_text())
    for lang in ("en", "de"):
        gold_sha = hashlib.sha256((GOLD / f"metre_{lang}.jsonl").read_bytes()).hexdigest()
        assert shipped["_meta"]["gold"][lang]["sha256"] == gold_sha
        dev = [r for r in _gold(lang) if r["split"] == "dev"]
        assert feet.fit([feet.codes_of(r["text"], lang) for r in dev], [r["label"] for r in dev], lang) == shipped[lang]


def test_dev_figures_by_poet():
    """The cross-validated figures of docs/results/metre.md: verse accuracy, quatrain accuracy and the labeller
    before issue 42 on the same verses; every family the dev gold has is predicted."""
    bench = _bench()
    want = {"en": (0.740, 0.867), "de": (0.776, 0.881)}
    for lang, (verses, quatrains) in want.items():
        dev = bench.load(lang, "dev")
        res = bench.cross_validate(dev, lang, 5)
        assert res["accuracy"] == pytest.approx(verses, abs=5e-4)
        assert res["quatrains"]["accuracy"] == pytest.approx(quatrains, abs=5e-4)
        assert all(s["predicted"] > 0 for s in res["families"].values() if s["n"])
        assert len(res["folds"]) == 5 and len(set(bench.poet_folds(dev, 5).values())) == 5
        # per family and fold: the family's verses labelled right, None where the fold has none
        assert set(res["fold_recall"]) == {r["label"] for r in dev}
        fold = bench.poet_folds(dev, 5)
        train = [r for r in dev if fold[r["poet"]] != 0]
        consts = feet.fit([r["codes"] for r in train], [r["label"] for r in train], lang)
        iambic_0 = [r for r in dev if r["label"] == "iambic" and fold[r["poet"]] == 0]
        labels = feet.Candidates([r["codes"] for r in iambic_0], lang).labels(consts)
        assert res["fold_recall"]["iambic"][0] == pytest.approx(labels.count("iambic") / len(iambic_0))
    before = bench.today(bench.load("en", "dev"))
    assert before["accuracy"] == pytest.approx(0.525, abs=5e-4)
    assert before["families"]["trochaic"]["predicted"] == before["families"]["dactylic"]["predicted"] == 0
