"""Lexical diversity of a sample of quatrains: ATTR, MATTR and MTLD (the paper's Table 2).

Tokens: ``poeval.text.tokens(" ".join(lines), lower=True)`` per quatrain (punctuation removed,
lowercased, whitespace split); we do not lemmatise. ``tokens: flemmatize`` (params
``metrics.lexical.tokens``) is the paper's code instead: ``lexical_diversity.lex_div.flemmatize`` of the
joined quatrain, which deletes a fixed list of punctuation strings (so "don't" becomes "dont" and "well-known"
"wellknown", while quotes and dashes other than "-" stay in the tokens), splits on single spaces (an empty
token where the text starts or ends with a deleted character and a space) and maps every token through the
package's English lemma list (e_lemma, for German text too). :func:`flemmatize` does exactly that with the
package's own list, read from the installed ``lexical-diversity`` package (its module imports
``pkg_resources``, which current setuptools no longer ships, so we do not import it).

* **ATTR** – mean over quatrains of each quatrain's type-token ratio. Quatrains with no token are
  skipped (they have no TTR); if no quatrain has a token, ATTR is None.
* **MATTR** (Covington & McFall 2010) – over the *concatenated* token sequence of the whole sample (all
  quatrains in order, as the paper's code does): the mean TTR of every window of ``window`` consecutive
  tokens (default 35, the paper's ``ld.mattr(tokens, window_length=35)``). Computed in O(n) with a
  sliding counter. A sequence shorter than the window has no full window; MATTR is then its plain TTR
  (the same fallback as the ``lexical_diversity`` package the paper used).
* **MTLD** (McCarthy & Jarvis 2010) – over the concatenated sequence too. A pass reads tokens and keeps the
  running TTR of the current segment; when it *reaches* the threshold (TTR <= 0.72) a factor is complete
  and the segment restarts empty. The unfinished segment at the end adds a partial factor
  (1 - TTR) / (1 - threshold). A pass's value is tokens / factors; MTLD is the mean of the forward pass
  and the pass over the reversed sequence.

  Convention for a pass with **zero factors** (no complete factor, and the remainder – then the whole
  text – has TTR 1, so its partial factor is 0): the value is the token count n, i.e. the whole text
  counts as one factor. MTLD estimates the mean length of a stretch of text that keeps TTR above the
  threshold; a text with no repetition at all is one such stretch of (at least) n tokens, so n is the
  observed, conservative lower bound. tokens / 0 is infinite, and the ``lexical-diversity`` package's
  ``safe_divide`` returns 0 – the most diverse text would then score as the least diverse. This is the
  same convention as the ``lexicalrichness`` package. Note the discontinuity it implies: one repeated
  word in n unique-ish tokens can give far more than n (n = 100 with one repeat: 100 / (0.01 / 0.28) =
  2800). It only arises for texts of a few dozen tokens; a sample of 1000 quatrains always repeats.

  This is the rule McCarthy & Jarvis (2010, Behavior Research Methods 42(2), 381-392) define: each word is
  evaluated sequentially for its TTR and "when the default TTR factor size value (here, .720) is reached,
  the factor count increases by a value of 1, and the TTR evaluations are reset"; the remainder adds a
  partial factor; no minimum factor length is part of the definition.

  ``mtld_rule: lexical_diversity`` (params ``metrics.lexical.mtld_rule``) is the rule of
  ``lexical_diversity.lex_div.mtld`` (PyPI ``lexical-diversity`` 0.1.1), which the paper's code calls
  (``analysis/lexical_div.py``, ``ld.mtld(tokens)``): a factor ends only when the segment's TTR is *strictly
  below* the threshold and it holds at least :data:`PACKAGE_MIN_FACTOR` (10, the package's ``min``) tokens,
  and the segment that holds the last token always becomes the partial factor, even when its TTR has just
  dropped below the threshold (its partial factor is then above 1). The package's threshold is a fixed .72;
  poeval's rule reads ``mtld_threshold`` for both. One difference stays: a pass without any factor is the
  token count n here (above), where the package's ``safe_divide`` gives 0 (only texts of a few dozen tokens
  without a repeated word).

ATTR and MATTR are fractions in [0, 1]; the paper's tables show them in percent (x 100)."""

from __future__ import annotations

import functools
import numbers
import re
from collections import defaultdict
from importlib import resources
from typing import Iterable, Sequence

from poeval import config
from poeval.errors import PoevalError
from poeval.text import tokens as _tokens

_PARAMS = config.defaults("#/properties/metrics/properties/lexical")   # the params schema holds the defaults
DEFAULT_WINDOW, DEFAULT_THRESHOLD = _PARAMS["mattr_window"], _PARAMS["mtld_threshold"]
DEFAULT_RULE = _PARAMS["mtld_rule"]
MTLD_RULES = tuple(config.schema()["properties"]["metrics"]["properties"]["lexical"]["properties"]["mtld_rule"]["enum"])
PACKAGE_MIN_FACTOR = 10   # lexical_diversity.lex_div.mtld's ``min``: the fewest tokens of a complete factor


def quatrain_tokens(lines: Sequence[str]) -> list[str]:
    """Lowercased, punctuation-free tokens of one quatrain's verses."""
    return _tokens(" ".join(lines), lower=True)


# lexical_diversity.lex_div's punctuation, deleted in this order (case-sensitive, before lowercasing)
FLEMMATIZE_PUNCTUATION = "`` '' ' . , ? ! ) ( % / - _ -LRB- -RRB- SYM : ;".split(" ")


@functools.cache
def _lemma_dict() -> dict[str, str]:
    """lexical_diversity's lemma list: each tab-separated line maps its forms to the first (later lines win)."""
    try:
        text = resources.files("lexical_diversity").joinpath("e_lemma_lower_clean.txt").read_text()
    except ModuleNotFoundError:
        raise PoevalError("metrics.lexical.tokens: flemmatize needs the package lexical-diversity "
                          "(pip install lexical-diversity==0.1.1)") from None
    lemmas = {}
    for line in text.splitlines():   # the file ends its lines with CR
        if line and not line.startswith("#"):
            forms = line.split("\t")
            lemmas.update(dict.fromkeys(forms, forms[0]))
    return lemmas


def flemmatize(text: str) -> list[str]:
    """``lexical_diversity.lex_div.flemmatize``, the paper's tokeniser and lemmatiser (module doc)."""
    for mark in FLEMMATIZE_PUNCTUATION:
        text = text.replace(mark, "")
    lemmas = _lemma_dict()
    return [lemmas.get(word, word) for word in re.sub(r"\s+", " ", text).lower().split(" ")]


def paper_quatrain_tokens(lines: Sequence[str]) -> list[str]:
    """The paper's tokens of one quatrain: :func:`flemmatize` of its verses joined by one space."""
    return flemmatize(" ".join(lines))


TOKENIZERS = {"poeval": quatrain_tokens, "flemmatize": paper_quatrain_tokens}


def attr(token_lists: Iterable[Sequence[str]]) -> float | None:
    """Mean per-quatrain TTR, skipping quatrains without tokens; None if none has a token."""
    ratios = [len(set(t)) / len(t) for t in token_lists if len(t)]
    return sum(ratios) / len(ratios) if ratios else None


def mattr(seq: Sequence[str], window: int = DEFAULT_WINDOW) -> float | None:
    """Moving-average TTR over all windows of ``window`` consecutive tokens (O(n)).

    Fewer tokens than ``window``: the plain TTR of the sequence. Empty: None."""
    if isinstance(window, bool) or not isinstance(window, numbers.Integral) or window < 1:
        raise PoevalError(f"metrics.lexical.mattr_window must be a positive integer, got {window!r}")
    window = int(window)
    n = len(seq)
    if n == 0:
        return None
    if n < window:
        return len(set(seq)) / n
    counts: dict[str, int] = defaultdict(int)
    distinct = 0
    for tok in seq[:window]:
        if counts[tok] == 0:
            distinct += 1
        counts[tok] += 1
    total = distinct  # sum of distinct counts over windows, kept as an integer (exact)
    for i in range(window, n):
        old, new = seq[i - window], seq[i]
        counts[old] -= 1
        if counts[old] == 0:
            distinct -= 1
        if counts[new] == 0:
            distinct += 1
        counts[new] += 1
        total += distinct
    n_windows = n - window + 1
    return total / (window * n_windows)


def _mtld_pass(seq: Iterable[str], n: int, threshold: float, rule: str) -> float:
    package = rule == "lexical_diversity"
    factors = 0.0
    types: set[str] = set()
    count = 0
    for i, tok in enumerate(seq, 1):
        count += 1
        types.add(tok)
        ttr = len(types) / count
        if package:   # strictly below, 10 tokens at least, and never at the last token (module doc)
            complete = ttr < threshold and count >= PACKAGE_MIN_FACTOR and i < n
        else:         # the factor is complete when TTR reaches the threshold
            complete = ttr <= threshold
        if complete:
            factors += 1.0
            types = set()
            count = 0
    if count:
        factors += (1.0 - len(types) / count) / (1.0 - threshold)
    if factors == 0.0:
        # No complete factor and an all-unique remainder: the whole text is one factor (module doc).
        return float(n)
    return n / factors


def mtld(seq: Sequence[str], threshold: float = DEFAULT_THRESHOLD, rule: str = DEFAULT_RULE) -> float | None:
    """MTLD: mean of the forward and backward passes; None for an empty sequence. ``rule``: when a factor
    ends, ``mccarthy_jarvis`` (TTR <= threshold) or ``lexical_diversity`` (the package's; module doc)."""
    if isinstance(threshold, bool) or not isinstance(threshold, numbers.Real) or not 0.0 < threshold < 1.0:
        raise PoevalError(f"metrics.lexical.mtld_threshold must be a number in (0, 1), got {threshold!r}")
    if rule not in MTLD_RULES:
        raise PoevalError(f"metrics.lexical.mtld_rule must be one of {', '.join(MTLD_RULES)}, got {rule!r}")
    n = len(seq)
    if n == 0:
        return None
    forward = _mtld_pass(seq, n, threshold, rule)
    backward = _mtld_pass(reversed(seq), n, threshold, rule)
    return (forward + backward) / 2.0


def compute(samples: list[list[str]], reference=None, *, mattr_window: int = DEFAULT_WINDOW,
            mtld_threshold: float = DEFAULT_THRESHOLD, mtld_rule: str = DEFAULT_RULE, tokens: str = "poeval") -> dict:
    """ATTR, MATTR and MTLD of a sample of quatrains (lists of verses). ``reference`` is unused.

    MATTR and MTLD are computed on the concatenation of all quatrains' tokens in sample order. Rates are
    fractions; values are None when the sample has no tokens."""
    return from_tokens([TOKENIZERS[tokens](lines) for lines in samples], mattr_window=mattr_window,
                       mtld_threshold=mtld_threshold, mtld_rule=mtld_rule)


def from_tokens(per_poem: list[list[str]], *, mattr_window: int = DEFAULT_WINDOW,
                mtld_threshold: float = DEFAULT_THRESHOLD, mtld_rule: str = DEFAULT_RULE) -> dict:
    """ATTR, MATTR and MTLD from each poem's tokens, in sample order (bootstrap reuses this)."""
    flat = [tok for toks in per_poem for tok in toks]
    return {
        "attr": attr(per_poem),
        "mattr": mattr(flat, mattr_window),
        "mtld": mtld(flat, mtld_threshold, mtld_rule),
        "n_tokens": len(flat),
    }
