"""Poem files: the formats a poem collection arrives in (JSONL, plain text, a ``save_to_disk`` folder,
Parquet / CSV / TSV, or poems in memory), read into poem records. Writing and hashing files is
:mod:`poeval.io`'s."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any, Mapping, Sequence

from poeval.errors import PoevalError, first_line
from poeval.io import EMPTY_FILE, input_file, nothing_usable, read_jsonl, read_lines
from poeval.text import verses_problem


def _check_quatrain(lines) -> str | None:
    """Why a poem is not a usable quatrain, or None when it is."""
    if not isinstance(lines, list) or not all(isinstance(v, str) for v in lines):
        return "malformed"
    if len(lines) != 4:
        return "not_4_lines"
    return verses_problem(lines)   # the samplers' rule too


def _is_jsonl(path: Path) -> bool:
    if path.suffix in {".jsonl", ".gz"}:
        return True
    with open(path, "rb") as handle:
        head = handle.read(4096).removeprefix(b"\xef\xbb\xbf").lstrip()
    return head.startswith(b"{")


def _plain_text_poems(path: Path) -> list[list[str]]:
    poems, current = [], []
    for _, line in read_lines(path):
        if line.strip():
            current.append(line.strip())
        elif current:
            poems.append(current)
            current = []
    if current:
        poems.append(current)
    return poems


def _scheme_field(record: dict) -> dict:
    """The labels a record carries that the metric families read: its ``scheme`` (rhyme), ``meter`` and DLK
    ``measure`` annotations (metre). Metre labels only in poeval's own layout (``lines``): a ``text`` record
    (QuaTrain's release, the paper's saved samples) has another labeller's (``"iambus"``), as the saved-dataset
    reader, which keeps no ``meter`` column, already assumes."""
    kept = {"scheme": record["scheme"]} if isinstance(record.get("scheme"), str) and record["scheme"] else {}
    if "lines" not in record:
        return kept
    if isinstance(record.get("meter"), str):
        kept["meter"] = record["meter"]
    if isinstance(record.get("measure"), list):
        kept["measure"] = record["measure"]
    return kept


def _record_id(record: dict, index: int, path: str | Path) -> str:
    """A record's own id (a string or an integer), else its position in the file; as a string, so that
    ``10`` and ``"10"`` are one id (results name poems and their units, ``"10#0"``, by it)."""
    rid = record.get("id", index)
    if isinstance(rid, bool) or not isinstance(rid, (str, int)):
        raise PoevalError(f"{path}: record {index + 1}: 'id' must be a string or an integer, got {rid!r}")
    return str(rid)


def check_unique_ids(ids: Iterable, path: str | os.PathLike) -> None:
    """Ids key per-poem results (memorization hits, cached embeddings, BPoMP pairs), so a repeated id
    would silently merge poems: reject it, naming the first one repeated."""
    seen: set = set()
    for rid in ids:
        if rid in seen:
            raise PoevalError(f"{path}: id {rid!r} occurs more than once; ids must be unique "
                              "(leave 'id' out to number the records by position)")
        seen.add(rid)


def _poem_record(record: dict, index: int, source: str | Path) -> dict:
    """A record of any source as the readers keep it: id, verses, the labels the families read and the
    language it says it is in (an import checks it)."""
    kept = {"id": _record_id(record, index, source), "lines": _verses(record)}
    return kept | _scheme_field(record) | _language(record)


def _verses(record: dict):
    """A record's verses: poeval's ``lines``, else ``text`` as QuaTrain's release and the paper's saved
    samples hold them (a list of verses, or one string with a verse per line)."""
    verses = record["lines"] if "lines" in record else record.get("text")
    return verses.strip("\n").split("\n") if isinstance(verses, str) else verses


def _language(record: dict) -> dict:
    """A record's ``language`` (the paper's saved samples carry one), kept so that an import can check it."""
    return {"language": record["language"]} if isinstance(record.get("language"), str) else {}


def _poem_records(rows: Iterable[dict], path: Path) -> list[dict]:
    return [_poem_record(r, i, path) for i, r in enumerate(rows)]


def _check_text_column(columns: Iterable[str], path: Path, what: str) -> None:
    columns = list(columns)
    if "lines" not in columns and "text" not in columns:
        raise PoevalError(f"{path}: the {what} has no 'text' or 'lines' column "
                          f"(columns: {', '.join(columns) or 'none'})")


WANTED_COLUMNS = ("id", "lines", "text", "scheme", "language")   # what a poem record keeps of a table's columns


def _saved_dataset_records(path: Path) -> list[dict]:
    """The rows of a folder written by Hugging Face ``Dataset.save_to_disk`` as poem records. The paper's
    code saves its samples so (``helper_functions.get_dataset``: a ``text`` column of four verses and
    ``language``); a ``lines`` column (``poeval export-dataset``) is read first; ``id``, ``scheme`` and
    ``language`` columns are kept where present, as in a JSONL file."""
    if (path / "dataset_dict.json").is_file():
        splits = sorted(p.name for p in path.iterdir() if (p / "state.json").is_file())
        raise PoevalError(f"{path}: holds a DatasetDict (splits: {', '.join(splits) or 'none'}); "
                          "give the folder of one split")
    if not (path / "state.json").is_file():
        raise PoevalError(f"{path}: is a directory; expected a file (JSONL or text) or a folder written by Hugging "
                          "Face datasets' save_to_disk (this one has no state.json)")
    import datasets   # seconds to import; only this input needs it

    try:
        ds = datasets.load_from_disk(str(path))
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise PoevalError(f"{path}: cannot load the saved dataset: {first_line(err)}") from None
    if not isinstance(ds, datasets.Dataset):
        raise PoevalError(f"{path}: expected one saved Dataset, got {type(ds).__name__}")
    _check_text_column(ds.column_names, path, "saved dataset")
    return _poem_records(ds.select_columns([c for c in WANTED_COLUMNS if c in ds.column_names]).to_list(), path)


def _table_rows(path: Path) -> tuple[list[str], list[dict]]:
    """(columns, rows) of a Parquet file (read by Arrow) or a CSV / TSV file with a header row."""
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            table = pq.read_table(path)
        except (OSError, ValueError) as err:   # pyarrow's ArrowInvalid is a ValueError
            raise PoevalError(f"{path}: cannot read the Parquet file: {first_line(err)}") from None
        return table.column_names, table.select([c for c in WANTED_COLUMNS if c in table.column_names]).to_pylist()
    import csv

    text = "".join(line for _, line in read_lines(path))
    reader = csv.DictReader(text.splitlines(keepends=True), delimiter="\t" if path.suffix == ".tsv" else ",")
    try:
        rows = list(reader)
    except csv.Error as err:
        raise PoevalError(f"{path}: not valid CSV (line {reader.line_num}: {err})") from None
    return list(reader.fieldnames or []), rows


TABLE_SUFFIXES = (".parquet", ".csv", ".tsv")


def _table_records(path: Path) -> list[dict]:
    columns, rows = _table_rows(path)
    _check_text_column(columns, path, f"{path.suffix[1:].upper()} file")
    return _poem_records(rows, path)


# What a reader of poems takes: a path, or in-memory poems (each a list of verses or a dict like a JSONL line).
PoemSource = str | os.PathLike | Sequence


def _memory_records(poems: Sequence, name: str) -> list[dict]:
    """In-memory poems as the records of a JSONL file: a sequence of verses is a record's ``lines``, a dict is
    read as a JSONL line (``lines`` or ``text``, ``id``, ``scheme``...). A poem whose verses are not strings is
    an error here, not a ``malformed`` skip as in a file: in Python it is a caller's mistake (e.g. one poem
    given as a flat list of verses), and a silent count would hide it."""
    records = []
    for i, poem in enumerate(poems):
        record = dict(poem) if isinstance(poem, Mapping) else {"lines": poem}
        if isinstance(record.get("lines"), tuple):
            record["lines"] = list(record["lines"])
        kept = _poem_record(record, i, name)
        if isinstance(poem, str) or not _all_strings(kept["lines"]):
            raise PoevalError(f"{name}: poem {i + 1}: expected a list of verse strings or a dict with 'lines', "
                              f"got {_python_kind(poem)}")
        records.append(kept)
    return records


def _all_strings(verses: Any) -> bool:
    return isinstance(verses, list) and all(isinstance(v, str) for v in verses)


def _python_kind(poem: Any) -> str:
    if isinstance(poem, Mapping):
        return "dict without a list of verse strings in 'lines' or 'text'"
    if isinstance(poem, (list, tuple)):
        odd = next(v for v in poem if not isinstance(v, str))
        return f"{type(poem).__name__} holding {type(odd).__name__}"
    return type(poem).__name__


def _file_records(path: Path) -> list[dict]:
    if path.is_dir():
        return _saved_dataset_records(path)
    if (path := input_file(path)).suffix in TABLE_SUFFIXES:
        return _table_records(path)
    if _is_jsonl(path):
        return _poem_records(read_jsonl(path), path)
    return [{"id": str(i), "lines": lines} for i, lines in enumerate(_plain_text_poems(path))]


def read_records(path: str | Path) -> list[dict]:
    """Every poem record of a poem file, usable or not, in file order: JSONL (`{"id", "lines"}`; QuaTrain's
    and the paper's `text` instead of `lines` too), plain text (a blank line between poems), a folder written
    by Hugging Face ``Dataset.save_to_disk``, or Parquet / CSV / TSV with a ``text`` (or ``lines``) column.
    An id that occurs twice is an error naming the file."""
    records = _file_records(Path(path))
    check_unique_ids((r["id"] for r in records), path)
    return records


def is_path(source: Any) -> bool:
    """Whether a reader's ``source`` names a file or folder (else it is an in-memory sequence of poems)."""
    return isinstance(source, (str, os.PathLike))


def source_name(source: Any, name: str) -> str:
    """How results and errors name a source: its path, else ``<name>`` for in-memory poems."""
    return str(source) if is_path(source) else f"<{name}>"


def read_poems(source: PoemSource, *, allow_empty: bool = False,
               name: str = "poems") -> tuple[list[dict], Counter]:
    """Poems of a file as :func:`read_records` reads it (JSONL, plain text, a ``save_to_disk`` folder,
    Parquet / CSV / TSV), or of an in-memory sequence of poems (each a list of verses or a dict as a JSONL
    line holds it; ``name`` names it in errors as ``<name>``).

    Returns the usable quatrains and a counter of skipped poems by reason. Nothing usable is an error
    unless ``allow_empty``; so is an id that occurs twice. Files and in-memory poems pass the same checks."""
    if is_path(source):
        where, records, empty = Path(source), _file_records(Path(source)), EMPTY_FILE
    elif isinstance(source, Sequence) and not isinstance(source, bytes):
        where = source_name(source, name)
        records, empty = _memory_records(source, where), "an empty list"
    else:
        raise PoevalError(f"{name}: expected a path or a list of poems, got {type(source).__name__}")
    check_unique_ids((r["id"] for r in records), where)
    kept, skipped = [], Counter()
    for record in records:
        reason = _check_quatrain(record["lines"])
        if reason:
            skipped[reason] += 1
        else:
            kept.append(record)
    if not kept and not allow_empty:
        raise nothing_usable(where, len(records), skipped, "poems", empty)
    return kept, skipped
