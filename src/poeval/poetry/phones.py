"""Phones of an end word: every pronunciation the CMU Pronouncing Dictionary has (English, via
``pronouncing``), else espeak-ng's (English on the modern spelling, German always).

English words are looked up under the spellings :func:`poeval.poetry.spelling.en_candidates` lists, in turn;
espeak-ng runs as ONE persistent process per voice, asked for a word's last ``espeak.MAX_LETTERS`` letters
and kept in step by a sentinel word (:mod:`poeval.poetry.espeak`). A phone sequence is a tuple of
``(symbol, is_vowel, stress)`` triples (stress 1 primary, 2 secondary, 0 none), symbols in IPA.
"""

from __future__ import annotations

import functools
import re
import unicodedata

from poeval.poetry import espeak
from poeval.poetry.spelling import check_lang, en_candidates, has_latin, modern_spellings

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


_EN_EXTRA_PRONS = {"aye": ["EY1"], "wind": ["W AY1 N D"], "again": ["AH0 G EY1 N"], "been": ["B IY1 N"]}


def _rhyme_prons(word: str, prons: list[str]) -> tuple[Phones, ...]:
    """CMUdict's pronunciations of a word as it can end a verse: without a weak form that stresses nothing
    (o'er as ER0 beside AO1 R) and without a letter-by-letter reading (us as U.S.), unless nothing else is
    left; in rhyme position a word carries its stress and is read as a word."""
    out = tuple(dict.fromkeys(_arpa_to_phones(p.split("#")[0]) for p in prons))
    spelled = _spelled_out(word)
    keep = tuple(ph for ph in out if any(st for _, v, st in ph if v) and _bare(ph) != spelled)
    return keep or out


def _bare(ph: Phones) -> tuple:
    return tuple(s for s, _, _ in ph)


@functools.lru_cache(maxsize=4096)
def _spelled_out(word: str) -> tuple:
    """The phones of ``word`` read as its letters' names (CMUdict's own letter entries), or ``()``."""
    import pronouncing

    out: list = []
    for ch in word:
        names = pronouncing.phones_for_word(ch) if ch.isalpha() else []
        if not names:
            return ()
        out += _bare(_arpa_to_phones(names[0]))
    return tuple(out)


@functools.lru_cache(maxsize=200_000)
def phones(word: str, lang: str) -> tuple[Phones, ...]:
    """All phone sequences for a (cleaned, lower-case) word; ``()`` when it has none."""
    check_lang(lang)
    if not word or not has_latin(word):
        return ()
    if lang == "en":
        import pronouncing

        prons: list[str] = []
        for cand in en_candidates(word):
            prons += pronouncing.phones_for_word(cand) + _EN_EXTRA_PRONS.get(cand, [])
            # a doubled consonant + e (passe, belle) is old spelling even when CMUdict has a French word
            if prons and not (cand == word and re.search(r"([bdfgklmnprst])\1e$", word)):
                return _rhyme_prons(cand, prons)
        if prons:
            return _rhyme_prons(word, prons)
        target = word.replace("'", "e") if re.search(r"'(d|st)$", word) else word.replace("'", "")
        target = target.split("-")[-1] or target
        target = (target,) + modern_spellings(target, keep_e=True)
        target = target[-1]  # espeak reads modern spelling best
        ipa = espeak.ipa(target, "en")
        return (_ipa_to_phones(ipa),) if ipa else ()
    target = word.split("-")[-1] or word
    ipa = espeak.ipa(target, "de")
    return (_ipa_to_phones(ipa),) if ipa else ()


def ipa_stresses(word: str, lang: str = "de") -> str:
    """espeak-ng's stress of a word, one code per vowel (``S`` primary, ``x`` secondary, ``U`` none;
    :mod:`poeval.poetry.stress`); ``""`` when espeak-ng has no answer."""
    ipa = espeak.ipa(word, lang)
    if not ipa:
        return ""
    return "".join("S" if st == 1 else "x" if st == 2 else "U" for _, vowel, st in _ipa_to_phones(ipa) if vowel)
