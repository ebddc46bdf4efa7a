"""Rhyme levels between two verses: how alike the end words sound, graded, and how likely each grade is
between rhyming verses.

A pair of end words gets a graded similarity *level* (see ``LEVELS``): ``identical`` (same word), else
``v{V}c{C}{t}[+eye]`` from the rhyme part (last primary stress, or a later secondary stress, to the end;
best over all pronunciations, :mod:`poeval.poetry.phones`): V = stressed vowel 2 same / 1 same under the
loose vowel classes (German length, rounding ü~i ö~e, eu/äu~ei; English length and close qualities) / h
(English) vowels that rhymed in older verse (``_EN_HIST_V``: love/prove, wind/kind, join/line, sea/way,
were/there, heart/wert) / 0 different; C = the rest 3 same / 2 same with loose vowels / 1 same with loose
consonants (voicing, nasals, final -s/-t, t between consonants, ŋk ~ ŋ, -en ~ -e) / 0; t = ``w``/``u`` when
only the last (stressed / unstressed) vowel and what follows agree, ``y`` (English) for the licence of an
unstressed ending against a stressed one (eternity/die, audience/offence); ``+eye`` when the spelled endings
agree (English after the u~v, i~j, y~i swaps of old spelling; German by the sound the letters spell,
``_de_letters``). Each level has a fixed log-likelihood ratio ``log P(level | linked) /
P(level | not linked)`` per language (``LLR``). A level can have a *detail*: the two stressed vowels where
they differ but something after them agrees (yet ~ flit, ``v0c3 ɛ/ɪ``), or, where nothing after the vowels
agrees, how many final letters the spellings share (``v0c0 s4``: illa ~ Domitilla, whose guessed phones
miss the rhyme). The pair table (``PAIR_LLR``) has a ratio for each level and detail dev had, shrunk
towards the level's (:func:`ratio`: yet ~ flit, ɛ/ɪ, links; made ~ side, aɪ/eɪ, does not). Both are
counted on the dev gold by ``benchmarks/bench_rhyme.py --fit``, which writes them with the other fitted tables to the package's data file :data:`FIT_FILE` (:func:`fitted`;
``benchmarks/bench_rhyme.py`` also cross-validates them by poet); ``rhyme_relation`` says "rhyme" when
the ratio is positive.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
from importlib import resources
from typing import Sequence

from poeval import io
from poeval.errors import PoevalError
from poeval.poetry.phones import Phones, phones
from poeval.poetry.spelling import LANGS, check_lang, clean_word, has_latin, modern_spellings
from poeval.poetry.style import SCHEMES
from poeval.text import end_word

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
    for k, (sym, v, st) in enumerate(ph[start:], start):
        if lang == "de" and sym == "h" and isv and isv[-1]:
            continue  # espeak-ng's h after a vowel (geweiht, reiht) is the spelling's length mark, silent
        if lang == "en" and sym == "ɚ" and not st and isv and isv[-1]:
            out.append("r")  # the optional schwa of fire, higher (aɪɚ) against lyre (aɪɹ)
            isv.append(False)
            continue
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
    best: tuple = (0, 0, "", "")
    for ia in _stress_starts(pa):
        for ib in _stress_starts(pb):
            best = max(best, _phon_level_at(pa, pb, ia, ib, lang, spelled), key=_level_key)
    return best


def _level_key(lev: tuple) -> tuple:
    """Which of two levels (other pronunciations or stress positions) is the closer rhyme: a shared rest
    first; without one, an agreeing last syllable before the stressed vowel."""
    v, c, t, _ = lev
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
    out = [x for x in seq if x not in ("h", "ʔ")]
    # t between consonants (effects ~ sex), then plural / verb -s and -t after a consonant, ts ~ s
    out = [x for k, x in enumerate(out) if not (x == "t" and 0 < k < len(out) - 1
                                                and out[k - 1] not in _VOWEL_CLASSES
                                                and out[k + 1] not in _VOWEL_CLASSES)]
    if len(out) >= 2 and out[-1] in ("s", "t") and out[-2] not in _VOWEL_CLASSES:
        out.pop()
    if len(out) >= 2 and out[-1] == "k" and out[-2] == "n":
        out.pop()  # ŋk ~ ŋ (gesang ~ krank), after the loose consonants' ŋ -> n
    if len(out) >= 3 and out[-1] == "n" and out[-2] == "ə":
        out.pop()  # -en ~ -e (hechte ~ fechten, diebe ~ lieben): the weak final n of older German verse
    return tuple(out)


_VOWEL_CLASSES: set[str] = set()


def _phon_level_at(pa: Phones, pb: Phones, ia: int, ib: int, lang: str, spelled: tuple = ("", "")) -> tuple:
    """(vowel 2 exact / 1 loose / 0 differs, rest 3 exact / 2 loose vowels / 1 loose consonants / 0, tail,
    detail): the detail names what a level leaves open, for the fitted pair table (``PAIR_LLR``): the two
    stressed vowels where they differ but the rest agrees (``ɛ/ɪ``: yet ~ flit); a level whose rest does not
    agree gets the shared letters instead (:func:`_pair_key`). (A tail's shared last syllable as a detail,
    ferry ~ fee, gained one English dev stanza, lost two German ones and let -y ~ -y join a limerick's
    couplets, jelly to Topsy: left out.)"""
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
    tail = detail = ""
    if v < 1 and c >= 1:
        detail = "/".join(sorted((ea[0], eb[0])))
    if v < 1 or c == 0:
        la, lb = _last_vowel_index(pa), _last_vowel_index(pb)
        if (la != ia or lb != ib) and _seq(pa, la, lang, True, False) == _seq(pb, lb, lang, True, False):
            tail = "w" if (pa[la][2] or pb[lb][2]) else "u"
        elif _licence_tail(pa, la, pb, lb, lang):
            tail = "y"
    return (v, c, tail, detail)


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


_DE_SOUND = str.maketrans({"ß": "s", "ä": "e", "ö": "e", "ü": "i", "y": "i"})


def _de_letters(w: str) -> str:
    """German spelling reduced to what it says about the sound of an ending: length marks (vowel + h, ie,
    doubled vowels), doubled consonants, th = t, dt = t, ß = s, and ä, ö, ü, y read as e, e, i, i (the
    unrounded rhymes German verse accepts)."""
    w = w.translate(_DE_SOUND).replace("th", "t").replace("dt", "t")
    w = re.sub(r"(?<=[aeiou])h(?![aeiou])", "", w)
    w = w.replace("ie", "i").replace("ai", "ei")
    return re.sub(r"(.)\1+", r"\1", w)


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
    v, c, t, _ = lev
    return f"v{_V_NAME[v]}c{c}{t}{'+eye' if eye else ''}"


def _level_clean(a: str, b: str, lang: str) -> str:
    return _pair_key(a, b, lang).split(" ", 1)[0]


@functools.lru_cache(maxsize=500_000)
def _pair_key(a: str, b: str, lang: str) -> str:
    """The level of two cleaned words, followed by its detail (``"v0c3 ɛ/ɪ"``) where it has one."""
    if not a or not b or not has_latin(a) or not has_latin(b):
        return _NONE
    if a == b or a.replace("'", "") == b.replace("'", ""):
        return "identical"
    pa, pb = phones(a, lang), phones(b, lang)
    if lang == "en":  # eye rhymes by the modern letters: loue/prove, mylde/wild
        a, b = (((w,) + modern_spellings(w, letters_only=True))[-1] for w in (a, b))
    else:  # German eye rhymes by the sound the letters spell: tapeten ~ beeten, pokälen ~ befehlen
        a, b = _de_letters(a), _de_letters(b)
    ea, eb = _orth_ending(a, lang), _orth_ending(b, lang)
    best: tuple = (0, 0, "", "")
    for x in pa:
        for y in pb:
            best = max(best, _phon_level(x, y, lang, (ea, eb)), key=_level_key)
    eye = len(ea) >= 2 and ea == eb
    detail = best[3] or (_shared_letters(a, b) if best[1] == 0 and not best[2] else "")
    return _level_name(best, eye) + (" " + detail if detail else "")


SUFFIX_CAP = 4


def _shared_letters(a: str, b: str) -> str:
    """The detail of a level whose rest does not agree (c0, no tail): how many final letters the two
    spellings share, ``s0`` to ``s{SUFFIX_CAP}``. Where the phones are a guess (espeak-ng on an old or
    foreign word: illa ~ Domitilla) or an old sound (even ~ heaven) the letters still tell the rhyme. Tails
    (w, u, y) keep their level's ratio: with the letters as detail, -er ~ -er and -y ~ -y joined a
    limerick's couplets (mother to brighter)."""
    k = 0
    while k < min(len(a), len(b), SUFFIX_CAP) and a[-1 - k] == b[-1 - k]:
        k += 1
    return f"s{k}"


def rhyme_level(word_a: str, word_b: str, lang: str) -> str:
    """The graded similarity level of two words (one of :data:`LEVELS`)."""
    check_lang(lang)
    return _level_clean(clean_word(word_a, lang), clean_word(word_b, lang), lang)


def rhyme_relation(word_a: str, word_b: str, lang: str) -> str:
    """``"repetition"`` (same word), ``"rhyme"`` (a pair more likely between rhyming lines: :func:`ratio`
    positive) or ``"none"``."""
    check_lang(lang)
    key = _pair_key(clean_word(word_a, lang), clean_word(word_b, lang), lang)
    if key == "identical":
        return "repetition"
    return "rhyme" if ratio(key, lang) + LINK_BIAS[lang] > 0 else "none"


def ratio(key: str, lang: str | None = None, table: dict | None = None) -> float:
    """The fitted log-likelihood ratio of a pair key (:func:`pair_levels` with ``detail=True``): its own
    entry in the pair table where dev had that detail, else its level's. ``table`` is a merged table
    (:func:`ratios`) used instead of the package's ``lang`` tables."""
    table = ratios(lang) if table is None else table
    got = table.get(key)
    return table.get(key.split(" ", 1)[0], 0.0) if got is None else got


@functools.cache
def ratios(lang: str) -> dict[str, float]:
    """The package's level ratios (``LLR``) and pair-table ratios (``PAIR_LLR``) of a language in one table."""
    return {**LLR[lang], **PAIR_LLR[lang]}


def pair_levels(lines: Sequence[str], lang: str, detail: bool = False) -> list[list[str]]:
    """Matrix of levels between the end words of all line pairs (diagonal: ``"identical"``); with
    ``detail=True`` each level is followed by its detail where it has one (``"v0c3 ɛ/ɪ"``, :func:`ratio`)."""
    check_lang(lang)
    words = [clean_word(end_word(l), lang) for l in lines]
    pick = _pair_key if detail else _level_clean
    n = len(words)
    m = [["identical"] * n for _ in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            m[i][j] = m[j][i] = pick(words[i], words[j], lang)
    return m


def is_repetition(line_a: str, line_b: str, lang: str) -> bool:
    """Whether two lines end in the same word (after spelling normalisation): a repetition, not a rhyme."""
    check_lang(lang)
    return _level_clean(clean_word(end_word(line_a), lang), clean_word(end_word(line_b), lang), lang) == "identical"


# ----------------------------------------------------------------------------------------------------
# the fitted tables: level ratios (LLR), distance shifts and four-line scheme counts, counted on the dev gold
# by `benchmarks/bench_rhyme.py --fit`, which writes this file (with the command, commit, date and the gold's
# sha256)

FIT_FILE = "poetry/data/rhyme_fit.json"   # inside the package (package data)
_FIT_KEYS = ("provenance", "llr", "pair_llr", "dist_bias", "scheme_counts_4")


def load_fit(path: str | os.PathLike | None = None) -> dict:
    """The fitted tables of ``path`` (default: the package's :data:`FIT_FILE`), checked by :func:`check_fit`."""
    if path is None:
        where = f"poeval/{FIT_FILE}"
        try:
            table = json.loads(resources.files("poeval").joinpath(FIT_FILE).read_text("utf-8"))
        except (OSError, ValueError) as err:
            raise PoevalError(f"{where}: cannot read the fitted rhyme tables ({err}); reinstall poeval") from None
    else:
        where, table = str(path), io.read_json(path)
    check_fit(table, where)
    return table


@functools.cache
def fitted() -> dict:
    """The package's fitted tables, read once."""
    return load_fit()


def check_fit(table, where: str) -> None:
    """A one-line error naming the first key of ``table`` that is missing, unknown or out of range: every
    language has a finite ratio for each of :data:`LEVELS`, a list of finite distance shifts and counts
    (non-negative integers) of four-line schemes; the provenance names the command, commit, date and
    the dev gold's sha256."""
    _check_keys(table, _FIT_KEYS, where)
    _check_keys(table["provenance"], ("command", "commit", "date", "dev_gold"), f"{where}: provenance")
    _check_keys(table["provenance"]["dev_gold"], LANGS, f"{where}: provenance.dev_gold")
    for name in _FIT_KEYS[1:]:
        _check_keys(table[name], LANGS, f"{where}: {name}")
    for lang in LANGS:
        _check_keys(table["llr"][lang], LEVELS, f"{where}: llr.{lang}")
        for lev, x in table["llr"][lang].items():
            _check_number(x, f"{where}: llr.{lang}.{lev}")
        for key, x in table["pair_llr"][lang].items():
            lev, _, detail = key.partition(" ")
            if lev not in LEVELS or not detail:
                raise PoevalError(f"{where}: pair_llr.{lang}: {key!r} is not a level and a detail")
            _check_number(x, f"{where}: pair_llr.{lang}.{key}")
        _check_shifts(table["dist_bias"][lang], f"{where}: dist_bias.{lang}")
        _check_counts(table["scheme_counts_4"][lang], f"{where}: scheme_counts_4.{lang}")


def _check_shifts(shifts, where: str) -> None:
    if not isinstance(shifts, list):
        raise PoevalError(f"{where} must be a list of numbers")
    for d, x in enumerate(shifts, 1):
        _check_number(x, f"{where}[{d}]")


def _check_counts(counts, where: str) -> None:
    _check_keys(counts, [s for s in SCHEMES if s in counts], where)   # only four-line schemes
    for s, n in counts.items():
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise PoevalError(f"{where}.{s}: expected a count >= 0, got {n!r}")


def _check_keys(obj, keys, where: str) -> None:
    if not isinstance(obj, dict):
        raise PoevalError(f"{where} must be a JSON object")
    missing, unknown = [k for k in keys if k not in obj], sorted(set(obj) - set(keys))
    if missing or unknown:
        raise PoevalError(f"{where}: " + (f"missing key {missing[0]!r}" if missing else f"unknown key {unknown[0]!r}"))


def _check_number(x, where: str) -> None:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        raise PoevalError(f"{where}: expected a finite number, got {x!r}")


LLR: dict[str, dict[str, float]] = fitted()["llr"]
# the pair table: ratios of a level with its detail (the two stressed vowels where they differ, or the
# spellings' shared final letters), fitted like LLR and shrunk towards the level's ratio
# (benchmarks/bench_rhyme.py fit_pair_llr)
PAIR_LLR: dict[str, dict[str, float]] = fitted()["pair_llr"]
# bias added to every pair's ratio (negative: linking must be earned); chosen, not fitted
LINK_BIAS: dict[str, float] = {"en": 0.0, "de": 0.0}
