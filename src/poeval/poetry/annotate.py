"""Label stanza records (``{"lines": [...], ...}``, JSON lines) with their detected rhyme scheme and, on
request, metre: the ``poeval rhyme`` command and the data stage's ``rhyme_labels`` step."""

from __future__ import annotations

from typing import Iterable

from poeval.errors import PoevalError
from poeval.poetry.espeak import check_phonemizer
from poeval.poetry.metre import record_meter
from poeval.poetry.schemes import schemes
from poeval.poetry.spelling import check_lang


def _record_lines(record, where: str) -> list[str]:
    lines = record.get("lines") if isinstance(record, dict) else None
    if not isinstance(lines, list) or not all(isinstance(v, str) for v in lines):
        raise PoevalError(f"{where}: expected an object with \"lines\": [str, ...]")
    return lines


def annotate(records: Iterable[dict], lang: str, *, meter: bool = False, field: str = "scheme",
             progress: bool = False, where: str = "input") -> list[dict]:
    """Copies of ``records`` (``{"lines": [...], ...}``, other fields kept) with the detected scheme in
    ``field`` and, with ``meter``, a ``"meter"`` label (:func:`record_meter`)."""
    check_lang(lang)
    records = list(records)
    stanzas = [_record_lines(r, f"{where}: record {i + 1}") for i, r in enumerate(records)]
    labels = schemes(stanzas, lang, progress=progress)
    out = [{**record, field: label} for record, label in zip(records, labels)]
    if meter:
        from tqdm import tqdm

        for record in tqdm(out, desc=f"metre ({lang})", unit="stanza", disable=not progress):
            record["meter"] = record_meter(record, lang)
    return out


def write_annotated(path: str, lang: str, out: str | None, *, meter: bool = False, field: str = "scheme",
                    progress: bool = True) -> int:
    """:func:`annotate` a JSONL file into ``out`` (atomically; ``None``: standard output)."""
    import json
    import sys

    from poeval.io import nothing_usable, read_jsonl, write_jsonl

    check_phonemizer()
    records = annotate(read_jsonl(path), lang, meter=meter, field=field, progress=progress, where=str(path))
    if not records:
        raise nothing_usable(path, 0, {}, "stanzas")
    if out is None:
        for record in records:
            sys.stdout.write(json.dumps(record, ensure_ascii=False) + "\n")
        return len(records)
    return write_jsonl(out, records)
