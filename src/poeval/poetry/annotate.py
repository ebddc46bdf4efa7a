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


def poem_keys(records: list, poem: str, where: str = "input") -> list[str]:
    """The poem of each record, read from the field ``poem`` names: ``"title"`` takes the field's value,
    ``"id/.."`` the parent of a path-like id (``"chicago-en/brooke/000/002"`` -> ``"chicago-en/brooke/000"``:
    corpus / source / poem / stanza, as the rhyme gold writes its ids). A record without the field, or
    with an empty or non-string value, is a clear error: grouping it with a guess could join two poems."""
    field, parent = (poem[:-3], True) if poem.endswith("/..") else (poem, False)
    if not field:
        raise PoevalError(f"--poem {poem!r}: expected a field name, or FIELD/.. for the parent of a path-like id")
    keys = []
    for i, record in enumerate(records):
        value = record.get(field) if isinstance(record, dict) else None
        if not isinstance(value, str) or not value.strip():
            raise PoevalError(f"{where}: record {i + 1} has no {field!r} to name its poem (--poem {poem})")
        if parent:
            if "/" not in value.strip("/"):
                raise PoevalError(f"{where}: record {i + 1}: {field} {value!r} has no parent (--poem {poem})")
            value = value.rstrip("/").rsplit("/", 1)[0]
        keys.append(value)
    return keys


def check_label_field(field: str, meter: bool = False, poem: str | None = None) -> None:
    """Refuse a label ``field`` that would overwrite a field poeval reads: a stanza's verses, id, text or
    language (:data:`poeval.poem_files.WANTED_COLUMNS`, but the label itself), the ``--poem`` field, or
    ``meter`` with ``--meter``."""
    from poeval.poem_files import WANTED_COLUMNS

    read = [name for name in WANTED_COLUMNS if name != "scheme"]
    if field in read:
        raise PoevalError(f"--field {field!r}: poeval reads that field of a record ({', '.join(read)}); "
                          "name another field for the label")
    if poem is not None and field == poem.removesuffix("/.."):
        raise PoevalError(f"--field {field!r}: --poem {poem} reads that field; name another field for the label")
    if meter and field == "meter":
        raise PoevalError("--field 'meter': --meter writes that field; name another field for the label")


def annotate(records: Iterable[dict], lang: str, *, meter: bool = False, field: str = "scheme",
             progress: bool = False, where: str = "input", poem: str | None = None) -> list[dict]:
    """Copies of ``records`` (``{"lines": [...], ...}``, other fields kept) with the detected scheme in
    ``field`` and, with ``meter``, a ``"meter"`` label (:func:`record_meter`). ``poem`` names the field
    that says which poem each record belongs to (:func:`poem_keys`): the stanzas of one poem are then
    labelled together (:func:`poeval.poetry.schemes.poem_schemes`); ``None`` labels each stanza alone."""
    check_lang(lang)
    check_label_field(field, meter, poem)
    records = list(records)
    stanzas = [_record_lines(r, f"{where}: record {i + 1}") for i, r in enumerate(records)]
    keys = None if poem is None else poem_keys(records, poem, where)
    labels = schemes(stanzas, lang, progress=progress, poems=keys)
    out = [{**record, field: label} for record, label in zip(records, labels)]
    if meter:
        from poeval.progress import progress_bar

        for record in progress_bar(out, desc=f"metre ({lang})", unit="stanza", progress=progress):
            record["meter"] = record_meter(record, lang)
    return out


def write_annotated(path: str, lang: str, out: str | None, *, meter: bool = False, field: str = "scheme",
                    progress: bool = True, poem: str | None = None) -> int:
    """:func:`annotate` a JSONL file into ``out`` (atomically; ``None``: standard output)."""
    import json
    import sys

    from poeval.io import nothing_usable, read_jsonl, write_jsonl

    check_phonemizer()
    records = annotate(read_jsonl(path), lang, meter=meter, field=field, progress=progress, where=str(path),
                       poem=poem)
    if not records:
        raise nothing_usable(path, 0, {}, "stanzas")
    if out is None:
        for record in records:
            sys.stdout.write(json.dumps(record, ensure_ascii=False) + "\n")
        return len(records)
    return write_jsonl(out, records)
