"""A small reader of the WordNet 3.0 database files (Debian package ``wordnet-base``).

Only what BPoMP's synonym task needs: lemmas and synsets per part of speech, and base forms of
inflected words. No NLTK: the files are read directly.

File formats (WordNet 3.0 manual pages):

* ``wndb(5WN)``: ``index.POS`` lines are ``lemma pos synset_cnt p_cnt [ptr_symbol...] sense_cnt
  tagsense_cnt synset_offset...`` (the last ``synset_cnt`` fields are the synset offsets);
  ``data.POS`` lines are ``synset_offset lex_filenum ss_type w_cnt word lex_id [word lex_id...]
  p_cnt ... | gloss``, where ``synset_offset`` is the line's byte offset in the file, ``w_cnt`` is
  two hex digits, ``lex_id`` one hex digit, and adjective words may carry a syntactic marker
  ``(a)``, ``(p)`` or ``(ip)``. License/header lines start with two spaces. Multiword lemmas join
  their words with ``_``; index lemmas are lower case, data words keep their case.
* ``morphy(7WN)``: a word's base forms come from the exception lists ``POS.exc`` (``inflected
  base...``) and from the *rules of detachment* (suffix substitutions, below); a candidate counts only
  if it is in ``index.POS``. The word itself counts when it is in the index.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path

from poeval.errors import PoevalError

__all__ = ["POS", "POS_NAMES", "DEFAULT_DIR", "Synset", "WordNet", "default"]

POS = ("n", "v", "a", "r")
POS_NAMES = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
DEFAULT_DIR = "/usr/share/wordnet"

# morphy(7WN) rules of detachment: (inflectional suffix, base suffix), tried in this order.
DETACHMENT = {
    "n": (("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"),
          ("men", "man"), ("ies", "y")),
    "v": (("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""), ("ing", "e"),
          ("ing", "")),
    "a": (("er", ""), ("est", ""), ("er", "e"), ("est", "e")),
    "r": (),
}
_ADJ_MARKER = re.compile(r"\((?:a|p|ip)\)$")


@dataclass(frozen=True)
class Synset:
    offset: int
    pos: str          # n, v, a or r (adjective satellites ``s`` are reported as ``a``)
    lemmas: tuple[str, ...]   # as in the data file: case kept, ``_`` between words
    gloss: str


@dataclass(frozen=True)
class BaseForm:
    base: str
    how: str | tuple[str, str]   # "self" (in the index as is), "exc" (exception list) or (suffix, base suffix)


class WordNet:
    """Lazy reader of one WordNet dictionary folder (``index.*``, ``data.*``, ``*.exc``)."""

    def __init__(self, root: str | os.PathLike | None = None):
        self.root = Path(root or os.environ.get("WNSEARCHDIR") or DEFAULT_DIR)
        missing = [f"{k}.{POS_NAMES[p]}" for p in POS for k in ("index", "data")
                   if not (self.root / f"{k}.{POS_NAMES[p]}").is_file()]
        if missing:
            raise PoevalError(
                f"WordNet 3.0 files missing in {self.root}: {', '.join(missing)}; install the Debian package "
                "`wordnet-base` (apt-get install wordnet-base) or point WNSEARCHDIR at a WordNet dict folder")
        self._index: dict[str, dict[str, tuple[int, ...]]] = {}
        self._tagged: dict[str, dict[str, int]] = {}
        self._exc: dict[str, dict[str, tuple[str, ...]]] = {}
        self._rev_exc: dict[str, dict[str, tuple[str, ...]]] = {}
        self._data: dict[str, bytes] = {}
        self._synsets: dict[tuple[str, int], Synset] = {}

    # --- raw files -------------------------------------------------------------------------------

    def _check_pos(self, pos: str) -> None:
        if pos not in POS:
            raise PoevalError(f"unknown WordNet part of speech {pos!r}; use one of {', '.join(POS)}")

    def index(self, pos: str) -> dict[str, tuple[int, ...]]:
        """``lemma -> synset offsets`` of ``index.POS`` (sense order, most frequent first)."""
        self._check_pos(pos)
        if pos not in self._index:
            table: dict[str, tuple[int, ...]] = {}
            tagged: dict[str, int] = {}
            with open(self.root / f"index.{POS_NAMES[pos]}", encoding="utf-8") as handle:
                for line in handle:
                    if line.startswith("  "):
                        continue
                    f = line.split()
                    n_syn = int(f[2])
                    table[f[0]] = tuple(int(x) for x in f[len(f) - n_syn:])
                    tagged[f[0]] = int(f[len(f) - n_syn - 1])
            self._index[pos], self._tagged[pos] = table, tagged
        return self._index[pos]

    def tagged_count(self, lemma: str, pos: str) -> int:
        """``tagsense_cnt`` of ``index.POS``: how many of the lemma's senses occur in the tagged
        (SemCor) texts; a rough frequency of the lemma in that POS (0 when absent)."""
        self.index(pos)
        return self._tagged[pos].get(_key(lemma), 0)

    def exceptions(self, pos: str) -> dict[str, tuple[str, ...]]:
        """``inflected -> base forms`` of ``POS.exc`` (empty when the file is absent)."""
        self._check_pos(pos)
        if pos not in self._exc:
            table: dict[str, tuple[str, ...]] = {}
            path = self.root / f"{POS_NAMES[pos]}.exc"
            if path.is_file():
                with open(path, encoding="utf-8") as handle:
                    for line in handle:
                        f = line.split()
                        if len(f) >= 2:
                            table[f[0]] = tuple(f[1:])
            self._exc[pos] = table
        return self._exc[pos]

    def inflections(self, base: str, pos: str) -> tuple[str, ...]:
        """Irregular forms that ``POS.exc`` lists for ``base`` (the exception list read backwards)."""
        if pos not in self._rev_exc:
            rev: dict[str, list[str]] = {}
            for infl, bases in self.exceptions(pos).items():
                for b in bases:
                    rev.setdefault(b, []).append(infl)
            self._rev_exc[pos] = {b: tuple(v) for b, v in rev.items()}
        return self._rev_exc[pos].get(_key(base), ())

    def synset(self, pos: str, offset: int) -> Synset:
        """The synset at byte ``offset`` of ``data.POS``."""
        self._check_pos(pos)
        key = (pos, offset)
        if key not in self._synsets:
            if pos not in self._data:
                self._data[pos] = (self.root / f"data.{POS_NAMES[pos]}").read_bytes()
            data = self._data[pos]
            end = data.find(b"\n", offset)
            line = data[offset:end if end >= 0 else len(data)].decode("utf-8")
            self._synsets[key] = _parse_data_line(line, pos, offset)
        return self._synsets[key]

    # --- queries ---------------------------------------------------------------------------------

    def pos_of(self, lemma: str) -> list[str]:
        """The parts of speech under which ``lemma`` (any case, spaces or ``_``) is in the index."""
        key = _key(lemma)
        return [p for p in POS if key in self.index(p)]

    def synsets(self, lemma: str, pos: str | None = None) -> list[Synset]:
        """Synsets of a base-form lemma, for one POS or all (noun, verb, adj, adv order)."""
        key = _key(lemma)
        out = []
        for p in ([pos] if pos else POS):
            out.extend(self.synset(p, off) for off in self.index(p).get(key, ()))
        return out

    def base_forms(self, word: str, pos: str) -> list[BaseForm]:
        """morphy(7WN) base forms of ``word`` under ``pos``, with how each was found; no duplicates."""
        key = _key(word)
        idx = self.index(pos)
        found: list[BaseForm] = []
        seen: set[str] = set()

        def add(base: str, how) -> None:
            if base in idx and base not in seen:
                seen.add(base)
                found.append(BaseForm(base, how))

        for base in self.exceptions(pos).get(key, ()):
            add(base, "exc")
        add(key, "self")
        for suffix, repl in DETACHMENT[pos]:
            if key.endswith(suffix) and len(key) > len(suffix):
                add(key[: len(key) - len(suffix)] + repl, (suffix, repl))
        return found

    def morphy(self, word: str, pos: str | None = None) -> list[str]:
        """Base forms of ``word`` (for one POS, or all in POS order), as index lemmas."""
        out: list[str] = []
        for p in ([pos] if pos else POS):
            out.extend(b.base for b in self.base_forms(word, p) if b.base not in out)
        return out


def _key(lemma: str) -> str:
    return lemma.strip().lower().replace(" ", "_")


def _parse_data_line(line: str, pos: str, offset: int) -> Synset:
    head, _, gloss = line.partition(" | ")
    f = head.split()
    if not f or int(f[0]) != offset:
        raise PoevalError(f"WordNet data.{POS_NAMES[pos]}: no synset at byte offset {offset} (corrupt file?)")
    n_words = int(f[3], 16)
    words = tuple(_ADJ_MARKER.sub("", f[4 + 2 * i]) for i in range(n_words))
    return Synset(offset=offset, pos="a" if f[2] == "s" else f[2], lemmas=words, gloss=gloss.strip())


@functools.lru_cache(maxsize=4)
def default(root: str | None = None) -> WordNet:
    """A shared :class:`WordNet` for ``root`` (default: ``$WNSEARCHDIR`` or /usr/share/wordnet)."""
    return WordNet(root)
