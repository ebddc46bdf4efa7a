"""Memorization of training data: how many sample units are near-copies of a training unit.

Three levels (the paper's memorization evaluation):

* ``quatrain``: the four verses joined by one space, memorized when the similarity is >= 0.7;
* ``couplet``: verses 1-2 and 3-4, each pair joined by one space, >= 0.8;
* ``verse``: every verse on its own, >= 0.9.

The similarity is THE Ratcliff-Obershelp ratio of difflib, with the training unit first::

    difflib.SequenceMatcher(None, training_unit, sample_unit, autojunk=False).ratio()

(SequenceMatcher is not symmetric in general; the argument order is part of the definition.)
``autojunk=True`` (params ``metrics.memorization.autojunk``) is the paper's code instead:
``difflib.get_close_matches(sample_unit, training_units, n=1, cutoff=threshold)`` builds
``SequenceMatcher()`` with difflib's default autojunk, which, for a sample unit of 200 characters or
more, ignores every character that fills over 1 % of it (spaces, common letters) when it looks for matching
blocks. A long quatrain then scores far below its actual overlap (a copy with one word moved: 0.97 without,
0.02 with autojunk), so the default leaves it off. The pruning below holds in both modes: autojunk only
removes matches, so ``ratio <= 2*LCS/T`` still bounds it.
A sample unit is memorized when its best similarity over all training units of the same level
reaches the threshold. The rate of a level is memorized units / sample units.

Exactness and speed
-------------------
The brute-force scan calls difflib for every (sample, training) pair, which is far too slow
(about 0.5-0.7 ms per pair of 160-character quatrains). :func:`best_matches` gives *exactly* the brute-force result
(decisions, best training unit and score) but calls difflib only on few pairs:

1. The matching blocks of difflib are a common subsequence of the two strings, so
   ``matches <= LCS`` and ``ratio = 2*matches/(la+lb) <= 2*LCS/(la+lb)``, which is rapidfuzz's
   normalised Indel similarity. It is also ``<= 2*min(la, lb)/(la+lb)`` (length bound).
2. Identical training units and identical sample units are deduplicated (a training unit is
   represented by its lowest index).
3. Training units are sorted by length; a sample unit is only compared with the window of
   lengths that the length bound allows (loosened by one character on each side).
4. The window is pruned with ``rapidfuzz.process.cdist`` (multithreaded) on the *integer* Indel
   distance d = la + lb - 2*LCS, with an integer ``score_cutoff`` that is loose for the whole
   block (the largest (1 - threshold)*(la + lb) of the block, plus one). rapidfuzz's integer
   cutoff semantics are exact; its normalised-similarity cutoff is not (measured: with
   rapidfuzz 3.14, ``Indel.normalized_similarity(a, b, score_cutoff=0.8 - 1e-8)`` returns 0
   for pairs whose similarity is exactly 0.8), so no float cutoff is used. For every survivor
   the bound ``(T - d)/T`` is computed in float64; difflib computes ``2.0*matches/T`` and
   correctly rounded division is monotone, so ``bound < threshold`` implies
   ``ratio < threshold`` with no rounding caveat. Those survivors are dropped.
5. The remaining candidates of a sample unit are checked with difflib in decreasing order of
   their bound (branch and bound): the scan stops as soon as the bound falls strictly below the
   best score found so far. So the best score is exact, not merely the first one above the
   threshold.

Ties: among training units with the same best score the lowest training index wins, which is
what a brute-force scan in index order that only replaces on a strictly better score returns.
"""

from __future__ import annotations

import difflib
import math
from typing import Iterable, Mapping, Sequence

import numpy as np

from poeval import config
from poeval.errors import PoevalError

# Ratcliff-Obershelp thresholds per level, from the params schema (metrics.memorization)
LEVELS = {level: config.defaults("#/properties/metrics/properties/memorization")[level]
          for level in ("quatrain", "couplet", "verse")}

# Cells of one cdist block (int32): bounds the memory of a block to about 64 MB.
_MAX_CELLS = 1 << 24
_MAX_ROWS = 512


def units(quatrains: Sequence[Sequence[str]], level: str) -> list[str]:
    """The units of ``level`` of every quatrain, in order.

    quatrain: one unit (the 4 verses joined by one space); couplet: two units (verses 1-2 and
    3-4, joined by one space); verse: four units (the verses themselves)."""
    if level not in LEVELS:
        raise PoevalError(f"unknown memorization level {level!r}; expected one of {sorted(LEVELS)}")
    out: list[str] = []
    for i, q in enumerate(quatrains):
        if isinstance(q, str) or len(q) != 4 or not all(isinstance(v, str) for v in q):
            raise PoevalError(f"quatrain {i}: expected a list of 4 verses (strings), got {q!r:.200}")
        if level == "quatrain":
            out.append(" ".join(q))
        elif level == "couplet":
            out.append(f"{q[0]} {q[1]}")
            out.append(f"{q[2]} {q[3]}")
        else:
            out.extend(q)
    return out


def ratio(train_unit: str, sample_unit: str, autojunk: bool = False) -> float:
    """The similarity of the definition: difflib's ratio with the training unit first, no autojunk
    unless asked (the paper's code)."""
    return difflib.SequenceMatcher(None, train_unit, sample_unit, autojunk=autojunk).ratio()


def _check_threshold(threshold: float) -> float:
    try:
        threshold = float(threshold)
    except (TypeError, ValueError):
        raise PoevalError(f"memorization threshold must be a number, got {threshold!r}") from None
    if not (0.0 < threshold <= 1.0):
        raise PoevalError(f"memorization threshold must be in (0, 1], got {threshold}")
    return threshold


def best_matches_bruteforce(samples: Sequence[str], training: Sequence[str], threshold: float,
                            autojunk: bool = False) -> list[tuple[int, int, float]]:
    """Reference implementation: difflib on every pair. Same output contract as :func:`best_matches`."""
    threshold = _check_threshold(threshold)
    hits = []
    sm = difflib.SequenceMatcher(None, "", "", autojunk=autojunk)
    for i, s in enumerate(samples):
        sm.set_seq2(s)  # difflib caches its index of the second sequence (the sample)
        best, best_j = -1.0, -1
        for j, t in enumerate(training):
            sm.set_seq1(t)
            r = sm.ratio()
            if r > best:
                best, best_j = r, j
        if best_j >= 0 and best >= threshold:
            hits.append((i, best_j, best))
    return hits


def _dedupe(strings: Sequence[str]) -> tuple[list[str], list[list[int]]]:
    """Unique strings in order of first occurrence, and the indices of each one's occurrences."""
    index: dict[str, int] = {}
    uniq: list[str] = []
    where: list[list[int]] = []
    for i, s in enumerate(strings):
        k = index.get(s)
        if k is None:
            index[s] = len(uniq)
            uniq.append(s)
            where.append([i])
        else:
            where[k].append(i)
    return uniq, where


def _length_window(lb: int, t: float) -> tuple[int, int]:
    """Training lengths [lo, hi] (inclusive, loosened by one) with 2*min/(la+lb) >= t."""
    lo = max(0, math.floor(t * lb / (2.0 - t)) - 1)
    hi = math.ceil(lb * (2.0 - t) / t) + 1
    return lo, hi


def best_matches(samples: Sequence[str], training: Sequence[str], threshold: float, workers: int = -1,
                 progress: bool = False, autojunk: bool = False) -> list[tuple[int, int, float]]:
    """(sample index, training index, score) for every sample unit whose best ratio >= threshold.

    Exactly the result of :func:`best_matches_bruteforce`: score is the best difflib ratio over all
    training units, training index the lowest index reaching it. Sorted by sample index."""
    from rapidfuzz import process
    from rapidfuzz.distance import Indel

    threshold = _check_threshold(threshold)
    for name, seq in (("samples", samples), ("training", training)):
        if isinstance(seq, str) or not all(isinstance(s, str) for s in seq):
            raise PoevalError(f"memorization {name} must be a list of strings")
    if not samples or not training:
        return []

    train_u, train_where = _dedupe(training)
    sample_u, sample_where = _dedupe(samples)
    train_first = [w[0] for w in train_where]  # lowest original index of each unique training unit

    # Training units sorted by length (then by index, so ties keep the lowest index first).
    t_order = sorted(range(len(train_u)), key=lambda k: (len(train_u[k]), train_first[k]))
    t_sorted = [train_u[k] for k in t_order]
    t_len = np.fromiter((len(s) for s in t_sorted), dtype=np.int64, count=len(t_sorted))
    s_order = sorted(range(len(sample_u)), key=lambda k: len(sample_u[k]))

    windows = []
    for k in s_order:
        lo, hi = _length_window(len(sample_u[k]), threshold)
        windows.append((int(np.searchsorted(t_len, lo, "left")), int(np.searchsorted(t_len, hi, "right"))))

    # Blocks of consecutive (by length) samples whose joint window is small enough.
    blocks = []
    start = 0
    n = len(s_order)
    while start < n:
        lo, hi = windows[start]
        stop = start + 1
        while stop < n and stop - start < _MAX_ROWS:
            nhi = max(hi, windows[stop][1])
            if (stop + 1 - start) * (nhi - lo) > _MAX_CELLS:
                break
            hi = nhi
            stop += 1
        blocks.append((start, stop, lo, hi))
        start = stop

    s_len_sorted = np.fromiter((len(sample_u[k]) for k in s_order), dtype=np.int64, count=len(s_order))
    candidates: dict[int, list[tuple[float, int, int]]] = {}
    iterator: Iterable = blocks
    if progress:
        from tqdm import tqdm
        iterator = tqdm(blocks, desc=f"memorization >= {threshold}", unit="block")
    for start, stop, lo, hi in iterator:
        if hi <= lo:
            continue
        rows = [sample_u[k] for k in s_order[start:stop]]
        # Integer Indel distance cutoff, loose for the block: 2*LCS/T >= t  <=>  d <= (1 - t)*T.
        max_dist = math.floor((1.0 - threshold) * (int(s_len_sorted[stop - 1]) + int(t_len[hi - 1]))) + 1
        dist = process.cdist(rows, t_sorted[lo:hi], scorer=Indel.distance, score_cutoff=max_dist,
                             workers=workers, dtype=np.int32)
        r_idx, c_idx = np.nonzero(dist <= max_dist)
        if r_idx.size == 0:
            continue
        d = dist[r_idx, c_idx].astype(np.int64)
        total = s_len_sorted[start + r_idx] + t_len[lo + c_idx]
        # Exact bound 2*LCS/T = (T - d)/T in float64: correctly rounded like difflib's 2.0*M/T.
        bound = np.divide(total - d, total, out=np.ones(total.shape, dtype=np.float64), where=total > 0)
        keep = bound >= threshold  # ratio <= bound, so bound < threshold implies ratio < threshold
        for r, c, b in zip(r_idx[keep].tolist(), c_idx[keep].tolist(), bound[keep].tolist()):
            k = s_order[start + r]
            tk = t_order[lo + c]
            candidates.setdefault(k, []).append((b, train_first[tk], tk))

    hits: list[tuple[int, int, float]] = []
    sm = difflib.SequenceMatcher(None, "", "", autojunk=autojunk)
    for k, cands in candidates.items():
        sm.set_seq2(sample_u[k])
        cands.sort(key=lambda c: (-c[0], c[1]))
        best, best_j = -1.0, -1
        for bound, j, tk in cands:
            if bound < best:
                break  # no remaining candidate can reach (let alone beat) the best score
            sm.set_seq1(train_u[tk])
            r = sm.ratio()
            if r > best or (r == best and j < best_j):
                best, best_j = r, j
        if best >= threshold:
            hits.extend((i, best_j, best) for i in sample_where[k])
    hits.sort()
    return hits


def compute(samples: Sequence[Sequence[str]], reference: Sequence[Sequence[str]], *,
            sample_ids: Sequence | None = None, reference_ids: Sequence | None = None,
            thresholds: Mapping[str, float] = LEVELS,
            levels: Sequence[str] = ("quatrain", "couplet", "verse"),
            workers: int = -1, progress: bool = False, autojunk: bool = False) -> dict:
    """Memorization rates of ``samples`` against the training quatrains ``reference``.

    Returns ``{level: rate, ..., "hits": {level: [{"sample": id, "train": id, "score": s}, ...]},
    "n_units": {level: number of sample units}}``. Quatrain hits use the quatrain ids (default:
    list positions); couplet and verse hits use ``f"{quatrain_id}#{k}"`` with k the 0-based
    couplet (0, 1) or verse (0..3) index. With no samples the rates are None; with no reference
    they are 0.0."""
    if isinstance(levels, str):
        levels = (levels,)
    for level in levels:
        if level not in LEVELS:
            raise PoevalError(f"unknown memorization level {level!r}; expected one of {sorted(LEVELS)}")
    sample_ids = list(range(len(samples))) if sample_ids is None else list(sample_ids)
    reference_ids = list(range(len(reference))) if reference_ids is None else list(reference_ids)
    if len(sample_ids) != len(samples):
        raise PoevalError(f"{len(sample_ids)} sample ids for {len(samples)} samples")
    if len(reference_ids) != len(reference):
        raise PoevalError(f"{len(reference_ids)} reference ids for {len(reference)} reference quatrains")

    out: dict = {}
    hits: dict = {}
    n_units: dict = {}
    for level in levels:
        threshold = _check_threshold(thresholds.get(level, LEVELS[level]) if thresholds is not None
                                     else LEVELS[level])
        s_units = units(samples, level)
        r_units = units(reference, level)
        s_ids = _unit_ids(sample_ids, level)
        r_ids = _unit_ids(reference_ids, level)
        found = best_matches(s_units, r_units, threshold, workers=workers, progress=progress, autojunk=autojunk)
        n_units[level] = len(s_units)
        out[level] = (len(found) / len(s_units)) if s_units else None
        hits[level] = [{"sample": s_ids[i], "train": r_ids[j], "score": score} for i, j, score in found]
    out["hits"] = hits
    out["n_units"] = n_units
    return out


def _unit_ids(ids: list, level: str) -> list:
    if level == "quatrain":
        return list(ids)
    per = 2 if level == "couplet" else 4
    return [f"{q}#{k}" for q in ids for k in range(per)]
