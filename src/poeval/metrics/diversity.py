"""General text-diversity measures of a sample of quatrains (not in the paper;
docs/beyond-the-paper.md "General diversity measures"), each as its reference implementation computes it.

A quatrain's text is its four verses, stripped, joined with one space (:func:`semantic.quatrain_text`,
the text the semantic family embeds). Shaib et al.'s package joins a sample's texts with a space and
splits on single spaces, so a newline join would glue a verse's last word to the next verse's first.

* **self_bleu** (sacrebleu points, 0-100) - per quatrain, sentence-level BLEU-4 against the other
  quatrains of the sample as references (itself excluded by index; an identical duplicate is another
  quatrain): ``n`` of them drawn without replacement per quatrain (``references``; None: all others),
  sacrebleu's 13a tokenizer, no lower-casing, its sentence-BLEU defaults (``effective_order=True``,
  smoothing ``exp``, its Method 3 / NIST). Mean over the quatrains. Computed from n-gram counts taken
  once per quatrain and scored by ``sacrebleu.BLEU.compute_bleu``: equal to ``sacrebleu.sentence_bleu``
  on the same references (tests), without re-tokenising every reference for every hypothesis.
* **distinct_1..4** - unique over total n-grams of the whole sample, tokens from splitting the joined
  sample on single spaces, n-grams running across quatrains; **ngram_diversity** their sum (Shaib et al.
  2024, ``diversity.ngram_diversity_score``, which rounds to 3 digits; poeval does not round).
* **compression_ratio** - UTF-8 bytes of the joined sample over its gzip size (level 9). ``compression``
  ``diversity``: the package's ``compression_ratio`` byte for byte, which writes the already
  gzip-compressed bytes into a second gzip file named ``compressed.gz`` (a few dozen bytes more on a
  sample of 1000 quatrains).
* **homogenization** - per quatrain, its mean ROUGE-L F1 (rouge-score, default tokenizer, no stemmer)
  against ``partners`` other quatrains drawn without replacement (None: all others); mean over the
  quatrains. With all partners it is ``diversity.homogenization_score(..., 'rougel')`` unrounded (the
  package returns 1.0 where every pair scores 0; poeval returns 0). rouge-score's tokenizer keeps
  only ``[a-z0-9]`` after lower-casing: German umlauts and ß split words. The LCS is computed
  bit-parallel (Hyyrö 2004), equal to rouge-score's table.
* **vendi** - the Vendi score (Friedman & Dieng 2023) of the sample's sentence embeddings with the
  cosine kernel: exp of the entropy of the eigenvalues of K/n, K the cosine Gram matrix, computed in
  the dual form (the d x d matrix X^T X / n, same non-zero eigenvalues; ``vendi_score.vendi.score_dual``).
* **mauve** - MAUVE (Pillutla et al. 2021, mauve-text) of the sample's embeddings against a HUMAN
  sample of the same size drawn (``seed``) from the reference quatrains; k-means ``mauve_buckets``
  clusters (``auto``: n/10) with seed ``mauve_seed``, the package's other defaults.

Bootstrap intervals: self-BLEU and homogenization only, from their per-quatrain values (kept in the cell
as ``per_poem``, also for significance tests; each quatrain keeps its references drawn from the full
sample). The measures of a whole set have none: a resample drawn with replacement repeats quatrains,
and every repeat lowers distinct-n, the compression ratio and the Vendi score by itself (on 1000
quatrains the 95 % interval of distinct-2 lay 0.28 below the estimate, excluding it); MAUVE's would
also need a k-means per resample."""

from __future__ import annotations

import gzip
import io
import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from poeval.progress import progress_bar

from poeval.errors import PoevalError
from poeval.metrics.semantic import quatrain_text

MAX_N = 4
SMOOTHING = "exp"                     # sacrebleu's sentence-BLEU default
COMPRESSIONS = ("gzip", "diversity")


def texts(quatrains: Sequence[Sequence[str]]) -> list[str]:
    return [quatrain_text(q) for q in quatrains]


def _draw_others(rng: np.random.Generator, n: int, i: int, k: int | None) -> np.ndarray:
    """``k`` indices of 0..n-1 other than ``i`` without replacement (all of them when ``k`` is None or
    at least n-1), sorted."""
    if k is None or k >= n - 1:
        return np.delete(np.arange(n), i)
    picked = rng.choice(n - 1, size=k, replace=False)
    picked[picked >= i] += 1
    return np.sort(picked)


# --- self-BLEU ---------------------------------------------------------------------------------------

def self_bleu(sample: Sequence[str], references: int | None = None, seed: int = 1,
              progress: bool = False) -> np.ndarray | None:
    """Per-quatrain sentence BLEU (0-100) against ``references`` other quatrains of ``sample`` (module
    doc); None with fewer than 2 quatrains."""
    from sacrebleu.metrics import BLEU
    from sacrebleu.metrics.helpers import extract_all_word_ngrams

    n = len(sample)
    if n < 2:
        return None
    bleu = BLEU(effective_order=True)          # the tokenizer and settings of sacrebleu.sentence_bleu
    stats = [extract_all_word_ngrams(bleu.tokenizer(t.rstrip()), 1, MAX_N) for t in sample]
    lengths = np.array([length for _, length in stats])
    postings: dict[tuple, tuple[list, list]] = {}
    for i, (grams, _) in enumerate(stats):
        for gram, count in grams.items():
            ids, counts = postings.setdefault(gram, ([], []))
            ids.append(i)
            counts.append(count)
    index = {g: (np.array(ids), np.array(counts)) for g, (ids, counts) in postings.items()}
    rng = np.random.default_rng([seed, 0])
    out = np.empty(n)
    mask = np.zeros(n, dtype=bool)
    for i in progress_bar(range(n), desc="self-BLEU", progress=progress):
        refs = _draw_others(rng, n, i, references)
        mask[refs] = True
        grams, hyp_len = stats[i]
        correct, total = [0] * MAX_N, [0] * MAX_N
        for gram, count in grams.items():
            ids, counts = index[gram]
            ref_counts = counts[mask[ids]]
            best = int(ref_counts.max()) if ref_counts.size else 0   # multi-reference clipping: max over refs
            correct[len(gram) - 1] += min(count, best)
            total[len(gram) - 1] += count
        mask[refs] = False
        out[i] = BLEU.compute_bleu(correct, total, hyp_len, _closest_length(hyp_len, lengths[refs]),
                                   smooth_method=SMOOTHING, effective_order=True, max_ngram_order=MAX_N).score
    return out


def _closest_length(hyp_len: int, ref_lens: np.ndarray) -> int:
    """sacrebleu's reference length: the closest to the hypothesis, the shorter on a tie."""
    diff = np.abs(ref_lens - hyp_len)
    return int(ref_lens[diff == diff.min()].min())


# --- distinct-n and compression (Shaib et al.) -------------------------------------------------------

def distinct_n(sample: Sequence[str], max_n: int = MAX_N) -> dict[int, float | None]:
    """Unique over total n-grams (n = 1..max_n) of the sample joined with spaces and split on single
    spaces, n-grams running across quatrains; None where there is no n-gram."""
    words = " ".join(sample).split(" ")
    out = {}
    for n in range(1, max_n + 1):
        grams = list(zip(*(words[k:] for k in range(n))))
        out[n] = len(set(grams)) / len(grams) if grams else None
    return out


def ngram_diversity(distinct: dict[int, float | None]) -> float | None:
    return None if any(v is None for v in distinct.values()) else float(sum(distinct.values()))


def compression_ratio(sample: Sequence[str], procedure: str = "gzip") -> float | None:
    """Bytes of the sample joined with spaces over their gzip size (module doc; ``procedure``
    ``diversity``: the package's double compression). None for an empty text."""
    if procedure not in COMPRESSIONS:
        raise PoevalError(f"metrics.diversity.compression must be one of {', '.join(COMPRESSIONS)}, got {procedure!r}")
    data = " ".join(sample).encode("utf-8")
    if not data:
        return None
    packed = gzip.compress(data, compresslevel=9, mtime=0)
    if procedure == "diversity":
        buf = io.BytesIO()
        with gzip.GzipFile(filename="compressed.gz", mode="wb", fileobj=buf, mtime=0) as handle:
            handle.write(packed)
        packed = buf.getvalue()
    return len(data) / len(packed)


# --- homogenization (ROUGE-L) ------------------------------------------------------------------------

def _lcs_length(a: Sequence[str], b_masks: dict[str, int], b_len: int) -> int:
    """LCS length of token lists a and b, bit-parallel over b (Hyyrö 2004); ``b_masks``: per token, the
    bit mask of its positions in b."""
    full = (1 << b_len) - 1
    s = full
    for token in a:
        u = s & b_masks.get(token, 0)
        s = ((s + u) | (s - u)) & full
    return b_len - bin(s).count("1")


def _masks(tokens: Sequence[str]) -> dict[str, int]:
    masks: dict[str, int] = {}
    for pos, token in enumerate(tokens):
        masks[token] = masks.get(token, 0) | (1 << pos)
    return masks


def rouge_l(target: Sequence[str], prediction: Sequence[str], prediction_masks: dict[str, int] | None = None) -> float:
    """ROUGE-L F1 of two token lists, with rouge-score's arithmetic (``rouge_scorer._score_lcs``)."""
    if not target or not prediction:
        return 0.0
    lcs = _lcs_length(target, prediction_masks or _masks(prediction), len(prediction))
    precision, recall = lcs / len(prediction), lcs / len(target)
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


def rouge_tokens(text: str) -> list[str]:
    """rouge-score's default tokens without a stemmer (``rouge_score.tokenize.tokenize``: lowercased, every run
    of characters outside [a-z0-9] a break). Written out because importing rouge_score imports all of NLTK
    (4.6 s of a 9 s diversity cell); a test checks it against the package."""
    return _ROUGE_TOKEN.findall(text.lower())


_ROUGE_TOKEN = re.compile(r"[a-z0-9]+")


def homogenization(sample: Sequence[str], partners: int | None = None, seed: int = 1,
                   progress: bool = False) -> np.ndarray | None:
    """Per-quatrain mean ROUGE-L F1 against ``partners`` other quatrains (module doc); None with fewer
    than 2 quatrains."""
    n = len(sample)
    if n < 2:
        return None
    toks = [rouge_tokens(t) for t in sample]
    masks = [_masks(t) for t in toks]
    rng = np.random.default_rng([seed, 1])
    out = np.empty(n)
    for i in progress_bar(range(n), desc="homogenization", progress=progress):
        others = _draw_others(rng, n, i, partners)
        # the package scores (target=other, prediction=this); F1 is symmetric in the two anyway
        out[i] = np.mean([rouge_l(toks[j], toks[i], masks[i]) for j in others])
    return out


# --- embeddings: Vendi and MAUVE -------------------------------------------------------------------------

def vendi(embeddings: np.ndarray) -> float | None:
    """Vendi score, cosine kernel, of the rows of ``embeddings`` (L2-normalised here), in the dual form."""
    x = np.asarray(embeddings, dtype=np.float64)
    if x.shape[0] == 0:
        return None
    x = x / np.linalg.norm(x, axis=1, keepdims=True)
    gram = x.T @ x / len(x)
    eig = np.linalg.eigvalsh(gram)
    eig = eig[eig > 0]
    return float(np.exp(-(eig * np.log(eig)).sum()))


def human_rows(n_reference: int, n: int, seed: int) -> np.ndarray:
    """The reference quatrains of MAUVE's HUMAN sample: ``n`` drawn without replacement (all of them if
    the reference has fewer), sorted."""
    if n >= n_reference:
        return np.arange(n_reference)
    return np.sort(np.random.default_rng([seed, 2]).choice(n_reference, size=n, replace=False))


def mauve_score(p_features: np.ndarray, q_features: np.ndarray, buckets: int | str = "auto",
                seed: int = 25) -> float | None:
    """MAUVE of sample features P against HUMAN features Q (mauve-text); None with fewer than 2 rows
    on either side."""
    if len(p_features) < 2 or len(q_features) < 2:
        return None
    import mauve

    out = mauve.compute_mauve(p_features=np.asarray(p_features, dtype=np.float32),
                              q_features=np.asarray(q_features, dtype=np.float32),
                              num_buckets=buckets, seed=seed, verbose=False)
    return float(out.mauve)


# --- the family -----------------------------------------------------------------------------------------

@dataclass
class Prepared:
    """A sample's texts, per-quatrain self-BLEU and homogenization, and embeddings."""

    texts: list[str]
    self_bleu: np.ndarray | None
    homogenization: np.ndarray | None
    embeddings: np.ndarray
    compression: str


def prepare(quatrains: Sequence[Sequence[str]], embeddings: np.ndarray, *, references: int | None,
            partners: int | None, seed: int, compression: str = "gzip", progress: bool = False) -> Prepared:
    sample = texts(quatrains)
    if len(embeddings) != len(sample):
        raise PoevalError(f"diversity: {len(embeddings)} embeddings for {len(sample)} quatrains")
    if compression not in COMPRESSIONS:
        raise PoevalError(f"metrics.diversity.compression must be one of {', '.join(COMPRESSIONS)}, got {compression!r}")
    return Prepared(sample, self_bleu(sample, references, seed, progress),
                    homogenization(sample, partners, seed, progress), np.asarray(embeddings), compression)


def _mean(values: np.ndarray | None, idx: np.ndarray) -> float | None:
    return None if values is None or len(idx) == 0 else float(values[idx].mean())


def means(prep: Prepared, idx: np.ndarray) -> dict:
    """Self-BLEU and homogenization of the quatrains ``idx``: means of their per-quatrain values (a
    bootstrap resample repeats some)."""
    return {"self_bleu": _mean(prep.self_bleu, idx), "homogenization": _mean(prep.homogenization, idx)}


def scalars(prep: Prepared) -> dict:
    """Every measure but MAUVE on the whole sample."""
    distinct = distinct_n(prep.texts)
    return means(prep, np.arange(len(prep.texts))) | {
        **{f"distinct_{n}": v for n, v in distinct.items()}, "ngram_diversity": ngram_diversity(distinct),
        "compression_ratio": compression_ratio(prep.texts, prep.compression), "vendi": vendi(prep.embeddings)}


def per_poem(prep: Prepared) -> dict:
    return {key: None if v is None else [round(float(x), 6) for x in v]
            for key, v in (("self_bleu", prep.self_bleu), ("homogenization", prep.homogenization))}
