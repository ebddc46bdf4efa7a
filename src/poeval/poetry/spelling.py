"""Spelling of end words before they are looked up: German historical spelling normalised, English early
modern spellings mapped to modern ones.

An end word (:func:`poeval.text.end_word`) is cleaned (:func:`clean_word`: apostrophes unified, lower case,
letters only; German through :func:`normalise_de`). English words are looked up under the spellings of
:func:`en_candidates` (archaic contractions, elisions, -eth/-est, the modern spellings of early modern words:
``loue``, ``ioy``, ``penne``, ``griefe``, and the long s misread as f), in turn, in the pronouncing
dictionary (:mod:`poeval.poetry.phones`, :mod:`poeval.poetry.metre`).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections import Counter

from poeval.errors import PoevalError

LANGS = ("en", "de")


def check_lang(lang: str) -> None:
    """A clear error for a language the detector does not know."""
    if lang not in LANGS:
        raise PoevalError(f"unsupported language {lang!r}; use one of {', '.join(LANGS)}")


# Frequent function words of one language only (neither "in", "so", "was" nor "die", which both have), for
# a cheap check that a text is in the language it is said to be in, not a language identifier.
FUNCTION_WORDS = {
    "en": frozenset("the and of to a that is with his her my thou thy for not but he she it on all from be as by "
                    "this".split()),
    "de": frozenset("der das und ich nicht zu mit ist ein eine sie er den dem des sich auf es du wie mein dein im "
                    "von auch".split()),
}


def guess_lang(verses, min_hits: int = 30, share: float = 0.8) -> str | None:
    """The language whose function words make at least ``share`` of the function words in ``verses`` (at
    least ``min_hits`` of them); None when the text is too short or mixed."""
    counts = dict.fromkeys(LANGS, 0)
    for verse in verses:
        for word in re.findall(r"[^\W\d_]+", verse.lower()):
            for lang, words in FUNCTION_WORDS.items():
                counts[lang] += word in words
    total = sum(counts.values())
    best = max(counts, key=counts.get)
    return best if total >= min_hits and counts[best] >= share * total else None


def language_warning(name: str, poems, lang: str, judged: int = 1000, share: float = 0.1) -> str | None:
    """The warning for the poems of ``name`` (each a list of verses) said to be in ``lang``, where at least
    ``share`` of them read as another language (:func:`guess_lang` of each poem, from 3 function words), else
    None: a file all in another language, or one that mixes languages (18 English and 30 German poems).
    Up to ``judged`` poems, evenly spread over the file, are read. ``poeval evaluate`` and ``poeval
    import-samples`` both warn by this rule."""
    poems = list(poems)
    chosen = poems[::-(-len(poems) // judged) or 1]
    guesses = Counter(guess_lang(verses, min_hits=3) for verses in chosen)
    other, count = max(((g, n) for g, n in guesses.items() if g not in (None, lang)), key=lambda gn: gn[1],
                       default=(None, 0))
    if not count or count < share * len(chosen):
        return None
    return (f"{name} reads as {other!r}, not as --lang {lang!r}, in {count} of {len(chosen)} poems (by their "
            f"function words); rhyme and metre are detected for {lang!r}")


_APOS = "’`´ʼ‘"


def _is_latin_letter(ch: str) -> bool:
    return ch.isalpha() and "LATIN" in unicodedata.name(ch, "")


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


def has_latin(word: str) -> bool:
    """Whether a word has a Latin letter (other scripts get no phones)."""
    return any(_is_latin_letter(c) for c in word)



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
def modern_spellings(w: str, keep_e: bool = False, letters_only: bool = False) -> tuple[str, ...]:
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
        cands += list(modern_spellings(base))
        if base.endswith("yed"):
            cands.append(base[:-3] + "ied")
        if base.endswith("es") and len(base) > 4:
            cands.append(base[:-2] + "s")
    base = bases[-1]
    if "f" in base:
        cands.append(re.sub(r"f(?=[^aeiouyfr]|$)", "s", base))
        cands.append(base.replace("f", "s"))
    return [c for c in dict.fromkeys(cands) if c]

