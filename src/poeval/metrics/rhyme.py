"""Rhyme diversity of a sample of quatrains: the distribution over the 15 four-line schemes, its
entropy, its divergence from the human distribution, and real rhymes vs repetitions.

All logarithms are base 2 (bits). Entropy is that of the observed scheme shares. KL divergence and
cross-entropy compare the human (reference) distribution P with the sample's Q,
``CE = -sum_s P(s) log Q(s)`` and ``KL(P || Q) = CE - H(P)``, after additive smoothing of both with
``smoothing`` pseudo-counts per scheme, so that a scheme the sample never produces costs a finite amount.
A rhyme pair is two lines of one quatrain that share a scheme letter; it is a *repetition* when both lines
end in the same word and a *real rhyme* otherwise."""

from __future__ import annotations

import numpy as np

from ..errors import PoevalError
from ..rhyme import SCHEMES_4, is_repetition

DEFAULT_SMOOTHING = 1.0
_INDEX = {s: i for i, s in enumerate(SCHEMES_4)}


def scheme_index(labels: list[str]) -> np.ndarray:
    """Position of each label in :data:`SCHEMES_4`."""
    bad = [label for label in labels if label not in _INDEX]
    if bad:
        raise PoevalError(f"not a four-line scheme label: {bad[0]!r} (expected one of {', '.join(SCHEMES_4)})")
    return np.array([_INDEX[label] for label in labels], dtype=np.int64)


def scheme_counts(labels: list[str]) -> np.ndarray:
    """Counts over :data:`SCHEMES_4` (in that order)."""
    return np.bincount(scheme_index(labels), minlength=len(SCHEMES_4)).astype(float)


def entropy(counts: np.ndarray) -> float:
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log2(p)).sum()) + 0.0  # + 0.0 turns -0.0 into 0.0


def smoothed(counts: np.ndarray, smoothing: float) -> np.ndarray:
    return (counts + smoothing) / (counts.sum() + smoothing * len(counts))


def divergence(sample: np.ndarray, human: np.ndarray, smoothing: float) -> dict[str, float]:
    """``kl`` = KL(P_human || Q_sample) and ``cross_entropy`` = H(P_human, Q_sample), both smoothed."""
    if smoothing <= 0 and np.any((sample == 0) & (human > 0)):
        return {"kl": float("inf"), "cross_entropy": float("inf")}
    p, q = smoothed(human, smoothing), smoothed(sample, smoothing)
    nz = p > 0
    ce = float(-(p[nz] * np.log2(q[nz])).sum())
    return {"kl": ce - entropy(p), "cross_entropy": ce}


def rhyme_pairs(lines: list[str], label: str, lang: str) -> tuple[int, int]:
    """(rhyme pairs, of which repetitions) of one quatrain under its scheme label."""
    pairs = reps = 0
    for i in range(len(label)):
        for j in range(i + 1, len(label)):
            if label[i] == label[j]:
                pairs += 1
                reps += is_repetition(lines[i], lines[j], lang)
    return pairs, reps


def from_counts(counts: np.ndarray, human: np.ndarray, pairs: int, reps: int, n_poems: int,
                smoothing: float) -> dict:
    """The family's numbers from scheme counts and rhyme-pair totals; ``distribution`` holds shares."""
    total = counts.sum()
    shares = counts / total if total else counts
    return {
        "distribution": {s: float(v) for s, v in zip(SCHEMES_4, shares)},
        "counts": {s: int(v) for s, v in zip(SCHEMES_4, counts)},
        "entropy": entropy(counts) if total else None,
        **(divergence(counts, human, smoothing) if total else {"kl": None, "cross_entropy": None}),
        "rhyme_pairs_per_poem": pairs / n_poems if n_poems else None,
        "real_rhymes": (pairs - reps) / pairs if pairs else None,
        "repetitions": reps / pairs if pairs else None,
    }
