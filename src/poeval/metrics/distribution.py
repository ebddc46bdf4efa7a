"""Entropy and divergence of a distribution over a fixed set of labels, from label counts: one function
shared by the families that compare a sample's label shares with the human ones (rhyme schemes, metre).

All logarithms are base 2 (bits). Q is the sample's observed shares, unsmoothed; P the human shares,
smoothed only where it needs to be: when the human data never use some label, ``smoothing``
pseudo-counts are added to every label of P, so that a sample using that label costs a finite amount.
``KL(Q || P) = sum_l Q(l) log Q(l)/P(l)`` and ``CE = -sum_l Q(l) log P(l) = H(Q) + KL(Q || P)``: the
paper's direction (in every row of its Table 6, CE - KL is the row's own entropy)."""

from __future__ import annotations

from typing import Sequence

import numpy as np


def entropy(counts: np.ndarray) -> float:
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log2(p)).sum()) + 0.0  # + 0.0 turns -0.0 into 0.0


def smooths_human(human: np.ndarray, smoothing: float) -> bool:
    """Whether P gets pseudo-counts: some label has no human quatrain."""
    return bool(smoothing > 0 and np.any(human == 0))


def human_distribution(human: np.ndarray, smoothing: float) -> np.ndarray:
    """P: the human label shares, with ``smoothing`` pseudo-counts per label only when some label
    has no human quatrain (otherwise a sample using it would be infinitely far away)."""
    if not smooths_human(human, smoothing):
        return human / human.sum()
    return (human + smoothing) / (human.sum() + smoothing * len(human))


def divergence(sample: np.ndarray, human: np.ndarray, smoothing: float) -> dict[str, float]:
    """``kl`` = KL(Q_sample || P_human) and ``cross_entropy`` = -sum Q_sample log P_human (module doc);
    infinite when the sample uses a label P gives no mass (only possible with ``smoothing`` 0)."""
    q, p = sample / sample.sum(), human_distribution(human, smoothing)
    used = q > 0
    if np.any(p[used] == 0):
        return {"kl": float("inf"), "cross_entropy": float("inf")}
    kl = float((q[used] * np.log2(q[used] / p[used])).sum())
    ce = float(-(q[used] * np.log2(p[used])).sum())
    return {"kl": kl + 0.0, "cross_entropy": ce + 0.0}


def label_numbers(labels: Sequence[str], counts: np.ndarray, human: np.ndarray, smoothing: float) -> dict:
    """``distribution`` (shares) and ``counts`` over ``labels`` (in that order), the sample's ``entropy``,
    and ``kl`` and ``cross_entropy`` against the human counts (module doc); None without any count."""
    total = counts.sum()
    shares = counts / total if total else counts
    return {
        "distribution": {label: float(v) for label, v in zip(labels, shares)},
        "counts": {label: int(v) for label, v in zip(labels, counts)},
        "entropy": entropy(counts) if total else None,
        **(divergence(counts, human, smoothing) if total else {"kl": None, "cross_entropy": None}),
    }
