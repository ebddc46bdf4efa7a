"""Length of quatrains in tokens, compared with the training distribution (the paper's Table 5).

A quatrain's length is the number of whitespace tokens of its four verses after removing punctuation.
std is the population standard deviation (ddof=0). Histogram intersection uses bins of one token on normalised histograms; Wasserstein-1 is scipy's."""

from __future__ import annotations

import numpy as np
from scipy.stats import wasserstein_distance

from ..text import tokens


def quatrain_length(lines: list[str]) -> int:
    return len(tokens(" ".join(lines)))


def histogram_intersection(a: np.ndarray, b: np.ndarray) -> float:
    """sum_k min(p_k, q_k) of the normalised one-token-bin histograms of two integer samples."""
    size = int(max(a.max(), b.max())) + 1
    p = np.bincount(a, minlength=size) / a.size
    q = np.bincount(b, minlength=size) / b.size
    return float(np.minimum(p, q).sum())


def lengths(quatrains: list[list[str]]) -> np.ndarray:
    return np.fromiter((quatrain_length(q) for q in quatrains), dtype=np.int64, count=len(quatrains))


def compute(samples: list[list[str]], reference: list[list[str]]) -> dict:
    """Length statistics of ``samples`` and their distance to ``reference`` (the training quatrains)."""
    return from_lengths(lengths(samples), lengths(reference))


def from_lengths(a: np.ndarray, b: np.ndarray) -> dict:
    """The statistics of sample lengths ``a`` against reference lengths ``b`` (bootstrap reuses this)."""
    if not a.size or not b.size:
        return {"n": int(a.size), "mean": None, "median": None, "std": None, "min": None, "max": None,
                "hist_intersection": None, "wasserstein": None}
    return {
        "n": int(a.size),
        "mean": float(a.mean()),
        "median": float(np.median(a)),
        "std": float(a.std()),
        "min": int(a.min()),
        "max": int(a.max()),
        "hist_intersection": histogram_intersection(a, b),
        "wasserstein": float(wasserstein_distance(a, b)),
    }
