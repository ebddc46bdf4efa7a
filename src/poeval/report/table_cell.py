"""Which number of which metric table `poeval provenance` traces (:class:`TableCell`, :func:`resolve`) and the
cell files behind it (one per HUMAN sample for the HUMAN row)."""

from __future__ import annotations

import csv
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from poeval import paths
from poeval.errors import PoevalError
from poeval.paths import HUMAN, TRAIN

HUMAN_TRAIN = f"{HUMAN} ({TRAIN})"   # tables.HUMAN_TRAIN: the whole training set, cell HUMAN/train


@dataclass
class TableCell:
    """One number of a family table and where it comes from."""

    table: str
    family: str
    lang: str
    system: str
    decoding: str          # "-" for the HUMAN row
    n_cells: int           # the HUMAN row is the mean of this many sample cells
    column: str
    key: str               # in the cell JSON: family section key (``a.b`` nested), or ``n_poems``
    digits: int
    scale: float
    value: str             # as printed in the table
    cells: tuple[str, ...] = ()   # a common-n companion: the cell files its stamp records (drawn or whole)


def _columns(table: str) -> list[tuple]:
    # tables (and the rhyme module it imports) load only when a chain is traced: the producers that
    # import this module for stamp() stay light
    from poeval.report.tables import table_columns

    return [("n_poems", "n", 0, 1)] + table_columns(table)


def _read_tsv(path: Path) -> tuple[list[str], list[list[str]]]:
    if not path.is_file():
        raise PoevalError(f"table not found: {path}")
    with open(path, encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle, delimiter="\t"))
    if not rows or rows[0][:4] != ["lang", "system", "decoding", "n"]:
        raise PoevalError(f"{path}: not a family table (expected columns lang, system, decoding, n, ...)")
    return rows[0], rows[1:]


def _system_of(label: str) -> str:
    """The system of a row label: ``HUMAN (mean of 10)`` -> ``HUMAN``; ``HUMAN (train)`` stays."""
    if label == HUMAN_TRAIN:
        return label
    return label.split(" (", 1)[0]


def _n_cells(label: str) -> int:
    if label.startswith(f"{HUMAN} (mean of "):
        return int(label.rsplit(" ", 1)[1].rstrip(")"))
    return 1


def _pick_row(path: Path, rows: list[list[str]], system: str, lang: str | None, decoding: str | None) -> list[str]:
    valid = [f"{r[0]}/{_system_of(r[1])}/{r[2]}" for r in rows]
    hits = [r for r in rows if _system_of(r[1]) == _system_of(system) and (lang is None or r[0] == lang)
            and (decoding is None or r[2] in (decoding, "-"))]   # the HUMAN row has no decoding
    if not hits:
        raise PoevalError(f"{path}: no row for system '{system}'"
                          + (f", lang '{lang}'" if lang else "") + (f", decoding '{decoding}'" if decoding else "")
                          + f"; rows (lang/system/decoding): {', '.join(valid)}")
    if len(hits) > 1:
        which = ", ".join(f"{r[0]}/{_system_of(r[1])}/{r[2]}" for r in hits)
        raise PoevalError(f"{path}: '{system}' matches {len(hits)} rows ({which}); choose one with --lang and/or "
                          "--decoding")
    return hits[0]


def resolve(table: str | os.PathLike, row: str, column: str, lang: str | None = None,
            decoding: str | None = None) -> TableCell:
    """The cell of ``table`` at row ``row`` (a system name; HUMAN for the human row) and ``column``
    (a header name); ``lang``/``decoding`` choose among rows of the same system."""
    from poeval.report.tables import COMMON_N, FAMILY_OF_TABLE, family_key

    path = Path(table)
    name = path.name.removesuffix(".tsv").removesuffix(COMMON_N)
    if name not in FAMILY_OF_TABLE:
        raise PoevalError(f"{path}: provenance covers the metric tables ({', '.join(sorted(FAMILY_OF_TABLE))}) and "
                          f"their *{COMMON_N} companions, not '{path.name.removesuffix('.tsv')}'")
    header, rows = _read_tsv(path)
    columns = {c[1]: c for c in _columns(name)}
    if column not in columns or column not in header:
        raise PoevalError(f"{path}: no column '{column}'; columns: {', '.join(header[3:])}")
    picked = _pick_row(path, rows, row, lang, decoding)
    key, _, digits, scale = columns[column]
    family, key = family_key(key, FAMILY_OF_TABLE[name])   # Table 8 reads two families
    companion = path.name.removesuffix(".tsv") != name
    return TableCell(str(path), family, picked[0], _system_of(picked[1]), picked[2],
                     _n_cells(picked[1]), column, key, digits, scale, picked[header.index(column)],
                     _stamped_cells(path) if companion else ())


def _stamped_cells(table: Path) -> tuple[str, ...]:
    """The cell files a common-n companion was built from, as its stamp records them: whether a row read its
    whole sample's cell or one of n drawn quatrains was the workflow's choice (the row's configured size)."""
    stamped = Path(paths.stamp_file(str(table)))
    if not stamped.is_file():
        raise PoevalError(f"{table}: no stamp {stamped}, so which cells (whole or drawn) it read is unknown")
    inputs = (json.loads(stamped.read_text(encoding="utf-8")).get("provenance") or {}).get("inputs") or {}
    return tuple(entry["path"] for entry in inputs.values() if isinstance(entry, dict))


def drawn_n(cell_path: str) -> int | None:
    """The n of a common-n cell file (``<family>.n<n>.json``, :func:`poeval.paths.cell_at_n`); None for a whole
    sample's cell."""
    match = re.search(r"\.n(\d+)\.json$", cell_path)
    return int(match.group(1)) if match else None


def _cell_path(cell: TableCell, system: str, decoding: str) -> str:
    """The cell file behind one number: a companion's drawn cell where its stamp records one, else the whole one."""
    whole = paths.cell(cell.lang, system, decoding, cell.family)
    drawn = whole.removesuffix(".json") + ".n"   # paths.cell_at_n's file name, n to come
    return next((p for p in cell.cells if p.startswith(drawn) and drawn_n(p) is not None), whole)


def _cell_samples(cell: TableCell) -> list[tuple[str, str]]:
    """(metric cell, its samples) of each cell file behind a table number: one per HUMAN sample for
    the HUMAN row."""
    system = HUMAN if cell.system == HUMAN_TRAIN else cell.system
    return [(_cell_path(cell, system, d), paths.cell_samples(cell.lang, system, d)) for d in _cell_decodings(cell)]


def _cell_decodings(cell: TableCell) -> list[str]:
    """The decoding label of each cell file behind a table number (a HUMAN cell's: its sample)."""
    if cell.system == HUMAN_TRAIN:
        return [TRAIN]
    if cell.system == HUMAN:
        return [paths.human_id(k) for k in range(cell.n_cells)]
    return [cell.decoding]


def _cell_value(cell: TableCell, docs: list[dict]) -> str:
    """The table's number recomputed from its cell files, formatted as the table does."""
    from poeval.report.tables import column_values, row_number

    return row_number(column_values(docs, cell.family, cell.key, cell.scale), cell.digits)
