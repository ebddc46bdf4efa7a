"""Distinct-k: how many classes of near-duplicates a sample's first k quatrains fall into (not in the paper).

NoveltyBench (Zhang et al. 2025, github.com/novelty-bench/novelty-bench, ``src/partition.py``) partitions a
prompt's generations in order: each generation joins the first class whose representative (the class's first
member) it is equivalent to, else it opens a new class; its distinct-k is the number of classes among k
generations. Moon et al. (2025) follow how that count grows with k. poeval partitions a row's sample the same
way, in sample order. Its equivalence rule: the cosine of the two quatrains' embeddings under the semantic
family's encoder is at least params ``metrics.distinct_k.threshold``, calibrated on HUMAN quatrains and their
light perturbations (benchmarks/calibrate_distinct.py; docs/beyond-the-paper.md "Distinct-k").

Since classes are numbered as they open, D(k), the number of classes among the first k quatrains, is one plus
the largest label among them. The cell reports the curve D(1..n), D(n), D(n)/n and the slope, the classes each
further quatrain adds over the second half of the sample: (D(n) - D(h)) / (n - h) with h = ceil(n/2) (the
first half holds the steep start; the second half says whether the curve has flattened).

Intervals: each quatrain keeps what the full sample's partition made it: it opened a class (1) or joined an
earlier one (0). D(n)/n is the mean of that indicator and the slope its mean over the second half, so a
bootstrap resample takes the mean over its draws (for the slope, its draws from the second half), and D(n)
is n times the share. The partition is not redone on a resample (a quatrain drawn twice would be its own
near-duplicate): the interval says how much the share depends on which quatrains were drawn, given the rule.
"""

from __future__ import annotations

import math

import numpy as np

from poeval.errors import PoevalError


def partition(embeddings: np.ndarray, threshold: float) -> np.ndarray:
    """The class label of each row (L2-normalised embeddings, in sample order): the first class whose
    representative has cosine >= ``threshold`` with it, else a new class (labels 0, 1, ... as they open)."""
    emb = np.asarray(embeddings, dtype=np.float32)
    if emb.ndim != 2:
        raise PoevalError(f"distinct_k: expected one embedding per quatrain (2-d), got shape {emb.shape}")
    labels = np.empty(len(emb), dtype=np.int64)
    reps = np.empty_like(emb)
    opened = 0
    for i, e in enumerate(emb):
        hits = np.flatnonzero(reps[:opened] @ e >= threshold) if opened else ()
        if len(hits):
            labels[i] = hits[0]
        else:
            reps[opened] = e
            labels[i] = opened
            opened += 1
    return labels


def curve(labels: np.ndarray) -> np.ndarray:
    """D(k) for k = 1..n: the number of classes among the first k quatrains."""
    labels = np.asarray(labels, dtype=np.int64)
    return np.maximum.accumulate(labels) + 1 if labels.size else np.zeros(0, dtype=np.int64)


def opened(labels: np.ndarray) -> np.ndarray:
    """1 where a quatrain opened its class, 0 where it joined an earlier one."""
    d = curve(labels)
    return np.diff(d, prepend=0).astype(np.int64)


def half(n: int) -> int:
    """h = ceil(n/2): the slope is measured over quatrains h+1..n."""
    return math.ceil(n / 2)


def numbers(new: np.ndarray, positions: np.ndarray, n: int) -> dict:
    """D(n), D(n)/n and the slope of the quatrains at ``positions`` (indices into the sample of size n,
    repeats allowed) whose ``new`` indicators are given: for the full sample, positions 0..n-1."""
    new = np.asarray(new, dtype=float)
    if not new.size:
        return {"distinct": None, "distinct_share": None, "slope": None}
    late = new[positions >= half(n)]
    share = float(new.mean())
    return {"distinct": share * n, "distinct_share": share, "slope": float(late.mean()) if late.size else None}


def compute(embeddings: np.ndarray, threshold: float):
    """(result, resample) of one sample: the curve, D(n), D(n)/n, the slope and each quatrain's class;
    ``resample(idx)`` the same scalars on bootstrap draws ``idx`` (module doc)."""
    labels = partition(embeddings, threshold)
    d, new = curve(labels), opened(labels)
    n = len(labels)
    result = numbers(new, np.arange(n), n) | {
        "distinct": int(d[-1]) if n else None, "n": n, "half": half(n), "threshold": threshold,
        "curve": d.tolist(), "per_poem": {"class": labels.tolist(), "opened": new.tolist()}}
    return result, lambda idx: numbers(new[idx], np.asarray(idx), n)
