"""Length of quatrains in tokens, compared with the training distribution (the paper's Table 5).

A quatrain's length is the number of whitespace tokens of its four verses after removing punctuation
(``tokens: poeval``, the paper's text). ``tokens: split`` (params ``metrics.length.tokens``) counts
``line.split()`` tokens of each verse instead, as the paper's code does (``helper_functions.get_len``), so
that punctuation standing alone (``/``, ``"``, ``--``, ``&``) is a token too.
std is the population standard deviation (ddof=0). Histogram intersection is sum_k min(p_k, q_k) of the
normalised histograms, with bins of one token by default; ``bins`` k (params ``metrics.length.bins``) uses
k equal-width bins over the joint range of both samples instead, as the paper's code does with 30
(``np.histogram(..., bins=30, range=[min, max])``): its bin width depends on the range of the lengths, so
a single outlier coarsens every bin. Wasserstein-1 is scipy's."""

from __future__ import annotations

import numpy as np

from poeval import config
from poeval.errors import PoevalError
from poeval.text import tokens as _tokens

DEFAULT_TOKENS = config.defaults("#/properties/metrics/properties/length")["tokens"]   # the schema holds it
COUNTERS = {
    "poeval": lambda lines: len(_tokens(" ".join(lines))),
    "split": lambda lines: sum(len(line.split()) for line in lines),   # the paper's get_len
}


def quatrain_length(lines: list[str], tokens: str = DEFAULT_TOKENS) -> int:
    """The number of tokens of one quatrain's verses, counted the ``tokens`` way (module doc)."""
    if tokens not in COUNTERS:
        raise PoevalError(f"metrics.length.tokens must be one of {', '.join(COUNTERS)}, got {tokens!r}")
    return COUNTERS[tokens](lines)


def histogram_intersection(a: np.ndarray, b: np.ndarray, bins: int | None = None) -> float:
    """sum_k min(p_k, q_k) of the normalised histograms of two integer samples: one-token bins, or
    ``bins`` equal-width bins over their joint range (the paper's code: 30)."""
    if bins is None:
        size = int(max(a.max(), b.max())) + 1
        p, q = np.bincount(a, minlength=size), np.bincount(b, minlength=size)
    else:
        span = (min(a.min(), b.min()), max(a.max(), b.max()))
        p, q = (np.histogram(x, bins=bins, range=span)[0] for x in (a, b))
    return float(np.minimum(p / a.size, q / b.size).sum())


def lengths(quatrains: list[list[str]], tokens: str = DEFAULT_TOKENS) -> np.ndarray:
    return np.fromiter((quatrain_length(q, tokens) for q in quatrains), dtype=np.int64, count=len(quatrains))


def compute(samples: list[list[str]], reference: list[list[str]], bins: int | None = None,
            tokens: str = DEFAULT_TOKENS) -> dict:
    """Length statistics of ``samples`` and their distance to ``reference`` (the training quatrains)."""
    return from_lengths(lengths(samples, tokens), lengths(reference, tokens), bins)


def from_lengths(a: np.ndarray, b: np.ndarray, bins: int | None = None) -> dict:
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
        "hist_intersection": histogram_intersection(a, b, bins),
        "wasserstein": float(_wasserstein(a, b)),
    }


def _wasserstein(a, b) -> float:
    """The 1-Wasserstein distance of two samples' empirical distributions, the area between their CDFs (as
    scipy.stats.wasserstein_distance computes it; a test compares the two). Written out because scipy.stats
    takes ~1 s to import, a third of a length cell."""
    a, b = np.sort(np.asarray(a, dtype=float)), np.sort(np.asarray(b, dtype=float))
    values = np.sort(np.concatenate([a, b]))
    cdf_a = np.searchsorted(a, values[:-1], side="right") / a.size
    cdf_b = np.searchsorted(b, values[:-1], side="right") / b.size
    return float(np.sum(np.abs(cdf_a - cdf_b) * np.diff(values)))
