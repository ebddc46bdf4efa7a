"""Tokenisation shared by every metric: punctuation removed, whitespace split."""

from __future__ import annotations

import unicodedata


def strip_punctuation(text: str) -> str:
    """Delete every Unicode punctuation character (categories P*), keeping letters, digits and spaces."""
    return "".join(ch for ch in text if not unicodedata.category(ch).startswith("P"))


def tokens(text: str, lower: bool = False) -> list[str]:
    """Whitespace tokens after removing punctuation; tokens that were pure punctuation disappear."""
    text = strip_punctuation(text)
    return (text.lower() if lower else text).split()


def has_letter(text: str) -> bool:
    return any(ch.isalpha() for ch in text)


# --------------------------------------------------------------------------------------------------
# the one validity rule for a verse

#: Why a verse is no verse, in the order :func:`verses_problem` reports them.
VERSE_PROBLEMS = ("empty_verse", "verse_without_word")


def verse_problem(verse: str) -> str | None:
    """Why ``verse`` is no verse, or None: the one rule that every sampler (``check_quatrain`` of
    :mod:`poeval.generators.sampling`, the ports' ``verse_ok``) and evaluate's reader (:func:`poeval.poem_files.read_poems`)
    apply, so that a sample's valid quatrain is never dropped by the metrics (the corpus's line filter
    keeps only verses with a letter too). ``empty_verse``: nothing but whitespace; ``verse_without_word``:
    no letter, so no word and no end word to rhyme (punctuation, digits or symbols alone: ``"``, ``--``,
    ``1914``, ``~~``)."""
    if not verse.strip():
        return "empty_verse"
    if not has_letter(verse):
        return "verse_without_word"
    return None


def verses_problem(verses) -> str | None:
    """The first of :data:`VERSE_PROBLEMS` that some verse of ``verses`` has, or None."""
    found = {verse_problem(v) for v in verses}
    return next((problem for problem in VERSE_PROBLEMS if problem in found), None)


# --------------------------------------------------------------------------------------------------
# the last word of a verse

#: What :func:`verse_end` strips after a verse's last word, in the order the corpus report lists them.
END_STRIP_KINDS = ("line_number", "dashes", "bracket", "quote", "footnote_mark")

_APOSTROPHES = "’`´ʼ‘"   # read as "'" (an apostrophe or a single quotation mark)
_DASHES = frozenset("-‐‑‒–—―⸺⸻~")
_QUOTES = frozenset("'\"“”„‟«»‹›")
_CLOSING = frozenset(")]}")
_OPENING = {")": "(", "]": "[", "}": "{"}
_MARKS = frozenset("*†‡§¶")
_SUPERSCRIPT = frozenset("⁰¹²³⁴⁵⁶⁷⁸⁹⁽⁾")
_DIGITS = frozenset("0123456789")
_TIS = ("'tis", "'twas", "'twere", "'twill", "'twould")


class VerseEnd(tuple):
    """``(word, stripped, span)`` of :func:`verse_end` (a named tuple, kept light)."""

    __slots__ = ()

    def __new__(cls, word: str, stripped: tuple[str, ...], span: tuple[int, int] | None):
        return tuple.__new__(cls, (word, stripped, span))

    word = property(lambda self: self[0])
    stripped = property(lambda self: self[1])
    span = property(lambda self: self[2])

    def __repr__(self) -> str:
        return f"VerseEnd(word={self.word!r}, stripped={self.stripped!r}, span={self.span!r})"


def _word_char(ch: str) -> bool:
    return ((ch.isalnum() and ch not in _SUPERSCRIPT) or ch in "ſꝛ'"
            or unicodedata.combining(ch) > 0 or unicodedata.category(ch) == "Mn")


def _footnote_group(text: str, k: int) -> int | None:
    """Start of a bracketed footnote mark that ends at ``text[k - 1]`` (a closing bracket), else None:
    ``[12]``, ``(12)``, ``{12}``, ``[*]``, or one or two letters in square brackets or braces (``[F]``,
    ``[a ]``) unless lower-case letters are glued to the word before them (``grandsire[s]``: an
    editor's completion of the word, see :func:`verse_end`)."""
    close = text[k - 1]
    i = text.rfind(_OPENING[close], max(0, k - 8), k - 1)
    if i < 0:
        return None
    inner = text[i + 1:k - 1].strip()
    if inner.isdigit() and inner.isascii() or (inner and all(ch in _MARKS for ch in inner)):
        return i
    if close != ")" and 1 <= len(inner) <= 2 and inner.isalpha():
        glued = i > 0 and text[i - 1].isalpha()
        if not (glued and inner.islower()):
            return i
    return None


def _completion_start(text: str, k: int) -> int | None:
    """Start of ``[letters]`` ending at ``text[k - 1]`` when it is an editor's completion glued to a word:
    lower-case letters in square brackets right after a letter (``grandsire[s]``, ``unt[h]rifty``)."""
    if text[k - 1] != "]":
        return None
    o = text.rfind("[", 0, k - 1)
    inner = text[o + 1:k - 1]
    if o > 0 and text[o - 1].isalpha() and inner.isalpha() and inner.islower():
        return o
    return None


def verse_end(line: str) -> VerseEnd:
    """A verse's last word, what was stripped after it, and where the word is in ``line``.

    Returns ``VerseEnd(word, stripped, span)``: ``word`` is the last word (letters, digits, inner
    apostrophes and hyphens; apostrophe variants ``’ ‘ ʼ ´ `` read as ``'``), ``""`` when the verse has
    none; ``stripped`` the kinds of :data:`END_STRIP_KINDS` found after it, each once, in reading order;
    ``span`` the word's ``(start, end)`` in ``line`` (None without a word), so that
    ``line[start:end]`` is the word as written. The verse itself is never changed. After the word:

    * ordinary punctuation (``. , ; : ! ? …``, ``/`` as the comma of historical German) and spaces are
      skipped and not counted;
    * ``line_number``: a run of ASCII digits after a space (``"each had charms;   25"``,
      ``"harts 80"``), when some letter comes before it; a numeral written in digits at the end of a real
      verse (``"in 1914"``) is stripped too, since verse spells its numbers;
    * ``footnote_mark``: ``* † ‡ § ¶``, superscript digits, digits glued to the word or to the
      punctuation after it (``whoso5``, ``odd,9``), and a bracketed mark (``[12]``, ``(3)``, ``[F]``,
      ``[a ]``: digits, or one or two letters in square brackets or braces);
    * ``dashes``: any run of ``- ‐ ‑ ‒ – — ― ~`` (``--``, ``——``, a word cut with ``-``);
    * ``bracket``: a closing ``) ] }`` that is not part of a footnote mark (``"(as it were)"``); the
      word inside stays the word (``"[sight]"`` gives ``sight``);
    * ``quote``: ``" “ ” „ « » ‹ ›`` and a single quotation mark or apostrophe after the word (``"… the
      end!'"``, ``"goin'"`` alike); an elided ``th'`` / ``o'`` keeps its apostrophe and counts nothing.

    Apostrophes inside a word stay (``o'er``, ``walk'd``), ``'tis``/``'twas``/``'twere``/``'twill``/
    ``'twould`` keep their leading one, other leading apostrophes (an opening quote) are dropped. Lower-case
    letters in square brackets glued to the word are the editor's completion and belong to it
    (``grandsire[s]`` gives ``grandsires``). A Roman numeral is a word (``I``, ``mix``, ``civil`` are
    spelled alike), so it is never stripped. A verse without a letter (a date or a number alone, ``"…"``)
    has no end word: ``word`` is ``""``, ``stripped`` empty and ``span`` None, whatever digits it holds.
    """
    if not isinstance(line, str) or not any(ch.isalpha() for ch in line):
        return VerseEnd("", (), None)
    text = line
    for ch in _APOSTROPHES:
        text = text.replace(ch, "'")
    kinds: list[str] = []   # right to left
    k = len(text)
    while k > 0:
        ch = text[k - 1]
        if ch.isspace():
            k -= 1
        elif ch in _DIGITS:
            j = k
            while j > 0 and text[j - 1] in _DIGITS:
                j -= 1
            if not any(c.isalpha() for c in text[:j]):
                return VerseEnd("", (), None)   # no letter before the number: no word
            kinds.append("line_number" if text[j - 1].isspace() else "footnote_mark")
            k = j
        elif ch in _CLOSING:
            start = _footnote_group(text, k)
            if start is not None:
                kinds.append("footnote_mark")
                k = start
            elif _completion_start(text, k) is not None:
                break   # grandsire[s]: the word goes on through the brackets
            else:
                kinds.append("bracket")
                k -= 1
        elif ch in _MARKS or ch in _SUPERSCRIPT:
            kinds.append("footnote_mark")
            k -= 1
        elif ch in _DASHES:
            kinds.append("dashes")
            k -= 1
        elif ch == "'" and k >= 2 and text[k - 2].isalpha() and text[:k].lower().endswith(("th'", " o'")):
            break   # th', o': the elision's apostrophe is part of the word
        elif ch in _QUOTES:
            kinds.append("quote")
            k -= 1
        elif _word_char(ch):
            break
        else:
            k -= 1   # ordinary punctuation
    # the word, leftwards: word characters, hyphens between two of them, glued completions in brackets
    j = k
    while j > 0:
        c = text[j - 1]
        if _word_char(c):
            j -= 1
        elif c in "-‐" and j >= 2 and j < k and text[j - 2].isalnum() and text[j].isalnum():
            j -= 1
        elif (o := _completion_start(text, j)) is not None:
            j = o
        else:
            break
    start, end = j, k
    word = text[start:end].replace("[", "").replace("]", "")
    if word.startswith("'") and word.lower() not in _TIS:
        lead = len(word) - len(word.lstrip("'"))
        word, start = word[lead:], start + lead
    if not any(c.isalnum() for c in word):
        return VerseEnd("", (), None)
    seen: list[str] = []
    for kind in reversed(kinds):
        if kind not in seen:
            seen.append(kind)
    return VerseEnd(word, tuple(seen), (start, end))


def end_word(line: str) -> str:
    """The last word of a verse (:func:`verse_end`'s ``word``), ``""`` when it has none."""
    return verse_end(line).word
