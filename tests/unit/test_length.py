import numpy as np
import pytest
from scipy.stats import wasserstein_distance

from poeval.errors import PoevalError
from poeval.metrics import length
from poeval.text import tokens


def test_tokens_remove_punctuation_and_pure_punctuation_tokens():
    assert tokens("O, world — don't weep!") == ["O", "world", "dont", "weep"]
    assert tokens("... ; !") == []
    assert tokens("Ein „Wort“, zwei", lower=True) == ["ein", "wort", "zwei"]


def test_quatrain_length_counts_all_four_verses():
    assert length.quatrain_length(["a b, c", "d", "e f", "-- g --"]) == 7


def test_split_tokens_count_punctuation_alone_as_the_papers_get_len():
    # the paper's helper_functions.get_len: sum of len(line.split()) over the verses
    quatrain = ["Love / hate -- and \"fear\" & hope", "  \" ", "O, world — don't weep!", "a\tb  c"]
    # by hand: 8 (Love / hate -- and "fear" & hope), 1 ("), 5 (O, world — don't weep!), 3 (a b c)
    assert length.quatrain_length(quatrain, "split") == 8 + 1 + 5 + 3 == sum(len(v.split()) for v in quatrain)
    # poeval drops the tokens that are punctuation alone: /, --, &, ", —
    assert length.quatrain_length(quatrain) == length.quatrain_length(quatrain, "poeval") == 5 + 0 + 4 + 3
    a = length.lengths([quatrain, ["a b"] * 4], "split")
    assert a.tolist() == [17, 8]
    assert length.compute([quatrain], [quatrain], tokens="split")["mean"] == 17.0


def test_length_tokens_must_be_known():
    with pytest.raises(PoevalError, match="metrics.length.tokens must be one of poeval, split"):
        length.quatrain_length(["a"] * 4, "words")


def test_histogram_intersection_hand_computed():
    a = np.array([1, 1, 2, 3])      # p = {1: .5, 2: .25, 3: .25}
    b = np.array([1, 2, 2, 2, 4])   # q = {1: .2, 2: .6, 4: .2}
    assert length.histogram_intersection(a, b) == pytest.approx(0.2 + 0.25)
    assert length.histogram_intersection(a, a) == pytest.approx(1.0)
    assert length.histogram_intersection(np.array([1]), np.array([2])) == 0.0


def _paper_histogram_intersection(train, sample):
    """The paper's code (analysis/length.py): 30 density bins over the joint range, min over the sample's sum."""
    lo, hi = np.min([np.min(train), np.min(sample)]), np.max([np.max(train), np.max(sample)])
    hist_1, _ = np.histogram(train, bins=30, range=[lo, hi], density=True)
    hist_2, _ = np.histogram(sample, bins=30, range=[lo, hi], density=True)
    return np.sum(np.minimum(hist_1, hist_2)) / np.sum(hist_2)


def test_thirty_bins_reproduce_the_papers_code_and_differ_from_one_token_bins():
    a = np.array([10, 11, 12, 70])   # sample
    b = np.array([10, 11, 13, 70])   # training
    assert length.histogram_intersection(a, b) == pytest.approx(0.75)   # 12 and 13 are different lengths
    # 30 bins over [10, 70] are 2 tokens wide: 12 and 13 fall into one bin
    assert length.histogram_intersection(a, b, 30) == pytest.approx(1.0)
    assert length.histogram_intersection(a, b, 30) == pytest.approx(_paper_histogram_intersection(b, a))
    rng = np.random.default_rng(3)
    for _ in range(20):
        a, b = rng.integers(5, 60, 50), rng.integers(8, 90, 200)
        assert length.histogram_intersection(a, b, 30) == pytest.approx(_paper_histogram_intersection(b, a))
    samples, reference = [_q(4), _q(64)], [_q(5), _q(64)]   # 30 bins of 2 tokens over [4, 64]
    assert length.compute(samples, reference)["hist_intersection"] == pytest.approx(0.5)
    assert length.compute(samples, reference, bins=30)["hist_intersection"] == pytest.approx(1.0)


def _q(n_tokens):
    """A quatrain with n tokens spread over its verses (at least one per verse)."""
    words = ["w"] * n_tokens
    return [" ".join(words[:1]), " ".join(words[1:2]), " ".join(words[2:3]), " ".join(words[3:])]


def test_compute_hand_computed_and_scipy():
    samples = [_q(n) for n in (4, 6, 8, 10)]
    reference = [_q(n) for n in (4, 4, 6, 12)]
    out = length.compute(samples, reference)
    assert out["n"] == 4
    assert out["mean"] == 7.0
    assert out["median"] == 7.0
    assert out["std"] == pytest.approx(np.sqrt(5.0))      # population std of 4,6,8,10
    assert (out["min"], out["max"]) == (4, 10)
    # p = 1/4 each at 4,6,8,10; q = {4: .5, 6: .25, 12: .25} -> min sums .25 + .25
    assert out["hist_intersection"] == pytest.approx(0.5)
    assert out["wasserstein"] == pytest.approx(wasserstein_distance([4, 6, 8, 10], [4, 4, 6, 12]))
    # by hand: sorted quantile coupling 4-4, 6-4, 8-6, 10-12 -> (0 + 2 + 2 + 2) / 4
    assert out["wasserstein"] == pytest.approx(1.5)


def test_compute_on_empty_sample_gives_none_not_nan():
    out = length.compute([], [_q(4)])
    assert out["n"] == 0 and out["mean"] is None and out["wasserstein"] is None


def test_wasserstein_equals_scipy_on_samples_of_unequal_size_with_ties():
    rng = np.random.default_rng(3)
    for _ in range(200):
        a, b = rng.integers(1, 30, rng.integers(1, 60)), rng.integers(1, 30, rng.integers(1, 400))
        out = length.compute([_q(int(n)) for n in a], [_q(int(n)) for n in b])
        assert out["wasserstein"] == pytest.approx(wasserstein_distance(a, b), rel=1e-12, abs=1e-12)
    assert length.compute([_q(5)] * 3, [_q(5)])["wasserstein"] == 0.0
