"""poeval's JSON-lines files as Hugging Face datasets (``poeval export-dataset``).

Any of poeval's record files (the train/dev splits and HUMAN samples of the data stage, generated samples,
BPoMP limericks, pairs and scores) becomes one ``datasets.Dataset``, a column per field, written with
``save_to_disk`` (``disk``: a folder ``datasets.load_from_disk`` reads, as the paper's code saves its data)
or as one Parquet file (``parquet``). The way back: :func:`load_records`, and ``poeval evaluate`` reads a
saved folder of poems directly (:func:`poeval.poem_files.read_poems`).

Columns are typed by Arrow from all records, not the first: a field that some records lack is null in
those rows (and comes back as ``None``), as is a key missing from a nested object; a field whose values
have different JSON types in different records (a string here, a number there) is an error naming it.
``datasets`` is imported only here, lazily.
"""

from __future__ import annotations

from pathlib import Path

from poeval import files, io
from poeval.errors import PoevalError

FORMATS = ("disk", "parquet")
DISK_MARKER = "state.json"   # what save_to_disk writes into every folder: the mark of an earlier export
PARQUET_MARK = b"poeval"     # the key in a Parquet file's metadata that marks an earlier export


def _columns(records: list[dict], where: str) -> dict:
    """Arrow arrays, one per field, in first-seen field order."""
    import pyarrow as pa

    names: dict[str, None] = {}
    for r in records:
        names.update(dict.fromkeys(r))
    out = {}
    for name in names:
        try:
            out[name] = pa.array([r.get(name) for r in records])
        except (pa.ArrowInvalid, pa.ArrowTypeError) as err:
            raise PoevalError(f"{where}: field {name!r} cannot be one dataset column: its values mix JSON types "
                              f"({str(err).splitlines()[0]})") from None
    return out


def records_dataset(records: list[dict], where: str = "records"):
    """A ``datasets.Dataset`` with one row per record."""
    import datasets
    import pyarrow as pa

    if not records:
        raise PoevalError(f"{where}: nothing to export: no records")
    return datasets.Dataset(datasets.table.InMemoryTable(pa.table(_columns(records, where))))


def export_dataset(src: str, out: str, fmt: str = "disk", force: bool = False) -> dict:
    """Write the records of the JSONL file ``src`` as a dataset at ``out`` (atomically: a folder for
    ``disk``, a file for ``parquet``); return ``{"records", "columns", "format", "out"}``."""
    if fmt not in FORMATS:
        raise PoevalError(f"dataset format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if fmt == "parquet":   # checked before reading, as atomic_dir checks a folder before writing it
        files.check_out_file(out, "poeval export-dataset", _own_parquet, f"{PARQUET_MARK.decode()} key in its "
                          "Parquet metadata", force)
    records = list(io.read_jsonl(src))
    ds = records_dataset(records, str(src))
    if fmt == "disk":
        with files.atomic_dir(out, "poeval export-dataset", DISK_MARKER, (src,), force) as tmp:
            ds.save_to_disk(str(tmp))
    else:
        _write_parquet(ds, out)
    return {"records": len(ds), "columns": ds.column_names, "format": fmt, "out": str(out)}


def _write_parquet(ds, out: str) -> None:
    """The dataset's Arrow table as Parquet, with its ``huggingface`` features metadata (what ``to_parquet``
    writes) and :data:`PARQUET_MARK`, so that the next export may replace the file."""
    import pyarrow.parquet as pq

    table = ds.data.table
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), PARQUET_MARK: b"export-dataset"})
    with files.atomic_write(out, "wb", encoding=None) as handle:
        pq.write_table(table, handle)


def _own_parquet(path) -> bool:
    """Whether ``path`` is a Parquet file that :func:`export_dataset` wrote (its metadata holds the mark)."""
    import pyarrow.parquet as pq

    try:
        return PARQUET_MARK in (pq.read_schema(path).metadata or {})
    except (OSError, ValueError):   # not Parquet (ArrowInvalid is a ValueError)
        return False


def load_records(path: str) -> list[dict]:
    """The records of a dataset written by :func:`export_dataset` (a saved folder or a Parquet file)."""
    import datasets
    import pyarrow.parquet as pq

    p = Path(path)
    if not p.exists():
        raise PoevalError(f"input not found: {p}")
    try:   # a Parquet file is read by Arrow itself: datasets' from_parquet would copy it into its cache
        return datasets.load_from_disk(str(p)).to_list() if p.is_dir() else pq.read_table(p).to_pylist()
    except (OSError, ValueError) as err:
        raise PoevalError(f"{p}: cannot load the dataset: {(str(err).strip().splitlines() or ['?'])[0]}") from None
