"""Is a sample's difference from HUMAN larger than chance? Two-sample tests and Holm's correction.

- :func:`chi2_homogeneity`: chi-square test of homogeneity of two label-count vectors (scheme or metre
  counts of a sample against HUMAN's), as ``scipy.stats.chi2_contingency(correction=False)``; with small
  expected counts a seeded permutation test of the same statistic instead.
- :func:`permutation_test`: two-sided permutation test of the difference in means of per-poem values,
  exact (every split enumerated) when there are no more distinct splits than ``permutations``.
- :func:`holm`: Holm's step-down adjusted p values.

Every p value of a random test is seeded, so that a table of tests is byte-identical between runs."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from poeval.errors import PoevalError

# A statistic within this relative distance of the observed one counts as "at least as extreme": the
# same floating-point allowance as scipy.stats.permutation_test (100 machine epsilons), so that a
# permuted statistic equal to the observed one on paper is not lost to rounding.
_RTOL = 100 * np.finfo(float).eps
_BATCH = 256   # permutations drawn at once (memory: _BATCH x pooled values)


def _at_least(null: np.ndarray, observed: float) -> int:
    return int(np.count_nonzero(null >= observed - abs(observed) * _RTOL))


def small_expected(expected: np.ndarray) -> bool:
    """The usual rule (Cochran) against the chi-square approximation: more than 20 % of the expected
    counts below 5, or any below 1."""
    return bool(np.mean(expected < 5) > 0.2 or np.any(expected < 1))


def chi2_statistic(table: np.ndarray) -> tuple[float, np.ndarray]:
    """Pearson's statistic of a 2 x k table of counts (no zero column) and its expected counts."""
    expected = np.outer(table.sum(axis=1), table.sum(axis=0)) / table.sum()
    return float(((table - expected) ** 2 / expected).sum()), expected


def chi2_homogeneity(sample: Sequence[float], human: Sequence[float], permutations: int = 1000,
                     seed: int = 1) -> dict:
    """Whether two label-count vectors (same labels, same order) come from one distribution.

    Labels absent from both are dropped. ``test`` says which test gave ``p``: ``chi2`` (the asymptotic
    chi-square with ``dof`` = labels - 1) or, when the expected counts are small (:func:`small_expected`),
    ``chi2-permutation``: the same statistic over ``permutations`` random splits of the pooled labels into
    groups of the two sizes (multivariate hypergeometric draws), p = (1 + #{X* >= X}) / (1 + permutations).
    A single label left gives statistic 0 and p 1 (nothing can differ)."""
    table = np.array([sample, human], dtype=float) if len(sample) == len(human) else np.empty(0)
    if table.ndim != 2 or table.shape[1] == 0 or np.any(table < 0) or not np.all(np.isfinite(table)):
        raise PoevalError(f"chi2_homogeneity: expected two count vectors of one length, got {sample!r}, {human!r}")
    if np.any(table.sum(axis=1) == 0):
        raise PoevalError("chi2_homogeneity: an empty count vector (no labelled quatrain) cannot be tested")
    table = table[:, table.sum(axis=0) > 0]
    n = [int(x) for x in table.sum(axis=1)]
    base = {"n": n[0], "n_human": n[1], "dof": table.shape[1] - 1}
    if table.shape[1] < 2:
        return base | {"test": "chi2", "statistic": 0.0, "p": 1.0}
    statistic, expected = chi2_statistic(table)
    if not small_expected(expected):
        from scipy.stats import chi2   # deferred: scipy.stats takes ~0.7 s to import (metrics/length.py)

        return base | {"test": "chi2", "statistic": statistic, "p": float(chi2.sf(statistic, base["dof"]))}
    if not np.allclose(table, np.round(table)):
        raise PoevalError("chi2_homogeneity: the permutation test needs whole counts")
    colors = np.round(table.sum(axis=0)).astype(np.int64)
    rng = np.random.default_rng(seed)
    draws = rng.multivariate_hypergeometric(colors, n[0], size=_check_permutations(permutations))
    null = np.array([chi2_statistic(np.array([row, colors - row], dtype=float))[0] for row in draws])
    return base | {"test": "chi2-permutation", "statistic": statistic,
                   "p": (1 + _at_least(null, statistic)) / (1 + permutations)}


def _check_permutations(permutations: int) -> int:
    if isinstance(permutations, bool) or not isinstance(permutations, int) or permutations < 1:
        raise PoevalError(f"permutations must be a positive integer, got {permutations!r}")
    return permutations


def permutation_test(sample: Sequence[float], human: Sequence[float], permutations: int = 1000,
                     seed: int = 1) -> dict:
    """Two-sided permutation test of mean(sample) - mean(human) (``statistic``).

    p = #{|T*| >= |T|} / N over all N distinct splits of the pooled values into groups of the two sizes
    when N <= ``permutations`` (``exact``), else (1 + #{|T*| >= |T|}) / (1 + permutations) over seeded
    random splits; both as ``scipy.stats.permutation_test`` computes them for the statistic |T|."""
    x, y = (np.asarray(v, dtype=float).ravel() for v in (sample, human))
    if len(x) == 0 or len(y) == 0:
        raise PoevalError("permutation_test: both groups need at least one value")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise PoevalError("permutation_test: values must be finite numbers")
    _check_permutations(permutations)
    pooled, nx = np.concatenate([x, y]), len(x)
    observed = abs(float(x.mean() - y.mean()))

    def diffs(sums: np.ndarray) -> np.ndarray:
        # |mean of a group of nx - mean of the rest|, from the group's sum
        return np.abs(sums / nx - (pooled.sum() - sums) / len(y))

    splits = math.comb(len(pooled), nx)
    exact = splits <= permutations
    if exact:
        sums = np.array([pooled[list(idx)].sum() for idx in itertools.combinations(range(len(pooled)), nx)])
        p = _at_least(diffs(sums), observed) / splits
    else:
        rng, hits, left = np.random.default_rng(seed), 0, permutations
        while left:
            batch = min(left, _BATCH)
            shuffled = rng.permuted(np.broadcast_to(pooled, (batch, len(pooled))), axis=1)
            hits += _at_least(diffs(shuffled[:, :nx].sum(axis=1)), observed)
            left -= batch
        p = (1 + hits) / (1 + permutations)
    return {"test": "permutation", "statistic": float(x.mean() - y.mean()), "p": float(p), "exact": exact,
            "n": nx, "n_human": len(y)}


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p values, in input order: the i-th smallest p times (m - i + 1), made
    monotone (never below an earlier one in sorted order) and capped at 1."""
    p = np.asarray(pvalues, dtype=float)
    if np.any(~np.isfinite(p)) or np.any((p < 0) | (p > 1)):
        raise PoevalError(f"holm: p values must lie in [0, 1], got {list(pvalues)!r}")
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, np.maximum.accumulate(p[order] * (len(p) - np.arange(len(p)))))
    adjusted = np.empty_like(p)
    adjusted[order] = scaled
    return adjusted.tolist()
