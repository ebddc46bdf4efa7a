"""Rhyme diversity of a sample of quatrains: the distribution over the 15 four-line schemes, its
entropy, its divergence from the human distribution, and real rhymes vs repetitions.

All logarithms are base 2 (bits). Entropy is that of the observed scheme shares. KL divergence and
cross-entropy compare the sample's distribution Q with the human (reference) distribution P in the
paper's direction (in every row of its Table 6, CE - KL is the row's own entropy):
``KL(Q || P) = sum_s Q(s) log Q(s)/P(s)`` and ``CE = -sum_s Q(s) log P(s) = H(Q) + KL(Q || P)``.
Q is the sample's observed shares, unsmoothed. P is smoothed only where it needs to be: when the human
data never use some scheme, ``smoothing`` pseudo-counts are added to every scheme of P, so that a sample
using that scheme costs a finite amount; with all 15 schemes present P is the observed shares.

Real rhymes vs repetitions (the paper's Tables 10 and 11) are shares of *quatrains*: a repetition is a
quatrain with a scheme other than abcd whose rhyming lines repeat an end word, and ``real_rhymes = 1 -
share(abcd) - repetitions``. ``repetition`` chooses what repeating means: ``rhyme_pair`` (default, the
paper's text: two lines sharing a scheme letter end in the same word after spelling normalisation) or
``end_word`` (the paper's code, ``get_fake_rhymes``: any two of the four end words are the same string
after punctuation is stripped (:func:`end_words`; ``end_word`` says whose end word: poeval's or the paper's
``get_last_word``), whether or not the scheme pairs them). The pair-level counts stay as
``rhyme_pairs_per_poem``, ``pair_real_rhymes`` and ``pair_repetitions`` (shares of all rhyme pairs)."""

from __future__ import annotations

import string

import numpy as np

from poeval import config
from poeval.errors import PoevalError
# the entropy, KL and cross-entropy of label counts, shared with the metre family (imported here by name)
from poeval.metrics.distribution import divergence, entropy, human_distribution, label_numbers, smooths_human  # noqa: F401
from poeval.poetry.rhyme import is_repetition
from poeval.poetry.schemes import SCHEMES_4
from poeval.text import end_word

_PARAMS = config.defaults("#/properties/metrics/properties/rhyme")   # the params schema holds the defaults
DEFAULT_SMOOTHING, DEFAULT_REPETITION = _PARAMS["smoothing"], _PARAMS["repetition"]
DEFAULT_END_WORD = _PARAMS["end_word"]
REPETITION_MODES = ("rhyme_pair", "end_word")
END_WORD_RULES = ("poeval", "paper")
UNRHYMED = "abcd"
_INDEX = {s: i for i, s in enumerate(SCHEMES_4)}


def scheme_index(labels: list[str]) -> np.ndarray:
    """Position of each label in :data:`SCHEMES_4`."""
    bad = [label for label in labels if label not in _INDEX]
    if bad:
        raise PoevalError(f"not a four-line scheme label: {bad[0]!r} (expected one of {', '.join(SCHEMES_4)})")
    return np.array([_INDEX[label] for label in labels], dtype=np.int64)


def scheme_counts(labels: list[str]) -> np.ndarray:
    """Counts over :data:`SCHEMES_4` (in that order)."""
    return np.bincount(scheme_index(labels), minlength=len(SCHEMES_4)).astype(float)


def rhyme_pairs(lines: list[str], label: str, lang: str) -> tuple[int, int]:
    """(rhyme pairs, of which repetitions) of one quatrain under its scheme label."""
    pairs = reps = 0
    for i in range(len(label)):
        for j in range(i + 1, len(label)):
            if label[i] == label[j]:
                pairs += 1
                reps += is_repetition(lines[i], lines[j], lang)
    return pairs, reps


_ASCII_PUNCTUATION = str.maketrans("", "", string.punctuation)


def paper_end_word(line: str) -> str:
    """The paper's end word (hgroener/diversity_in_poetry_generation, ``helper_functions.get_last_word``): the
    last whitespace token once ASCII punctuation is deleted, so a marginal line number or a ``—`` is the end
    word and ``don't`` reads ``dont``; ``""`` when nothing is left."""
    tokens = line.translate(_ASCII_PUNCTUATION).split()
    return tokens[-1] if tokens else ""


def end_words(lines: list[str], rule: str = DEFAULT_END_WORD) -> list[str]:
    """The end word of each verse, case kept as the paper's code (``get_last_word``) keeps it; verses without a
    word are skipped, as that code skips verses left empty by its punctuation stripping. ``rule`` poeval:
    :func:`poeval.text.end_word` (its last word, with a marginal line number, a dash run, a bracket, a quote or
    a footnote mark after it stripped); paper: :func:`paper_end_word`."""
    if rule not in END_WORD_RULES:
        raise PoevalError(f"unknown end-word rule {rule!r} (expected one of {', '.join(END_WORD_RULES)})")
    words = [(paper_end_word if rule == "paper" else end_word)(line) for line in lines]
    return [w for w in words if w]


def is_repeating_quatrain(lines: list[str], label: str, lang: str, mode: str = DEFAULT_REPETITION,
                          repeated_pairs: int | None = None, end_word_rule: str = DEFAULT_END_WORD) -> bool:
    """Whether a quatrain counts as a repetition (module doc); abcd quatrains never do.
    ``repeated_pairs``: :func:`rhyme_pairs`' repetitions when already counted (``rhyme_pair`` mode);
    ``end_word_rule``: how ``end_word`` mode reads the end words (:func:`end_words`)."""
    if mode not in REPETITION_MODES:
        raise PoevalError(f"unknown repetition mode {mode!r} (expected one of {', '.join(REPETITION_MODES)})")
    if label == UNRHYMED:
        return False
    if mode == "end_word":
        words = end_words(lines, end_word_rule)
        return len(words) != len(set(words))
    return (rhyme_pairs(lines, label, lang)[1] if repeated_pairs is None else repeated_pairs) > 0


def from_counts(counts: np.ndarray, human: np.ndarray, pairs: int, reps: int, repeating: int, n_poems: int,
                smoothing: float) -> dict:
    """The family's numbers from scheme counts, rhyme-pair totals (``pairs``, of which ``reps``
    repetitions) and the number of ``repeating`` quatrains; ``distribution`` holds shares."""
    total = counts.sum()
    repetitions = float(repeating / total) if total else None
    return label_numbers(SCHEMES_4, counts, human, smoothing) | {
        "real_rhymes": float((total - counts[_INDEX[UNRHYMED]] - repeating) / total) if total else None,
        "repetitions": repetitions,
        "rhyme_pairs_per_poem": pairs / n_poems if n_poems else None,
        "pair_real_rhymes": (pairs - reps) / pairs if pairs else None,
        "pair_repetitions": reps / pairs if pairs else None,
    }
