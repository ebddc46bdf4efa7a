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
