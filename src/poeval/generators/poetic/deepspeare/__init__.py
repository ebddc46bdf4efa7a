"""DeepSpeare (Lau et al. 2018, "Deep-speare: A joint neural model of poetic language, meter and rhyme",
ACL) ported to PyTorch from the paper's description: three models trained in one loop on pseudo-sonnets,
and a generator that samples quatrains verse by verse, reranked by the pentameter model and with rhyme
enforced by the rhyme model.

Components (arch ``deepspeare``) and how they map to the paper:

* **Language model**. An encoder–decoder LSTM. The *encoder* reads the sonnet's previous verses
  (the "context"): word embeddings (word2vec-initialised) into a biLSTM, then the paper's *selective
  mechanism* ``h'_i = h_i * sigmoid(W h_i + U s + b)`` with ``s`` the verse's final forward and backward
  states. The *decoder* is an LSTM whose input at each step concatenates the word embedding and a
  character encoding of the word (a biLSTM over its characters, final states); at each step it attends
  over the encoded context (bilinear scores ``(U s_t) . (W h'_i)`` instead of the paper's additive
  ``v . tanh(W h'_i + U s_t)``: the additive form needs a batch x steps x context x dim tensor, several
  times the cost on CPU) and mixes the attended vector ``c_t`` into its state with the paper's gate
  ``g = sigmoid(W [s_t; c_t] + b)``, ``s'_t = (1 - g) s_t + g c_t``; a softmax gives the next word. Each
  verse is decoded **right to left** (the paper's inversion trick, so that generation draws the rhyme word
  first), ending with ``<eol>``. A learned "null" context slot lets the first verse attend to something.
  Each previous verse is encoded on its own (one encoding serves every later verse of the sonnet) rather
  than the whole preceding context as one sequence. The softmax is adaptive (Grave et al. 2017; a head of
  the ``softmax_cutoffs[0]`` most frequent words) for speed. Each verse starts from a fresh decoder
  state: the earlier verses reach it only through the attention.
* **Pentameter model**. Character level and unsupervised: a biLSTM encodes the verse's characters;
  a decoder LSTM, fed its previous attended vector, attends over the characters once for each of the 10
  stress positions of iambic pentameter, and a sigmoid on the attended vector alone predicts the stress
  (unstressed/stressed alternating, ``S- S+`` x 5) — so the model must find characters that carry the
  pattern. Attention is moved forward monotonically (our formulation of the paper's location-based,
  sigma-windowed attention): the window centre ``mu_t`` is the expected position of the content
  attention, never left of ``mu_{t-1}``, and a Gaussian of width ``pm_sigma`` around it sharpens it.
  Loss per verse: the 10 binary cross-entropies + ``pm_repeat_scale`` x the repeat penalty
  ``sum_t sum_j min(a_tj, sum_{t'<t} a_t'j)`` (no character attended twice) + ``pm_cov_scale`` x the
  coverage penalty ``sum_{j vowel} relu(pm_cov_threshold - sum_t a_tj)`` (every vowel of the verse gets
  attention).
* **Rhyme model**. A character biLSTM encodes each line-final word; for each verse of a quatrain
  (the target) the cosine similarities ``Q`` to the end words of the other three verses and of
  ``rm_neg`` random end words of other quatrains are computed, and the margin loss
  ``max(0, rm_delta - top1(Q) + top2(Q))`` separates the most similar (assumed rhyming) ending from the
  rest — unsupervised, on the three quatrains of every pseudo-sonnet.
* **Joint training**. The three losses are summed (``L_lm + L_pm + L_rm``) and optimised in one loop by
  one AdamW optimiser (the original ran one optimiser per component: SGD for the LM, Adam for the
  others); the character embedding is shared by the three models (the paper's shared weights). Early
  stopping on the LM's dev loss (per-token cross-entropy on dev quatrains, each quatrain its own
  context, ``<eol>`` included). Training ends after ``max_epochs`` passes (default 3; the paper: 30) or
  ``max_steps`` optimizer steps, whichever comes first. The loop is the generators' engine
  (:mod:`poeval.generators.engine`: warmup, clipping, early stopping, bit-identical resume, provenance);
  this module gives it the model, the batches of pseudo-sonnets and the joint loss.
* **Generation**, as the original's ``sonnet_model.py`` (``SonnetModel.generate``, ``sample_sent``,
  ``sample_word``, ``eval_pm_loss``) and ``sonnet_gen.py`` (jhlau/deepspeare):

  - *Scheme*. Each quatrain's rhyme scheme is drawn uniformly from aabb / abab / abba (``reset()``'s
    ``random.choice``; ``scheme_draw: uniform``), not from the training sonnets' schemes, which would pull
    the rhyme distribution towards the human data by construction (``scheme_draw: training`` keeps that
    earlier poeval draw). A verse whose letter occurred before must rhyme with the last such verse (rhyme
    model cosine >= ``rhyme_threshold``, 0.9); the first verse of the second letter must not rhyme with
    the verse before it (cosine <= 0.7): the original's ``rhyme_pttn`` pos/neg lists. A style-conditioned
    model is *prompted* with the drawn scheme: its style line's scheme token is the drawn one, its meter
    token is sampled (the style line is decoded right to left, meter first); under ``scheme_draw:
    training`` it samples its scheme token too and that scheme is enforced.
  - *Verses*. ``candidates`` (10, the original's ``sent_sample``) verses are sampled per verse slot, word by
    word, right to left, conditioned on the verses already chosen. The constraints of ``sample_sent``
    hold at every step: no word of the quatrain so far (this verse included) again unless it is a
    stopword or punctuation, nothing that already occurs twice (stopwords and punctuation included), none
    of the verse's last three tokens, no earlier verse's end word, never ``<unk>`` or the original's
    avoided brackets and quotes. Words are compared lower-cased. Stopwords: NLTK's English list plus the
    original's ``custom_stopwords`` (thee, thou, thy, must, shall, ...), embedded in :data:`STOPWORDS`;
    German, which the original lacks, gets poeval's own short list of function words.
  - *Rejection*. The original draws a word up to 1000 times until one passes the constraints (and, for
    the end word, the rhyme tests). :func:`constrained_draw` does the same in one step: it samples from
    the distribution restricted to the allowed words and fails with probability ``(1 - q) **
    rhyme_attempts`` (``q`` the allowed mass), the chance that all of the original's draws are rejected.
  - *Restart*. When a candidate verse fails (a rejected word, or a verse without a word), the whole
    quatrain is started over with a new scheme (the original's ``reset()``), up to ``restarts`` times
    (the original: without bound); a quatrain still failing then counts as failed (``constraints`` or
    ``empty_line``). ``quatrain_restarts`` in the stats counts the restarts.
  - *Reranking*. Among the candidates, one is kept with probability ``softmax(-pentameter loss /
    rerank_temperature)``, 0.1 as the original's ``sent_temp`` (``rerank: best`` keeps the lowest loss).

  - *Temperature*. With ``word_temperature: [0.6, 0.8]`` each word is drawn at a temperature drawn
    uniformly from that range (the original's ``temp_min`` / ``temp_max`` defaults); the default (null)
    uses the decoding config's temperature, so that the port runs poeval's decoding grid like every
    system. Top-p / top-k, which the original lacks, apply in both cases.

  Differences that remain: the decoding config's temperature unless ``word_temperature`` is set; the
  original's corpus had no verse-final punctuation, so its first generated token is the end word, while
  here punctuation drawn before the end word passes (only the first word is rhyme-tested) and ``<eol>``
  cannot come before it; a quatrain has ``max_new_tokens`` tokens in all (the original: 400 words);
  candidates that run out of that budget are dropped (the original has no such case); restarts are
  bounded; the candidates of all quatrains of a batch are decoded in parallel and a restarted quatrain
  joins the next parallel try.

Size ``S`` (the default) is cut to a 2-core CPU budget; size ``L`` has the original's dimensions.
Checkpoint: :func:`.common.save_checkpoint` with weights ``{"chars", "lm", "pentameter", "rhyme"}``.

CPU note: with ``threads`` > 1 on a machine where other processes hold the cores, OpenMP's spin-waiting
makes these many small LSTM operations up to 10x slower than one thread; ``OMP_WAIT_POLICY=PASSIVE`` in
the environment avoids it.
"""

from __future__ import annotations

from poeval.generators.poetic.deepspeare.data import (ARCH, MODEL_DEFAULTS, SIZES, TRAIN_DEFAULTS, Tables,
                                                      is_vowel, pm_text, read_dev, read_sonnets,
                                                      resolve_model_cfg, resolve_train_cfg, row_order)
from poeval.generators.poetic.deepspeare.generation import (AVOID_SYMBOLS, NON_RHYME_THRESHOLD, ORIGINAL_SCHEMES,
                                                            RESTART_REASONS, STOPWORDS, Generator, Loaded,
                                                            constrained_draw, draw_schemes, rerank, rerank_probs,
                                                            rhyme_targets, sample)
from poeval.generators.poetic.deepspeare.model import (Batcher, BiLSTM, DeepSpeare, LanguageModel, PentameterModel,
                                                       RhymeModel, decoder_sequences)
from poeval.generators.poetic.deepspeare.training import OPTIMIZERS, PartOptimizers, optimizers, train

__all__ = ["ARCH", "AVOID_SYMBOLS", "Batcher", "BiLSTM", "DeepSpeare", "Generator", "LanguageModel", "Loaded",
           "MODEL_DEFAULTS", "NON_RHYME_THRESHOLD", "OPTIMIZERS", "ORIGINAL_SCHEMES", "PartOptimizers",
           "PentameterModel", "RESTART_REASONS", "RhymeModel", "SIZES", "STOPWORDS", "TRAIN_DEFAULTS", "Tables",
           "constrained_draw", "decoder_sequences", "draw_schemes", "is_vowel", "optimizers", "pm_text", "read_dev",
           "read_sonnets", "rerank", "rerank_probs", "resolve_model_cfg", "resolve_train_cfg", "rhyme_targets",
           "row_order", "sample", "train"]
