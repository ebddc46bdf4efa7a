"""Metre of a verse by its feet: the family (:data:`LABELS`) and the number of feet whose pattern fits the
verse's stresses best (:mod:`poeval.poetry.stress`), and a stanza's family by the verses that fit each family best
(:func:`stanza_metre`).

Each family is a foot repeated (iambic ``01``, trochaic ``10``, anapaestic ``001``, dactylic ``100``,
amphibrachic ``010``) with the licences verse takes: a verse may lose the slack before its first stress (a
headless iamb, an anapaest begun as an iamb or on its stress) and the slack after its last (catalexis: a
trochaic or dactylic verse ending on a stress), and a verse of rising feet (iambic, anapaestic) may add one
or two slack syllables after its last stress (a feminine ending). A pattern's cost is the sum over syllables
of what a stress code (:mod:`poeval.poetry.stress`) costs in a strong or a weak position (``S`` in a weak one
or ``U`` in a strong one: 1; ``s`` in a weak one or ``w`` in a strong one: ``weak``; ``x``: 0), plus ``head``
when it drops the first slack, ``tail`` when it drops or adds slack at the end, plus the family's ``bias``;
the verse takes the family of the cheapest pattern. The last syllable of a verse counts as ``x`` when it is a
one-syllable function word (the rhyme stresses it). German
iambic hexameter is the alexandrine (DLK's and antikoerperchen's label). ``other``: a verse of fewer than
:data:`MIN_SYLLABLES` syllables, or one whose cheapest pattern costs more than ``other`` per syllable.

The constants are fitted on the metre gold's dev parts with folds by poet (``resources/gold/``,
``benchmarks/bench_metre.py --fit``) and ship in ``poetry/data/metre_fit.json``.
"""

from __future__ import annotations

import collections
import functools
import json
from importlib import resources
from typing import Sequence

from poeval.errors import PoevalError
from poeval.poetry.spelling import check_lang
from poeval.poetry.stress import line_stress
from poeval.poetry.style import METERS

LABELS = METERS
FOOT = {"iambic": "01", "trochaic": "10", "anapaestic": "001", "dactylic": "100", "amphibrachic": "010"}
MAX_FEET = 8
MIN_SYLLABLES = 3   # a shorter verse shows no foot: ``other``


@functools.lru_cache(maxsize=None)
def patterns(family: str, n: int) -> tuple[tuple[str, int, int, int], ...]:
    """Every ``(pattern, head licence, tail licence, feet)`` of ``family`` with ``n`` syllables (a licence used:
    1, else 0)."""
    foot = FOOT[family]
    first, slack_after = foot.index("1"), len(foot) - foot.rindex("1") - 1
    out = set()
    for k in range(1, MAX_FEET + 1):
        base = foot * k
        for head in range(first + 1):                      # drop the slack before the first stress
            body = base[head:]
            ends = [(body[:len(body) - tail], int(tail > 0)) for tail in range(slack_after + 1)]   # ... after the last
            if not slack_after:                            # a rising foot: a feminine ending
                ends += [(body + "0", 1), (body + "00", 1)]
            out.update((p, int(head > 0), tail, k) for p, tail in ends if len(p) == n)
    return tuple(sorted(out))


def _mismatches(codes: str, pattern: str) -> tuple[int, int]:
    """(dictionary stresses, one-syllable words) against the pattern's strong and weak positions."""
    strong = sum((p == "1" and c == "U") or (p == "0" and c == "S") for c, p in zip(codes, pattern))
    weak = sum((p == "1" and c == "w") or (p == "0" and c == "s") for c, p in zip(codes, pattern))
    return strong, weak


def _label(family: str, feet: int, cost: float, n: int, consts: dict, lang: str) -> str:
    """The cheapest pattern's family as the verse's label: ``other`` when the verse is too short or fits too
    badly, the alexandrine for German iambic hexameter."""
    if n < MIN_SYLLABLES or cost > consts["other"] * n:
        return "other"
    return "alexandrine" if lang == "de" and family == "iambic" and feet == 6 else family


def load_fit(path=None) -> dict:
    """The fitted constants: ``{lang: {"weak", "head", "tail", "other", "bias": {family: float}}}``."""
    if path is None:
        text = resources.files("poeval.poetry").joinpath("data/metre_fit.json").read_text(encoding="utf-8")
    else:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    fit = {k: v for k, v in json.loads(text).items() if not k.startswith("_")}   # _meta: how it was fitted
    for lang, consts in fit.items():
        check_lang(lang)
        if set(consts) != {"weak", "head", "tail", "other", "bias"} or set(consts["bias"]) != set(FOOT):
            raise PoevalError(f"metre fit for {lang!r}: expected weak, head, tail, other and a bias per family")
    return fit


@functools.lru_cache(maxsize=1)
def fitted() -> dict:
    return load_fit()


def codes_of(line: str, lang: str) -> str:
    """The verse's stress codes with a final function word counted as ``x`` (the rhyme stresses it)."""
    codes = line_stress(line, lang)
    return codes[:-1] + "x" if codes.endswith("w") else codes


def family_costs(codes: str, lang: str, fit: dict | None = None) -> dict[str, tuple[float, int]]:
    """``{family: (cost, feet)}`` of each family's cheapest pattern for a verse's stress codes (a family with
    no pattern of the verse's length is absent)."""
    consts = (fit or fitted())[lang]
    out: dict[str, tuple[float, int]] = {}
    for family in FOOT:
        for pattern, head, tail, feet in patterns(family, len(codes)):
            strong, weak = _mismatches(codes, pattern)
            cost = (strong + consts["weak"] * weak + consts["head"] * head + consts["tail"] * tail
                    + consts["bias"][family])
            if family not in out or cost < out[family][0]:
                out[family] = (cost, feet)
    return out


def scan(codes: str, lang: str, fit: dict | None = None) -> tuple[str, int, float]:
    """``(family, feet, cost)`` of the cheapest pattern for a verse's stress codes (``other``, 0 feet
    when it has no syllable or no pattern fits it well enough); a tie goes to the family first in :data:`FOOT`."""
    costs = family_costs(codes, lang, fit)
    family = min(costs, key=lambda f: costs[f][0], default="other")
    best = (family, costs[family][1], costs[family][0]) if costs else ("other", 0, float("inf"))
    label = _label(*best, len(codes), (fit or fitted())[lang], lang)
    return (label, 0 if label == "other" else best[1], best[2])


def line_metre(line: str, lang: str, fit: dict | None = None) -> str:
    """The metre family of one verse (module doc)."""
    return scan(codes_of(line, lang), lang, fit)[0]


def stanza_metre(lines: Sequence[str], lang: str, fit: dict | None = None) -> str:
    """The family most of a stanza's verses fit best, a verse voting for every family whose cheapest pattern
    costs its least: a verse that two families fit alike (``Half a league, half a league``, a dactylic or an
    anapaestic dimeter) backs both, so that the verses that tell them apart decide, where its own label would
    be the first of them in :data:`FOOT`. A tie goes to the family whose voters cost least, then to the one
    whose patterns cost least over all the verses. Verses under :data:`MIN_SYLLABLES` syllables and verses
    that fit no family well enough vote ``other``, which loses ties; German iambic verse is the alexandrine
    when most of the verses that back it have 6 feet."""
    consts = (fit or fitted())[lang]
    votes, voters, total, six = (collections.Counter() for _ in range(4))
    for codes in (codes_of(line, lang) for line in lines):
        costs = family_costs(codes, lang, fit)
        least = min((c for c, _ in costs.values()), default=float("inf"))
        if _label("iambic", 0, least, len(codes), consts, lang) == "other":
            votes["other"] += 1
            continue
        for family, (c, n_feet) in costs.items():
            total[family] += c
            if c == least:
                votes[family] += 1
                voters[family] += c
                six[family] += n_feet == 6
    if not votes:
        return "other"
    family = min(votes, key=lambda f: (-votes[f], f == "other", voters[f], total[f], LABELS.index(f)))
    return "alexandrine" if lang == "de" and family == "iambic" and 2 * six[family] > votes[family] else family


# --- fitting (benchmarks/bench_metre.py --fit) --------------------------------------------------------

LICENCE_GRID = (0.0, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0)
GRIDS = {"weak": (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0, 1.25, 1.5), "head": LICENCE_GRID, "tail": LICENCE_GRID,
         "other": (0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0, 9.0),
         "bias": (-2.0, -1.5, -1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0)}
_FAMILIES = tuple(FOOT)
STARTS = ((0.3, 0.3), (0.3, 1.0), (0.6, 0.3), (0.6, 1.0), (1.0, 0.3), (1.0, 1.0))   # (weak, head and tail)


class Candidates:
    """Every pattern of every family for a list of verses' stress codes, as flat arrays, so that one set of
    constants labels all verses at once (:meth:`labels`)."""

    def __init__(self, codes: Sequence[str], lang: str):
        import numpy as np

        rows = []
        for i, c in enumerate(codes):
            for f, family in enumerate(_FAMILIES):
                for pattern, head, tail, feet in patterns(family, len(c)):
                    rows.append((i, f, *_mismatches(c, pattern), head, tail, feet))
        self.lang, self.n_lines = lang, len(codes)
        self.length = np.array([len(c) for c in codes], dtype=float)
        arr = np.array(rows, dtype=float).reshape(-1, 7)
        self.line, self.family, self.strong, self.weak, self.head, self.tail, self.feet = (arr[:, k] for k in range(7))
        self.line, self.family = self.line.astype(int), self.family.astype(int)
        # the rows of one verse are contiguous: where each verse's rows start, and each row's verse among those
        new_verse = np.r_[True, self.line[1:] != self.line[:-1]] if len(rows) else np.empty(0, bool)
        self.starts, self.segment = np.flatnonzero(new_verse), np.cumsum(new_verse) - 1

    def labels(self, consts: dict) -> list[str]:
        import numpy as np

        out = ["other"] * self.n_lines
        if not len(self.starts):
            return out
        bias = np.array([consts["bias"][f] for f in _FAMILIES])
        cost = (self.strong + consts["weak"] * self.weak + consts["head"] * self.head + consts["tail"] * self.tail
                + bias[self.family])
        # each verse's first cheapest row, in the order scan() tries them (its strict < keeps the first)
        cheapest = cost == np.minimum.reduceat(cost, self.starts)[self.segment]
        hits = np.flatnonzero(cheapest)
        first = hits[np.r_[True, self.line[hits][1:] != self.line[hits][:-1]]]
        for k in first:
            i = self.line[k]
            out[i] = _label(_FAMILIES[self.family[k]], self.feet[k], cost[k], self.length[i], consts, self.lang)
        return out


def objective(gold: Sequence[str], pred: Sequence[str]) -> float:
    """The mean of line accuracy and the macro F1 over the families the gold has: a fit that never names a
    rare family loses."""
    right = collections.Counter(g for g, p in zip(gold, pred) if g == p)
    n_gold, n_pred = collections.Counter(gold), collections.Counter(pred)
    f1 = [2 * right[f] / (n_gold[f] + n_pred[f]) for f in n_gold]   # 2PR / (P + R) = 2 tp / (gold + predicted)
    return (sum(right.values()) / max(len(gold), 1) + sum(f1) / len(f1)) / 2


def fit(codes: Sequence[str], gold: Sequence[str], lang: str, rounds: int = 4) -> dict:
    """Constants for ``lang`` by coordinate descent over :data:`GRIDS` on :func:`objective`, from each of
    :data:`STARTS` (one start finds a poor local optimum too often); iambic's bias stays 0: the others are
    relative to it."""
    cands = Candidates(codes, lang)
    keys = [("weak",), ("head",), ("tail",), ("other",)] + [("bias", f) for f in _FAMILIES if f != "iambic"]
    results = []
    for weak, licence in STARTS:
        consts = {"weak": weak, "head": licence, "tail": licence, "other": 9.0, "bias": dict.fromkeys(_FAMILIES, 0.0)}
        best = objective(gold, cands.labels(consts))
        for _ in range(rounds):
            changed = False
            for key in keys:
                for value in GRIDS[key[0]]:
                    trial = json.loads(json.dumps(consts))
                    (trial["bias"] if key[0] == "bias" else trial)[key[-1]] = value
                    score = objective(gold, cands.labels(trial))
                    if score > best + 1e-12:
                        best, consts, changed = score, trial, True
            if not changed:
                break
        results.append((best, consts))
    return max(results, key=lambda r: r[0])[1]   # the first of equal optima: the order of STARTS
