"""Metre diversity of a sample of quatrains (not in the paper, which names it as future work): the shares of
the metre families (:data:`poeval.poetry.style.METERS`), their entropy, and KL divergence and cross-entropy
against the training quatrains, computed exactly as for rhyme schemes (:func:`poeval.metrics.distribution.
label_numbers`: bits, KL(Q_sample || P_human), P smoothed only when the human data never use some family).

A quatrain's metre label, in this order: its ``meter`` field (the workflow's corpus files carry the label
that conditioning uses, computed once by ``poeval rhyme --meter``); the majority of its DLK ``measure``
annotations; for English, the CMUdict stress template matcher (:func:`poeval.poetry.metre.metre`). German
quatrains without either have no label: poeval has no German stress model, and a model's German samples never
carry DLK annotations. Rather than label them all ``other`` (what conditioning falls back to, which would
make every German model look maximally far from the human metres), a sample or reference with an unlabelled
quatrain gets no numbers: every value is null and ``note`` says why."""

from __future__ import annotations

import numpy as np

from poeval.errors import PoevalError
from poeval.metrics.distribution import label_numbers
from poeval.poetry import metre as detector
from poeval.poetry.style import METERS

_INDEX = {m: i for i, m in enumerate(METERS)}
UNLABELLED_NOTE = ("no metre label: {what} has quatrains without a `meter` field or DLK `measure` annotations, "
                   "and metre detection from stresses is English-only (poeval.poetry.metre.metre)")


def label(record: dict, lang: str) -> str | None:
    """A quatrain record's metre family (module doc), or None when it cannot have one."""
    given = record.get("meter")
    if given is not None:
        if given not in _INDEX:
            raise PoevalError(f"quatrain {record.get('id')!r}: unknown metre label {given!r} "
                              f"(expected one of {', '.join(METERS)})")
        return given
    measures = record.get("measure")
    if isinstance(measures, list) and any(measures):
        return detector.metre_from_measures(measures)
    return detector.metre(record["lines"], "en") if lang == "en" else None


def labels(records: list[dict], lang: str, progress: bool = False) -> list[str] | None:
    """Every record's label, or None when some record has none."""
    from tqdm import tqdm

    out = []
    for record in tqdm(records, desc=f"metre ({lang})", unit="quatrain", disable=not progress, mininterval=1.0):
        found = label(record, lang)
        if found is None:
            return None
        out.append(found)
    return out


def index(found: list[str]) -> np.ndarray:
    return np.array([_INDEX[m] for m in found], dtype=np.int64)


def counts(found: list[str]) -> np.ndarray:
    """Counts over :data:`METERS` (in that order)."""
    return np.bincount(index(found), minlength=len(METERS)).astype(float)


def unlabelled(what: str) -> dict:
    """The family's result when a side has no metre labels: every number null, with a note."""
    return {"distribution": {m: None for m in METERS}, "counts": None, "entropy": None, "kl": None,
            "cross_entropy": None, "note": UNLABELLED_NOTE.format(what=what)}


def from_counts(sample: np.ndarray, human: np.ndarray, smoothing: float) -> dict:
    return label_numbers(METERS, sample, human, smoothing)
