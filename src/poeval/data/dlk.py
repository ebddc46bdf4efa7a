"""The German DLK corpus (Deutsches Lyrik Korpus, ``tnhaider/DLK``) in either of its two shapes, read as one
stream of poems ``{"id", "stanzas": [[{"text", "measure"}, ...], ...]}`` for the ``dlk`` reader
(:func:`poeval.data.readers.read_dlk`):

* the **public release as it is**, after ``git clone`` of the repository: the folder
  ``DLK/meterized/json_DLK_v6`` (one JSON file per poem, read in the order of their poem numbers) or one of its
  files. A file holds one JSON object ``{"<poem id>": {"metadata": {...}, "poem": {"stanza.1": {"line.1":
  {"text", "measure", ...}, ...}, ...}}}``; stanzas and lines are taken in the order of their numbers
  (``stanza.10`` after ``stanza.9``), and a line without ``measure`` gets ``null``. A poem id met a second
  time (the release holds five poems twice, under two file names, with equal content) is read once.
* a **converted** JSON-lines file (``.jsonl`` or ``.jsonl.gz``), one poem a line, already in the stream's shape.

A file's shape is told by its content: JSON lines whose first record has ``stanzas`` are a converted file,
anything else is read as a release file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterator

from poeval import io
from poeval.errors import PoevalError, first_line

RELEASE_FOLDER = "DLK/meterized/json_DLK_v6"
SHAPES = (f"a file or the folder {RELEASE_FOLDER} of a clone of the DLK repository, or a converted JSON-lines file "
          "of {'id', 'stanzas'} records")
_NUMBER = re.compile(r"(\d+)")
# A poem file of the release folder: named after its poem id, <subcorpus>.<text type>.<number> (dta.poem.1-…),
# usually ending in .json; 218 of the release's long names are cut before the .json, so the id decides.
POEM_FILE = re.compile(r"[^.\s]+\.[^.\s]+\.\d+(-.*)?|.*\.json", re.S)


def number_order(name: str) -> list:
    """Sort key that orders the numbers inside names by value (``dta.poem.9-…`` before ``dta.poem.10-…``,
    ``stanza.9`` before ``stanza.10``)."""
    return [int(part) if part.isdigit() else part for part in _NUMBER.split(name)]


def poems(path: str, key: str) -> Iterator[tuple[str, dict]]:
    """``(where, poem)`` for every poem at ``path`` (a release folder or file, or a converted file), in corpus
    order; ``where`` names the file and record for errors. Each poem is ``{"id", "stanzas"}``."""
    folder = Path(path)
    if folder.is_dir():
        return _release_folder(folder, key)
    if _is_converted(path):
        return ((f"{path}: record {recno}", poem) for recno, poem in enumerate(io.read_jsonl(path), 1))
    return _release_file(Path(path))


def _is_converted(path: str) -> bool:
    """Whether the first non-blank line of ``path`` is a JSON object with ``stanzas`` (a converted file)."""
    for _, line in io.read_lines(path):
        if line.strip():
            try:
                first = json.loads(line)
            except (json.JSONDecodeError, RecursionError):
                return False     # a release file written over several lines, or broken: the release reader says
            return isinstance(first, dict) and "stanzas" in first
    return True                  # empty: the JSON-lines reader reports it


def _release_folder(folder: Path, key: str) -> Iterator[tuple[str, dict]]:
    files = sorted((f for f in folder.iterdir() if POEM_FILE.fullmatch(f.name)), key=lambda f: number_order(f.name))
    if not files:
        raise PoevalError(f"{key}: {folder}: no DLK poem file (<id>-<author>-<title>.json) in this folder; give {SHAPES}")
    first_file: dict[str, Path] = {}
    for file in files:
        for where, poem in _release_file(file):
            if poem["id"] not in first_file:
                first_file[poem["id"]] = file
                yield where, poem
            elif poem != _poem_in(first_file[poem["id"]], poem["id"]):
                raise PoevalError(f"{where}: this poem id is also in {first_file[poem['id']].name} with other "
                                  f"lines; remove one of the two files")


def _poem_in(file: Path, pid: str) -> dict:
    """The poem ``pid`` of a release file, read again (a repeated id is rare: five in the release)."""
    return next(poem for _, poem in _release_file(file) if poem["id"] == pid)


def _release_file(file: Path) -> Iterator[tuple[str, dict]]:
    try:
        doc = io.read_json(file)
    except OSError as err:    # unreadable (permissions, a vanished file)
        raise PoevalError(f"{file}: cannot be read ({first_line(err)})") from None
    if not isinstance(doc, dict) or not all(isinstance(p, dict) and isinstance(p.get("poem"), dict)
                                            for p in doc.values()):
        raise PoevalError(f"{file}: not a DLK file: expected one JSON object {{'<poem id>': {{'metadata': …, "
                          f"'poem': {{'stanza.1': {{'line.1': {{'text': …, 'measure': …}}}}}}}}}} (the release's "
                          f"{RELEASE_FOLDER}) or JSON lines of {{'id', 'stanzas'}} records (a converted file)")
    for pid, entry in doc.items():
        where = f"{file}: poem {pid}"
        yield where, {"id": pid, "stanzas": [_stanza(where, name, stanza) for name, stanza in
                                             sorted(entry["poem"].items(), key=lambda kv: number_order(kv[0]))]}


def _stanza(where: str, name: str, stanza: Any) -> list[dict]:
    if not isinstance(stanza, dict) or not all(isinstance(line, dict) and isinstance(line.get("text"), str)
                                               for line in stanza.values()):
        raise PoevalError(f"{where}: {name} must map 'line.N' to {{'text': str, 'measure': ...}}")
    return [{"text": line["text"], "measure": line.get("measure")}
            for _, line in sorted(stanza.items(), key=lambda kv: number_order(kv[0]))]
