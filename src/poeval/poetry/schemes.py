"""Rhyme schemes of stanzas: the set partition of the verses that the rhyme levels support best, written as
a first-appearance label (``abab``, ``aabb``, ...).

A scheme is the set partition of the lines that maximises the summed ratio
(:func:`poeval.poetry.rhyme.ratio`: the fitted level and pair tables) over its linked pairs: all partitions
are enumerated for stanzas of up to ``EXHAUSTIVE_MAX`` lines (15 for 4 lines), longer stanzas use greedy agglomeration plus single-line repair moves. Four-line stanzas add a weak
smoothed log prior over the 15 schemes (``scheme_prior``: every scheme keeps mass, it only breaks
near-ties); stanzas of 5+ lines add a log-odds shift by line distance (``DIST_BIAS``). A loose pair counts
for less beside the stanza's exact pairs (``context_penalty``, ``CONTEXT``): two exact couplets are not
joined through a loose or historical vowel. The strictness is read from the stanza itself, never from a
period. A repeated end word is linked, as the gold links it (``rhyme.is_repetition`` still tells it apart
from a rhyme). The distance shifts and scheme counts are fitted tables (:func:`poeval.poetry.rhyme.fitted`).
"""

from __future__ import annotations

import functools
import itertools
import math
from typing import Iterable, Sequence

import numpy as np

from poeval.errors import PoevalError
from poeval.poetry.rhyme import LINK_BIAS, fitted, pair_levels, ratio, ratios
from poeval.poetry.spelling import check_lang
from poeval.poetry.style import SCHEMES

EXHAUSTIVE_MAX = 9


def normalise_scheme(s: str | Sequence) -> str:
    """Relabel a scheme in first-appearance order: ``"ABAB"`` -> ``"abab"``, ``"bcbc"`` -> ``"abab"``.

    Any hashable symbols are accepted (a string or a list of labels). More than 26 groups continue with
    upper-case letters and then digits-free unicode letters.
    """
    seen: dict = {}
    out = []
    for ch in s:
        key = ch.lower() if isinstance(ch, str) else ch
        if key not in seen:
            seen[key] = _letter(len(seen))
        out.append(seen[key])
    return "".join(out)


def _letter(i: int) -> str:
    if i < 26:
        return chr(ord("a") + i)
    if i < 52:
        return chr(ord("A") + i - 26)
    return chr(0x100 + i)  # keeps one character per line for very long stanzas


@functools.lru_cache(maxsize=None)
def _partitions(n: int) -> tuple[str, ...]:
    """All set partitions of n lines as first-appearance labels (restricted growth strings)."""
    out: list[str] = []

    def rec(prefix: list[int], mx: int) -> None:
        if len(prefix) == n:
            out.append("".join(_letter(i) for i in prefix))
            return
        for k in range(mx + 2):
            prefix.append(k)
            rec(prefix, max(mx, k))
            prefix.pop()

    if n > 0:
        rec([0], 0)
    return tuple(out)


SCHEMES_4: list[str] = list(SCHEMES)   # = _partitions(4): the style vocabulary's 15 schemes


@functools.lru_cache(maxsize=None)
def _partition_matrix(n: int) -> np.ndarray:
    """(n_partitions, n_pairs) 0/1 matrix: whether pair (i, j), i < j, is linked in each partition."""
    parts = _partitions(n)
    pairs = list(itertools.combinations(range(n), 2))
    m = np.zeros((len(parts), len(pairs)), dtype=np.float32)
    for r, p in enumerate(parts):
        for c, (i, j) in enumerate(pairs):
            if p[i] == p[j]:
                m[r, c] = 1.0
    return m


# log-odds shift of a link by line distance 1, 2, ..., >= len (stanzas of 5+ lines), relative to all pairs
# (fitted: rhyme.FIT_FILE)
DIST_BIAS: dict[str, list[float]] = fitted()["dist_bias"]

# four-line scheme counts of the dev gold (fitted: rhyme.FIT_FILE); the prior is smoothed with PRIOR_SMOOTHING
# per scheme and scaled by PRIOR_WEIGHT, so it only breaks near-ties and every scheme stays reachable. A heavier
# prior scores higher on the dev gold (docs/results/rhyme.md) by linking lines the phones do not link (abac read
# as abab): it would write the human scheme counts into a model sample's labels, so it stays weak.
SCHEME_COUNTS_4: dict[str, dict[str, int]] = fitted()["scheme_counts_4"]
PRIOR_SMOOTHING = 20.0
PRIOR_WEIGHT: dict[str, float] = {"en": 0.5, "de": 0.5}

# stanza context (``context_penalty``): (ratio at which a pair is strong, penalty of a loose pair whose two
# lines both have strong partners elsewhere, penalty when one has). Chosen by 5-fold CV by poet on the dev
# gold (benchmarks/bench_rhyme.py --context STRONG,BOTH,ONE scores others); (0, 0, 0) switches it off.
CONTEXT: dict[str, tuple[float, float, float]] = {"en": (3.0, 3.0, 1.0), "de": (3.0, 3.0, 1.0)}


def _weights(lines: Sequence[str], lang: str, llr: dict | None, bias: float | None) -> np.ndarray:
    llr = ratios(lang) if llr is None else llr
    bias = LINK_BIAS[lang] if bias is None else bias
    lev = pair_levels(lines, lang, detail=True)
    return level_weights(lev, llr, bias, DIST_BIAS[lang], CONTEXT[lang])


def level_weights(lev: list[list[str]], llr: dict, bias: float, dist_bias: Sequence[float] | None,
                  context: Sequence[float] | None = None) -> np.ndarray:
    """Pair weights from a matrix of levels or pair keys (``llr``: a table :func:`poeval.poetry.rhyme.ratio`
    reads); stanzas of 5+ lines add a log-odds shift by line distance (in long couplet runs and sonnets the gold gives a reused rhyme sound far away a new letter). ``context``
    (``(strong, both, one)``, see :data:`CONTEXT`) lowers loose pairs beside strong ones
    (:func:`context_penalty`)."""
    n = len(lev)
    w = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            d = 0.0
            if dist_bias and n >= 5:
                d = dist_bias[min(j - i, len(dist_bias)) - 1]
            w[i, j] = w[j, i] = ratio(lev[i][j], table=llr) + bias + d
    if context is not None and n >= 3:
        w = np.where(w > 0, w - context_penalty(lev, llr, *context), w)  # only pairs that would link
    return w


def context_penalty(lev: list[list[str]], llr: dict, strong: float, both: float, one: float) -> np.ndarray:
    """How much less each loose pair counts beside the stanza's strong pairs (a strictness read from the
    stanza itself, so generated text needs no period).

    A pair is *strong* when its level's ratio is at least ``strong`` (exact rhymes; a repetition is never
    strong). A pair that is neither strong nor a repetition loses ``both`` when each of its two lines has a
    strong partner elsewhere in the stanza (two exact couplets joined only through a loose or historical
    vowel: aabb read as aaaa, abab as aaaa) and ``one`` when just one of them has (a loose third member
    of an exact pair). Poets who rhyme loosely throughout have no strong pairs, so nothing changes for them.
    """
    n = len(lev)
    st = np.zeros((n, n), dtype=bool)
    for i in range(n):
        for j in range(i + 1, n):
            if lev[i][j] != "identical" and ratio(lev[i][j], table=llr) >= strong:
                st[i, j] = st[j, i] = True
    deg = st.sum(axis=1)
    pen = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            if st[i, j] or lev[i][j] == "identical":
                continue
            hi, hj = deg[i] > 0, deg[j] > 0  # (i, j) is not strong, so these partners lie elsewhere
            pen[i, j] = pen[j, i] = both if hi and hj else one if hi or hj else 0.0
    return pen


def best_partition(w: np.ndarray, prior: dict[str, float] | None = None) -> str:
    """The first-appearance label of the partition maximising the sum of ``w[i, j]`` over linked pairs
    (plus ``prior[label]`` for labels of the stanza's length, when given)."""
    n = w.shape[0]
    if n == 0:
        return ""
    if n == 1:
        return "a"
    if n <= EXHAUSTIVE_MAX:
        iu = np.triu_indices(n, 1)
        scores = _partition_matrix(n) @ w[iu].astype(np.float32)
        if prior:
            scores = scores + _prior_vector(n, tuple(sorted(prior.items())))
        return _partitions(n)[int(np.argmax(scores))]
    return _greedy_partition(w)


@functools.lru_cache(maxsize=64)
def _prior_vector(n: int, prior: tuple) -> np.ndarray:
    p = dict(prior)
    vals = [p[x] for x in _partitions(n) if x in p]
    floor = min(vals) if vals else 0.0
    return np.array([p.get(x, floor) for x in _partitions(n)], dtype=np.float32)


def scheme_prior(lang: str, weight: float | None = None, counts: dict | None = None) -> dict[str, float]:
    """Weak, smoothed log prior over the 15 four-line schemes: ``weight * log((count + k) / (N + 15 k))``."""
    counts = SCHEME_COUNTS_4[lang] if counts is None else counts
    weight = PRIOR_WEIGHT[lang] if weight is None else weight
    total = sum(counts.values()) + PRIOR_SMOOTHING * len(SCHEMES_4)
    return {x: weight * math.log((counts.get(x, 0) + PRIOR_SMOOTHING) / total) for x in SCHEMES_4}


def _greedy_partition(w: np.ndarray) -> str:
    n = w.shape[0]
    clusters: list[list[int]] = [[i] for i in range(n)]

    def gain(a: list[int], b: list[int]) -> float:
        return float(w[np.ix_(a, b)].sum())

    while True:
        best, bi, bj = 0.0, -1, -1
        for i in range(len(clusters)):
            for j in range(i + 1, len(clusters)):
                g = gain(clusters[i], clusters[j])
                if g > best + 1e-12:
                    best, bi, bj = g, i, j
        if bi < 0:
            break
        clusters[bi] = clusters[bi] + clusters[bj]
        del clusters[bj]
    # repair: move single lines while that improves the score
    for _ in range(3 * n):
        moved = False
        for x in range(n):
            src = next(k for k, c in enumerate(clusters) if x in c)
            rest = [y for y in clusters[src] if y != x]
            here = float(w[x, rest].sum()) if rest else 0.0
            best, dest = here, None
            for k, c in enumerate(clusters):
                if k != src:
                    g = float(w[x, c].sum())
                    if g > best + 1e-9:
                        best, dest = g, k
            if dest is None and rest and here < -1e-9:
                best, dest = 0.0, -1
            if dest is not None:
                clusters[src] = rest
                if dest == -1:
                    clusters.append([x])
                else:
                    clusters[dest].append(x)
                clusters = [c for c in clusters if c]
                moved = True
        if not moved:
            break
    lab = [0] * n
    for k, c in enumerate(clusters):
        for x in c:
            lab[x] = k
    return normalise_scheme(lab)


def scheme(lines: list[str], lang: str, *, llr: dict | None = None, bias: float | None = None) -> str:
    """The rhyme scheme of a stanza as a first-appearance label (one letter per line)."""
    check_lang(lang)
    if isinstance(lines, str):
        raise PoevalError("scheme() expects a list of lines, not a string")
    lines = ["" if l is None else str(l) for l in lines]
    if len(lines) <= 1:
        return "a" * len(lines)
    prior = scheme_prior(lang) if len(lines) == 4 and PRIOR_WEIGHT[lang] > 0 else None
    return best_partition(_weights(lines, lang, llr, bias), prior)


def schemes(stanzas: Iterable[list[str]], lang: str, progress: bool = False) -> list[str]:
    """:func:`scheme` for many stanzas (``progress=True`` shows a tqdm bar)."""
    check_lang(lang)
    stanzas = list(stanzas)
    it: Iterable = stanzas
    if progress:
        from tqdm import tqdm

        it = tqdm(stanzas, desc=f"rhyme schemes ({lang})", unit="stanza")
    return [scheme(s, lang) for s in it]
