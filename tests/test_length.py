import numpy as np
import pytest
from scipy.stats import wasserstein_distance

from poeval.metrics import length
from poeval.text import tokens


def test_tokens_remove_punctuation_and_pure_punctuation_tokens():
    assert tokens("O, world — don't weep!") == ["O", "world", "dont", "weep"]
    assert tokens("... ; !") == []
    assert tokens("Ein „Wort“, zwei", lower=True) == ["ein", "wort", "zwei"]


def test_quatrain_length_counts_all_four_verses():
    assert length.quatrain_length(["a b, c", "d", "e f", "-- g --"]) == 7


def test_histogram_intersection_hand_computed():
    a = np.array([1, 1, 2, 3])      # p = {1: .5, 2: .25, 3: .25}
    b = np.array([1, 2, 2, 2, 4])   # q = {1: .2, 2: .6, 4: .2}
    assert length.histogram_intersection(a, b) == pytest.approx(0.2 + 0.25)
    assert length.histogram_intersection(a, a) == pytest.approx(1.0)
    assert length.histogram_intersection(np.array([1]), np.array([2])) == 0.0


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
