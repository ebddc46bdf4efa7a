"""Metre labels of stanzas (for style-conditioned training; a simple template matcher, not evaluated
against gold): one of :data:`METRES`. English from CMUdict stress patterns matched against the feet (at
least ``threshold`` of the known syllables must fit), German from the majority of the DLK ``measure`` field.
"""

from __future__ import annotations

import functools
import re
from typing import Iterable, Sequence

from poeval.errors import PoevalError
from poeval.poetry.spelling import clean_word, en_candidates
from poeval.poetry.style import METERS

METRES = list(METERS)
_METRE_UNITS = {"iambic": "01", "trochaic": "10", "anapaestic": "001", "dactylic": "100", "amphibrachic": "010"}


def _line_stress(line: str) -> str:
    """CMUdict stress string of a line: 1 stressed, 0 unstressed, x unknown (monosyllables, OOV words)."""
    return "".join(_word_stress(tok) for tok in re.findall(r"[A-Za-z']+", line))


@functools.lru_cache(maxsize=200_000)
def _word_stress(tok: str) -> str:
    import pronouncing

    w = clean_word(tok, "en").strip("'")
    if not w:
        return ""
    for cand in en_candidates(w):
        prons = pronouncing.phones_for_word(cand)
        if prons:
            st = pronouncing.stresses(prons[0]).replace("2", "x")
            return "x" if len(st) == 1 else st
    return "x" * max(1, len(re.findall(r"[aeiouy]+", w.rstrip("e")) or ["a"]))


def _template_score(stress: str, unit: str) -> tuple[int, int]:
    best = (0, 0)
    for off in range(len(unit)):
        hit = tot = 0
        for k, s in enumerate(stress):
            if s == "x":
                continue
            tot += 1
            hit += s == unit[(k + off) % len(unit)]
        if tot and (hit / tot, tot) > (best[0] / max(best[1], 1), best[1]):
            best = (hit, tot)
    return best


def metre(lines: Sequence[str], lang: str = "en", threshold: float = 0.8) -> str:
    """Metre family of a stanza from CMUdict stress patterns (English only): one of :data:`METRES`."""
    if lang != "en":
        raise PoevalError("metre() derives metre from CMUdict stresses and supports only 'en'; "
                          "for German use metre_from_measures() on the corpus `measure` field")
    scores = {}
    for name, unit in _METRE_UNITS.items():
        hit = tot = 0
        for line in lines:
            h, t = _template_score(_line_stress(str(line)), unit)
            hit, tot = hit + h, tot + t
        scores[name] = hit / tot if tot else 0.0
    # prefer binary feet on ties (they are far more common)
    name = max(_METRE_UNITS, key=lambda k: (round(scores[k], 6), -len(_METRE_UNITS[k])))
    return name if scores[name] >= threshold else "other"


def metre_from_measures(measures: Iterable[str | None]) -> str:
    """Majority metre family of DLK ``measure`` values (e.g. ``iambic.tetra``, ``trochaic.tri``)."""
    counts: dict[str, int] = {}
    for m in measures:
        fam = _measure_family(m)
        counts[fam] = counts.get(fam, 0) + 1
    if not counts:
        return "other"
    known = {k: v for k, v in counts.items() if k != "other"} or counts
    return max(known, key=lambda k: (known[k], -METRES.index(k)))


def _measure_family(m: str | None) -> str:
    m = (m or "").lower()
    for key, fam in (("iamb", "iambic"), ("alexandrin", "iambic"), ("troch", "trochaic"), ("anap", "anapaestic"),
                     ("dactyl", "dactylic"), ("hexameter", "dactylic"), ("amphibr", "amphibrachic")):
        if key in m:
            return fam
    return "other"


def record_meter(record: dict, lang: str) -> str:
    """Metre label of a quatrain record: DLK ``measure`` majority where present, else CMUdict stresses (EN)."""
    measures = record.get("measure")
    if isinstance(measures, list) and any(measures):
        return metre_from_measures(measures)
    return metre(record["lines"], "en") if lang == "en" else "other"
