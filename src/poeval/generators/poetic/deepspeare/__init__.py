"""DeepSpeare (Lau et al. 2018, "Deep-speare: A joint neural model of poetic language, meter and rhyme",
ACL) ported to PyTorch from the paper's description: three models trained in one loop on pseudo-sonnets,
and a generator that samples quatrains verse by verse, reranked by the pentameter model and with rhyme
enforced by the rhyme model.

Components (arch ``deepspeare``) and how they map to the paper:

* **Language model**. An encoder–decoder LSTM. The *encoder* reads the sonnet's previous verses
  (the "context"): word embeddings (word2vec-initialised) into a biLSTM, then the paper's *selective
  mechanism* ``h'_i = h_i * sigmoid(W h_i + U s + b)`` with ``s`` the verse's final forward and backward
  states. The *decoder* is an LSTM whose input at each step concatenates the word embedding and a
  character encoding of the word: the final states of the *pentameter model's* character biLSTM over the
  word's characters, as the original's ``init_lm`` reads ``init_pm``'s ``char_encodings``
  (sonnet_model.py), so the two models share that encoder and the character embedding; at each step it attends
  over the encoded context (bilinear scores ``(U s_t) . (W h'_i)`` instead of the paper's additive
  ``v . tanh(W h'_i + U s_t)``: the additive form needs a batch x steps x context x dim tensor, several
  times the cost on CPU) and mixes the attended vector ``c_t`` into its state with the original's GRU-like
  unit (sonnet_model.py ``gated_layer``): ``z = sigmoid(W_z [c_t; s_t] + b_z)``, ``r = sigmoid(W_r [c_t; s_t]
  + b_r)`` (both biases start at 1), ``s'_t = (1 - z) s_t + z tanh(W [c_t; r s_t] + b)``; a softmax gives the
  next word. Each
  verse is decoded **right to left** (the paper's inversion trick, so that generation draws the rhyme word
  first), ending with ``<eol>``, and the verses **bottom-up** (``line_order: bottom_up``): the original's
  ``load_data`` reverses a sonnet's lines and words (util.py) and its ``generate`` writes a quatrain's last
  verse first; a style row (conditioned models) stays before the quatrain it describes. The decoder
  **state is carried** from verse to verse (``verse_state: carried``): a training sonnet is one decoder
  sequence, its verses joined by ``<eol>`` (the original feeds each two-line chunk's final state to the
  next: sonnet_train.py ``run_epoch``), and in generation a verse starts, from input ``<eol>``, where the
  kept verse before it ended. ``line_order: top_down`` and ``verse_state: fresh`` keep poeval's earlier
  port (top-down, a zero state per verse, the earlier verses reaching it only through the attention). A
  learned "null" context slot lets the first verse attend to something. Each previous verse is encoded on
  its own (one encoding serves every later verse of the sonnet) rather than the whole preceding context as
  one sequence. The softmax is adaptive (Grave et al. 2017; a head of the ``softmax_cutoffs[0]`` most
  frequent words) for speed.
* **Pentameter model**. Character level and unsupervised: a biLSTM encodes the verse's characters (letters
  and single spaces, lower-cased: the original's ``remove_punct``, so ``don't`` reads ``dont``); a decoder
  LSTM, fed its previous attended vector (first a learned one, the original's ``dec_init_input``), attends
  over the characters, never a space or a pad (the original masks both), once for each of the 10
  stress positions of iambic pentameter, and a sigmoid on the attended vector alone predicts the stress
  (unstressed/stressed alternating, ``S- S+`` x 5) — so the model must find characters that carry the
  pattern. Attention is moved forward monotonically (by default our formulation of the paper's location-based,
  sigma-windowed attention; ``pm_window: original`` is the original's, below): the window centre ``mu_t`` is
  the expected position of the content attention, never left of ``mu_{t-1}``, and a Gaussian of width
  ``pm_sigma`` around it sharpens it.
  Loss per verse: the 10 binary cross-entropies + ``pm_repeat_scale`` x the repeat penalty
  ``sum_t sum_j min(a_tj, sum_{t'<t} a_t'j)`` (no character attended twice) + ``pm_cov_scale`` x the
  coverage penalty ``sum_{j vowel} relu(pm_cov_threshold - sum_t a_tj)`` (every vowel of the verse gets
  attention).
* **Rhyme model**. A character LSTM (one direction, its last state, as the original's ``init_rm``)
  encodes each line-final word; for each verse of a quatrain (the target) the cosine similarities ``Q`` to
  the end words of the other three verses and of ``rm_neg`` words drawn uniformly from the vocabulary (the
  original's ``create_rhyme_batch``) are computed, and the margin loss
  ``max(0, rm_delta - top1(Q) + top2(Q))`` separates the most similar (assumed rhyming) ending from the
  rest — unsupervised, on the three quatrains of every pseudo-sonnet.
* **Training** (:mod:`.training`). One optimiser per model, as the original's (sonnet_model.py, config.py):
  Adagrad at 0.2 for the language model (``lm_optimizer``, ``lm_lr``; accumulators from 0.1 as
  TensorFlow's), Adam at 0.001 for the pentameter model with the character embedding and encoder it
  shares (``pm_``) and for the rhyme model (``rm_``); dropout 0.3 (keep_prob 0.7) on the language model's
  word inputs and outputs. These are keys of the model entry, not of the training block: a port never
  gets the shared (LLM) ``training`` block, only its own (:func:`poeval.generators.registry.training_params`),
  whose ``lr`` it refuses. The schedule is the original's (``update_schedule: alternating``;
  sonnet_train.py ``run_epoch``, util.py ``create_word_batch`` / ``create_char_batch`` /
  ``create_rhyme_batch``): separate updates of the three models, each on its own batches with its own
  loss, backward pass, clipping at ``max_grad_norm`` (5; the rhyme model's unclipped, as the original's
  ``minimize``) and optimiser over the original's variables (the LM's Adagrad also steps the character
  embedding and encoder it reads, the rhyme model's Adam the character embedding). The original's epoch
  holds, per batch of ``batch_size`` 14-verse sonnets, 7 LM batches (the sonnets cut into chunks of
  ``bptt_truncate`` = 2 verses, the decoder state carried from chunk to chunk without gradient), 14
  pentameter batches (``batch_size`` of the shuffled verses) and 12 rhyme batches (``batch_size`` of the
  shuffled targets: 3 quatrains x 4 end words per sonnet), their kinds shuffled together. One engine step
  is one such round (:class:`.training.Alternating`): a batch of sonnets from the engine's stream, its
  chunks (``bptt_verses``) in reading order, and the round's even share of an epoch's pentameter and rhyme
  batches drawn from their own streams (saved for resume like the rest), the round's updates in a random
  order (``update_order: round``, the default); ``update_order: epoch`` (``config/scale/paper.yaml``) shuffles
  the kinds of the whole epoch together as the original, a step then running the updates after the previous
  batch's last chunk up to its own (the plan, drawn when an epoch starts, is saved for resume too); so
  ``max_steps``, ``eval_every`` and the epochs still count batches of sonnets, and resume stays bit-identical.
  The LM's loss is the original's ``lm_cost`` (``lm_loss: batch_sum``): the chunk's summed
  token cross-entropy divided by the number of sonnets, which with Adagrad at 0.2 from accumulators of 0.1
  takes far larger steps than a per-token mean. ``update_schedule: joint`` and ``lm_loss: mean`` keep
  poeval's earlier port (below). Early stopping on the LM's
  dev loss (per-token cross-entropy on dev quatrains, each quatrain its own context, ``<eol>`` included).
  Training ends after ``max_epochs`` passes (params.yaml 3; ``config/scale/paper.yaml`` 30, the original's
  ``epoch_size``, at batch 128 with patience 5 as the reproduced paper) or ``max_steps`` optimizer
  steps, whichever comes first. The loop is the generators' engine (:mod:`poeval.generators.engine`:
  clipping, early stopping, bit-identical resume, provenance).
* **Generation**, as the original's ``sonnet_model.py`` (``SonnetModel.generate``, ``sample_sent``,
  ``sample_word``, ``eval_pm_loss``) and ``sonnet_gen.py`` (jhlau/deepspeare):

  - *Scheme*. Each quatrain's rhyme scheme is drawn uniformly from aabb / abab / abba (``reset()``'s
    ``random.choice``; ``scheme_draw: uniform``), not from the training sonnets' schemes, which would pull
    the rhyme distribution towards the human data by construction (``scheme_draw: training`` keeps that
    earlier poeval draw). A verse whose letter occurred before must rhyme with the last such verse (rhyme
    model cosine >= ``rhyme_threshold``, 0.9); the first verse of the second letter must not rhyme with
    the verse before it (cosine <= 0.7): the original's ``rhyme_pttn`` pos/neg lists, which are in writing
    order (bottom-up: the scheme read backwards, :func:`rhyme_targets` of ``scheme[::-1]``). A style-conditioned
    model is *prompted* with the drawn scheme: its style line's scheme token is the drawn one, its meter
    token is sampled (the style line is decoded right to left, meter first); under ``scheme_draw:
    training`` it samples its scheme token too and that scheme is enforced.
  - *Verses*. ``candidates`` (10, the original's ``sent_sample``) verses are sampled per verse slot, word by
    word, right to left, the last verse first (``line_order``), each from the state the verse kept before
    it ended in (``verse_state``), attending over the verses already chosen. The constraints of ``sample_sent``
    hold at every step: no word of the quatrain so far (this verse included) again unless it is a
    stopword or punctuation, nothing that already occurs twice (stopwords and punctuation included), none
    of the verse's last three tokens, no earlier verse's end word, never ``<unk>`` or the original's
    avoided brackets and quotes. Words are compared lower-cased. Stopwords: NLTK's English list plus the
    original's ``custom_stopwords`` (thee, thou, thy, must, shall, ...), embedded in :data:`STOPWORDS`;
    German, which the original lacks, gets poeval's own short list of function words (``stopwords:
    english`` gives it the original's English list, as the paper's German runs had; measured in
    ``docs/results/generators.md`` "DeepSpeare's stopwords in German": German function words then cannot
    repeat within a quatrain, which raises ATTR by about 4 points).
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

  Differences that remain, each with the measure of its effect (the figures:
  ``docs/results/generators.md`` "The ports' smaller differences, measured"):

  - the decoding config's temperature unless ``word_temperature`` is set (so that the port runs poeval's
    decoding grid); measured: the default against ``word_temperature: [0.6, 0.8]`` on the same weights;
  - the original's corpus had no verse-final punctuation, so its first generated token is the end word,
    while here punctuation drawn before the end word passes (only the first word is rhyme-tested) and
    ``<eol>`` cannot come before it; counted: the stats' ``verses_punct_before_end_word`` of ``valid_verses``;
  - a quatrain has ``max_new_tokens`` tokens in all (the original: 400 words); candidates that run out of
    that budget are dropped (the original has no such case); counted: ``candidates_out_of_budget``;
  - restarts are bounded; counted: ``quatrains_at_restart_bound`` (quatrains failed after ``restarts``
    restarts) and ``max_quatrain_restarts``;
  - the candidates of all quatrains of a batch are decoded in parallel and a restarted quatrain joins the
    next parallel try: each draw follows the same distribution as the original's one-at-a-time loop, only
    the random numbers it takes differ; measured: the same weights sampled with ``sampling.batch_size`` 1.

Differences from the original's training, each with a reason. Under the default schedule (above), by
default: the kinds of update are shuffled within a round, not across the whole epoch (``update_order:
epoch`` restores the original's order; the default keeps each step's share of pentameter and rhyme updates
even); a verse attends over every row read before it, the first verse of its own chunk included (the
original's second verse of a chunk does not see the first, which generation does see; ``lm_context:
chunks`` restores the original's history of the earlier chunks only, in training; the dev loss and
generation attend over every earlier row either way), the rows before the chunk encoded again for each chunk
as the original encodes a chunk's history. ``config/scale/paper.yaml`` sets both to the original's; their
effect at the CPU budget is measured in ``docs/results/generators.md``. A last, short batch of an epoch is
kept (the original drops it: ``last_batch: drop``, set by ``config/scale/paper.yaml``; measured in
``docs/results/generators.md``). ``update_schedule: joint`` (poeval's earlier port, about half the time per step
on CPU at size S) sums the three losses of one batch of pseudo-sonnets and takes one backward pass and one step
of each optimiser, each weight with one owner (the character embedding and encoder the pentameter model's
Adam, with the summed gradient), clipped at ``max_grad_norm`` over all weights together, a sonnet
backpropagated whole; ``lm_loss: mean`` divides the LM's summed cross-entropy by its tokens instead of its
sonnets. The LM's attention is bilinear by default (``lm_attention: concat``, set by ``config/scale/paper.yaml``,
is the original's ``v^T tanh(W [m; s] + b)``, a tensor of batch x steps x words x ``attn_dim`` on CPU), and the
pentameter model's window our monotone formulation (above; ``pm_window: original``, set by
``config/scale/paper.yaml``, is the original's learned step: ``mu`` a share of the verse, stepped by a sigmoid of
an MLP of the decoder output and the last ``mu``, capped at 1; the encoder states weighted by the Gaussian around
it before the content score, the attention the softmax of that score plus the Gaussian's log). Both measured in
``docs/results/generators.md`` "The ports' smaller differences, measured".
The softmax is adaptive by default; ``softmax_cutoffs: []`` (``config/scale/paper.yaml``) gives a full softmax
tied to the word embeddings, as the original's (``sonnet_model.py`` ties it through ``tanh`` of the embeddings
times a projection, poeval through a projection of the decoder state), measured in
``docs/results/generators.md`` "The ports' smaller differences, measured". Early stopping keeps the best dev
weights after ``patience`` evaluations without improvement (the reproduced paper's patience 5; the original itself
runs all epochs, reverting an epoch that made a dev loss worse); measured by the training log's evaluations:
whether either would fire at the budget. Dropout (0.3) applies to the language model's word inputs and
outputs; the original's keep_prob 0.7 also wraps its encoder's LSTM and the pentameter and rhyme models'
cells (``dropout_scope: cells``, set by ``config/scale/paper.yaml``, drops those outputs too; measured in
``docs/results/generators.md``). A checkpoint of the earlier port (own character encoder, top-down, fresh
states; its config has no ``line_order``) is refused with a request to retrain it, as is one whose weights
predate the original's pentameter input, rhyme model and gated unit. ``update_schedule``, ``update_order``,
``lm_context``, ``lm_loss``, ``bptt_verses``, ``last_batch`` and ``dropout_scope`` change training only, not
the weights' shapes: a checkpoint loads whichever schedule trained it. ``lm_attention`` and ``pm_window`` add
weights (``att_v``, ``loc``) and are read from the checkpoint's own config.

Size ``S`` (the default) is cut to a 2-core CPU budget; size ``L`` has the original's dimensions
(``config/scale/paper.yaml``). Modules: :mod:`.data` (params, pseudo-sonnets, tables), :mod:`.model` (the three
models and their losses), :mod:`.training`, :mod:`.generation`.
Checkpoint: :func:`.common.save_checkpoint` with weights ``{"chars", "lm", "pentameter", "rhyme"}``.

CPU note: with ``threads`` > 1 on a machine where other processes hold the cores, OpenMP's spin-waiting
makes these many small LSTM operations up to 10x slower than one thread; ``OMP_WAIT_POLICY=PASSIVE`` in
the environment avoids it.
"""

from __future__ import annotations

from poeval.generators.poetic.common import port_fit
from poeval.generators.poetic.deepspeare.data import (ARCH, MODEL_DEFAULTS, SIZES, TRAIN_DEFAULTS, Tables,
                                                      is_vowel, pm_text, read_dev, read_sonnets,
                                                      resolve_model_cfg, resolve_train_cfg, row_order)
from poeval.generators.poetic.deepspeare.generation import (AVOID_SYMBOLS, NON_RHYME_THRESHOLD, ORIGINAL_SCHEMES,
                                                            RESTART_REASONS, STOPWORDS, Generator, Loaded,
                                                            constrained_draw, draw_schemes, rerank, rerank_probs,
                                                            rhyme_targets, sample)
from poeval.generators.poetic.deepspeare.model import (Batcher, BiLSTM, DeepSpeare, LanguageModel, PentameterModel,
                                                       RhymeModel, chunk_ids, decoder_sequences)
from poeval.generators.poetic.deepspeare.training import OPTIMIZERS, PartOptimizers, optimizers, train

fit = port_fit(__name__, ARCH)   # the generator interface (poeval.generators.interface)

__all__ = ["ARCH", "AVOID_SYMBOLS", "Batcher", "BiLSTM", "DeepSpeare", "Generator", "LanguageModel", "Loaded",
           "MODEL_DEFAULTS", "NON_RHYME_THRESHOLD", "OPTIMIZERS", "ORIGINAL_SCHEMES", "PartOptimizers",
           "PentameterModel", "RESTART_REASONS", "RhymeModel", "SIZES", "STOPWORDS", "TRAIN_DEFAULTS", "Tables",
           "chunk_ids",
           "constrained_draw", "decoder_sequences", "draw_schemes", "is_vowel", "optimizers", "pm_text", "read_dev",
           "read_sonnets", "rerank", "rerank_probs", "resolve_model_cfg", "resolve_train_cfg", "rhyme_targets",
           "row_order", "sample", "train", "fit"]
