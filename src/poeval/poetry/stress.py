"""Lexical stress of a verse, one code per syllable, for the metre labeller (:mod:`poeval.poetry.metre`).

Codes: ``S`` the primary stress of a word of several syllables, ``U`` an unstressed syllable of such a word,
``x`` a syllable that can go either way (a secondary stress, or a word without phones), ``s`` a one-syllable
content word (usually stressed in verse) and ``w`` a one-syllable function word (usually not). English
stresses come from CMUdict (the first pronunciation under :func:`poeval.poetry.spelling.en_candidates`),
else the word's vowel groups as ``x``; German ones from espeak-ng's stress marks (``ˈ`` primary, ``ˌ``
secondary) on the normalised spelling (:func:`poeval.poetry.spelling.clean_word`), which espeak-ng gives for
every word, so one-syllable words are told apart by the function-word lists below instead.
"""

from __future__ import annotations

import functools
import re

from poeval.poetry.spelling import check_lang, clean_word, en_candidates

# One-syllable words that verse leaves unstressed unless the sense stresses them: articles, prepositions,
# pronouns, auxiliaries, conjunctions, particles (a word of several syllables keeps its dictionary stress).
FUNCTION_WORDS = {
    "en": frozenset("""a an the and or nor but if as than that so yet for of to in on at by from with up out off
        down through o oh i me my mine we us our you your ye thee thou thy thine he him his she her it its they them
        their this these those who whom whose which what when where while how then there here is am are was were be
        been being has have had hath doth do does did shall shall'st will wilt would should could can can't may might
        must not no nor tis twas th o e'er ne'er its it's i'm i'll we'll you'll let's all such each some
        one own too very just yet still""".split()),
    "de": frozenset("""der die das den dem des ein eine einen einem einer eines kein und oder aber doch denn so wie
        als ob wenn da daß dass weil noch schon nur auch nicht ich du er sie es wir ihr mich dich sich mir dir ihm
        ihn uns euch mein dein sein ihr in an auf aus bei mit nach von vor zu zum zur im am ins ans vom durch für
        um bis seit ist sind war bin bist hat hab hast habt wird wirst kann will soll mag muß muss darf sei wär
        was wer wo man sein den dann wann""".split()),
}
_VOWEL_GROUPS = re.compile(r"[aeiouyäöü]+")
_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")


@functools.lru_cache(maxsize=200_000)
def word_stress(word: str, lang: str) -> str:
    """The stress codes of one word (module doc); ``""`` for a word without letters."""
    check_lang(lang)
    w = clean_word(word, lang).strip("'")
    if not w:
        return ""
    codes = "".join(_dictionary_stress(part, lang) for part in w.split("-") if part)
    if len(codes) == 1:
        return "w" if w in FUNCTION_WORDS[lang] else "s"
    return codes


def _dictionary_stress(w: str, lang: str) -> str:
    if lang == "en":
        import pronouncing

        for cand in en_candidates(w):
            prons = pronouncing.phones_for_word(cand)
            if prons:
                return pronouncing.stresses(prons[0]).translate(str.maketrans("102", "SUx"))
        return "x" * max(1, len(_VOWEL_GROUPS.findall(re.sub(r"(?<=[^aeiou])e$", "", w))))
    from poeval.poetry.phones import ipa_stresses

    return ipa_stresses(w) or "x" * max(1, len(_VOWEL_GROUPS.findall(w)))


def line_stress(line: str, lang: str) -> str:
    """The stress codes of a verse, word after word."""
    return "".join(word_stress(tok, lang) for tok in _WORD.findall(line))
