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
from collections import Counter
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


# how much the poem's other stanzas of the same length count (:func:`poem_schemes`): the share of them that
# have a scheme, times this, is added to its score. Chosen by 5-fold CV by poet on the dev gold
# (benchmarks/bench_rhyme.py --poem-weight scores others, --nested-poem chooses it inside each fold).
POEM_VOTE: dict[str, float] = {"en": 8.0, "de": 5.0}


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


def best_partition(w: np.ndarray, prior: dict[str, float] | None = None, vote: dict[str, float] | None = None,
                   vote_weight: float = 0.0) -> str:
    """The first-appearance label of the partition maximising the sum of ``w[i, j]`` over linked pairs
    (plus ``prior[label]`` for labels of the stanza's length, when given). ``vote`` (label -> share, the
    poem's other stanzas of this length: :func:`poem_schemes`) adds ``vote_weight`` times each label's share;
    beyond ``EXHAUSTIVE_MAX`` lines, where partitions are not enumerated, it adds ``vote_weight`` times
    (the share that links a pair - 1/2) to each pair instead."""
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
        if vote:
            index = _partition_index(n)
            for label, share in vote.items():
                scores[index[label]] += vote_weight * share
        return _partitions(n)[int(np.argmax(scores))]
    if vote:
        linked = sum(share * np.equal.outer(list(label), list(label)) for label, share in vote.items())
        w = w + vote_weight * (linked - 0.5)
    return _greedy_partition(w)


@functools.lru_cache(maxsize=None)
def _partition_index(n: int) -> dict[str, int]:
    """The row of each partition label of n lines in :func:`_partition_matrix`."""
    return {p: k for k, p in enumerate(_partitions(n))}


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


def _check_lines(lines) -> list[str]:
    if isinstance(lines, str):
        raise PoevalError("scheme() expects a list of lines, not a string")
    return ["" if l is None else str(l) for l in lines]


def _prior(lines: Sequence[str], lang: str) -> dict[str, float] | None:
    return scheme_prior(lang) if len(lines) == 4 and PRIOR_WEIGHT[lang] > 0 else None


def scheme(lines: list[str], lang: str, *, llr: dict | None = None, bias: float | None = None) -> str:
    """The rhyme scheme of a stanza as a first-appearance label (one letter per line)."""
    check_lang(lang)
    lines = _check_lines(lines)
    if len(lines) <= 1:
        return "a" * len(lines)
    return best_partition(_weights(lines, lang, llr, bias), _prior(lines, lang))


def vote_labels(weights: Sequence[np.ndarray], priors: Sequence[dict | None], vote_weight: float) -> list[str]:
    """Schemes of one poem's stanzas from their pair weights (:func:`level_weights`) and priors: each stanza
    alone first, then again with the poem's other stanzas of its length voting for their alone-schemes
    (:func:`best_partition`'s ``vote``). One vote round: a stanza's label never feeds back into itself."""
    alone = [best_partition(w, p) for w, p in zip(weights, priors)]
    out = []
    for k, (w, p) in enumerate(zip(weights, priors)):
        others = [a for j, a in enumerate(alone) if j != k and len(a) == len(alone[k])]
        if not others or vote_weight == 0 or len(alone[k]) <= 1:
            out.append(alone[k])
            continue
        vote = {label: c / len(others) for label, c in Counter(others).items()}
        out.append(best_partition(w, p, vote, vote_weight))
    return out


def poem_schemes(stanzas: Sequence[list[str]], lang: str, *, vote_weight: float | None = None) -> list[str]:
    """The schemes of one poem's stanzas, in order: each stanza's own pairs, plus the vote of the poem's other
    stanzas of the same length (``POEM_VOTE``; :func:`vote_labels`). Poets keep a stanza's scheme through a
    poem and annotators label it so: a stanza whose own end words leave ``abab`` and ``abcb`` close takes
    the scheme its sister stanzas rhyme clearly. A poem of one stanza gets :func:`scheme`'s label."""
    check_lang(lang)
    stanzas = [_check_lines(s) for s in stanzas]
    vote_weight = POEM_VOTE[lang] if vote_weight is None else vote_weight
    weights = [_weights(s, lang, None, None) if len(s) > 1 else np.zeros((len(s), len(s))) for s in stanzas]
    return vote_labels(weights, [_prior(s, lang) for s in stanzas], vote_weight)


def schemes(stanzas: Iterable[list[str]], lang: str, progress: bool = False,
            poems: Sequence | None = None) -> list[str]:
    """:func:`scheme` for many stanzas (``progress=True`` shows a tqdm bar). ``poems`` (one hashable key per
    stanza, ``None`` for a stanza on its own) labels the stanzas that share a key as one poem
    (:func:`poem_schemes`), in their order in ``stanzas``."""
    check_lang(lang)
    stanzas = list(stanzas)
    if poems is not None and len(poems) != len(stanzas):
        raise PoevalError(f"{len(poems)} poem keys for {len(stanzas)} stanzas")
    groups: dict = {}
    for i, key in enumerate([None] * len(stanzas) if poems is None else poems):
        groups.setdefault(("stanza", i) if key is None else ("poem", key), []).append(i)
    it: Iterable = groups.values()
    if progress:
        from poeval.progress import progress_bar

        it = progress_bar(it, desc=f"rhyme schemes ({lang})", unit="poem" if poems is not None else "stanza")
    out = [""] * len(stanzas)
    for idx in it:   # a poem of one stanza: poem_schemes gives scheme()'s label
        for i, label in zip(idx, poem_schemes([stanzas[i] for i in idx], lang)):
            out[i] = label
    return out
