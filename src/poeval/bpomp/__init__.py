"""BPoMP, a Benchmark of Poetic Minimal Pairs: does a language model prefer a limerick to a copy of it
whose rhyme was broken?

Pipeline (library side; one function per step, each writing its output atomically):

1. :func:`build_corpus` / :func:`write_corpus`: read or mine limericks and keep the AABBA ones whose
   line lengths fit (:mod:`.limericks`).
2. :func:`make_pairs` / :func:`write_pairs`: one minimal pair per limerick and task (``word_swap``,
   ``line_swap``, ``synonym``), recording what changed (:mod:`.pairs`, :mod:`.synonyms`,
   synonyms chosen in context by :mod:`.context`).
3. :func:`write_scores`: causal log-likelihood or masked PLL of both texts (:mod:`.scoring`).
4. :func:`accuracy`, :func:`error_analysis`: accuracy with bootstrap CIs and the correlation of score
   differences with bigram-frequency differences at confidence cut-offs, on all pairs and on errors
   (:mod:`.analysis`).
"""

from poeval.bpomp.analysis import accuracy, bigram_counts, error_analysis, write_bigram_counts
from poeval.bpomp.limericks import DEFAULT_SYLLABLES, FORMATS, MINER_SYLLABLES, build_corpus, write_corpus
from poeval.bpomp.pairs import SYNONYM_CHOICES, TASKS, make_pairs, write_pairs
from poeval.bpomp.scoring import KINDS, VARIANTS, causal_scores, load_masked, masked_scores, write_scores

__all__ = [
    "DEFAULT_SYLLABLES", "FORMATS", "KINDS", "MINER_SYLLABLES", "SYNONYM_CHOICES", "TASKS", "VARIANTS",
    "accuracy", "bigram_counts", "build_corpus", "causal_scores", "error_analysis", "load_masked",
    "make_pairs", "masked_scores", "write_bigram_counts", "write_corpus", "write_pairs", "write_scores",
]
