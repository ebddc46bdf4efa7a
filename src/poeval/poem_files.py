"""Poem files: the formats a poem collection arrives in (JSONL, plain text, a ``save_to_disk`` folder,
Parquet / CSV / TSV, or poems in memory), read into poem records. Writing and hashing files is
:mod:`poeval.io`'s."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import stat
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from poeval.errors import PoevalError, first_line, quote
from poeval.io import EMPTY_FILE, cap, input_file, jsonl_records, nothing_usable, read_bytes, read_lines
from poeval.stamps import dir_sha256
from poeval.text import verses_problem

# A verse longer than this many characters is no verse (a real one is under a few hundred): such a poem is
# skipped as ``long_verse`` when it is read, before a metric spends minutes and gigabytes on it. Raised
# through the environment (docs/inputs-errors.md).
MAX_VERSE_CHARS = ("POEVAL_MAX_VERSE_CHARS", 2000)
LONG_VERSE = "long_verse"


def long_verse(verses: list[str]) -> str | None:
    """:data:`LONG_VERSE` when one of ``verses`` is longer than :data:`MAX_VERSE_CHARS`, else None."""
    limit = cap(MAX_VERSE_CHARS, "characters")
    return LONG_VERSE if any(len(v) > limit for v in verses) else None


def _check_quatrain(lines) -> str | None:
    """Why a poem is not a usable quatrain, or None when it is."""
    if not isinstance(lines, list) or not all(isinstance(v, str) for v in lines):
        return "malformed"
    if len(lines) != 4:
        return "not_4_lines"
    return long_verse(lines) or verses_problem(lines)   # the samplers' rule too


def _sniffed_records(path: Path, lines: Iterator[tuple[int, str]]) -> list[dict]:
    """The records of a file named neither ``.jsonl`` nor ``.gz``: JSON lines when its first non-blank line
    starts with ``{``, else plain text; decided on the lines the records are parsed from (one read)."""
    head = []
    for item in lines:
        head.append(item)
        if item[1].strip():
            break
    lines = itertools.chain(head, lines)
    if head and head[-1][1].lstrip().startswith("{"):
        return _poem_records((r for _, r in jsonl_records(path, lines)), path)
    return [{"id": str(i), "lines": verses} for i, verses in enumerate(_plain_text_poems(lines))]


def plain_text_poems(path: Path) -> list[list[str]]:
    """The poems of a plain-text file, a blank line between two; each verse stripped."""
    return _plain_text_poems(read_lines(path))


def _plain_text_poems(lines: Iterable[tuple[int, str]]) -> list[list[str]]:
    poems, current = [], []
    for _, line in lines:
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


def check_unique_ids(ids: Iterable, path: str | os.PathLike, numbered: frozenset[int] | set[int] = frozenset()) -> None:
    """Ids key per-poem results (memorization hits, cached embeddings, BPoMP pairs), so a repeated id
    would silently merge poems: reject it, naming the first one repeated. ``numbered``: the positions (from
    0) of the records that have no id and are numbered by position, so that the error says when a record's
    number is another record's id (``"1"`` given to one record, the second record without one)."""
    first: dict = {}
    for k, rid in enumerate(ids):
        if rid in first:
            raise _repeated(rid, first[rid], k, path, numbered)
        first[rid] = k


def _repeated(rid: str, i: int, k: int, path: str | os.PathLike, numbered: frozenset[int] | set[int]) -> PoevalError:
    """The error for records ``i`` and ``k`` (positions from 0) with one id."""
    if i not in numbered and k not in numbered:
        return PoevalError(f"{path}: id {quote(rid)} occurs more than once; ids must be unique "
                           "(leave 'id' out to number the records by position)")
    unnamed, named = (i, k) if i in numbered else (k, i)
    return PoevalError(f"{path}: record {unnamed + 1} has no 'id', so it is numbered {quote(rid)} by its position "
                       f"(from 0), and record {named + 1} gives {quote(rid)} as its id; give every record an id, "
                       "or none")


def _poem_record(record: dict, index: int, source: str | Path) -> dict:
    """A record of any source as the readers keep it: id, verses, the labels the families read and the
    language it says it is in (an import checks it)."""
    kept = {"id": _record_id(record, index, source), "lines": _verses(record)}
    return kept | _scheme_field(record) | _language(record, index, source)


def _verses(record: dict):
    """A record's verses: poeval's ``lines``, else ``text`` as QuaTrain's release and the paper's saved
    samples hold them (a list of verses, or one string with a verse per line)."""
    verses = record["lines"] if "lines" in record else record.get("text")
    return verses.strip("\n").split("\n") if isinstance(verses, str) else verses


def _language(record: dict, index: int, source: str | Path) -> dict:
    """A record's ``language`` (the paper's saved samples carry one), kept so that an import can check it;
    one that is not a string (``["de"]``, ``5``) is an error, not a language left unchecked."""
    said = record.get("language")
    if said is None:
        return {}
    if not isinstance(said, str):
        raise PoevalError(f"{source}: record {index + 1}: 'language' must be a string such as \"en\", "
                          f"got {quote(said)}")
    return {"language": said}


def _poem_records(rows: Iterable[dict], path: str | Path) -> list[dict]:
    """The poem records of ``rows`` (a file's, or poems in memory), their ids checked
    (:func:`check_unique_ids`)."""
    records, numbered = [], set()
    for i, row in enumerate(rows):
        numbered.update([i] if "id" not in row else [])
        records.append(_poem_record(row, i, path))
    check_unique_ids((r["id"] for r in records), path, numbered)
    return records


def _check_text_column(columns: Iterable[str], path: Path, what: str) -> None:
    columns = list(columns)
    if "lines" not in columns and "text" not in columns:
        raise PoevalError(f"{path}: the {what} has no 'text' or 'lines' column "
                          f"(columns: {', '.join(columns) or 'none'})")


WANTED_COLUMNS = ("id", "lines", "text", "scheme", "language")   # what a poem record keeps of a table's columns


def _saved_dataset_records(path: Path) -> tuple[list[dict], str]:
    """The rows of a folder written by Hugging Face ``Dataset.save_to_disk`` as poem records, and the folder's
    :func:`poeval.stamps.dir_sha256`. The paper's code saves its samples so (``helper_functions.get_dataset``: a
    ``text`` column of four verses and ``language``); a ``lines`` column (``poeval export-dataset``) is read
    first; ``id``, ``scheme`` and ``language`` columns are kept where present, as in a JSONL file. Each file
    is read once: its bytes are hashed and parsed (``state.json`` and the Arrow files it names, which must lie
    in the folder), so the hash is of what was read."""
    _check_saved_dataset(path)
    kept: dict[str, bytes] = {}

    def read(file: Path) -> str:
        data = read_bytes(file)
        if file.parent == path and (file.name == "state.json" or file.suffix == ".arrow"):
            kept[file.name] = data
        return hashlib.sha256(data).hexdigest()

    folder_sha256 = dir_sha256(path, file_hash=read)
    table = _arrow_table(path, kept)
    _check_text_column(table.column_names, path, "saved dataset")
    rows = table.select([c for c in WANTED_COLUMNS if c in table.column_names]).to_pylist()
    return _poem_records(rows, path), folder_sha256


def _check_saved_dataset(path: Path) -> None:
    if (path / "dataset_dict.json").is_file():
        splits = sorted(p.name for p in path.iterdir() if (p / "state.json").is_file())
        raise PoevalError(f"{path}: holds a DatasetDict (splits: {', '.join(splits) or 'none'}); "
                          "give the folder of one split")
    if not (path / "state.json").is_file():
        raise PoevalError(f"{path}: is a directory; expected a file (JSONL or text) or a folder written by Hugging "
                          "Face datasets' save_to_disk (this one has no state.json)")


def _arrow_table(path: Path, files: dict[str, bytes]):
    """The table of a saved dataset: the Arrow streams its ``state.json`` names, from the bytes read."""
    import pyarrow as pa

    try:
        tables = [pa.ipc.open_stream(pa.BufferReader(files[name])).read_all() for name in _data_files(path, files)]
        return pa.concat_tables(tables)
    except (OSError, ValueError) as err:   # pyarrow's ArrowInvalid is a ValueError
        raise PoevalError(f"{path}: cannot load the saved dataset: {first_line(err)}") from None


def _data_files(path: Path, files: dict[str, bytes]) -> list[str]:
    """The data files ``state.json`` names: plain names of files in the folder itself (a name such as
    ``../other/data.arrow``, or a link out of the folder, would read a file that neither the import's stamp
    nor the workflow's inputs cover)."""
    try:
        entries = json.loads(files.get("state.json", b""))["_data_files"]
        names = [entry["filename"] for entry in entries]
    except (ValueError, KeyError, TypeError, RecursionError):
        names = None
    if not names or not all(isinstance(name, str) for name in names):
        raise PoevalError(f"{path}: cannot load the saved dataset: its state.json lists no data files "
                          "('_data_files'); save it again with save_to_disk")
    for name in names:
        if Path(name).name != name or (path / name).resolve().parent != path.resolve():
            raise PoevalError(f"{path}: state.json names the data file {quote(name)}, which is not a file of this "
                              "folder; a saved dataset's data files must lie in its folder, as save_to_disk writes them")
        if name not in files:
            raise PoevalError(f"{path}: cannot load the saved dataset: its data file {quote(name)} is missing")
    return names


def _table_rows(path: Path) -> tuple[list[str], list[dict], str]:
    """(columns, rows, sha256 of the bytes read) of a Parquet file (read by Arrow) or a CSV / TSV file with a
    header row."""
    if path.suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        data = read_bytes(path)
        try:
            table = pq.read_table(pa.BufferReader(data))
        except (OSError, ValueError) as err:   # pyarrow's ArrowInvalid is a ValueError
            raise PoevalError(f"{path}: cannot read the Parquet file: {first_line(err)}") from None
        rows = table.select([c for c in WANTED_COLUMNS if c in table.column_names]).to_pylist()
        return table.column_names, rows, hashlib.sha256(data).hexdigest()
    import csv

    digest = hashlib.sha256()
    text = "".join(line for _, line in read_lines(path, digest))
    reader = csv.DictReader(text.splitlines(keepends=True), delimiter="\t" if path.suffix == ".tsv" else ",")
    try:
        rows = list(reader)
    except csv.Error as err:
        raise PoevalError(f"{path}: not valid CSV (line {reader.line_num}: {err})") from None
    return list(reader.fieldnames or []), rows, digest.hexdigest()


TABLE_SUFFIXES = (".parquet", ".csv", ".tsv")


def _table_records(path: Path) -> tuple[list[dict], str]:
    columns, rows, sha256 = _table_rows(path)
    _check_text_column(columns, path, f"{path.suffix[1:].upper()} file")
    return _poem_records(rows, path), sha256


# What a reader of poems takes: a path, or in-memory poems (each a list of verses or a dict like a JSONL line).
PoemSource = str | os.PathLike | Sequence


def _memory_records(poems: Sequence, name: str) -> list[dict]:
    """In-memory poems as the records of a JSONL file: a sequence of verses is a record's ``lines``, a dict is
    read as a JSONL line (``lines`` or ``text``, ``id``, ``scheme``...). A poem whose verses are not strings is
    an error here, not a ``malformed`` skip as in a file: in Python it is a caller's mistake (e.g. one poem
    given as a flat list of verses), and a silent count would hide it."""
    records = _poem_records(map(_memory_row, poems), name)
    for i, (poem, kept) in enumerate(zip(poems, records)):
        if isinstance(poem, str) or not _all_strings(kept["lines"]):
            raise PoevalError(f"{name}: poem {i + 1}: expected a list of verse strings or a dict with 'lines', "
                              f"got {_python_kind(poem)}")
    return records


def _memory_row(poem: Any) -> dict:
    record = dict(poem) if isinstance(poem, Mapping) else {"lines": poem}
    if isinstance(record.get("lines"), tuple):
        record["lines"] = list(record["lines"])
    return record


def _all_strings(verses: Any) -> bool:
    return isinstance(verses, list) and all(isinstance(v, str) for v in verses)


def _python_kind(poem: Any) -> str:
    if isinstance(poem, Mapping):
        return "dict without a list of verse strings in 'lines' or 'text'"
    if isinstance(poem, (list, tuple)):
        odd = next(v for v in poem if not isinstance(v, str))
        return f"{type(poem).__name__} holding {type(odd).__name__}"
    return type(poem).__name__


def _file_records(path: Path) -> tuple[list[dict], str]:
    """The records of a poem file or folder and the sha256 of the bytes they were parsed from (one read)."""
    if path.is_dir():
        return _saved_dataset_records(path)
    if (path := _regular_file(path)).suffix in TABLE_SUFFIXES:
        return _table_records(path)
    digest = hashlib.sha256()
    lines = read_lines(path, digest)
    if path.suffix in {".jsonl", ".gz"}:
        records = _poem_records((record for _, record in jsonl_records(path, lines)), path)
    else:
        records = _sniffed_records(path, lines)
    return records, digest.hexdigest()


def _regular_file(path: Path) -> Path:
    """``path`` as a regular file: a pipe or device (``/dev/stdin``) is refused by name, since its bytes can be
    neither sniffed for a format and read again nor hashed again for a stamp or a cache."""
    path = input_file(path)
    if not stat.S_ISREG(path.stat().st_mode):
        raise PoevalError(f"{path}: not a regular file (a pipe or a device); poems are read from a file or a "
                          "save_to_disk folder: write them to a file first")
    return path


def read_records(path: str | Path) -> list[dict]:
    """Every poem record of a poem file, usable or not, in file order: JSONL (`{"id", "lines"}`; QuaTrain's
    and the paper's `text` instead of `lines` too), plain text (a blank line between poems), a folder written
    by Hugging Face ``Dataset.save_to_disk``, or Parquet / CSV / TSV with a ``text`` (or ``lines``) column.
    An id that occurs twice is an error naming the file."""
    return read_records_and_sha256(path)[0]


def read_records_and_sha256(path: str | Path) -> tuple[list[dict], str]:
    """:func:`read_records`, and the sha256 of the very bytes they were parsed from, hashed as they were read
    (a folder: :func:`poeval.stamps.dir_sha256`'s): what a stamp records of the file is what was imported,
    even if the file changes while it is read."""
    return _file_records(Path(path))


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
        where, records, empty = Path(source), _file_records(Path(source))[0], EMPTY_FILE
    elif isinstance(source, Sequence) and not isinstance(source, bytes):
        where = source_name(source, name)
        records, empty = _memory_records(source, where), "an empty list"
    else:
        raise PoevalError(f"{name}: expected a path or a list of poems, got {type(source).__name__}")
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
