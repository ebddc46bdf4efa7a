import random

import pytest

from poeval.errors import PoevalError
from poeval.metrics import lexical

lexicalrichness = pytest.importorskip("lexicalrichness")
LexicalRichness = lexicalrichness.LexicalRichness


def _lr(seq):
    """lexicalrichness on our own tokens (no preprocessing, no tokenizer), so tokenisation matches."""
    return LexicalRichness(list(seq), preprocessor=None, tokenizer=None)


def _zipf_tokens(n, vocab, seed):
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(vocab)]
    weights = [1.0 / (i + 1) for i in range(vocab)]
    return rng.choices(words, weights=weights, k=n)


def _brute_mattr(seq, w):
    if len(seq) < w:
        return len(set(seq)) / len(seq)
    windows = [seq[i:i + w] for i in range(len(seq) - w + 1)]
    return sum(len(set(x)) for x in windows) / (w * len(windows))


# --- ATTR -----------------------------------------------------------------------------------------

def test_attr_hand_computed_and_skips_empty_poems():
    # TTRs: "a b a" -> 2/3, "c d" -> 1, [] skipped
    assert lexical.attr([["a", "b", "a"], ["c", "d"], []]) == pytest.approx((2 / 3 + 1) / 2)
    assert lexical.attr([[], []]) is None
    assert lexical.attr([]) is None


# --- MATTR ----------------------------------------------------------------------------------------

def test_mattr_hand_computed():
    # a b a c b, window 3: (a b a) -> 2 types, (b a c) -> 3, (a c b) -> 3; mean TTR = 8 / 9
    assert lexical.mattr(list("abacb"), 3) == pytest.approx(8 / 9)
    # window 1: every window has TTR 1
    assert lexical.mattr(list("aaaa"), 1) == 1.0
    # window = n: a single window, the plain TTR
    assert lexical.mattr(list("aab"), 3) == pytest.approx(2 / 3)


def test_mattr_shorter_than_window_falls_back_to_ttr():
    assert lexical.mattr(list("aab"), 35) == pytest.approx(2 / 3)
    assert lexical.mattr([], 35) is None


@pytest.mark.parametrize("window", [1, 2, 5, 35, 100])
def test_mattr_sliding_counter_equals_brute_force(window):
    for seed in range(3):
        seq = _zipf_tokens(300, 60, seed)
        assert lexical.mattr(seq, window) == pytest.approx(_brute_mattr(seq, window), abs=1e-12)


@pytest.mark.parametrize("window", [10, 35, 50])
def test_mattr_agrees_with_lexicalrichness(window):
    for seed in range(3):
        seq = _zipf_tokens(2000, 400, seed)
        assert lexical.mattr(seq, window) == pytest.approx(_lr(seq).mattr(window_size=window), abs=1e-12)


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "35"])
def test_mattr_bad_window(bad):
    with pytest.raises(PoevalError, match="mattr_window"):
        lexical.mattr(list("abc"), bad)


# --- MTLD -----------------------------------------------------------------------------------------

def test_mtld_hand_computed_partial_factor():
    # forward  a a | b c d : "a a" -> TTR 1/2 = .5 <= .72, factor 1; remainder "b c d" TTR 1, partial 0
    #          -> 5 / 1 = 5
    # backward d c b a a   : TTRs 1, 1, 1, 1, 4/5 = .8 (never <= .72); partial (1 - .8) / (1 - .72) = 5/7
    #          -> 5 / (5/7) = 7
    # MTLD = (5 + 7) / 2 = 6
    seq = list("aabcd")
    assert lexical.mtld(seq) == pytest.approx(6.0)
    # the other way round the two passes swap: the same mean
    assert lexical.mtld(seq[::-1]) == pytest.approx(6.0)
    # each pass alone, where both passes read the same TTRs (1, 1, 1, 3/4 = .75 > .72, no factor completes):
    # one partial factor (1 - .75) / (1 - .72) = 25/28 in each direction -> 4 / (25/28) = 4.48
    assert lexical.mtld(list("abca")) == pytest.approx(4.48)
    assert lexical.mtld(seq) == pytest.approx(_lr(seq).mtld(threshold=0.72))


def test_mtld_factor_completes_when_ttr_reaches_threshold_exactly():
    # 18 distinct tokens then 7 repeats of the first: TTR 18/24 = .75 at token 24, 18/25 = .72 at token 25.
    # forward : TTR reaches .72 at the last token -> 1 complete factor, empty remainder -> 25 / 1 = 25
    #           (a strict "< .72" rule would leave a partial factor (1 - .72) / (1 - .72) = 1 -> also 25,
    #            so compare with a threshold a hair below: then no factor completes)
    # backward: u0 u0 | u0 u0 | u0 u0 | u0 u17 ... u1 u0 -> 3 factors, remainder 19 tokens / 18 types,
    #           partial (1 - 18/19) / .28 -> 25 / (3 + (1/19) / .28)
    seq = [f"u{i}" for i in range(18)] + ["u0"] * 7
    backward = 25 / (3 + (1 / 19) / 0.28)
    assert lexical.mtld(seq) == pytest.approx((25 + backward) / 2)
    assert lexical.mtld(seq) == pytest.approx(_lr(seq).mtld(threshold=0.72))


def test_mtld_factor_ends_at_ttr_equal_to_the_threshold_not_below_it():
    # threshold .5, a b a b c: TTRs 1, 1, 2/3, 2/4 = .5 -> the factor ends at "b" (<= .5); remainder "c", TTR 1,
    #   partial 0 -> forward 5 / 1 = 5. (A strict "< .5" rule: no factor, partial (1 - 3/5) / .5 = .8 -> 6.25.)
    # backward c b a b a: TTRs 1, 1, 1, 3/4, 3/5 -> no factor, partial .8 -> 6.25
    assert lexical.mtld(list("ababc"), threshold=0.5) == pytest.approx((5 + 6.25) / 2)


def test_mtld_all_unique_is_token_count_not_zero():
    # No factor completes and the remainder has TTR 1 (partial factor 0): the whole text is one factor.
    seq = [f"t{i}" for i in range(40)]
    assert lexical.mtld(seq) == 40.0
    assert lexical.mtld(["solo"]) == 1.0
    assert lexical.mtld(seq) == _lr(seq).mtld(threshold=0.72)


def test_mtld_empty_is_none():
    assert lexical.mtld([]) is None


@pytest.mark.parametrize("threshold", [0.66, 0.72, 0.75])
def test_mtld_agrees_with_lexicalrichness(threshold):
    for seed in range(4):
        seq = _zipf_tokens(3000, 800, seed)
        assert lexical.mtld(seq, threshold) == pytest.approx(_lr(seq).mtld(threshold=threshold), rel=1e-12)


def test_mtld_repetitive_text_is_low_and_diverse_text_is_high():
    assert lexical.mtld(["la"] * 100) == pytest.approx(2.0)   # every pair "la la" is a factor
    assert lexical.mtld(_zipf_tokens(3000, 3000, 0)) > lexical.mtld(_zipf_tokens(3000, 50, 0))


@pytest.mark.parametrize("bad", [0, 1, 1.5, -0.2, "0.72"])
def test_mtld_bad_threshold(bad):
    with pytest.raises(PoevalError, match="mtld_threshold"):
        lexical.mtld(list("abc"), bad)


# --- compute --------------------------------------------------------------------------------------

def test_compute_on_quatrains():
    samples = [
        ["The rose, the rose!", "is red", "and the sky", "is blue."],   # 11 tokens, 7 types
        ["Ein Wort", "ein Wort", "zwei", "drei"],                        # 6 tokens, 4 types
        ["...", "—", "!", "?"],                                          # no tokens: skipped by ATTR
    ]
    out = lexical.compute(samples, None, mattr_window=5)
    assert set(out) == {"attr", "mattr", "mtld", "n_tokens"}
    assert out["n_tokens"] == 17
    assert out["attr"] == pytest.approx((7 / 11 + 4 / 6) / 2)
    flat = ("the rose the rose is red and the sky is blue ein wort ein wort zwei drei").split()
    assert out["mattr"] == pytest.approx(_brute_mattr(flat, 5))
    assert out["mattr"] == pytest.approx(_lr(flat).mattr(window_size=5))
    assert out["mtld"] == pytest.approx(_lr(flat).mtld(threshold=0.72))
    assert 0.0 <= out["attr"] <= 1.0 and 0.0 <= out["mattr"] <= 1.0


def test_compute_default_window_short_sample_falls_back_to_ttr():
    out = lexical.compute([["a b", "c d", "a b", "e f"]])
    assert out["mattr"] == pytest.approx(6 / 8)     # 8 tokens < 35: plain TTR


def test_compute_empty_gives_none_not_nan():
    for samples in ([], [["!", "?", "...", "-"]]):
        out = lexical.compute(samples, [["a", "b", "c", "d"]])
        assert out == {"attr": None, "mattr": None, "mtld": None, "n_tokens": 0}


def test_compute_rejects_bad_params_even_on_empty_sample():
    with pytest.raises(PoevalError):
        lexical.compute([], mattr_window=0)


# --- the paper's code: lexical_diversity.flemmatize (metrics.lexical.tokens: flemmatize) -------------

@pytest.fixture
def paper_flemmatize(monkeypatch):
    """The package's own flemmatize. Its module imports pkg_resources, gone from current setuptools: a
    stand-in that resolves the package's data file lets the real code run."""
    import importlib
    import sys
    import types
    from importlib import resources

    pytest.importorskip("lexical_diversity")
    if importlib.util.find_spec("pkg_resources") is None:
        shim = types.ModuleType("pkg_resources")
        shim.resource_filename = lambda package, name: str(resources.files(package).joinpath(name))
        monkeypatch.setitem(sys.modules, "pkg_resources", shim)
        monkeypatch.delitem(sys.modules, "lexical_diversity.lex_div", raising=False)
    return importlib.import_module("lexical_diversity.lex_div")


PAPER_QUATRAIN = ["The cats were running, (running!) to the sea;", "A cat was run - don't ask - by the SYMBOLS' seas.",
                  "  mice and mouse, \"well-known\" women", "and a woman: was it better, best, good?"]


def test_flemmatize_is_the_papers_tokeniser_and_lemmatiser(paper_flemmatize):
    text = " ".join(PAPER_QUATRAIN)
    assert lexical.flemmatize(text) == paper_flemmatize.flemmatize(text)
    assert lexical.paper_quatrain_tokens(PAPER_QUATRAIN) == paper_flemmatize.flemmatize(text)
    for line in PAPER_QUATRAIN + ["", " ", "It's 10% (or so) -LRB- SYM", "Der Mond ist aufgegangen, die Sterne"]:
        assert lexical.flemmatize(line) == paper_flemmatize.flemmatize(line)


def test_flemmatize_mode_lemmatises_and_lowers_attr_against_the_default(paper_flemmatize):
    sample = [["cats cat", "runs run", "was is", "mice mouse"]]
    default = lexical.compute(sample)
    paper = lexical.compute(sample, tokens="flemmatize")
    assert lexical.quatrain_tokens(sample[0]) == ["cats", "cat", "runs", "run", "was", "is", "mice", "mouse"]
    assert paper_flemmatize.flemmatize(" ".join(sample[0])) == ["cat", "cat", "run", "run", "be", "be", "mouse",
                                                                 "mouse"]
    assert default["attr"] == 1.0 and paper["attr"] == 0.5 == paper_flemmatize.ttr(["cat", "cat", "run", "run",
                                                                                     "be", "be", "mouse", "mouse"])


# --- the paper's MTLD rule: lexical_diversity.mtld (metrics.lexical.mtld_rule: lexical_diversity) --------

PACKAGE = "lexical_diversity"


def _both(seq):
    """(poeval's published rule, poeval's package rule) on one token list."""
    return lexical.mtld(seq), lexical.mtld(seq, rule=PACKAGE)


def test_package_rule_segment_shorter_than_ten_tokens_does_not_end_a_factor(paper_flemmatize):
    # a a b c d e f g h i j k (12 tokens, 11 types).
    # published, forward : "a a" has TTR .5 <= .72: a factor; remainder b..k all distinct, partial 0 -> 12 / 1
    # package, forward   : "a a" has 2 < 10 tokens: no factor; no later segment falls below .72, so the
    #                      whole text is the partial factor (1 - 11/12) / .28 -> 12 / ((1/12) / .28) = 40.32
    # backward (both)    : k j ... b a a never falls to .72 -> the same partial factor, 40.32
    seq = list("aabcdefghijk")
    partial = 12 / ((1 / 12) / 0.28)
    assert _both(seq) == pytest.approx(((12 + partial) / 2, partial))
    assert lexical.mtld(seq, rule=PACKAGE) == pytest.approx(paper_flemmatize.mtld(seq), rel=1e-12)


def test_package_rule_ttr_exactly_at_the_threshold_does_not_end_a_factor(paper_flemmatize):
    # u0..u17, then u0 seven times (TTR 18/25 = .72 exactly at token 25), then v0..v9 (35 tokens, 28 types)
    # published, forward: the factor ends at token 25 (.72 <= .72); remainder v0..v9 distinct -> 35 / 1
    # package, forward  : .72 is not < .72 and TTR rises after it: one partial factor (1 - 28/35) / .28 -> 49
    # backward (both)   : v9..v0 u0 x6 reaches 11/16 = .6875 at token 16 (>= 10 tokens): a factor; remainder
    #                     u0 u17 ... u1 u0 (19 tokens, 18 types): partial (1/19) / .28
    seq = [f"u{i}" for i in range(18)] + ["u0"] * 7 + [f"v{i}" for i in range(10)]
    backward = 35 / (1 + (1 / 19) / 0.28)
    assert 18 / 25 == 0.72   # the tie is exact in floating point
    assert _both(seq) == pytest.approx(((35 + backward) / 2, (49 + backward) / 2))
    assert lexical.mtld(seq, rule=PACKAGE) == pytest.approx(paper_flemmatize.mtld(seq), rel=1e-12)


def test_package_rule_last_token_always_goes_to_the_partial_factor(paper_flemmatize):
    # a..h then a a a a (12 tokens, 8 types): TTR first falls below .72 at the last token (8/12)
    # published, forward: a factor at token 12 -> 12 / 1; backward a a | a a | h..a distinct -> 12 / 2
    # package, forward  : the last token's segment is a partial factor (1 - 8/12) / .28 = 1.19 -> 10.08
    #          backward : "a a a a h g f e d c" (10 tokens, TTR .7): a factor; remainder "b a" partial 0 -> 12
    seq = list("abcdefgh") + ["a"] * 4
    assert _both(seq) == pytest.approx(((12 + 6) / 2, (12 / ((1 - 8 / 12) / 0.28) + 12) / 2))
    assert lexical.mtld(seq, rule=PACKAGE) == pytest.approx(paper_flemmatize.mtld(seq), rel=1e-12)


@pytest.mark.parametrize("n, vocab", [(30, 12), (200, 60), (1500, 400), (3000, 800)])
def test_package_rule_equals_the_packages_mtld(paper_flemmatize, n, vocab):
    for seed in range(4):
        seq = _zipf_tokens(n, vocab, seed)
        published, package = _both(seq)
        assert package == pytest.approx(paper_flemmatize.mtld(seq), rel=1e-12)
        assert published != pytest.approx(package, rel=1e-6)   # the rules differ on these texts


def test_package_rule_keeps_the_token_count_where_the_package_gives_zero(paper_flemmatize):
    # no factor and an all-distinct text: the package's safe_divide gives 0; poeval keeps n (module doc)
    seq = [f"t{i}" for i in range(40)]
    assert lexical.mtld(seq, rule=PACKAGE) == 40.0 and paper_flemmatize.mtld(seq) == 0


def test_mtld_rule_must_be_known():
    with pytest.raises(PoevalError, match="mtld_rule must be one of mccarthy_jarvis, lexical_diversity"):
        lexical.mtld(["a"], rule="strict")
    assert lexical.compute([["a a b", "c", "d", "e"]], mtld_rule=PACKAGE)["mtld"] == lexical.mtld(
        list("aabcde"), rule=PACKAGE)
