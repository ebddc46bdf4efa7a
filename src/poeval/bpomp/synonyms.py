"""WordNet synonym candidates for a line-final word, inflected like the word and checked against rhyme.

A word is looked up under every part of speech it has in WordNet (morphy base forms), or only under
the part of speech it has in its line when given (:mod:`.context`) and WordNet has it. Each synonym is
another lemma of a synset of that base form, so it has that synset's part of speech. Candidates are
dropped, and the drops tallied, when they are not plain words (multiword lemmas with ``_``, proper
nouns with a capital, abbreviations with dots or digits), cannot be inflected like the word, or rhyme
with / repeat a rhyme partner's end word.

Inflection: when the word is not itself a base form, its inflectional ending (``-s``, ``-ing``, ...) is
put on the synonym with the morphy(7WN) rules run backwards, or an irregular form with that ending
is taken from the exception lists; a form counts only if it is in CMUdict and morphy maps it back to
the synonym. Words without such an ending (``went``) are skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from poeval.bpomp.wordnet import DETACHMENT, WordNet
from poeval.poetry.rhyme import rhyme_relation

# Why a word yields no candidate, from the earliest to the latest stage it got through.
# proper_or_function_word: the word's part of speech in its line has no synonyms (pos in context only)
SKIP_STAGES = ("no_end_word", "proper_or_function_word", "not_in_wordnet", "no_synonym", "multiword_only", "inflection", "only_rhyming")
_STAGE = {name: k for k, name in enumerate(SKIP_STAGES)}
_PLAIN = re.compile(r"[a-z]+(?:[-'][a-z]+)*")  # no multiword (_), proper noun, "o.k." or "3-D"


@dataclass(frozen=True)
class Candidate:
    form: str       # as it will stand in the line (case matched to the original word)
    lemma: str      # the synonym's WordNet lemma
    base: str       # the original word's base form it is a synonym of
    pos: str
    synset: int     # offset in data.POS


def match_case(new: str, like: str) -> str:
    if len(like) > 1 and like.isupper():
        return new.upper()
    if like[:1].isupper():
        return new[:1].upper() + new[1:]
    return new


def _in_cmudict(word: str) -> bool:
    import pronouncing

    return bool(pronouncing.phones_for_word(word))


def inflect(wn: WordNet, lemma: str, word: str, pos: str, how) -> str | None:
    """``lemma`` inflected like ``word`` (whose base form was found ``how``), or None. Candidates: every
    detachment rule whose suffix ends ``word``, run backwards on ``lemma``, then the lemma's irregular
    forms with such a suffix; the first in CMUdict that morphy maps back to ``lemma`` wins."""
    if how == "self":
        return lemma
    rules = [(suf, repl) for suf, repl in DETACHMENT[pos] if word.endswith(suf)]
    forms = [lemma[: len(lemma) - len(repl)] + suf for suf, repl in rules if lemma.endswith(repl)]
    forms += [f for f in wn.inflections(lemma, pos) if any(f.endswith(suf) for suf, _ in rules)]
    for form in forms:
        if form != lemma and _in_cmudict(form) and lemma in wn.morphy(form, pos):
            return form
    return None


def readings(wn: WordNet, word: str) -> list[tuple[str, object]]:
    """``(pos, base form)`` readings of a word, the most frequent first (SemCor-tagged sense count, then
    noun, verb, adjective, adverb), so that ``first`` picks a synonym of the likely reading."""
    found = [(pos, bf) for pos in ("n", "v", "a", "r") for bf in wn.base_forms(word, pos)]
    return sorted(found, key=lambda r: -wn.tagged_count(r[1].base, r[0]))


def _synonym_lemmas(wn: WordNet, low: str, pos_in_line: str | None = None):
    """``(pos, base form, synset, lemma)`` for every other lemma of every synset of every reading (only the
    readings with ``pos_in_line`` when the word has any)."""
    found = readings(wn, low)
    found = [r for r in found if r[0] == pos_in_line] or found
    for pos, bf in found:
        for synset in wn.synsets(bf.base, pos):
            for lemma in synset.lemmas:
                if lemma.lower() != bf.base:
                    yield pos, bf, synset, lemma


def _form(wn: WordNet, low: str, pos: str, bf, lemma: str) -> tuple[str | None, int, str | None]:
    """(inflected form or None, skip stage reached, drop reason)."""
    if not _PLAIN.fullmatch(lemma):
        return None, _STAGE["multiword_only"], "not_plain_word"
    form = inflect(wn, lemma, low, pos, bf.how)
    return (form, _STAGE["inflection"], None) if form else (None, _STAGE["inflection"], "inflection")


def candidates(wn: WordNet, word: str, partners: list[str], tally: dict[str, int],
               pos: str | None = None) -> tuple[list[Candidate], str | None]:
    """Usable synonyms of ``word`` (order: reading, sense, lemma) that neither rhyme with nor repeat any
    of ``partners``; with the skip stage (:data:`SKIP_STAGES`) when there are none. ``pos``: the part of
    speech the word has in its line; when the word has readings with it, only those are used. ``tally``
    counts dropped candidates by reason."""
    if not word:
        return [], "no_end_word"
    low = word.lower()
    stage = _STAGE["no_synonym"] if readings(wn, low) else _STAGE["not_in_wordnet"]
    out: list[Candidate] = []
    seen: set[str] = {low}
    for pos, bf, synset, lemma in _synonym_lemmas(wn, low, pos):
        form, reached, drop = _form(wn, low, pos, bf, lemma)
        stage = max(stage, reached)
        if drop:
            tally[drop] = tally.get(drop, 0) + 1
            continue
        if form in seen:
            continue
        seen.add(form)
        stage = _STAGE["only_rhyming"]
        if any(rhyme_relation(form, p, "en") != "none" for p in partners):
            tally["rhymes_or_repeats"] = tally.get("rhymes_or_repeats", 0) + 1
            continue
        out.append(Candidate(match_case(form, word), lemma, bf.base, pos, synset.offset))
    return out, (None if out else SKIP_STAGES[stage])
