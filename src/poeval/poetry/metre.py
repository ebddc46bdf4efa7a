"""Metre labels of stanzas (style conditioning, the metre family of metrics): one of :data:`METRES`, the
family most of the stanza's verses have by their feet (:func:`poeval.poetry.feet.stanza_metre`), in English
and German alike. One labeller for a corpus, its conditioning tokens and a model's samples, so that the metre
family compares like with like; DLK's automatic ``measure`` annotations are not read (the labeller agrees
with them on 81.6 % of verses: docs/results/metre.md).
"""

from __future__ import annotations

from typing import Sequence

from poeval.poetry import feet
from poeval.poetry.spelling import check_lang
from poeval.poetry.style import METERS

METRES = list(METERS)


def metre(lines: Sequence[str], lang: str = "en") -> str:
    """The metre family of a stanza (module doc)."""
    check_lang(lang)
    return feet.stanza_metre([str(line) for line in lines], lang)


def record_meter(record: dict, lang: str) -> str:
    """Metre label of a quatrain record: :func:`metre` of its lines."""
    return metre(record["lines"], lang)
