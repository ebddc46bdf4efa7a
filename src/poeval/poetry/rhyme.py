"""Phonetic rhyme detection for English and German, and rhyme-scheme labels.

Design
------
* Every line-final word is turned into one or more phone sequences: English from the CMU Pronouncing
  Dictionary (all pronunciations, via ``pronouncing``), looked up under the modern spellings of early
  modern words (``loue``, ``ioy``, ``penne``, ``griefe``) when it lacks the word, with espeak-ng (on the
  modern spelling) as grapheme-to-phoneme fallback; German from espeak-ng (``-v de --ipa``) after
  normalising historical spelling. espeak-ng runs as ONE persistent process per voice, asked for a word's
  last ``espeak.MAX_LETTERS`` letters and kept in step by a sentinel word (:mod:`poeval.poetry.espeak`).
* A pair of end words gets a graded similarity *level* (see ``LEVELS``): ``identical`` (same word), else
  ``v{V}c{C}{t}[+eye]`` from the rhyme part (last primary stress, or a later secondary stress, to the end;
  best over all pronunciations): V = stressed vowel 2 same / 1 same under the loose vowel classes (German
  length, rounding ü~i ö~e, eu/äu~ei; English length and close qualities) / h (English) vowels that rhymed
  in older verse (``_EN_HIST_V``: love/prove, wind/kind, join/line, sea/way, were/there, heart/wert) / 0
  different; C = the rest 3 same / 2 same with loose vowels / 1 same with loose consonants (voicing,
  nasals, final -s/-t) / 0; t = ``w``/``u`` when only the last (stressed / unstressed) vowel and what
  follows agree, ``y`` (English) for the licence of an unstressed ending against a stressed one
  (eternity/die, audience/offence); ``+eye`` when the spelled endings agree (English after the u~v, i~j,
  y~i swaps of old spelling). Each level has a fixed log-likelihood ratio ``log P(level | linked) /
  P(level | not linked)`` per language (``LLR``), counted on the dev gold (``benchmarks/bench_rhyme.py
  --fit``; ``benchmarks/bench_rhyme.py`` also cross-validates them by poet); ``rhyme_relation`` says
  "rhyme" when that ratio is positive.
* A scheme is the set partition of the lines that maximises the summed ratio over its linked pairs: all
  partitions are enumerated for stanzas of up to ``EXHAUSTIVE_MAX`` lines (15 for 4 lines), longer stanzas
  use greedy agglomeration plus single-line repair moves. Four-line stanzas add a weak smoothed log prior
  over the 15 schemes (``scheme_prior``: every scheme keeps mass, it only breaks near-ties); stanzas of 5+
  lines add a log-odds shift by line distance (``DIST_BIAS``). A loose pair counts for less beside the
  stanza's exact pairs (``context_penalty``, ``CONTEXT``): two exact couplets are not joined through a loose
  or historical vowel. The strictness is read from the stanza itself, never from a period. The partition
  is written as a first-appearance label (``abab``, ``aabb``, ...). A repeated end word is linked, as the
  gold links it (``is_repetition`` still tells it apart from a rhyme).
"""

from __future__ import annotations

import functools
import itertools
import math
import re
import unicodedata
from typing import Iterable, Sequence

import numpy as np

from poeval.errors import PoevalError
from poeval.poetry import espeak
from poeval.poetry.espeak import check_phonemizer
from poeval.poetry.style import METERS, SCHEMES
from poeval.text import end_word

__all__ = [
    "SCHEMES_4",
    "LEVELS",
    "end_word",
    "normalise_de",
    "normalise_scheme",
    "rhyme_level",
    "rhyme_relation",
    "scheme",
    "schemes",
    "pair_levels",
    "METRES",
    "metre",
    "metre_from_measures",
    "is_repetition",
    "record_meter",
    "annotate",
    "write_annotated",
    "check_phonemizer",
]

LANGS = ("en", "de")
EXHAUSTIVE_MAX = 9

# ----------------------------------------------------------------------------------------------------
# scheme labels


def normalise_scheme(s: str | Sequence) -> str:
    """Relabel a scheme in first-appearance order: ``"ABAB"`` -> ``"abab"``, ``"bcbc"`` -> ``"abab"``.

    Any hashable symbols are accepted (a string or a list of labels). More than 26 groups continue with
    upper-case letters and then digits-free unicode letters.
    """
    seen: dict = {}
    out = []
    for ch in s:
        key = ch.lower() if isinstance(ch, str) else ch
        if key not in seen:
            seen[key] = _letter(len(seen))
        out.append(seen[key])
    return "".join(out)


def _letter(i: int) -> str:
    if i < 26:
        return chr(ord("a") + i)
    if i < 52:
        return chr(ord("A") + i - 26)
    return chr(0x100 + i)  # keeps one character per line for very long stanzas


@functools.lru_cache(maxsize=None)
def _partitions(n: int) -> tuple[str, ...]:
    """All set partitions of n lines as first-appearance labels (restricted growth strings)."""
    out: list[str] = []

    def rec(prefix: list[int], mx: int) -> None:
        if len(prefix) == n:
            out.append("".join(_letter(i) for i in prefix))
            return
        for k in range(mx + 2):
            prefix.append(k)
            rec(prefix, max(mx, k))
            prefix.pop()

    if n > 0:
        rec([0], 0)
    return tuple(out)


SCHEMES_4: list[str] = list(SCHEMES)   # = _partitions(4): the style vocabulary's 15 schemes


@functools.lru_cache(maxsize=None)
def _partition_matrix(n: int) -> np.ndarray:
    """(n_partitions, n_pairs) 0/1 matrix: whether pair (i, j), i < j, is linked in each partition."""
    parts = _partitions(n)
    pairs = list(itertools.combinations(range(n), 2))
    m = np.zeros((len(parts), len(pairs)), dtype=np.float32)
    for r, p in enumerate(parts):
        for c, (i, j) in enumerate(pairs):
            if p[i] == p[j]:
                m[r, c] = 1.0
    return m


# ----------------------------------------------------------------------------------------------------
# text normalisation

_APOS = "’`´ʼ‘"


def _is_latin_letter(ch: str) -> bool:
    return ch.isalpha() and "LATIN" in unicodedata.name(ch, "")


# A verse's end word is :func:`poeval.text.end_word` (its last word: marginal line numbers, dash runs,
# brackets, quotes and footnote marks after it are stripped; see :func:`poeval.text.verse_end`).


_TILDE = "\u0303"
_COMB_E = "\u0364"


def normalise_de(text: str) -> str:
    """Normalise historical German spelling (DTA diplomatic transcription) towards modern spelling."""
    t = unicodedata.normalize("NFD", text)
    t = t.replace("ſ", "s").replace("ꝛ", "r").replace("/", ",")
    for ch in _APOS:
        t = t.replace(ch, "'")
    # combining e above a vowel: uͤ = ü
    t = re.sub("([aouAOU])" + _COMB_E, lambda m: m.group(1) + "\u0308", t)
    t = t.replace(_COMB_E, "")
    # tilde abbreviations: ẽ = en, m̃ = mm, ñ = nn
    t = re.sub("([aeiouyAEIOUY]\u0308?)[" + _TILDE + "\u0304]", r"\1n", t)
    t = re.sub("([mnMN])" + _TILDE, r"\1\1", t)
    t = t.replace(_TILDE, "")
    t = unicodedata.normalize("NFC", t)
    return re.sub(r"[^\W\d_]+", _modernise_de_word, t)


_DE_WORD_MAP = {
    "vnd": "und", "vmb": "um", "umb": "um", "darumb": "darum", "warumb": "warum", "vns": "uns",
    "jn": "in", "jst": "ist", "jhr": "ihr", "jhn": "ihn", "jm": "ihm", "jch": "ich", "vnnd": "und",
    "seyn": "sein", "sey": "sei", "bey": "bei", "frey": "frei", "drey": "drei", "itzt": "jetzt",
}


def _modernise_de_word(m: re.Match) -> str:
    w = m.group(0)
    low = w.lower()
    if low in _DE_WORD_MAP:
        new = _DE_WORD_MAP[low]
    else:
        new = low
        if new.startswith("vn") or new.startswith("vm") or new.startswith("vb"):
            new = "u" + new[1:]
        if re.match(r"j[bcdfghklmnpqrstvwxzß]", new):
            new = "i" + new[1:]
        new = re.sub(r"ey(?=$|[^aeiouäöü])", "ei", new)
        new = re.sub(r"(?<=[aeiouäöü])y", "i", new)
        new = re.sub(r"th(?![aeiouäöüy]?s?ch)", "t", new) if "th" in new else new
        new = re.sub(r"(?<=[aeiouäöü])hl(?=$)", "hl", new)
        new = re.sub(r"dt$", "t", new)
        new = re.sub(r"umb$", "um", new)
        new = re.sub(r"ff(?=t|$)", "f", new) if len(new) > 4 else new
    if new == low:
        return w
    return new[:1].upper() + new[1:] if w[:1].isupper() else new


_EN_ARCHAIC = {
    "o'er": "or", "e'er": "air", "ne'er": "nair", "where'er": "where", "whate'er": "air", "howe'er": "air",
    "whene'er": "air", "whoe'er": "air", "ere": "air", "'tis": "tis", "'twas": "twas", "ev'n": "even",
    "e'en": "even", "heav'n": "heaven", "pow'r": "power", "flow'r": "flower", "th'": "the", "o'": "of",
    "giv'n": "given", "tow'r": "tower", "show'r": "shower", "ta'en": "tain",
    "driv'n": "driven", "spirit's": "spirits", "fall'n": "fallen", "stol'n": "stolen", "o'erthrown": "overthrown",
    "t'": "to", "i'": "in", "agen": "again", "ha'": "have", "oft": "oft",
}


def _strip_accents(w: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFD", w) if not unicodedata.combining(c))


def clean_word(word: str, lang: str) -> str:
    """An end word as the detector looks it up: apostrophes unified, lowercased, letters (and ``'``/``-``
    inside English words) only; German spelling normalised (:func:`normalise_de`), English accents stripped."""
    w = word.strip()
    for ch in _APOS:
        w = w.replace(ch, "'")
    if lang == "de":
        w = normalise_de(w)
        w = w.replace("'", "")
        w = w.lower()
        return "".join(c for c in w if c.isalpha() or c == "-").strip("-")
    w = _strip_accents(w).lower()
    return "".join(c for c in w if c.isalpha() or c in "'-").strip("-")


def _has_latin(word: str) -> bool:
    return any(_is_latin_letter(c) for c in word)


# ----------------------------------------------------------------------------------------------------
# phonemes

_ARPA = {
    "AA": "ɑː", "AE": "æ", "AH": "ʌ", "AO": "ɔː", "AW": "aʊ", "AY": "aɪ", "EH": "ɛ", "ER": "ɜː", "EY": "eɪ",
    "IH": "ɪ", "IY": "iː", "OW": "oʊ", "OY": "ɔɪ", "UH": "ʊ", "UW": "uː",
    "B": "b", "CH": "tʃ", "D": "d", "DH": "ð", "F": "f", "G": "ɡ", "HH": "h", "JH": "dʒ", "K": "k", "L": "l",
    "M": "m", "N": "n", "NG": "ŋ", "P": "p", "R": "ɹ", "S": "s", "SH": "ʃ", "T": "t", "TH": "θ", "V": "v",
    "W": "w", "Y": "j", "Z": "z", "ZH": "ʒ",
}
_IPA_VOWELS = set("aeiouyæɐɑɒɔəɘɚɛɜɝɞɪʊʌʏøœɤɯɨʉᵻɵ")
_IPA_SKIP = set("ː ˑ-_'ʰʲ̩̯̃.,‿|ʔ")

Phones = tuple  # tuple of (symbol, is_vowel, stress) triples


def _arpa_to_phones(pron: str) -> Phones:
    out = []
    for ph in pron.split():
        base = ph.rstrip("012")
        stress = int(ph[-1]) if ph[-1].isdigit() else -1
        sym = _ARPA.get(base, base.lower())
        if base == "AH" and stress == 0:
            sym = "ə"
        if base == "ER" and stress == 0:
            sym = "ɚ"
        out.append((sym, stress >= 0, {1: 1, 2: 2}.get(stress, 0)))
    return tuple(out)


_DIPHTHONGS = ("aɪ", "aʊ", "ɔø", "ɔʏ", "ɔɪ", "eɪ", "oʊ", "əʊ", "eə", "ɪə", "ʊə", "aɪ")


def _ipa_to_phones(ipa: str) -> Phones:
    ipa = re.sub(r"\([a-z-]+\)", "", ipa)
    out: list[list] = []
    pending = 0
    k = 0
    n = len(ipa)
    while k < n:
        ch = ipa[k]
        if ch in "ˈˌ":
            pending = 1 if ch == "ˈ" else 2
            k += 1
            continue
        if ch == "ː":
            if out:
                out[-1][0] += "ː"
            k += 1
            continue
        if ch.isspace() or ch in _IPA_SKIP or unicodedata.combining(ch) or not (ch.isalpha() or ch in _IPA_VOWELS):
            k += 1
            continue
        if ch in _IPA_VOWELS:
            sym = ch
            if ipa[k:k + 2] in _DIPHTHONGS:
                sym = ipa[k:k + 2]
            k += len(sym)
            out.append([sym, True, pending])
            pending = 0
        else:
            out.append([ch, False, 0])
            k += 1
    return tuple((s, v, st) for s, v, st in out)


# Early modern English spellings -> modern ones, applied in turn (each step keeps the forms before it):
# ioy/iust, vnto, loue/euer, mylde/fyre, gayns/despayre, raigne, imbrace/inthrone, -ick, doubled consonant
# + e (penne, drumme, passe), final -e (wombe, griefe), -ie/-ye (destinie, flye), -oe (goe, doe), theefe.
_DROP_E = r"(?<=[^aeiou])e$"
# the first _EN_SPELLING_LETTERS rules only change letters that stand for one sound (i/j, u/v, y/i, ay/ai);
# eye rhymes compare the spelling after those alone
_EN_SPELLING_LETTERS = 5
_EN_SPELLING = (
    (r"^i(?=[aeou])", "j"), (r"^v(?=[^aeiouy])", "u"), (r"(?<=[aeiou])u(?=[aeiour])", "v"),
    (r"(?<=[^aeiou])y(?=[^aeiou])", "i"), (r"ay(?=[^aeiou]|re$)", "ai"), (r"aign", "ain"),
    (r"^i([mn])(?=[bpt]h?r)", r"e\1"), (r"(?<=[^aeiou].)ick$", "ic"),
    (r"([bdfgklmnprst])\1e$", r"\1\1"), (r"([bdgmnpt])\1$", r"\1"), (_DROP_E, ""),
    (r"(?<=[^aeiou])(ie|ye)$", "y"), (r"oe$", "o"), (r"ee", "ie"),
)


_EN_SPELLING_RE = tuple((re.compile(p), r) for p, r in _EN_SPELLING)


@functools.lru_cache(maxsize=200_000)
def _modern_spellings(w: str, keep_e: bool = False, letters_only: bool = False) -> tuple[str, ...]:
    """Modern spellings an early modern English word may stand for, most literal first (``keep_e``: not
    dropping a final -e; ``letters_only``: only the one-sound letter swaps, for eye rhymes)."""
    out = []
    for pat, rep in _EN_SPELLING_RE[:_EN_SPELLING_LETTERS] if letters_only else _EN_SPELLING_RE:
        if keep_e and pat.pattern == _DROP_E:
            continue
        new = pat.sub(rep, w)
        if new != w and len(new) >= 2:
            out.append(new)
            w = new
    return tuple(out)


def en_candidates(w: str) -> list[str]:
    """Spellings to look up for an English end word, in order: archaic contractions, the word, elided and
    -eth/-est forms, the modernised spellings, and last the long s misread as f (``fhe``)."""
    cands = []
    if w in _EN_ARCHAIC:
        cands.append(_EN_ARCHAIC[w])
    cands.append(w)
    if "'" in w:
        base = w.strip("'")
        cands.append(re.sub(r"'(d|st|n|r|ry|ring|rs)$", r"e\1", base))
        cands.append(re.sub(r"'t$", "ed", base))
        cands.append(base.replace("'", "e"))
        cands.append(base.replace("'", ""))
    if w.endswith("eth") and len(w) > 5:
        cands.append(w[:-3] + "es")
        cands.append(w[:-3] + "s")
        cands.append(w[:-3] + "e" + "s")
    if w.endswith("est") and len(w) > 5:
        cands.append(w[:-3] + "s")
    if re.search(r"[^s]st$", w) and len(w) > 5:  # possest, releast: -st for -ssed/-sed
        cands += [w[:-1] + "sed", w[:-2] + "sed"]
    if "-" in w:
        cands.append(w.split("-")[-1])
    bases = [c.replace("'", "") for c in cands if "'" not in c or c.endswith("'")] or [w.replace("'", "")]
    for base in bases:
        cands += list(_modern_spellings(base))
        if base.endswith("yed"):
            cands.append(base[:-3] + "ied")
        if base.endswith("es") and len(base) > 4:
            cands.append(base[:-2] + "s")
    base = bases[-1]
    if "f" in base:
        cands.append(re.sub(r"f(?=[^aeiouyfr]|$)", "s", base))
        cands.append(base.replace("f", "s"))
    return [c for c in dict.fromkeys(cands) if c]


_EN_EXTRA_PRONS = {"aye": ["EY1"], "wind": ["W AY1 N D"], "again": ["AH0 G EY1 N"], "been": ["B IY1 N"]}


@functools.lru_cache(maxsize=200_000)
def phones(word: str, lang: str) -> tuple[Phones, ...]:
    """All phone sequences for a (cleaned, lower-case) word; ``()`` when it has none."""
    if lang not in LANGS:
        raise PoevalError(f"unsupported language {lang!r}; use one of {', '.join(LANGS)}")
    if not word or not _has_latin(word):
        return ()
    if lang == "en":
        import pronouncing

        prons: list[str] = []
        for cand in en_candidates(word):
            prons += pronouncing.phones_for_word(cand) + _EN_EXTRA_PRONS.get(cand, [])
            # a doubled consonant + e (passe, belle) is old spelling even when CMUdict has a French word
            if prons and not (cand == word and re.search(r"([bdfgklmnprst])\1e$", word)):
                return tuple(dict.fromkeys(_arpa_to_phones(p.split("#")[0]) for p in prons))
        if prons:
            return tuple(dict.fromkeys(_arpa_to_phones(p.split("#")[0]) for p in prons))
        target = word.replace("'", "e") if re.search(r"'(d|st)$", word) else word.replace("'", "")
        target = target.split("-")[-1] or target
        target = (target,) + _modern_spellings(target, keep_e=True)
        target = target[-1]  # espeak reads modern spelling best
        ipa = espeak.ipa(target, "en")
        return (_ipa_to_phones(ipa),) if ipa else ()
    target = word.split("-")[-1] or word
    ipa = espeak.ipa(target, "de")
    return (_ipa_to_phones(ipa),) if ipa else ()


# ----------------------------------------------------------------------------------------------------
# graded similarity

_EN_EXACT_V = {"ɚ": "ɜː", "ɝ": "ɜː", "ᵻ": "ɪ", "ɐ": "ə", "ɒ": "ɑː", "əʊ": "oʊ", "ɑ": "ɑː", "ɔ": "ɔː",
               "i": "iː", "u": "uː", "ɜ": "ɜː", "o": "oʊ", "e": "eɪ", "a": "æ", "ɪə": "ɪɹ", "eə": "ɛɹ"}
_EN_LOOSE_V = {"ɑː": "A", "ɔː": "A", "ɒ": "A", "ʌ": "E", "ə": "E", "ɪ": "I", "iː": "I", "ʊ": "U", "uː": "U",
               "ɛ": "e", "æ": "e", "ɜː": "R"}
_DE_DIPH = [("ɔø", "aɪ"), ("ɔʏ", "aɪ"), ("ɔɪ", "aɪ"), ("aɪ", "aɪ"), ("aʊ", "aʊ")]
_DE_LOOSE_V = {"y": "i", "ʏ": "i", "ɪ": "i", "i": "i", "ø": "e", "œ": "e", "e": "e", "ɛ": "e", "u": "u",
               "ʊ": "u", "o": "o", "ɔ": "o", "a": "a", "ɑ": "a", "ə": "ə", "ɜ": "ɐ", "ɐ": "ɐ"}
_EN_C = {"ɾ": "t", "ɹ": "r", "ɡ": "g", "ɫ": "l"}
_DE_C = {"ɾ": "r", "ʁ": "r", "ɹ": "r", "ɡ": "g", "ʀ": "r"}
_LOOSE_C = {"b": "p", "d": "t", "g": "k", "v": "f", "z": "s", "ʒ": "ʃ", "ð": "θ", "ç": "x", "m": "n",
            "ŋ": "n", "dʒ": "tʃ"}


def _canon_vowel(v: str, lang: str, loose: bool) -> str:
    if lang == "en":
        v = _EN_EXACT_V.get(v, v)
        if loose:
            v = v.replace("ː", "")
            v = _EN_LOOSE_V.get(v, _EN_LOOSE_V.get(v + "ː", v))
        return v
    base = v.replace("ː", "")
    if loose:
        for d, r in _DE_DIPH:
            if base.startswith(d):
                return r
        return "".join(_DE_LOOSE_V.get(c, c) for c in base)
    return v


def _canon_cons(c: str, lang: str, loose: bool) -> str:
    c = (_EN_C if lang == "en" else _DE_C).get(c, c)
    if loose:
        c = _LOOSE_C.get(c, c)
    return c


@functools.lru_cache(maxsize=200_000)
def _seq(ph: Phones, start: int, lang: str, vloose: bool, closse: bool) -> tuple:
    out = []
    isv = []
    for k, (sym, v, _) in enumerate(ph[start:], start):
        out.append(_canon_vowel(sym, lang, vloose) if v else _canon_cons(sym, lang, closse))
        isv.append(v)
        if v and lang == "en" and _EN_EXACT_V.get(sym, sym) == "ɜː" and (
                k + 1 == len(ph) or _canon_cons(ph[k + 1][0], lang, False) != "r"):
            out.append("r")  # the r of CMUdict's ER: were ~ there, wert ~ heart compare vowel + r
            isv.append(False)
    if closse:
        _VOWEL_CLASSES.update(o for o, v in zip(out, isv) if v)
    return tuple(out)




def _stressed_index(ph: Phones) -> int:
    vow = [i for i, (_, v, _) in enumerate(ph) if v]
    if not vow:
        return -1
    prim = [i for i in vow if ph[i][2] == 1]
    if prim:
        return prim[-1]
    sec = [i for i in vow if ph[i][2] == 2]
    if sec:
        return sec[-1]
    return vow[-1]


def _stress_starts(ph: Phones) -> list[int]:
    """Where the rhyme part may start: the last primary stress and a later secondary stress."""
    first = _stressed_index(ph)
    if first < 0:
        return []
    later = [i for i, (_, v, st) in enumerate(ph) if v and st and i > first]
    return [first] + ([later[-1]] if later else [])


def _last_vowel_index(ph: Phones) -> int:
    vow = [i for i, (_, v, _) in enumerate(ph) if v]
    return vow[-1] if vow else -1


def _phon_level(pa: Phones, pb: Phones, lang: str, spelled: tuple = ("", "")) -> tuple:
    best: tuple = (0, 0, "")
    for ia in _stress_starts(pa):
        for ib in _stress_starts(pb):
            best = max(best, _phon_level_at(pa, pb, ia, ib, lang, spelled), key=_level_key)
    return best


def _level_key(lev: tuple) -> tuple:
    """Which of two levels (other pronunciations or stress positions) is the closer rhyme: a shared rest
    first; without one, an agreeing last syllable before the stressed vowel."""
    v, c, t = lev
    return (v >= 0.5 and c >= 1, c, t != "" if c == 0 else 0, v, t)


# Vowels that rhymed in older English verse (Early Modern English sounds and the licences they left):
# love/prove/blood/good, come/home, none/gone, wind/kind, join/line, sea/way/obey, been/seen, again/plain,
# stone/gone, was/pass, bow/thou, now/snow, do/go. Before r also: were/there/heart/earth/forth (the NURSE
# vowel with any other) and moor/more/mourn, here/there.
_EN_HIST_V = frozenset(frozenset(p) for p in (
    ("ʌ", "uː"), ("ʌ", "ʊ"), ("ʌ", "oʊ"), ("ʌ", "ɑː"), ("aɪ", "ɪ"), ("ɔɪ", "aɪ"), ("oʊ", "ɑː"), ("oʊ", "ɔː"),
    ("oʊ", "uː"), ("æ", "ɑː"), ("aʊ", "oʊ"), ("aʊ", "uː")))
_EN_HIST_EA = frozenset(frozenset(p) for p in (("iː", "eɪ"), ("iː", "ɛ"), ("ɛ", "eɪ")))
_EN_HIST_R = (frozenset(("ʊ", "ɔː", "oʊ", "uː")), frozenset(("ɛ", "eɪ", "ɪ", "iː", "æ")), frozenset(("ɛ", "ɑː")))


def _hist_vowel(ea: tuple, eb: tuple, spelled: tuple) -> bool:
    """Whether two English rhyme parts (exact symbols, stressed vowel first) have historically rhyming vowels.
    ``spelled`` are the spelled endings: the front vowels rhyme only where one word writes ea (sea/way,
    beast/rest, death/faith; not day/me)."""
    a, b = ea[0], eb[0]
    pair = frozenset((a, b))
    if pair in _EN_HIST_EA and any("ea" in w for w in spelled):
        return True
    if pair in _EN_HIST_V:
        return True
    if ea[1:2] == eb[1:2] == ("r",):
        return "ɜː" in (a, b) or any(a in g and b in g for g in _EN_HIST_R)
    return False


def _licence_tail(pa: Phones, la: int, pb: Phones, lb: int, lang: str) -> bool:
    """An unstressed last syllable rhymed with a stressed one, the licence of older English verse: -y/-ies
    with /aɪ/ (eternity/die, enemies/eyes), a reduced vowel with any vowel before the same consonants
    (audience/offence, isicles/dwells)."""
    if lang != "en" or (pa[la][2] > 0) == (pb[lb][2] > 0):
        return False
    (weak, kw), (strong, ks) = sorted(((pa, la), (pb, lb)), key=lambda x: x[0][x[1]][2] > 0)
    coda = _seq(weak, kw, lang, False, False)[1:]
    if coda != _seq(strong, ks, lang, False, False)[1:]:
        return False
    vw, vs = _canon_vowel(weak[kw][0], lang, False), _canon_vowel(strong[ks][0], lang, False)
    return (vw in ("iː", "ɪ") and vs == "aɪ") or (vw in ("ə", "ɪ") and bool(coda))


def _loose_tail(seq: tuple) -> tuple:
    out = list(seq)
    # plural / verb -s and -t after a consonant, ts ~ s
    if len(out) >= 2 and out[-1] in ("s", "t") and out[-2] not in _VOWEL_CLASSES:
        out.pop()
    return tuple(x for x in out if x not in ("h", "ʔ"))


_VOWEL_CLASSES: set[str] = set()


def _phon_level_at(pa: Phones, pb: Phones, ia: int, ib: int, lang: str, spelled: tuple = ("", "")) -> tuple:
    """(vowel 2 exact / 1 loose / 0 differs, rest 3 exact / 2 loose vowels / 1 loose consonants / 0, tail)."""
    ea, eb = _seq(pa, ia, lang, False, False), _seq(pb, ib, lang, False, False)
    la_, lb_ = _seq(pa, ia, lang, True, False), _seq(pb, ib, lang, True, False)
    v = 2 if ea[:1] == eb[:1] else 1 if la_[:1] == lb_[:1] else 0
    if ea[1:] == eb[1:]:
        c = 3
    elif la_[1:] == lb_[1:]:
        c = 2
    else:
        sa, sb = _seq(pa, ia, lang, True, True), _seq(pb, ib, lang, True, True)
        c = 1 if _loose_tail(sa)[1:] == _loose_tail(sb)[1:] else 0
    if v == 0 and lang == "en" and _hist_vowel(ea, eb, spelled):
        v = 0.5
    if v == 0 and len(ea) == 1 and len(eb) == 1:
        c = 0  # two open syllables with different vowels share nothing
    tail = ""
    if v < 1 or c == 0:
        la, lb = _last_vowel_index(pa), _last_vowel_index(pb)
        if (la != ia or lb != ib) and _seq(pa, la, lang, True, False) == _seq(pb, lb, lang, True, False):
            tail = "w" if (pa[la][2] or pb[lb][2]) else "u"
        elif _licence_tail(pa, la, pb, lb, lang):
            tail = "y"
    return (v, c, tail)


_ORTH_V = set("aeiouyäöüàáâèéêìíîòóôùúû")


def _orth_ending(w: str, lang: str) -> str:
    w = "".join(c for c in w if c.isalpha())
    groups = [(m.start(), m.end()) for m in re.finditer("[" + "".join(_ORTH_V) + "]+", w)]
    if not groups:
        return w
    start, end = groups[-1]
    tail = w[end:]
    if len(groups) >= 2 and w[start:end] == "e" and len(tail) <= 1:
        start = groups[-2][0]
    elif lang == "en" and len(groups) >= 2 and w[start:end] == "e" and tail in ("d", "s", "st", "th"):
        start = groups[-2][0]
    return w[start:]


_NONE = "v0c0"
_V_NAME = {2: "2", 1: "1", 0.5: "h", 0: "0"}  # h: historically rhyming vowels (English)
LEVELS: list[str] = ["identical"] + [
    f"v{_V_NAME[v]}c{c}{t}{'+eye' if e else ''}"
    for v in (2, 1, 0.5, 0)
    for c in (3, 2, 1, 0)
    for t in (("", "w", "u", "y") if (v < 1 or c == 0) else ("",))
    for e in (True, False)
]


def _level_name(lev: tuple, eye: bool) -> str:
    v, c, t = lev
    return f"v{_V_NAME[v]}c{c}{t}{'+eye' if eye else ''}"


@functools.lru_cache(maxsize=500_000)
def _level_clean(a: str, b: str, lang: str) -> str:
    if not a or not b or not _has_latin(a) or not _has_latin(b):
        return _NONE
    if a == b or a.replace("'", "") == b.replace("'", ""):
        return "identical"
    pa, pb = phones(a, lang), phones(b, lang)
    if lang == "en":  # eye rhymes by the modern letters: loue/prove, mylde/wild
        a, b = (((w,) + _modern_spellings(w, letters_only=True))[-1] for w in (a, b))
    ea, eb = _orth_ending(a, lang), _orth_ending(b, lang)
    best: tuple = (0, 0, "")
    for x in pa:
        for y in pb:
            best = max(best, _phon_level(x, y, lang, (ea, eb)), key=_level_key)
    eye = len(ea) >= 2 and ea == eb
    return _level_name(best, eye)


def rhyme_level(word_a: str, word_b: str, lang: str) -> str:
    """The graded similarity level of two words (one of :data:`LEVELS`)."""
    _check_lang(lang)
    return _level_clean(clean_word(word_a, lang), clean_word(word_b, lang), lang)


def rhyme_relation(word_a: str, word_b: str, lang: str) -> str:
    """``"repetition"`` (same word), ``"rhyme"`` (a level more likely between rhyming lines) or ``"none"``."""
    lev = rhyme_level(word_a, word_b, lang)
    if lev == "identical":
        return "repetition"
    return "rhyme" if LLR[lang].get(lev, 0.0) + LINK_BIAS[lang] > 0 else "none"


def _check_lang(lang: str) -> None:
    if lang not in LANGS:
        raise PoevalError(f"unsupported language {lang!r}; use one of {', '.join(LANGS)}")


# ----------------------------------------------------------------------------------------------------
# level likelihood ratios: log P(level | linked) - log P(level | not linked), counted on the dev gold of
# each language with add-one smoothing (benchmarks/bench_rhyme.py --fit prints this table).
LLR: dict[str, dict[str, float]] = {
    "en": {
        "identical": 2.401, "v2c3+eye": 5.057, "v2c3": 4.441, "v2c2+eye": 1.099, "v2c2": 1.358, "v2c1+eye": 3.799,
        "v2c1": -0.009, "v2c0+eye": 4.764, "v2c0": -2.933, "v2c0w+eye": 3.716, "v2c0w": 2.336, "v2c0u+eye": 2.946,
        "v2c0u": 2.164, "v2c0y+eye": 3.926, "v2c0y": 2.077, "v1c3+eye": 5.435, "v1c3": 1.928, "v1c2+eye": -0.0,
        "v1c2": -0.0, "v1c1+eye": 0.693, "v1c1": -2.484, "v1c0+eye": 2.079, "v1c0": -3.249, "v1c0w+eye": 1.693,
        "v1c0w": 2.109, "v1c0u+eye": 2.773, "v1c0u": 1.279, "v1c0y+eye": 3.422, "v1c0y": 1.686, "vhc3+eye": 4.209,
        "vhc3": 1.68, "vhc3w+eye": 0.693, "vhc3w": -0.0, "vhc3u+eye": 4.662, "vhc3u": 3.486, "vhc3y+eye": 2.708,
        "vhc3y": 0.047, "vhc2+eye": -0.0, "vhc2": -0.0, "vhc2w+eye": 0.693, "vhc2w": -0.0, "vhc2u+eye": -0.0,
        "vhc2u": 0.693, "vhc2y+eye": -0.0, "vhc2y": -0.0, "vhc1+eye": 3.135, "vhc1": -2.101, "vhc1w+eye": -0.0,
        "vhc1w": -0.0, "vhc1u+eye": 1.029, "vhc1u": -0.357, "vhc1y+eye": -0.0, "vhc1y": -0.0, "vhc0+eye": 3.044,
        "vhc0": -3.853, "vhc0w+eye": 1.75, "vhc0w": 2.411, "vhc0u+eye": 2.438, "vhc0u": 1.352, "vhc0y+eye": 3.182,
        "vhc0y": 1.398, "v0c3+eye": 4.468, "v0c3": -0.983, "v0c3w+eye": 0.693, "v0c3w": -0.0, "v0c3u+eye": 3.953,
        "v0c3u": 2.922, "v0c3y+eye": -0.0, "v0c3y": -0.21, "v0c2+eye": -0.0, "v0c2": -0.0, "v0c2w+eye": -0.0,
        "v0c2w": -0.0, "v0c2u+eye": -0.0, "v0c2u": -0.0, "v0c2y+eye": -0.0, "v0c2y": -0.0, "v0c1+eye": 1.099,
        "v0c1": -4.065, "v0c1w+eye": -0.0, "v0c1w": 0.693, "v0c1u+eye": 0.559, "v0c1u": -0.54, "v0c1y+eye": -0.0,
        "v0c1y": -0.0, "v0c0+eye": 4.409, "v0c0": -3.83, "v0c0w+eye": 4.158, "v0c0w": 2.142, "v0c0u+eye": 2.577,
        "v0c0u": 1.106, "v0c0y+eye": 4.374, "v0c0y": 1.418,
    },
    "de": {
        "identical": 3.562, "v2c3+eye": 5.688, "v2c3": 5.232, "v2c2+eye": 0.0, "v2c2": 0.0, "v2c1+eye": 2.197,
        "v2c1": 0.605, "v2c0+eye": 2.565, "v2c0": -2.045, "v2c0w+eye": 2.89, "v2c0w": 1.609, "v2c0u+eye": 3.219,
        "v2c0u": -0.575, "v2c0y+eye": 0.0, "v2c0y": 0.0, "v1c3+eye": 4.637, "v1c3": 4.109, "v1c2+eye": 0.0,
        "v1c2": 0.0, "v1c1+eye": 1.609, "v1c1": -0.179, "v1c0+eye": 1.792, "v1c0": -3.191, "v1c0w+eye": 2.263,
        "v1c0w": 2.569, "v1c0u+eye": 1.91, "v1c0u": -1.374, "v1c0y+eye": 0.0, "v1c0y": 0.0, "vhc3+eye": 0.0,
        "vhc3": 0.0, "vhc3w+eye": 0.0, "vhc3w": 0.0, "vhc3u+eye": 0.0, "vhc3u": 0.0, "vhc3y+eye": 0.0, "vhc3y": 0.0,
        "vhc2+eye": 0.0, "vhc2": 0.0, "vhc2w+eye": 0.0, "vhc2w": 0.0, "vhc2u+eye": 0.0, "vhc2u": 0.0,
        "vhc2y+eye": 0.0, "vhc2y": 0.0, "vhc1+eye": 0.0, "vhc1": 0.0, "vhc1w+eye": 0.0, "vhc1w": 0.0,
        "vhc1u+eye": 0.0, "vhc1u": 0.0, "vhc1y+eye": 0.0, "vhc1y": 0.0, "vhc0+eye": 0.0, "vhc0": 0.0,
        "vhc0w+eye": 0.0, "vhc0w": 0.0, "vhc0u+eye": 0.0, "vhc0u": 0.0, "vhc0y+eye": 0.0, "vhc0y": 0.0,
        "v0c3+eye": 1.099, "v0c3": -1.765, "v0c3w+eye": 0.0, "v0c3w": 0.0, "v0c3u+eye": 0.0, "v0c3u": -0.416,
        "v0c3y+eye": 0.0, "v0c3y": 0.0, "v0c2+eye": 0.0, "v0c2": 0.0, "v0c2w+eye": 0.0, "v0c2w": 0.0,
        "v0c2u+eye": 0.0, "v0c2u": 0.0, "v0c2y+eye": 0.0, "v0c2y": 0.0, "v0c1+eye": 0.0, "v0c1": -3.353,
        "v0c1w+eye": 0.0, "v0c1w": 0.0, "v0c1u+eye": 0.0, "v0c1u": -3.004, "v0c1y+eye": 0.0, "v0c1y": 0.0,
        "v0c0+eye": 2.279, "v0c0": -4.439, "v0c0w+eye": 3.341, "v0c0w": 2.452, "v0c0u+eye": 3.996, "v0c0u": -2.249,
        "v0c0y+eye": 0.0, "v0c0y": 0.0,
    },
}  # fmt: skip
# bias added to every pair's ratio (negative: linking must be earned)
LINK_BIAS: dict[str, float] = {"en": 0.0, "de": 0.0}


# log-odds shift of a link by line distance 1, 2, ..., >= len (stanzas of 5+ lines), relative to all pairs
DIST_BIAS: dict[str, list[float]] = {
    "en": [1.339, 1.132, -0.016, -0.364, -1.094, -3.35, -2.48, -3.504, -3.686, -3.52, -3.826, -4.97],
    "de": [0.367, 1.048, -0.571, -2.035, -2.565, -1.746, -2.466, -1.765, -2.55, -1.522, -1.746, -4.59],
}

# four-line scheme counts of the dev gold (the prior is smoothed with PRIOR_SMOOTHING per scheme and
# scaled by PRIOR_WEIGHT, so it only breaks near-ties and every scheme stays reachable)
SCHEME_COUNTS_4: dict[str, dict[str, int]] = {
    "en": {"abab": 961, "aabb": 311, "abcb": 258, "abba": 9, "aaba": 3, "aaaa": 2},
    "de": {"abab": 754, "aabb": 348, "abba": 243, "abcb": 220, "abcd": 101, "abac": 9, "abbc": 7, "aaaa": 6,
           "aaab": 5, "aabc": 4, "abca": 2, "abcc": 2},
}
PRIOR_SMOOTHING = 20.0
PRIOR_WEIGHT: dict[str, float] = {"en": 0.5, "de": 0.5}

# stanza context (``context_penalty``): (ratio at which a pair is strong, penalty of a loose pair whose two
# lines both have strong partners elsewhere, penalty when one has). Chosen by 5-fold CV by poet on the dev
# gold (benchmarks/bench_rhyme.py --context STRONG,BOTH,ONE scores others); (0, 0, 0) switches it off.
CONTEXT: dict[str, tuple[float, float, float]] = {"en": (3.0, 3.0, 1.0), "de": (3.0, 3.0, 1.0)}


def pair_levels(lines: Sequence[str], lang: str) -> list[list[str]]:
    """Matrix of levels between the end words of all line pairs (diagonal: ``"identical"``)."""
    _check_lang(lang)
    words = [clean_word(end_word(l), lang) for l in lines]
    n = len(words)
    m = [["identical"] * n for _ in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            m[i][j] = m[j][i] = _level_clean(words[i], words[j], lang)
    return m


def _weights(lines: Sequence[str], lang: str, llr: dict | None, bias: float | None) -> np.ndarray:
    llr = LLR[lang] if llr is None else llr
    bias = LINK_BIAS[lang] if bias is None else bias
    lev = pair_levels(lines, lang)
    return level_weights(lev, llr, bias, DIST_BIAS[lang], CONTEXT[lang])


def level_weights(lev: list[list[str]], llr: dict, bias: float, dist_bias: Sequence[float] | None,
                  context: Sequence[float] | None = None) -> np.ndarray:
    """Pair weights from a level matrix; stanzas of 5+ lines add a log-odds shift by line distance (in long
    couplet runs and sonnets the gold gives a reused rhyme sound far away a new letter). ``context``
    (``(strong, both, one)``, see :data:`CONTEXT`) lowers loose pairs beside strong ones
    (:func:`context_penalty`)."""
    n = len(lev)
    w = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            d = 0.0
            if dist_bias and n >= 5:
                d = dist_bias[min(j - i, len(dist_bias)) - 1]
            w[i, j] = w[j, i] = llr.get(lev[i][j], 0.0) + bias + d
    if context is not None and n >= 3:
        w = np.where(w > 0, w - context_penalty(lev, llr, *context), w)  # only pairs that would link
    return w


def context_penalty(lev: list[list[str]], llr: dict, strong: float, both: float, one: float) -> np.ndarray:
    """How much less each loose pair counts beside the stanza's strong pairs (a strictness read from the
    stanza itself, so generated text needs no period).

    A pair is *strong* when its level's ratio is at least ``strong`` (exact rhymes; a repetition is never
    strong). A pair that is neither strong nor a repetition loses ``both`` when each of its two lines has a
    strong partner elsewhere in the stanza (two exact couplets joined only through a loose or historical
    vowel: aabb read as aaaa, abab as aaaa) and ``one`` when just one of them has (a loose third member
    of an exact pair). Poets who rhyme loosely throughout have no strong pairs, so nothing changes for them.
    """
    n = len(lev)
    st = np.zeros((n, n), dtype=bool)
    for i in range(n):
        for j in range(i + 1, n):
            if lev[i][j] != "identical" and llr.get(lev[i][j], 0.0) >= strong:
                st[i, j] = st[j, i] = True
    deg = st.sum(axis=1)
    pen = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            if st[i, j] or lev[i][j] == "identical":
                continue
            hi, hj = deg[i] > 0, deg[j] > 0  # (i, j) is not strong, so these partners lie elsewhere
            pen[i, j] = pen[j, i] = both if hi and hj else one if hi or hj else 0.0
    return pen


def best_partition(w: np.ndarray, prior: dict[str, float] | None = None) -> str:
    """The first-appearance label of the partition maximising the sum of ``w[i, j]`` over linked pairs
    (plus ``prior[label]`` for labels of the stanza's length, when given)."""
    n = w.shape[0]
    if n == 0:
        return ""
    if n == 1:
        return "a"
    if n <= EXHAUSTIVE_MAX:
        iu = np.triu_indices(n, 1)
        scores = _partition_matrix(n) @ w[iu].astype(np.float32)
        if prior:
            scores = scores + _prior_vector(n, tuple(sorted(prior.items())))
        return _partitions(n)[int(np.argmax(scores))]
    return _greedy_partition(w)


@functools.lru_cache(maxsize=64)
def _prior_vector(n: int, prior: tuple) -> np.ndarray:
    p = dict(prior)
    vals = [p[x] for x in _partitions(n) if x in p]
    floor = min(vals) if vals else 0.0
    return np.array([p.get(x, floor) for x in _partitions(n)], dtype=np.float32)


def scheme_prior(lang: str, weight: float | None = None, counts: dict | None = None) -> dict[str, float]:
    """Weak, smoothed log prior over the 15 four-line schemes: ``weight * log((count + k) / (N + 15 k))``."""
    counts = SCHEME_COUNTS_4[lang] if counts is None else counts
    weight = PRIOR_WEIGHT[lang] if weight is None else weight
    total = sum(counts.values()) + PRIOR_SMOOTHING * len(SCHEMES_4)
    return {x: weight * math.log((counts.get(x, 0) + PRIOR_SMOOTHING) / total) for x in SCHEMES_4}


def _greedy_partition(w: np.ndarray) -> str:
    n = w.shape[0]
    clusters: list[list[int]] = [[i] for i in range(n)]

    def gain(a: list[int], b: list[int]) -> float:
        return float(w[np.ix_(a, b)].sum())

    while True:
        best, bi, bj = 0.0, -1, -1
        for i in range(len(clusters)):
            for j in range(i + 1, len(clusters)):
                g = gain(clusters[i], clusters[j])
                if g > best + 1e-12:
                    best, bi, bj = g, i, j
        if bi < 0:
            break
        clusters[bi] = clusters[bi] + clusters[bj]
        del clusters[bj]
    # repair: move single lines while that improves the score
    for _ in range(3 * n):
        moved = False
        for x in range(n):
            src = next(k for k, c in enumerate(clusters) if x in c)
            rest = [y for y in clusters[src] if y != x]
            here = float(w[x, rest].sum()) if rest else 0.0
            best, dest = here, None
            for k, c in enumerate(clusters):
                if k != src:
                    g = float(w[x, c].sum())
                    if g > best + 1e-9:
                        best, dest = g, k
            if dest is None and rest and here < -1e-9:
                best, dest = 0.0, -1
            if dest is not None:
                clusters[src] = rest
                if dest == -1:
                    clusters.append([x])
                else:
                    clusters[dest].append(x)
                clusters = [c for c in clusters if c]
                moved = True
        if not moved:
            break
    lab = [0] * n
    for k, c in enumerate(clusters):
        for x in c:
            lab[x] = k
    return normalise_scheme(lab)


def scheme(lines: list[str], lang: str, *, llr: dict | None = None, bias: float | None = None) -> str:
    """The rhyme scheme of a stanza as a first-appearance label (one letter per line)."""
    _check_lang(lang)
    if isinstance(lines, str):
        raise PoevalError("scheme() expects a list of lines, not a string")
    lines = ["" if l is None else str(l) for l in lines]
    if len(lines) <= 1:
        return "a" * len(lines)
    prior = scheme_prior(lang) if len(lines) == 4 and PRIOR_WEIGHT[lang] > 0 else None
    return best_partition(_weights(lines, lang, llr, bias), prior)


def schemes(stanzas: Iterable[list[str]], lang: str, progress: bool = False) -> list[str]:
    """:func:`scheme` for many stanzas (``progress=True`` shows a tqdm bar)."""
    _check_lang(lang)
    stanzas = list(stanzas)
    it: Iterable = stanzas
    if progress:
        from tqdm import tqdm

        it = tqdm(stanzas, desc=f"rhyme schemes ({lang})", unit="stanza")
    return [scheme(s, lang) for s in it]


# ----------------------------------------------------------------------------------------------------
# metre labels (for conditioning; a simple template matcher, not evaluated against gold)

METRES = list(METERS)
_METRE_UNITS = {"iambic": "01", "trochaic": "10", "anapaestic": "001", "dactylic": "100", "amphibrachic": "010"}


def _line_stress(line: str) -> str:
    """CMUdict stress string of a line: 1 stressed, 0 unstressed, x unknown (monosyllables, OOV words)."""
    return "".join(_word_stress(tok) for tok in re.findall(r"[A-Za-z']+", line))


@functools.lru_cache(maxsize=200_000)
def _word_stress(tok: str) -> str:
    import pronouncing

    w = clean_word(tok, "en").strip("'")
    if not w:
        return ""
    for cand in en_candidates(w):
        prons = pronouncing.phones_for_word(cand)
        if prons:
            st = pronouncing.stresses(prons[0]).replace("2", "x")
            return "x" if len(st) == 1 else st
    return "x" * max(1, len(re.findall(r"[aeiouy]+", w.rstrip("e")) or ["a"]))


def _template_score(stress: str, unit: str) -> tuple[int, int]:
    best = (0, 0)
    for off in range(len(unit)):
        hit = tot = 0
        for k, s in enumerate(stress):
            if s == "x":
                continue
            tot += 1
            hit += s == unit[(k + off) % len(unit)]
        if tot and (hit / tot, tot) > (best[0] / max(best[1], 1), best[1]):
            best = (hit, tot)
    return best


def metre(lines: Sequence[str], lang: str = "en", threshold: float = 0.8) -> str:
    """Metre family of a stanza from CMUdict stress patterns (English only): one of :data:`METRES`."""
    if lang != "en":
        raise PoevalError("metre() derives metre from CMUdict stresses and supports only 'en'; "
                          "for German use metre_from_measures() on the corpus `measure` field")
    scores = {}
    for name, unit in _METRE_UNITS.items():
        hit = tot = 0
        for line in lines:
            h, t = _template_score(_line_stress(str(line)), unit)
            hit, tot = hit + h, tot + t
        scores[name] = hit / tot if tot else 0.0
    # prefer binary feet on ties (they are far more common)
    name = max(_METRE_UNITS, key=lambda k: (round(scores[k], 6), -len(_METRE_UNITS[k])))
    return name if scores[name] >= threshold else "other"


def metre_from_measures(measures: Iterable[str | None]) -> str:
    """Majority metre family of DLK ``measure`` values (e.g. ``iambic.tetra``, ``trochaic.tri``)."""
    counts: dict[str, int] = {}
    for m in measures:
        fam = _measure_family(m)
        counts[fam] = counts.get(fam, 0) + 1
    if not counts:
        return "other"
    known = {k: v for k, v in counts.items() if k != "other"} or counts
    return max(known, key=lambda k: (known[k], -METRES.index(k)))


def _measure_family(m: str | None) -> str:
    m = (m or "").lower()
    for key, fam in (("iamb", "iambic"), ("alexandrin", "iambic"), ("troch", "trochaic"), ("anap", "anapaestic"),
                     ("dactyl", "dactylic"), ("hexameter", "dactylic"), ("amphibr", "amphibrachic")):
        if key in m:
            return fam
    return "other"


# ----------------------------------------------------------------------------------------------------
# repetitions and corpus annotation

def is_repetition(line_a: str, line_b: str, lang: str) -> bool:
    """Whether two lines end in the same word (after spelling normalisation): a repetition, not a rhyme."""
    _check_lang(lang)
    return _level_clean(clean_word(end_word(line_a), lang), clean_word(end_word(line_b), lang), lang) == "identical"


def _record_lines(record, where: str) -> list[str]:
    lines = record.get("lines") if isinstance(record, dict) else None
    if not isinstance(lines, list) or not all(isinstance(v, str) for v in lines):
        raise PoevalError(f"{where}: expected an object with \"lines\": [str, ...]")
    return lines


def record_meter(record: dict, lang: str) -> str:
    """Metre label of a quatrain record: DLK ``measure`` majority where present, else CMUdict stresses (EN)."""
    measures = record.get("measure")
    if isinstance(measures, list) and any(measures):
        return metre_from_measures(measures)
    return metre(record["lines"], "en") if lang == "en" else "other"


def annotate(records: Iterable[dict], lang: str, *, meter: bool = False, field: str = "scheme",
             progress: bool = False, where: str = "input") -> list[dict]:
    """Copies of ``records`` (``{"lines": [...], ...}``, other fields kept) with the detected scheme in
    ``field`` and, with ``meter``, a ``"meter"`` label (:func:`record_meter`)."""
    _check_lang(lang)
    records = list(records)
    stanzas = [_record_lines(r, f"{where}: record {i + 1}") for i, r in enumerate(records)]
    labels = schemes(stanzas, lang, progress=progress)
    out = [{**record, field: label} for record, label in zip(records, labels)]
    if meter:
        from tqdm import tqdm

        for record in tqdm(out, desc=f"metre ({lang})", unit="stanza", disable=not progress):
            record["meter"] = record_meter(record, lang)
    return out


def write_annotated(path: str, lang: str, out: str | None, *, meter: bool = False, field: str = "scheme",
                    progress: bool = True) -> int:
    """:func:`annotate` a JSONL file into ``out`` (atomically; ``None``: standard output)."""
    import json
    import sys

    from poeval.io import nothing_usable, read_jsonl, write_jsonl

    check_phonemizer()
    records = annotate(read_jsonl(path), lang, meter=meter, field=field, progress=progress, where=str(path))
    if not records:
        raise nothing_usable(path, 0, {}, "stanzas")
    if out is None:
        for record in records:
            sys.stdout.write(json.dumps(record, ensure_ascii=False) + "\n")
        return len(records)
    return write_jsonl(out, records)
