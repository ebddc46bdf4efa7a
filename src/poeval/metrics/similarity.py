"""Similarity between two rows (not in the paper): do two systems, or a system and the HUMAN samples, write
the same quatrains? Within-row repetition is Table 3's ``within`` and the diversity table's homogenization;
this module compares two different sets of quatrains A and B.

Both sets are first drawn (seeded, without replacement) down to their common size n = min(|A|, |B|): a
nearest-neighbour similarity grows with the size of the set searched, so two pairs compare only at equal n.
Then, on the n + n quatrains:

* ``semantic``: each quatrain's maximum cosine to a quatrain of the OTHER set (the semantic family's encoder,
  L2-normalised embeddings), averaged over A (``semantic_a_to_b``) and over B (``semantic_b_to_a``); the
  measure is the mean of the two directions.
* ``ngram_jaccard``: the Jaccard index |A ∩ B| / |A ∪ B| of the two sets' word n-gram types (n-grams within a
  quatrain, tokens of the lexical family's tokenizer); ``end_word_jaccard``: that of their verse-final words.
* ``near_duplicate_share``: the share of A's quatrains with a near-duplicate in B and of B's with one in A,
  averaged; a near-duplicate is the memorization family's quatrain match (difflib's Ratcliff-Obershelp ratio
  of the quatrain's verses joined by one space, >= params ``metrics.memorization.quatrain``, the other set's
  quatrain first, :func:`poeval.metrics.memorization.best_matches`). ``near_duplicate_pairs``: the distinct
  (A, B) pairs that are one quatrain's best match in either direction.

Intervals: the bootstrap of the metric cells (percentile 95 %), resampling the quatrains of A and of B
independently. The semantic maxima and the near-duplicate flags are per-quatrain values computed once against
the whole other set, as the semantic family's ``within`` is (a resampled duplicate is not a new neighbour); the
two Jaccard indices are recomputed on each resample's sets of types, and since a resample holds only about 63 %
of the distinct quatrains, their percentile interval is moved by the bootstrap's bias estimate (the resamples'
mean less the point estimate). ``near_duplicate_pairs`` is a count and gets no interval.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from poeval.metrics import memorization, semantic

MEASURES = ("semantic", "ngram_jaccard", "end_word_jaccard", "near_duplicate_share")


def draw(quatrains: Sequence, n: int, seed: int) -> list:
    """``n`` of ``quatrains`` drawn without replacement (seeded), in their order; all of them if no more."""
    if len(quatrains) <= n:
        return list(quatrains)
    keep = np.sort(np.random.default_rng(seed).choice(len(quatrains), size=n, replace=False))
    return [quatrains[i] for i in keep]


def common_draw(a: Sequence, b: Sequence, seed: int) -> tuple[list, list]:
    """Both sets drawn down to their common size (module doc), each with ``seed``."""
    n = min(len(a), len(b))
    return draw(a, n, seed), draw(b, n, seed)


def without(b: Sequence[dict], a: Sequence[dict]) -> list[dict]:
    """The quatrains of ``b`` whose verses no quatrain of ``a`` holds (two HUMAN samples drawn from one split
    overlap: the baseline compares what they do not share)."""
    held = {tuple(p["lines"]) for p in a}
    return [p for p in b if tuple(p["lines"]) not in held]


def _types(per_quatrain: list[list[tuple]]) -> tuple[list[np.ndarray], dict]:
    vocab: dict = {}
    return [np.unique(np.fromiter((vocab.setdefault(t, len(vocab)) for t in types), dtype=np.int64,
                                  count=len(types))) for types in per_quatrain], vocab


def ngrams(tokens: Sequence[str], n: int) -> list[tuple]:
    """The word n-grams of one quatrain's tokens (none when it has fewer than n)."""
    return [tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]


def end_words(lines: Sequence[str], tokenize: Callable[[Sequence[str]], list[str]]) -> list[tuple]:
    """Each verse's last token (a verse without a token has none)."""
    return [(tokens[-1],) for verse in lines if (tokens := tokenize([verse]))]


class _Sets:
    """Per-quatrain type ids of both sets over one vocabulary, so that a resample's Jaccard index is two
    boolean masks (a quatrain drawn twice adds no type)."""

    def __init__(self, a: list[list[tuple]], b: list[list[tuple]]):
        ids, vocab = _types(a + b)
        size = max(len(vocab), 1)
        self.a, self.b = (self._flat(part) for part in (ids[:len(a)], ids[len(a):]))
        self.size = size

    @staticmethod
    def _flat(ids: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        owner = np.repeat(np.arange(len(ids)), [len(x) for x in ids])
        return (np.concatenate(ids) if ids else np.zeros(0, dtype=np.int64)), owner

    def _present(self, side, idx: np.ndarray, n: int) -> np.ndarray:
        flat, owner = side
        chosen = np.zeros(n, dtype=bool)
        chosen[idx] = True
        present = np.zeros(self.size, dtype=bool)
        present[flat[chosen[owner]]] = True
        return present

    def jaccard(self, ia: np.ndarray, ib: np.ndarray, n: int) -> float | None:
        pa, pb = self._present(self.a, ia, n), self._present(self.b, ib, n)
        union = int((pa | pb).sum())
        return None if union == 0 else float((pa & pb).sum() / union)


def jaccard(x: set, y: set) -> float | None:
    """|x ∩ y| / |x ∪ y|; None for two empty sets."""
    return len(x & y) / len(x | y) if x | y else None


def near_duplicates(a: Sequence[Sequence[str]], b: Sequence[Sequence[str]], threshold: float,
                    autojunk: bool = False, workers: int = 1) -> tuple[np.ndarray, np.ndarray, int]:
    """(A's quatrains with a near-duplicate in B, B's with one in A, the distinct best-match pairs) by the
    memorization matcher at the quatrain level (module doc)."""
    units_a, units_b = memorization.units(a, "quatrain"), memorization.units(b, "quatrain")
    ab = memorization.best_matches(units_a, units_b, threshold, workers=workers, autojunk=autojunk)
    ba = memorization.best_matches(units_b, units_a, threshold, workers=workers, autojunk=autojunk)
    flags_a, flags_b = np.zeros(len(a), dtype=bool), np.zeros(len(b), dtype=bool)
    flags_a[[i for i, _, _ in ab]] = True
    flags_b[[i for i, _, _ in ba]] = True
    pairs = {(i, j) for i, j, _ in ab} | {(j, i) for i, j, _ in ba}
    return flags_a, flags_b, len(pairs)


def compare(a: Sequence[Sequence[str]], b: Sequence[Sequence[str]], emb_a: np.ndarray, emb_b: np.ndarray, *,
            tokenize: Callable[[Sequence[str]], list[str]], ngram: int, threshold: float, autojunk: bool,
            reps: int, seed: int, workers: int = 1) -> dict:
    """The measures of the module doc for two sets of equal size n (drawn already: :func:`common_draw`) and
    their embeddings (rows in set order), with bootstrap intervals (``reps`` resamples, ``seed``)."""
    n = len(a)
    if len(b) != n or len(emb_a) != n or len(emb_b) != n:
        raise ValueError(f"compare: sets and embeddings of one size expected, got {len(a)}, {len(b)}, "
                         f"{len(emb_a)}, {len(emb_b)}")
    out = {"n": n, "ngram": ngram, "threshold": threshold, "bootstrap": {"reps": reps, "seed": seed}}
    if n == 0:
        return out | dict.fromkeys(("semantic_a_to_b", "semantic_b_to_a", *MEASURES), None) | {
            "near_duplicate_pairs": 0, "ci": {}}
    a_to_b, b_to_a = semantic.max_similarity(emb_a, emb_b), semantic.max_similarity(emb_b, emb_a)
    tokens = [[tokenize(q) for q in side] for side in (a, b)]
    grams = _Sets(*([ngrams(t, ngram) for t in side] for side in tokens))
    ends = _Sets(*([end_words(q, tokenize) for q in side] for side in (a, b)))
    flags_a, flags_b, pairs = near_duplicates(a, b, threshold, autojunk, workers)

    def scalars(ia: np.ndarray, ib: np.ndarray) -> dict:
        ab, ba = float(a_to_b[ia].mean()), float(b_to_a[ib].mean())
        return {"semantic": (ab + ba) / 2, "semantic_a_to_b": ab, "semantic_b_to_a": ba,
                "ngram_jaccard": grams.jaccard(ia, ib, n), "end_word_jaccard": ends.jaccard(ia, ib, n),
                "near_duplicate_share": float((flags_a[ia].mean() + flags_b[ib].mean()) / 2)}

    whole = np.arange(n)
    point = scalars(whole, whole)
    return out | point | {"near_duplicate_pairs": pairs, "ci": _intervals(scalars, point, n, reps, seed)}


# measures recomputed on each resample's sets: a resample holds about 63 % of the distinct quatrains, so its
# type sets are smaller and its index lower than the point estimate's
SET_MEASURES = ("ngram_jaccard", "end_word_jaccard")


def _intervals(scalars, point: dict, n: int, reps: int, seed: int) -> dict[str, list[float]]:
    """Percentile 95 % intervals of every scalar over ``reps`` pairs of independent resamples of n quatrains
    (:func:`poeval.metrics.evaluate.bootstrap`, two sets at a time); those of :data:`SET_MEASURES` moved by the
    bootstrap's estimate of their bias (the resamples' mean less the point estimate)."""
    rng = np.random.default_rng(seed)
    draws: dict[str, list[float]] = {}
    for _ in range(reps):
        ia, ib = rng.integers(0, n, n), rng.integers(0, n, n)
        for key, value in scalars(ia, ib).items():
            if value is not None:
                draws.setdefault(key, []).append(value)
    out = {}
    for key, v in sorted(draws.items()):
        bias = float(np.mean(v)) - point[key] if key in SET_MEASURES else 0.0
        out[key] = [float(np.percentile(v, 2.5)) - bias, float(np.percentile(v, 97.5)) - bias]
    return out
