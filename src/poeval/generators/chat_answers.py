"""Clean an instruction-tuned model's chat answer into a quatrain, by documented rules.

A chat model asked for a quatrain rarely answers with the four verses alone: it adds markdown, a
preamble, a title, a closing remark or hashtags. :func:`clean` strips these by the rules below, in the
order of :data:`RULES`, *before* the validity check of :mod:`poeval.generators.sampling` (exactly four
verses, each with a word), so that a good poem in chatty wrapping is not counted invalid. The rules
never change, add or reorder a word: they only remove markup and whole lines or paragraphs. Each rule
that changed an answer is counted in the sampling stats, so a reader sees how much was stripped
(a model whose quatrains survive only through heavy cleaning is not a model that writes bare quatrains).

A *paragraph* is a run of non-blank lines; a *verse line* is a line with a letter.

Markup rules (always applied, line by line):

* ``fence``: a code-fence line (one starting with three backticks or tildes) is removed; it separates
  paragraphs as a blank line does.
* ``emphasis``: markdown emphasis and inline code around words lose their markers: ``**w**``,
  ``__w__``, ``*w*``, ``_w_`` (not inside a word: ``snake_like`` stays) and a backtick on each side.
* ``heading``: a markdown heading marker (1 to 6 ``#`` and a space at the line's start) is removed;
  a hashtag (``#Poetry``, no space) is no heading.

Block rules (applied only if, together, they leave exactly one poem block of four verse lines;
otherwise the answer is returned with only the markup removed, and the validity check gives its own
reason: wrong line count, extra verse, empty line):

* ``preamble``: leading paragraphs that introduce the poem are removed: one whose last line ends with
  ``:``, or whose first line opens with a preamble phrase, or which is prose (see ``closing``). The
  phrases: English "Here is/are", "Here's", "Below is", "I'll/I will write/create/compose/give/share",
  German "Hier ist/sind"; and the interjections "Sure", "Certainly", "Of course", German "Gerne",
  "Gern", "Natürlich" when followed by ``,`` ``!`` ``.`` or ``:`` (a verse may open with "Sure as...").
  The first line of a paragraph of more than four lines counts as such a paragraph by itself if it ends
  with ``:`` or opens with a preamble phrase ("Here is a quatrain:" directly above the verses).
* ``title``: then a single short line (at most 8 words, not ending with ``,`` ``;`` ``:`` or ``.``)
  before the poem is removed if it is alone in its paragraph, or if it is marked (it was a heading, all
  bold or italic, in quotation marks, or starts with ``Title:``/``Titel:``) and opens a paragraph of
  more than four lines.
* ``closing``: trailing paragraphs after the poem that are remarks are removed: hashtags only, or
  prose. A paragraph is prose if each of its lines is: a line that names the poem (poem, quatrain,
  rhyme, scheme, stanza, a scheme such as ABAB; German Gedicht, Reim, Reimschema, Vierzeiler, Strophe)
  and does not end with ``,`` or ``;``, or a line that ends like a sentence (``.`` ``!`` ``?``) and is
  longer than 80 characters. A second stanza of verse is no remark and stays (the answer stays invalid).
* ``numbering``: the four verses lose a list prefix ``1.`` to ``4.`` (or ``1)`` to ``4)``), only if all
  four are numbered 1, 2, 3, 4 in order.
* ``stanza_break``: blank lines between the four verses (e.g. two couplets) are removed.

A poem of eight verse lines is never cut down to four: the model wrote more than a quatrain.
Whitespace around the answer and around each line is trimmed without counting as a rule.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from poeval.generators.sampling import N_VERSES

RULES = ("fence", "emphasis", "heading", "preamble", "title", "closing", "numbering", "stanza_break")
TITLE_MAX_WORDS = 8
PROSE_MIN_CHARS = 80   # a verse is rarely over 60 characters; a sentence of remark often is

_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+")
# Bold before italic, so that ``***w***`` loses all its stars; ``_`` only at word edges, as markdown reads it.
_EMPHASIS = (
    re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*"),
    re.compile(r"(?<!\w)__(?=\S)(.+?)(?<=\S)__(?!\w)"),
    re.compile(r"\*(?=\S)(.+?)(?<=\S)\*"),
    re.compile(r"(?<!\w)_(?=\S)(.+?)(?<=\S)_(?!\w)"),
    re.compile(r"`([^`]+)`"),
)
_WHOLLY_EMPHASIZED = re.compile(r"^(\*{1,3}|_{1,3})\S(.*\S)?\1$")
_QUOTED = re.compile(r"^[\"“„«'‘].*[\"”“»'’]$")
_TITLE_LABEL = re.compile(r"^(title|titel)\s*:", re.IGNORECASE)
_PREAMBLE = re.compile(
    r"^(here\s+(is|are)\b|here's\b|below\s+is\b|(i'll|i\s+will)\s+(write|create|compose|give|share)\b"
    r"|hier\s+(ist|sind)\b|(sure|certainly|of course|gerne?|natürlich)[,!.:])",
    re.IGNORECASE,
)
_POEM_WORD = re.compile(
    r"\b(poem|poems|quatrain|quatrains|rhyme|rhymes|rhyming|scheme|stanza|stanzas|(?-i:[A-D]{4})"
    r"|gedicht\w*|reim|reime|reimen|reimschema|vierzeiler|strophe|strophen)\b",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"^(\d)[.)]\s+")


@dataclass(frozen=True)
class Cleaned:
    """The cleaned answer (verses joined by "\\n") and the rules that changed it, in :data:`RULES` order."""

    text: str
    rules: tuple[str, ...]


@dataclass(frozen=True)
class _Line:
    """A line after markup removal; ``marked`` keeps that it was a heading or wholly emphasized,
    which the title rule needs once the markers are gone."""

    text: str
    marked: bool = False


def clean(text: str) -> Cleaned:
    """Apply :data:`RULES` to one chat answer (see the module docstring for each rule)."""
    fired: set[str] = set()
    lines = _strip_markup(text, fired)
    poem = _find_poem(_paragraphs(lines), fired)
    if poem is None:
        # No block rule applies unless a quatrain results: the validity check judges the rest.
        fired -= {"preamble", "title", "closing", "numbering", "stanza_break"}
        kept = [line.text for line in lines if line is not None]
        return Cleaned("\n".join(kept).strip("\n"), _ordered(fired))
    return Cleaned("\n".join(poem), _ordered(fired))


def _ordered(fired: set[str]) -> tuple[str, ...]:
    return tuple(rule for rule in RULES if rule in fired)


# --- markup rules -------------------------------------------------------------------------------

def _strip_markup(text: str, fired: set[str]) -> list[_Line | None]:
    """The answer's lines with markup removed; None marks a removed fence line (a paragraph break)."""
    out: list[_Line | None] = []
    for raw in text.strip().splitlines():
        raw = raw.rstrip()
        if _FENCE.match(raw):
            fired.add("fence")
            out.append(None)
            continue
        out.append(_strip_line(raw.strip(), fired))
    return out


def _strip_line(line: str, fired: set[str]) -> _Line:
    marked = bool(_WHOLLY_EMPHASIZED.match(line))
    if _HEADING.match(line):
        fired.add("heading")
        line, marked = _HEADING.sub("", line), True
    for pattern in _EMPHASIS:
        line, count = pattern.subn(r"\1", line)
        if count:
            fired.add("emphasis")
    return _Line(line, marked)


def _paragraphs(lines: list[_Line | None]) -> list[list[_Line]]:
    paragraphs: list[list[_Line]] = [[]]
    for line in lines:
        if line is None or not line.text:
            paragraphs.append([])
        else:
            paragraphs[-1].append(line)
    return [p for p in paragraphs if p]


# --- block rules ---------------------------------------------------------------------------------

def _find_poem(paragraphs: list[list[_Line]], fired: set[str]) -> list[str] | None:
    """The four verses left once preamble, title and closing are gone, or None if not exactly four."""
    paragraphs = _drop_preamble(paragraphs, fired)
    paragraphs = _drop_title(paragraphs, fired)
    paragraphs = _drop_closing(paragraphs, fired)
    verses = [line.text for paragraph in paragraphs for line in paragraph]
    if len(verses) != N_VERSES or not all(re.search(r"[^\W\d_]", v) for v in verses):
        return None
    if len(paragraphs) > 1:
        fired.add("stanza_break")
    return _drop_numbering(verses, fired)


def _drop_preamble(paragraphs: list[list[_Line]], fired: set[str]) -> list[list[_Line]]:
    if paragraphs and len(paragraphs[0]) > N_VERSES and _opens_preamble(paragraphs[0][0].text):
        # "Here is a quatrain:" right above the verses, with no blank line between; only a paragraph
        # too long to be the poem gives up its first line, so a four-line poem is never cut.
        paragraphs = [paragraphs[0][:1], paragraphs[0][1:]] + paragraphs[1:]
    while len(paragraphs) > 1 and _is_preamble(paragraphs[0]):
        fired.add("preamble")
        paragraphs = paragraphs[1:]
    return paragraphs


def _opens_preamble(line: str) -> bool:
    return line.endswith(":") or bool(_PREAMBLE.match(line))


def _is_preamble(paragraph: list[_Line]) -> bool:
    return paragraph[-1].text.endswith(":") or bool(_PREAMBLE.match(paragraph[0].text)) or _is_prose(paragraph)


def _drop_title(paragraphs: list[list[_Line]], fired: set[str]) -> list[list[_Line]]:
    if not paragraphs or not _is_title(paragraphs[0][0]):
        return paragraphs
    first = paragraphs[0]
    if len(first) == 1 and len(paragraphs) > 1:
        fired.add("title")
        return paragraphs[1:]
    if len(first) > N_VERSES and _is_marked_title(first[0]):
        fired.add("title")
        return [first[1:]] + paragraphs[1:]
    return paragraphs


def _is_title(line: _Line) -> bool:
    # A title names the poem in a few words; a verse that goes on ends with a comma or the like.
    return len(line.text.split()) <= TITLE_MAX_WORDS and not line.text.endswith((",", ";", ":", "."))


def _is_marked_title(line: _Line) -> bool:
    return line.marked or bool(_QUOTED.match(line.text)) or bool(_TITLE_LABEL.match(line.text))


def _drop_closing(paragraphs: list[list[_Line]], fired: set[str]) -> list[list[_Line]]:
    # Only prose goes: a verse-like stanza after the poem means the model wrote more than a quatrain.
    while len(paragraphs) > 1 and (_is_hashtags(paragraphs[-1]) or _is_prose(paragraphs[-1])):
        fired.add("closing")
        paragraphs = paragraphs[:-1]
    return paragraphs


def _is_hashtags(paragraph: list[_Line]) -> bool:
    return all(word.startswith("#") for line in paragraph for word in line.text.split())


def _is_prose(paragraph: list[_Line]) -> bool:
    return all(_is_prose_line(line.text) for line in paragraph)


def _is_prose_line(text: str) -> bool:
    # A verse may name a poem too, but then it goes on (comma, semicolon); a remark ends as a sentence.
    names_poem = bool(_POEM_WORD.search(text)) and not text.endswith((",", ";"))
    long_sentence = text.endswith((".", "!", "?")) and len(text) > PROSE_MIN_CHARS
    return names_poem or long_sentence


def _drop_numbering(verses: list[str], fired: set[str]) -> list[str]:
    numbers = [_NUMBER.match(verse) for verse in verses]
    if [m and m.group(1) for m in numbers] != ["1", "2", "3", "4"]:
        return verses
    fired.add("numbering")
    return [_NUMBER.sub("", verse) for verse in verses]
