"""Metre diversity of a sample of quatrains (not in the paper, which names it as future work): the shares of
the metre families (:data:`poeval.poetry.style.METERS`), their entropy, and KL divergence and cross-entropy
against the training quatrains, computed exactly as for rhyme schemes (:func:`poeval.metrics.distribution.
label_numbers`: bits, KL(Q_sample || P_human), P smoothed only when the human data never use some family).

A quatrain's metre label: its ``meter`` field where it has one (the workflow's corpus files carry the label
that conditioning uses, computed once by ``poeval rhyme --meter``), else the metre labeller's
(:func:`poeval.poetry.metre.metre`), the same labeller in both languages, so that a sample and its reference
are labelled alike."""

from __future__ import annotations

import numpy as np

from poeval.errors import PoevalError
from poeval.metrics.distribution import label_numbers
from poeval.poetry import metre as detector
from poeval.poetry.style import METERS

_INDEX = {m: i for i, m in enumerate(METERS)}


def label(record: dict, lang: str) -> str:
    """A quatrain record's metre family (module doc)."""
    given = record.get("meter")
    if given is not None:
        if given not in _INDEX:
            raise PoevalError(f"quatrain {record.get('id')!r}: unknown metre label {given!r} "
                              f"(expected one of {', '.join(METERS)})")
        return given
    return detector.metre(record["lines"], lang)


def labels(records: list[dict], lang: str, progress: bool = False) -> list[str]:
    """Every record's label."""
    from poeval.progress import progress_bar

    return [label(record, lang) for record in progress_bar(records, desc=f"metre ({lang})", unit="quatrain",
                                                          progress=progress)]


def index(found: list[str]) -> np.ndarray:
    return np.array([_INDEX[m] for m in found], dtype=np.int64)


def counts(found: list[str]) -> np.ndarray:
    """Counts over :data:`METERS` (in that order)."""
    return np.bincount(index(found), minlength=len(METERS)).astype(float)


def from_counts(sample: np.ndarray, human: np.ndarray, smoothing: float) -> dict:
    return label_numbers(METERS, sample, human, smoothing)
