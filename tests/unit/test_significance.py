"""poeval.metrics.significance against scipy and hand-computed cases, and the paper's chi2_test on the
main job's HUMAN-vs-train scheme counts."""

import itertools
import json
import random
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from poeval.errors import PoevalError
from poeval.metrics import significance as sig

FIXTURE = Path(__file__).parents[1] / "fixtures" / "chi2_human_vs_train.json"


def _abs_mean_diff(x, y, axis):
    return np.abs(np.mean(x, axis=axis) - np.mean(y, axis=axis))


def _scipy_permutation_p(x, y, n_resamples, rng=0):
    # scipy's two-sided p doubles the smaller one-sided p; poeval's counts |T*| >= |T|, which is scipy's
    # one-sided ("greater") p of the statistic |T|
    return stats.permutation_test((x, y), _abs_mean_diff, permutation_type="independent", alternative="greater",
                                  n_resamples=n_resamples, rng=rng).pvalue


@pytest.mark.parametrize("sample, human", [
    ([10, 20, 30, 0], [15, 15, 40, 0]),             # a label absent from both is dropped: dof 2
    ([120, 80], [100, 100]),                        # dof 1: no Yates correction (correction=False)
    ([5, 9, 30, 12, 44], [20, 30, 60, 40, 50]),
])
def test_chi2_equals_scipy_chi2_contingency(sample, human):
    got = sig.chi2_homogeneity(sample, human)
    keep = [i for i in range(len(sample)) if sample[i] + human[i]]
    ref = stats.chi2_contingency([[sample[i] for i in keep], [human[i] for i in keep]], correction=False)
    assert got["test"] == "chi2"
    assert got["statistic"] == pytest.approx(ref.statistic, rel=1e-12)
    assert got["p"] == pytest.approx(ref.pvalue, rel=1e-9)
    assert got["dof"] == ref.dof
    assert (got["n"], got["n_human"]) == (sum(sample), sum(human))


@pytest.mark.parametrize("expected, small", [
    ([[5, 5, 5, 5, 5], [6, 6, 6, 6, 6]], False),
    ([[4.9, 5, 5, 5, 5], [6, 6, 6, 6, 6]], False),   # 1 of 10 cells below 5: 10 %
    ([[4.9, 4.9, 4.9, 5, 5], [6, 6, 6, 6, 6]], True),  # 3 of 10: 30 % > 20 %
    ([[0.9, 50, 50], [60, 60, 60]], True),            # one below 1
])
def test_small_expected_rule(expected, small):
    assert sig.small_expected(np.array(expected)) is small


def _exact_chi2_permutation_p(sample_labels, human_labels, k):
    """Every split of the pooled labels into groups of the two sizes (each once), by brute force."""
    pooled = np.array(sample_labels + human_labels)
    n = len(sample_labels)

    def stat(idx):
        a = np.bincount(pooled[list(idx)], minlength=k)
        table = np.array([a, np.bincount(pooled, minlength=k) - a])
        return stats.chi2_contingency(table[:, table.sum(axis=0) > 0], correction=False).statistic

    observed = stat(range(n))
    null = np.array([stat(idx) for idx in itertools.combinations(range(len(pooled)), n)])
    return np.mean(null >= observed - 1e-12 * observed)


def test_small_expected_counts_switch_to_a_permutation_test_near_the_exact_p():
    sample, human = [4, 1, 0, 1], [1, 3, 2, 2]      # 14 labels: 3003 splits, enumerated as the reference
    labels = lambda counts: [k for k, c in enumerate(counts) for _ in range(c)]
    exact = _exact_chi2_permutation_p(labels(sample), labels(human), 4)
    got = sig.chi2_homogeneity(sample, human, permutations=20000, seed=3)
    assert got["test"] == "chi2-permutation"
    assert got["statistic"] == pytest.approx(stats.chi2_contingency([sample, human], correction=False).statistic)
    # Monte Carlo: 20000 draws give a standard error below 0.004
    assert got["p"] == pytest.approx(exact, abs=0.015)
    assert 0.05 < exact < 0.5   # a case where the two tests could disagree, not a trivial one
    assert sig.chi2_homogeneity(sample, human, permutations=20000, seed=3) == got   # seeded


def test_chi2_edge_cases():
    assert sig.chi2_homogeneity([5, 0], [7, 0]) | {} == {"n": 5, "n_human": 7, "dof": 0, "test": "chi2",
                                                        "statistic": 0.0, "p": 1.0}
    with pytest.raises(PoevalError, match="empty count vector"):
        sig.chi2_homogeneity([0, 0], [3, 4])
    with pytest.raises(PoevalError, match="two count vectors"):
        sig.chi2_homogeneity([1, 2, 3], [3, 4])


def test_permutation_test_is_exact_on_tiny_cases():
    x, y = [1.0, 2.0, 5.0, 7.0], [3.0, 4.0, 4.5, 8.0, 9.0]    # 126 splits <= 1000 permutations
    got = sig.permutation_test(x, y, permutations=1000)
    assert got["exact"] is True
    assert got["statistic"] == pytest.approx(np.mean(x) - np.mean(y))
    assert got["p"] == pytest.approx(_scipy_permutation_p(x, y, 1000), rel=1e-12)
    # hand case: {0} vs {1, 2}: |T| = 1.5; the splits {1} and {2} give 0 and 1.5, so p = 2/3
    assert sig.permutation_test([0.0], [1.0, 2.0])["p"] == pytest.approx(2 / 3)


def test_permutation_test_is_within_monte_carlo_error_of_scipy():
    rng = np.random.default_rng(0)
    x, y = rng.normal(0, 1, 200), rng.normal(0.15, 1, 300)
    got = sig.permutation_test(x, y, permutations=9999, seed=5)
    ref = _scipy_permutation_p(x, y, 9999)
    assert got["exact"] is False
    assert 0.02 < ref < 0.5
    # two independent estimates with 9999 draws: each a standard error below 0.005
    assert got["p"] == pytest.approx(ref, abs=0.02)
    assert got["p"] == pytest.approx(stats.ttest_ind(x, y).pvalue, abs=0.02)   # and Welch's/Student's t agrees
    assert sig.permutation_test(x, y, permutations=9999, seed=5) == got


def test_permutation_p_counts_the_observed_split():
    # the observed split is among the draws: p is never below 1 / (permutations + 1)
    got = sig.permutation_test(np.arange(100.0) + 1000, np.arange(100.0), permutations=99)
    assert got["p"] == 1 / 100


def test_permutation_test_rejects_bad_input():
    with pytest.raises(PoevalError, match="at least one value"):
        sig.permutation_test([], [1.0])
    with pytest.raises(PoevalError, match="finite"):
        sig.permutation_test([np.nan], [1.0])
    with pytest.raises(PoevalError, match="positive integer"):
        sig.permutation_test([1.0], [2.0], permutations=0)


@pytest.mark.parametrize("p, adjusted", [
    ([0.01, 0.04, 0.03, 0.005], [0.03, 0.06, 0.06, 0.02]),   # 0.04 x 1 < 0.03 x 2: monotone, 0.06
    ([0.01, 0.011, 0.5], [0.03, 0.03, 0.5]),                  # 0.011 x 2 = 0.022 raised to 0.03
    ([0.6, 0.7], [1.0, 1.0]),                                 # 1.2 capped at 1
    ([0.02], [0.02]),
    ([], []),
])
def test_holm_hand_cases(p, adjusted):
    assert sig.holm(p) == pytest.approx(adjusted)


def test_holm_equals_statsmodels_multipletests():
    # statsmodels 0.15.0 in a separate venv (python3 -m venv /tmp/v && /tmp/v/bin/pip install statsmodels):
    # multipletests([0.001, 0.2, 0.012, 0.04, 0.013, 0.9], method="holm")[1]
    p = [0.001, 0.2, 0.012, 0.04, 0.013, 0.9]
    assert sig.holm(p) == pytest.approx([0.006, 0.4, 0.06, 0.12, 0.06, 0.9])


def _paper_chi2_test(train: dict, sample: dict, seed: int) -> float:
    """A faithful re-implementation of the paper's ``chi2_test`` (analysis/meter_rhyme.py of
    hgroener/diversity_in_poetry_generation): the count lists of the two ``stats.pkl`` dicts, the training
    list passed through ``random.sample(c1, len(c2))``, which reorders it across schemes, then
    ``chi2_contingency([c1, c2])``."""
    random.seed(seed)
    c1, c2 = list(train.values()), list(sample.values())
    c1 = random.sample(c1, len(c2))
    return stats.chi2_contingency([c1, c2])[1]


def test_human_sample_against_train_is_not_significant_but_the_papers_procedure_says_it_is():
    case = json.loads(FIXTURE.read_text())
    sample = [case["sample"][s] for s in case["schemes"]]
    for reference, expected in (("train", 0.858), ("train_without_sample", 0.651)):
        counts = [case[reference][s] for s in case["schemes"]]
        got = sig.chi2_homogeneity(sample, counts)
        ref = stats.chi2_contingency([sample, counts], correction=False)
        assert (got["test"], got["dof"]) == ("chi2", 14)
        assert got["p"] == pytest.approx(ref.pvalue, rel=1e-9)
        assert got["p"] == pytest.approx(expected, abs=5e-4)
        paper = [_paper_chi2_test(case[reference], case["sample"], seed) for seed in range(50)]
        assert max(paper) < 1e-100 < got["p"]
