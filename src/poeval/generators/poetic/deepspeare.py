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

import collections
import math
import random
import unicodedata
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from poeval import config
from poeval.errors import PoevalError
from poeval.generators import engine
from poeval.generators.poetic import common
from poeval.generators.poetic.common import (Vocab, ancestral_params, detokenize, draw, end_word, filtered_probs,
                                             init_embedding, is_word, load_checkpoint, save_checkpoint, tokenize,
                                             verse_ok)
from poeval.generators.sampling import Attempt, sample_loop
from poeval.generators.sampling import resolve as resolve_sampling
from poeval.io import read_jsonl
from poeval.poetry import style as _style
from poeval.stamps import train_stamp

ARCH = "deepspeare"
N_STRESS = 10  # iambic pentameter: S- S+ x 5
STRESS_TARGET = [0.0, 1.0] * (N_STRESS // 2)

# sizes: S fits the 2-core budget (about 3 minutes on 2,250 pseudo-sonnets); L has the paper's dimensions
SIZES: dict[str, dict[str, Any]] = {
    "S": {"char_dim": 32, "char_hidden": 32, "enc_dim": 64, "dec_dim": 192, "attn_dim": 64,
          "pm_enc_dim": 32, "pm_dec_dim": 64, "pm_attn_dim": 32, "rm_dim": 64},
    "L": {"char_dim": 150, "char_hidden": 50, "enc_dim": 200, "dec_dim": 600, "attn_dim": 25,
          "pm_enc_dim": 50, "pm_dec_dim": 200, "pm_attn_dim": 50, "rm_dim": 100},
}

# Defaults come from the params schema ($defs/deepspeare_model; its training default is the port's own
# training block); the size-dependent dimensions above fill in what the size does not leave to the entry.
_SCHEMA_DEFAULTS = config.defaults("#/$defs/deepspeare_model")
TRAIN_DEFAULTS: dict[str, Any] = _SCHEMA_DEFAULTS.pop("training")
MODEL_DEFAULTS: dict[str, Any] = {**_SCHEMA_DEFAULTS, **SIZES["S"]}

_VOWELS = set("aeiouyæœø")
PAD_CHAR, UNK_CHAR, SPECIAL_CHAR = 0, 1, 2


# --------------------------------------------------------------------------------------------------
# configuration


def _param(name: str | None, key: str) -> str:
    return f"models.{name}.{key}" if name else key


def resolve_model_cfg(model_cfg: dict, name: str | None = None) -> dict:
    """``model_cfg`` with the size's and the schema's defaults filled in, checked against the schema
    (unknown keys rejected) and its rules (:data:`poeval.config.RULES`); PoevalError names the key."""
    if not isinstance(model_cfg, dict):
        raise PoevalError(f"model config {_param(name, '')} must be a mapping")
    model_cfg = {k: v for k, v in model_cfg.items() if k != "training"}   # the caller merges it into train_cfg
    size = model_cfg.get("size", MODEL_DEFAULTS["size"])
    cfg = {**MODEL_DEFAULTS, **SIZES.get(size, {}), **model_cfg}
    config.check(cfg, "#/$defs/deepspeare_model", f"models.{name}" if name else "model")
    return cfg


def resolve_train_cfg(train_cfg: dict) -> dict:
    """``train_cfg`` over the port's training defaults (the schema's), checked against the schema."""
    return common.train_cfg(TRAIN_DEFAULTS, train_cfg)


# --------------------------------------------------------------------------------------------------
# data


def _fold(ch: str) -> str:
    base = unicodedata.normalize("NFD", ch)[:1]
    return base or ch


def is_vowel(ch: str) -> bool:
    """Vowel letters of the Latin alphabet, accents and umlauts included (``ä`` -> ``a``)."""
    return _fold(ch.lower()) in _VOWELS


def pm_text(verse: str, max_chars: int) -> str:
    """What the pentameter model reads: the verse lower-cased, letters and word-internal apostrophes and
    hyphens only, single spaces."""
    out = []
    for ch in verse.lower():
        out.append(ch if ch.isalpha() or ch in "'’-" else " ")
    return " ".join("".join(out).split())[:max_chars]


def _style_of(record: dict, path, i: int, field_s: str, field_m: str, k: int | None, name: str | None) -> list[str]:
    scheme = record.get(field_s)
    meter = record.get(field_m)
    if k is not None:
        scheme = scheme[k] if isinstance(scheme, list) and len(scheme) > k else None
        meter = meter[k] if isinstance(meter, list) and len(meter) > k else None
    where = f"{path}: record {i + 1}"
    if scheme not in _style.SCHEMES or meter not in _style.METERS:
        raise PoevalError(f"{where} lacks a valid '{field_s}'/'{field_m}' (scheme one of the 15 four-line schemes, "
                          f"meter one of {', '.join(_style.METERS)}), which style-conditioned training needs "
                          f"({_param(name, 'conditioned')} is true)")
    return _style.style_tokens(scheme, meter)


def _lines_of(record, path, i: int) -> list[str]:
    lines = record.get("lines") if isinstance(record, dict) else None
    if not isinstance(lines, list) or not lines or not all(isinstance(x, str) for x in lines):
        raise PoevalError(f"{path}: record {i + 1} has no non-empty 'lines' list of strings")
    return lines


def read_sonnets(path, conditioned: bool, name: str | None = None) -> tuple[list[dict], collections.Counter]:
    """Each pseudo-sonnet as ``{"rows": [[tokens] ...], "verse": [bool ...], "quatrains": [[row index x4] ...]}``
    (rows in order; style rows precede each quatrain when ``conditioned``), and the counts of the
    quatrains' rhyme schemes (from the records' ``schemes``)."""
    sonnets, schemes = [], collections.Counter()
    for i, record in enumerate(read_jsonl(path)):
        lines = _lines_of(record, path, i)
        quatrains = record.get("quatrains")
        if isinstance(quatrains, list) and quatrains and all(isinstance(q, list) for q in quatrains):
            parts = [list(q) for q in quatrains]
            rest = record.get("couplet") if isinstance(record.get("couplet"), list) else []
        else:
            parts = [lines[j:j + 4] for j in range(0, len(lines) - len(lines) % 4, 4)]
            rest = lines[len(lines) - len(lines) % 4:]
        if not all(isinstance(x, str) for p in parts for x in p) or not all(isinstance(x, str) for x in rest):
            raise PoevalError(f"{path}: record {i + 1}: 'quatrains' / 'couplet' must hold strings")
        for s in record.get("schemes") or []:
            if s in _style.SCHEMES:
                schemes[s] += 1
        rows, verse, texts, quats = [], [], [], []
        for k, part in enumerate(parts):
            if conditioned:
                rows.append(_style_of(record, path, i, "schemes", "meters", k, name))
                verse.append(False)
                texts.append(None)
            start = len(rows)
            rows.extend(tokenize(x) for x in part)
            verse.extend([True] * len(part))
            texts.extend(part)
            if len(part) == 4:
                quats.append(list(range(start, start + 4)))
        rows.extend(tokenize(x) for x in rest)
        verse.extend([True] * len(rest))
        texts.extend(rest)
        sonnets.append({"rows": rows, "verse": verse, "quatrains": quats, "text": texts})
    if not sonnets:
        raise PoevalError(f"pseudo-sonnet file {path} contains no sonnets")
    return sonnets, schemes


def read_dev(path, conditioned: bool, limit: int, name: str | None = None) -> list[dict]:
    """Dev quatrains in the same form as :func:`read_sonnets` (each its own context)."""
    out = []
    for i, record in enumerate(read_jsonl(path)):
        if len(out) >= limit:
            break
        lines = _lines_of(record, path, i)
        rows, verse, texts = [], [], []
        if conditioned:
            rows.append(_style_of(record, path, i, "scheme", "meter", None, name))
            verse.append(False)
            texts.append(None)
        rows.extend(tokenize(x) for x in lines)
        verse.extend([True] * len(lines))
        texts.extend(lines)
        start = len(rows) - len(lines)
        quats = [list(range(start, start + 4))] if len(lines) == 4 else []
        out.append({"rows": rows, "verse": verse, "quatrains": quats, "text": texts})
    if not out:
        raise PoevalError(f"dev file {path} contains no quatrains")
    return out


class Tables:
    """Word vocabulary, word "types" (vocabulary words, then out-of-vocabulary strings, so that the
    character encoder sees an unknown word's real spelling) and the character vocabulary."""

    def __init__(self, vocab: Vocab, chars: list[str], max_word_chars: int, style: tuple[str, ...] = ()):
        self.vocab = vocab
        self.chars = list(chars)
        self.cstoi = {c: i for i, c in enumerate(self.chars)}
        self.max_word_chars = max_word_chars
        self.specials = set(vocab.itos[:5]) | set(style)
        self.types: list[str] = list(vocab.itos)
        self.tstoi: dict[str, int] = {w: i for i, w in enumerate(self.types)}

    @staticmethod
    def char_list(texts) -> list[str]:
        seen = set()
        for t in texts:
            seen.update(t.lower())
        return ["<pad>", "<unk>", "<special>", *sorted(seen)]

    def char_ids(self, text: str) -> list[int]:
        return [self.cstoi.get(c, UNK_CHAR) for c in text]

    def word_chars(self, token: str) -> list[int]:
        if token in self.specials:
            return [SPECIAL_CHAR]
        return self.char_ids(token.lower()[-self.max_word_chars:]) or [UNK_CHAR]

    def type_id(self, token: str, add: bool = True) -> int:
        tid = self.tstoi.get(token)
        if tid is None:
            if not add:
                return self.vocab.unk
            tid = self.tstoi[token] = len(self.types)
            self.types.append(token)
        return tid

    def type_tensors(self):
        """(n_types, max_word_chars) character ids and lengths of every type."""
        ids = [self.word_chars(t) for t in self.types]
        width = max(len(x) for x in ids)
        mat = torch.zeros(len(ids), width, dtype=torch.long)
        for i, x in enumerate(ids):
            mat[i, : len(x)] = torch.tensor(x)
        return mat, torch.tensor([len(x) for x in ids])


def _encode_poem(poem: dict, tables: Tables, cfg: dict, add_types: bool) -> dict:
    """Type ids per row, pentameter character ids per verse, end-word type ids per quatrain."""
    rows = [[tables.type_id(t, add_types) for t in row] for row in poem["rows"]]
    pm = []
    for text, is_verse in zip(poem["text"], poem["verse"]):
        if is_verse:
            s = pm_text(text, cfg["pm_max_chars"])
            if any(ch.isalpha() for ch in s):
                pm.append(tables.char_ids(s))
    ends = []
    for q in poem["quatrains"]:
        words = [end_word(poem["rows"][r]) for r in q]
        if all(words):
            ends.append([tables.type_id(w, add_types) for w in words])
    return {"rows": rows, "pm": pm, "ends": ends}


# --------------------------------------------------------------------------------------------------
# model


def run_lstm(lstm: nn.LSTM, x, lengths, rows_per_bucket: int = 128, max_buckets: int = 4):
    """``lstm(x)`` (batch first, one direction) over right-padded rows, run in up to ``max_buckets`` groups
    of rows of similar length (at least ``rows_per_bucket`` rows each), each cut to its own longest row:
    far less padding is computed. Outputs past a row's length are undefined."""
    n, width, _ = x.shape
    buckets = min(max_buckets, n // rows_per_bucket)
    if buckets <= 1:
        return lstm(x)[0]
    order = torch.argsort(lengths, stable=True)
    out = x.new_zeros(n, width, lstm.hidden_size)
    for part in torch.tensor_split(order, buckets):
        if part.numel() == 0:
            continue
        w = int(lengths[part].max().clamp(min=1, max=width))
        out[part, :w] = lstm(x[part, :w])[0]
    return out


class BiLSTM(nn.Module):
    """A one-layer bidirectional LSTM over right-padded sequences. The backward direction runs a second
    LSTM over each sequence reversed within its length, so no packing is needed (packed sequences are
    several times slower to train on CPU)."""

    def __init__(self, input_size: int, hidden_size: int):
        super().__init__()
        self.fwd = nn.LSTM(input_size, hidden_size, batch_first=True)
        self.bwd = nn.LSTM(input_size, hidden_size, batch_first=True)

    def forward(self, x, lengths):
        """x (N, L, D), lengths (N,) >= 1 -> outputs (N, L, 2H) (undefined at padding: mask them), final states (N, 2H):
        the forward state after the last token and the backward state after the first."""
        n, width, _ = x.shape
        lengths = lengths.clamp(min=1, max=width)
        t = torch.arange(width).unsqueeze(0)
        valid = t < lengths.unsqueeze(1)
        rev = torch.where(valid, lengths.unsqueeze(1) - 1 - t, t)            # reverse the valid part
        of = run_lstm(self.fwd, x, lengths)
        ob = run_lstm(self.bwd, x.gather(1, rev.unsqueeze(-1).expand_as(x)), lengths)
        ob = ob.gather(1, rev.unsqueeze(-1).expand_as(ob))
        out = torch.cat([of, ob], dim=-1)
        last = of[torch.arange(n), lengths - 1]
        return out, torch.cat([last, ob[:, 0]], dim=-1)


class LanguageModel(nn.Module):
    def __init__(self, cfg: dict, n_words: int, pad: int):
        super().__init__()
        wd, ch, e, d, a = cfg["word_dim"], cfg["char_hidden"], cfg["enc_dim"], cfg["dec_dim"], cfg["attn_dim"]
        self.pad = pad
        self.embed = nn.Embedding(n_words, wd, padding_idx=pad)
        self.word_chars = BiLSTM(cfg["char_dim"], ch)
        self.encoder = BiLSTM(wd, e)
        self.sel_h = nn.Linear(2 * e, 2 * e)
        self.sel_s = nn.Linear(2 * e, 2 * e, bias=False)
        self.null = nn.Parameter(torch.zeros(2 * e))
        self.decoder = nn.LSTM(wd + 2 * ch, d, batch_first=True)
        self.att_q = nn.Linear(d, a, bias=False)
        self.att_k = nn.Linear(2 * e, a)
        self.ctx = nn.Linear(2 * e, d)
        self.gate = nn.Linear(2 * d, d)
        cutoffs = [c for c in cfg["softmax_cutoffs"] if 0 < c < n_words - 1]
        self.adaptive = None
        self.tied = bool(cfg["tie_embeddings"]) and not cutoffs
        self.out_proj = nn.Linear(d, wd)        # decoder state -> word space, then the softmax
        if cutoffs:   # adaptive softmax (Grave et al. 2017): frequent words in the head, rare ones in clusters
            self.adaptive = nn.AdaptiveLogSoftmaxWithLoss(wd, n_words, sorted(set(cutoffs)), div_value=4.0)
        elif self.tied:
            self.out_bias = nn.Parameter(torch.zeros(n_words))
        else:
            self.out = nn.Linear(wd, n_words)
        self.drop = nn.Dropout(cfg["dropout"])

    # character encodings of word types
    def char_encode(self, char_emb, chars, lengths):
        return self.word_chars(char_emb(chars), lengths)[1]

    def encode_verses(self, words, lengths):
        """words (N, L) in natural order -> selected states (N, L, 2E)."""
        x = self.drop(self.embed(words))
        out, s = self.encoder(x, lengths)
        return out * torch.sigmoid(self.sel_h(out) + self.sel_s(s).unsqueeze(1))

    def log_probs(self, h):
        """Next-word log-probabilities (usable as logits) for decoder outputs ``h`` (N, D)."""
        if self.adaptive is not None:
            return self.adaptive.log_prob(self.out_proj(h))
        return torch.log_softmax(self.logits(h), dim=-1)

    def nll_sum(self, h, target):
        if self.adaptive is not None:
            return self.adaptive(self.out_proj(h), target).loss * target.numel()
        return F.cross_entropy(self.logits(h), target, reduction="sum")

    def logits(self, h):
        if self.tied:
            return self.out_proj(h) @ self.embed.weight.t() + self.out_bias
        return self.out(self.out_proj(h))

    def mix(self, s, ctx):
        c = torch.tanh(self.ctx(ctx))
        g = torch.sigmoid(self.gate(torch.cat([s, c], dim=-1)))
        return (1 - g) * s + g * c


class PentameterModel(nn.Module):
    def __init__(self, cfg: dict):
        super().__init__()
        e, d, a = cfg["pm_enc_dim"], cfg["pm_dec_dim"], cfg["pm_attn_dim"]
        self.encoder = BiLSTM(cfg["char_dim"], e)
        self.decoder = nn.LSTMCell(2 * e, d)
        self.att_h = nn.Linear(2 * e, a, bias=False)
        self.att_s = nn.Linear(d, a)
        self.att_v = nn.Linear(a, 1, bias=False)
        self.out = nn.Linear(2 * e, 1)
        self.sigma = float(cfg["pm_sigma"])
        self.rep_scale, self.cov_scale = float(cfg["pm_repeat_scale"]), float(cfg["pm_cov_scale"])
        self.cov_threshold = float(cfg["pm_cov_threshold"])

    def forward(self, char_emb, chars, lengths, vowels):
        """Per-verse losses (N,) and their parts: chars (N, L) with lengths, vowels (N, L) bool."""
        h, _ = self.encoder(char_emb(chars), lengths)
        n, width, _ = h.shape
        mask = torch.arange(width).unsqueeze(0) < lengths.unsqueeze(1)
        pos = torch.arange(width, dtype=h.dtype).unsqueeze(0)
        keys = self.att_h(h)
        state = (h.new_zeros(n, self.decoder.hidden_size), h.new_zeros(n, self.decoder.hidden_size))
        prev = h.new_zeros(n, h.shape[-1])
        cum = h.new_zeros(n, width)
        rep = h.new_zeros(n)
        mu = None
        logits = []
        for _ in range(N_STRESS):
            state = self.decoder(prev, state)
            e = self.att_v(torch.tanh(keys + self.att_s(state[0]).unsqueeze(1))).squeeze(-1)
            a = torch.softmax(e.masked_fill(~mask, -1e9), dim=-1)
            p = (a * pos).sum(-1)
            mu = p if mu is None else torch.maximum(mu, p)      # the window never moves back
            w = a * torch.exp(-((pos - mu.unsqueeze(1)) ** 2) / (2 * self.sigma ** 2)) * mask
            f = w / w.sum(-1, keepdim=True).clamp_min(1e-8)
            rep = rep + torch.minimum(f, cum).sum(-1)
            cum = cum + f
            prev = torch.bmm(f.unsqueeze(1), h).squeeze(1)
            logits.append(self.out(prev).squeeze(-1))
        logits = torch.stack(logits, dim=1)
        target = logits.new_tensor(STRESS_TARGET).expand_as(logits)
        ce = F.binary_cross_entropy_with_logits(logits, target, reduction="none").sum(-1)
        cov = F.relu(self.cov_threshold * vowels.to(h.dtype) - cum).sum(-1)
        loss = ce + self.rep_scale * rep + self.cov_scale * cov
        return loss, {"ce": ce, "repeat": rep, "coverage": cov}


class RhymeModel(nn.Module):
    def __init__(self, cfg: dict):
        super().__init__()
        self.encoder = BiLSTM(cfg["char_dim"], cfg["rm_dim"])
        self.delta = float(cfg["rm_delta"])

    def embed(self, char_emb, chars, lengths):
        return F.normalize(self.encoder(char_emb(chars), lengths)[1], dim=-1)

    def loss(self, u, quatrains, negatives):
        """u (W, H) normalised encodings; quatrains (Q, 4) and negatives (Q, K) index u. Mean margin loss
        over the 4 targets of every quatrain."""
        uq = u[quatrains]                                   # (Q, 4, H)
        sim = uq @ uq.transpose(1, 2)                       # (Q, 4, 4)
        others = sim.masked_fill(torch.eye(4, dtype=torch.bool), -2.0)
        parts = [others]
        if negatives.shape[1]:
            parts.append(uq @ u[negatives].transpose(1, 2))  # (Q, 4, K)
        q = torch.cat(parts, dim=-1)
        top = q.topk(2, dim=-1).values
        return F.relu(self.delta - top[..., 0] + top[..., 1]).mean()


class DeepSpeare(nn.Module):
    def __init__(self, cfg: dict, n_words: int, n_chars: int, pad: int):
        super().__init__()
        self.chars = nn.Embedding(n_chars, cfg["char_dim"], padding_idx=PAD_CHAR)
        self.lm = LanguageModel(cfg, n_words, pad)
        self.pentameter = PentameterModel(cfg)
        self.rhyme = RhymeModel(cfg)

    PARTS = ("chars", "lm", "pentameter", "rhyme")

    def states(self) -> dict:
        return {k: {n: t.detach().clone() for n, t in getattr(self, k).state_dict().items()} for k in self.PARTS}

    def load_states(self, states: dict) -> None:
        missing = [k for k in self.PARTS if k not in states]
        if missing:
            raise PoevalError(f"checkpoint lacks the weights of {missing}")
        for k in self.PARTS:
            getattr(self, k).load_state_dict(states[k])


# --------------------------------------------------------------------------------------------------
# batches and losses


def _pad2(seqs: list[list[int]], value: int = 0, min_width: int = 1):
    width = max([min_width, *map(len, seqs)])
    out = torch.full((len(seqs), width), value, dtype=torch.long)
    for i, s in enumerate(seqs):
        if s:
            out[i, : len(s)] = torch.tensor(s, dtype=torch.long)
    return out, torch.tensor([len(s) for s in seqs], dtype=torch.long)


class Batcher:
    """Turns encoded poems into tensors, and computes the joint losses of a batch."""

    def __init__(self, model: DeepSpeare, tables: Tables, cfg: dict):
        self.model, self.tables, self.cfg = model, tables, cfg
        self.vocab = tables.vocab
        self.n_words = len(tables.vocab)
        self.type_chars, self.type_len = tables.type_tensors()

    def words_of(self, types):
        return torch.where(types < self.n_words, types, torch.full_like(types, self.vocab.unk))

    def char_vectors(self, types):
        """Character encodings of the types in ``types`` (any shape), computed once per distinct type."""
        uniq, inv = torch.unique(types, return_inverse=True)
        enc = self.model.lm.char_encode(self.model.chars, self.type_chars[uniq], self.type_len[uniq])
        return enc[inv]

    def lm_loss(self, poems: list[dict]):
        """Summed next-token cross-entropy over every row of ``poems`` (each row decoded right to left
        given the poem's earlier rows) and the number of predicted tokens."""
        m = self.model.lm
        vocab = self.vocab
        n_poems = len(poems)
        n_rows = max(len(p["rows"]) for p in poems)
        flat = [p["rows"][k] if k < len(p["rows"]) else [] for p in poems for k in range(n_rows)]
        exists = torch.tensor([k < len(p["rows"]) for p in poems for k in range(n_rows)])
        enc_types, enc_len = _pad2(flat, vocab.pad)
        le = enc_types.shape[1]
        mem = m.encode_verses(self.words_of(enc_types), enc_len)            # (P*V, Le, 2E)
        mem = mem.reshape(n_poems, n_rows * le, -1)
        mem = torch.cat([m.null.expand(n_poems, 1, -1), mem], dim=1)        # (P, 1 + V*Le, 2E)
        # row k sees the tokens of rows j < k (and the null slot)
        tok_ok = (torch.arange(le).unsqueeze(0) < enc_len.unsqueeze(1)).view(n_poems, n_rows, le)
        earlier = torch.ones(n_rows, n_rows, dtype=torch.bool).tril(-1)      # [k, j]: j < k
        vis = (earlier.view(1, n_rows, n_rows, 1) & tok_ok.view(n_poems, 1, n_rows, le))
        vis = torch.cat([torch.ones(n_poems, n_rows, 1, dtype=torch.bool), vis.view(n_poems, n_rows, -1)], dim=-1)

        dec_in = [[vocab.bos, *row[::-1]] for row in flat]
        dec_types, _ = _pad2(dec_in, vocab.pad)
        target_types, _ = _pad2([[*row[::-1], vocab.eol] if e else [] for row, e in zip(flat, exists.tolist())],
                                vocab.pad, dec_types.shape[1])
        target = self.words_of(target_types).masked_fill(target_types == vocab.pad, vocab.pad)
        x = torch.cat([m.embed(self.words_of(dec_types)), self.char_vectors(dec_types)], dim=-1)
        s = run_lstm(m.decoder, m.drop(x), enc_len + 1)                      # (P*V, Ld, D)
        ld = s.shape[1]
        s = s.reshape(n_poems, n_rows * ld, -1)
        scores = m.att_q(s) @ m.att_k(mem).transpose(1, 2)                   # (P, V*Ld, M)
        vis_rows = vis.repeat_interleave(ld, dim=1)                          # (P, V*Ld, M)
        att = torch.softmax(scores.masked_fill(~vis_rows, -1e9), dim=-1)
        ctx = att @ mem                                                      # (P, V*Ld, 2E)
        sel = (target != vocab.pad).view(n_poems, n_rows * ld)               # predicted positions only
        h = m.mix(s[sel], ctx[sel])
        loss = m.nll_sum(m.drop(h), target.view(n_poems, n_rows * ld)[sel])
        return loss, int(sel.sum())

    def pm_loss(self, poems: list[dict]):
        lines = [x for p in poems for x in p["pm"]]
        if not lines:
            return torch.zeros(())
        return self.pm_lines(lines).mean()

    def pm_lines(self, lines: list[list[int]]):
        chars, lengths = _pad2(lines, PAD_CHAR)
        vowels = self._vowel_ids()[chars]
        loss, _ = self.model.pentameter(self.model.chars, chars, lengths, vowels)
        return loss

    def _vowel_ids(self):
        if not hasattr(self, "_vowel_table"):
            self._vowel_table = torch.tensor([i > SPECIAL_CHAR and is_vowel(c)
                                              for i, c in enumerate(self.tables.chars)])
        return self._vowel_table

    def rhyme_embed(self, type_ids):
        ids = torch.as_tensor(type_ids, dtype=torch.long)
        return self.model.rhyme.embed(self.model.chars, self.type_chars[ids], self.type_len[ids])

    def rm_loss(self, poems: list[dict], rng: random.Random | None):
        """Margin loss over the quatrains of ``poems``; negatives: ``rm_neg`` end words of other poems'
        quatrains (random with ``rng``, else the following quatrains', for a fixed dev score)."""
        quats = [(i, q) for i, p in enumerate(poems) for q in p["ends"]]
        if not quats:
            return torch.zeros(())
        words = sorted({w for _, q in quats for w in q})
        index = {w: j for j, w in enumerate(words)}
        k = self.cfg["rm_neg"]
        negs = []
        for qi, (pi, q) in enumerate(quats):
            pool = [j for j, (pj, _) in enumerate(quats) if pj != pi]
            if not pool:
                negs.append([])
                continue
            if rng is not None:
                picks = [(pool[rng.randrange(len(pool))], rng.randrange(4)) for _ in range(k)]
            else:
                picks = [(pool[(qi + t) % len(pool)], (qi + t) % 4) for t in range(k)]
            negs.append([index[quats[j][1][v]] for j, v in picks])
        if any(len(n) != len(negs[0]) for n in negs):
            negs = [[] for _ in negs]
        u = self.rhyme_embed(words)
        qt = torch.tensor([[index[w] for w in q] for _, q in quats], dtype=torch.long)
        nt = torch.tensor(negs, dtype=torch.long).view(len(quats), -1)
        return self.model.rhyme.loss(u, qt, nt)


# --------------------------------------------------------------------------------------------------
# training


def _evaluate(batcher: Batcher, dev: list[dict], batch_size: int) -> dict:
    model = batcher.model
    model.eval()
    total, count, pm, rm, n_pm, n_rm = 0.0, 0, 0.0, 0.0, 0, 0
    with torch.no_grad():
        for start in range(0, len(dev), batch_size):
            part = dev[start:start + batch_size]
            loss, n = batcher.lm_loss(part)
            total += float(loss)
            count += n
            lines = [x for p in part for x in p["pm"]]
            if lines:
                pm += float(batcher.pm_lines(lines).sum())
                n_pm += len(lines)
            nq = sum(len(p["ends"]) for p in part)
            if nq:
                rm += float(batcher.rm_loss(part, None)) * nq
                n_rm += nq
    model.train()
    return {"dev_loss": total / max(count, 1), "dev_pm_loss": pm / n_pm if n_pm else None,
            "dev_rm_loss": rm / n_rm if n_rm else None}


def train(sonnets: str, dev: str, out_dir: str, model_cfg: dict, train_cfg: dict, *, lang: str,
          word2vec: str | None = None, threads: int = 1, name: str | None = None, progress: bool = True) -> dict:
    """Train DeepSpeare's language, pentameter and rhyme models jointly on pseudo-sonnets; keep the weights
    with the best dev LM loss; write ``out_dir`` atomically (:func:`.common.save_checkpoint`). Returns the
    log's summary."""
    cfg = resolve_model_cfg(model_cfg, name)
    tcfg = resolve_train_cfg(train_cfg)
    if not isinstance(lang, str) or not lang:
        raise PoevalError("train: lang must be a language code such as 'en' or 'de'")
    if word2vec is not None and not Path(word2vec).is_file():
        raise PoevalError(f"word2vec file not found: {word2vec}")
    conditioned = cfg["conditioned"]
    train_poems, scheme_counts = read_sonnets(sonnets, conditioned, name)
    dev_poems = read_dev(dev, conditioned, tcfg["eval_quatrains"], name)

    # one thread whatever `threads` says: torch's multithreaded CPU kernels for these small LSTM ops
    # sum in a varying order, so two identical runs gave different weights with 2 threads
    rng = engine.seed(tcfg["seed"], 1)

    style = _style.STYLE_TOKENS if conditioned else ()
    verse_tokens = [row for p in train_poems for row, v in zip(p["rows"], p["verse"]) if v]
    vocab = Vocab.build(verse_tokens, min_count=cfg["min_count"], max_size=cfg["max_vocab"], extra=style)
    chars = Tables.char_list([t for row in verse_tokens for t in row] +
                             [x for p in train_poems for x, v in zip(p["text"], p["verse"]) if v])
    tables = Tables(vocab, chars, cfg["max_word_chars"], style)
    train_enc = [_encode_poem(p, tables, cfg, True) for p in train_poems]
    dev_enc = [_encode_poem(p, tables, cfg, True) for p in dev_poems]

    model = DeepSpeare(cfg, len(vocab), len(chars), vocab.pad)
    w2v = init_embedding(model.lm.embed, vocab, word2vec)
    batcher = Batcher(model, tables, cfg)

    def loss(batch: list[int]):
        poems = [train_enc[i] for i in batch]
        lm_sum, n_tok = batcher.lm_loss(poems)
        pm = batcher.pm_loss(poems)
        rm = batcher.rm_loss(poems, rng)
        return lm_sum / max(n_tok, 1) + pm + rm, {"lm": float(lm_sum.detach()), "targets": n_tok, "tokens": n_tok,
                                                   "pm": float(pm.detach()), "rm": float(rm.detach()), "n": 1}

    def train_entry(run: dict) -> dict:
        return {"train_loss": run["lm"] / run["targets"] if run.get("targets") else None,
                "train_pm_loss": run["pm"] / run["n"] if run.get("n") else None,
                "train_rm_loss": run["rm"] / run["n"] if run.get("n") else None}

    loop = engine.Loop(
        model=model, stream=engine.BatchStream([1] * len(train_enc), tcfg["batch_size"], 0, rng), loss=loss,
        evaluate=lambda: _evaluate(batcher, dev_enc, 2 * tcfg["batch_size"]), train_entry=train_entry,
        # embeddings (words, shared characters) are not decayed either
        no_decay=lambda n, p: p.ndim < 2 or "embed" in n or n == "chars.weight",
        lr_decay=False, eval_at_start=True, desc="train deepspeare",
    )
    key = engine.fingerprint({"sonnets": sonnets, "dev": dev, "word2vec": word2vec},
                             {"model_cfg": cfg, "train_cfg": tcfg, "lang": lang})
    result = engine.run(loop, tcfg, engine.Resume(out_dir, key), progress)
    evals = result["evals"]
    best = next(e for e in evals if e["step"] == result["summary"]["best_step"])

    def last(key: str):
        return next((e[key] for e in reversed(evals) if e[key] is not None), None)

    config = {**cfg, "lang": lang, "chars": chars, "scheme_counts": dict(sorted(scheme_counts.items()))}
    summary = {
        "best_dev_pm_loss": best["dev_pm_loss"],
        "best_dev_rm_loss": best["dev_rm_loss"],
        "final_train_loss": last("train_loss"),
        "final_train_pm_loss": last("train_pm_loss"),
        "final_train_rm_loss": last("train_rm_loss"),
        "n_params": sum(p.numel() for p in model.parameters()),
        "n_train": len(train_enc),
        "n_train_verses": sum(sum(p["verse"]) for p in train_poems),
        "n_dev_eval": len(dev_enc),
        "vocab_size": len(vocab),
        "n_chars": len(chars),
        "word2vec_covered": w2v["word2vec_covered"],
        "threads": int(threads),
    }
    log = engine.training_log(result, summary, train_stamp(sonnets, dev, model_cfg, train_cfg, word2vec=word2vec),
                              model_cfg=model_cfg, train_cfg=tcfg)
    save_checkpoint(out_dir, ARCH, config, vocab, model.states(), log)
    return log["summary"]


# --------------------------------------------------------------------------------------------------
# loading and generation


class Loaded:
    """A trained DeepSpeare checkpoint: the model (eval mode), its tables and config, with small helpers
    to score text with each component."""

    def __init__(self, model_dir: str | Path):
        arch, config, vocab, states = load_checkpoint(model_dir)
        if arch != ARCH:
            raise PoevalError(f"{model_dir} holds a {arch!r} model, not {ARCH!r}")
        self.cfg = config
        self.style = _style.STYLE_TOKENS if config["conditioned"] else ()
        self.tables = Tables(vocab, config["chars"], config["max_word_chars"], self.style)
        self.vocab = vocab
        self.model = DeepSpeare(config, len(vocab), len(config["chars"]), vocab.pad)
        self.model.load_states(states)
        self.model.eval()
        self.batcher = Batcher(self.model, self.tables, config)

    def _word_tensors(self, words: list[str]):
        return _pad2([self.tables.word_chars(w) for w in words], PAD_CHAR)

    @torch.no_grad()
    def rhyme_embeddings(self, words: list[str]):
        chars, lengths = self._word_tensors(words)
        return self.model.rhyme.embed(self.model.chars, chars, lengths)

    @torch.no_grad()
    def rhyme_similarity(self, word_a: str, word_b: str) -> float:
        """The rhyme model's cosine similarity of two words' endings."""
        u = self.rhyme_embeddings([word_a, word_b])
        return float(u[0] @ u[1])

    @torch.no_grad()
    def pentameter_loss(self, verses: list[str]) -> list[float]:
        """The pentameter model's loss (cross-entropy + penalties) of each verse; lower = more iambic."""
        lines = [self.tables.char_ids(pm_text(v, self.cfg["pm_max_chars"]) or " ") for v in verses]
        return self.batcher.pm_lines(lines).tolist()

    @torch.no_grad()
    def lm_loss(self, quatrains: list[list[str]]) -> float:
        """Per-token cross-entropy of the language model on ``quatrains`` (each its own context)."""
        poems = []
        for q in quatrains:
            rows = [tokenize(x) for x in q]
            poems.append({"rows": [[self.tables.type_id(t, add=False) for t in r] for r in rows]})
        loss, n = self.batcher.lm_loss(poems)
        return float(loss) / max(n, 1)


# Stopwords the repetition constraints let recur: NLTK's English list (nltk.corpus.stopwords.words("english"),
# which the original's sonnet_gen.py loads) plus the original's custom_stopwords, embedded because NLTK's
# corpora are not a poeval dependency. German has no original; poeval's own short list of function words.
STOPWORDS = {
    "en": frozenset("""i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself
        yourselves he him his himself she she's her hers herself it it's its itself they them their theirs
        themselves what which who whom this that that'll these those am is are was were be been being have has
        had having do does did doing a an the and but if or because as until while of at by for with about
        against between into through during before after above below to from up down in out on off over under
        again further then once here there when where why how all any both each few more most other some such
        no nor not only own same so than too very s t can will just don don't should should've now d ll m o re
        ve y ain aren aren't couldn couldn't didn didn't doesn doesn't hadn hadn't hasn hasn't haven haven't isn
        isn't ma mightn mightn't mustn mustn't needn needn't shan shan't shouldn shouldn't wasn wasn't weren
        weren't won won't wouldn wouldn't""".split()) | {"thee", "thou", "thy", "'d", "'s", "'ll", "must", "shall"},
    "de": frozenset("""der die das des dem den ein eine einer eines einem einen und oder aber doch denn wenn als
        wie so auch nur noch schon nicht kein keine ich du er sie es wir ihr mich dich sich uns euch mir dir ihm
        ihn ihnen mein meine dein deine sein seine ihre unser in im an am auf aus bei mit nach von vom zu zum zur
        durch für um über unter vor hinter zwischen ist bin bist sind war waren wird werden hat habe hast haben
        hatte kann muss soll will da dann wo was wer dass ob nun hier dort""".split()),
}
# the original's avoid_symbols: never generated
AVOID_SYMBOLS = frozenset("()[]“‘”’")
# the original's rhyme_threshold_neg: a verse that starts a new rhyme must not rhyme with the verse before
NON_RHYME_THRESHOLD = 0.7
# the original's reset(): each quatrain's scheme uniformly from these three
ORIGINAL_SCHEMES = ("aabb", "abab", "abba")


def constrained_draw(probs, allowed, attempts: int):
    """One draw per row of ``probs`` restricted to ``allowed``, and whether the row failed: the original's
    rejection loop (``sample_word``: up to ``attempts`` draws from ``probs`` until one is allowed) in one step.
    Its accepted word follows ``probs`` renormalised over ``allowed``, and it fails with probability
    ``(1 - q) ** attempts``, ``q`` the allowed mass."""
    kept = probs * allowed
    q = kept.sum(-1) / probs.sum(-1)
    failed = torch.rand(q.shape) < (1 - q).pow(attempts)
    nxt = draw(torch.where(failed.unsqueeze(1), probs, kept)).squeeze(1)
    return nxt, failed


def draw_schemes(n: int, mode: str, counts: dict | None = None) -> list[str]:
    """``n`` quatrain schemes: ``uniform`` over aabb/abab/abba (the original's ``random.choice``), or
    ``training``: by the training sonnets' quatrain scheme ``counts`` (uniform over the three if none)."""
    if mode == "uniform" or not counts:
        return [ORIGINAL_SCHEMES[i] for i in torch.randint(len(ORIGINAL_SCHEMES), (n,)).tolist()]
    names = sorted(counts)
    picks = torch.multinomial(torch.tensor([float(counts[s]) for s in names]), n, replacement=True).tolist()
    return [names[i] for i in picks]


def rhyme_targets(scheme: str, v: int) -> tuple[int | None, int | None]:
    """Verse ``v``'s rhyme partner (the last earlier verse of its letter) and, when its letter is new, the
    verse it must not rhyme with (the one before it): the original's ``rhyme_pttn`` pos/neg lists for
    aabb, abab and abba."""
    earlier = [u for u in range(v) if scheme[u] == scheme[v]]
    if earlier:
        return earlier[-1], None
    return None, (v - 1 if v else None)


def rerank_probs(pm_losses, temperature: float):
    """The probability of keeping each candidate verse: ``softmax(-pentameter loss / temperature)`` (the
    original's ``sent_temp`` = 0.1)."""
    return torch.softmax(-torch.as_tensor(pm_losses, dtype=torch.float64) / temperature, dim=0)


def rerank(pm_losses, temperature: float, mode: str) -> int:
    """Index of the kept candidate: drawn by :func:`rerank_probs` (``sample``) or the lowest loss (``best``)."""
    if mode == "best" or len(pm_losses) == 1:
        return int(torch.as_tensor(pm_losses).argmin())
    return int(torch.multinomial(rerank_probs(pm_losses, temperature), 1))


# a quatrain is started over after these failures (the original's reset() when a candidate verse fails)
RESTART_REASONS = ("empty_line", "constraints")


class Generator:
    """Batched quatrain generation (module docstring, "Generation")."""

    def __init__(self, loaded: Loaded, temperature: float, top_p: float, top_k: int):
        self.L = loaded
        cfg, vocab, model = {**MODEL_DEFAULTS, **loaded.cfg}, loaded.vocab, loaded.model
        self.cfg, self.vocab, self.lm = cfg, vocab, model.lm
        self.temperature, self.top_p, self.top_k = temperature, top_p, top_k
        n = len(vocab)
        words = vocab.itos
        self.style_ids = [vocab.stoi[t] for t in loaded.style]
        special = {vocab.pad, vocab.unk, vocab.bos, vocab.eos, vocab.eol, *self.style_ids}
        self.banned = sorted({vocab.pad, vocab.bos, vocab.eos, *self.style_ids})
        self.is_word = torch.tensor([i not in special and is_word(w) for i, w in enumerate(words)])
        lower: dict[str, int] = {}
        self.lower_id = torch.tensor([lower.setdefault(w.lower(), len(lower)) for w in words])
        # repetition constraints (module docstring): per lower-cased type, may it recur once (stopword or
        # punctuation)? which types are never drawn (the original's avoid_symbols and <unk>)?
        stop = STOPWORDS.get(cfg.get("lang", "en"), frozenset())
        free = torch.zeros(len(lower), dtype=torch.bool)
        never = torch.zeros(len(lower), dtype=torch.bool)
        for w, i in lower.items():
            free[i] = w in stop or not is_word(w)
            never[i] = w in AVOID_SYMBOLS
        never[self.lower_id[vocab.unk]] = True
        self.free, self.never = free, never
        with torch.no_grad():
            chars, lengths = loaded.batcher.type_chars[:n], loaded.batcher.type_len[:n]
            self.char_table = self.lm.char_encode(model.chars, chars, lengths)
            self.rhyme_table = model.rhyme.embed(model.chars, chars, lengths) * self.is_word.unsqueeze(1)
        self.scheme_counts = cfg.get("scheme_counts") or {}
        uniform = cfg["scheme_draw"] == "uniform"
        self.scheme_source = ("uniform (aabb, abab, abba)" if uniform or not self.scheme_counts
                              else "training sonnets")
        if self.style_ids:
            self.scheme_source = "uniform (aabb, abab, abba), prompted" if uniform else "sampled style token"
            self.meter_ids = [vocab.stoi[t] for t in loaded.style if t.startswith("<meter=")]
            self.scheme_tok = [vocab.stoi[t] for t in loaded.style if t.startswith("<scheme=")]

    # -- one decoder step over rows ``idx``
    def _step(self, tok, state, keys, mem, vis):
        lm = self.lm
        x = torch.cat([lm.embed(tok), self.char_table[tok]], dim=-1).unsqueeze(1)
        s, state = lm.decoder(x, state)
        s = s[:, 0]
        scores = torch.bmm(keys, lm.att_q(s).unsqueeze(-1)).squeeze(-1).masked_fill(~vis, -1e9)
        ctx = torch.bmm(torch.softmax(scores, dim=-1).unsqueeze(1), mem).squeeze(1)
        return lm.log_probs(lm.mix(s, ctx)), state

    def _encode(self, rows: list[list[int]]):
        words, lengths = _pad2(rows, self.vocab.pad)
        enc = self.lm.encode_verses(words, lengths)
        return enc, torch.arange(words.shape[1]).unsqueeze(0) < lengths.unsqueeze(1)

    def _style_rows(self, mem, vis, schemes: list[str] | None):
        """Each quatrain's style line, decoded right to left: the meter sampled, then the scheme token, which is
        ``schemes``' when given (a uniformly drawn scheme is the prompt) and else sampled too."""
        p = mem.shape[0]
        keys = self.lm.att_k(mem)
        tok = torch.full((p,), self.vocab.bos, dtype=torch.long)
        logp, state = self._step(tok, None, keys, mem, vis)
        meter = draw(self._only(logp, self.meter_ids)).squeeze(1)
        if schemes is not None:
            scheme = torch.tensor([self.vocab.stoi[f"<scheme={s}>"] for s in schemes])
        else:
            logp, _ = self._step(meter, state, keys, mem, vis)
            scheme = draw(self._only(logp, self.scheme_tok)).squeeze(1)
        return [[int(sc), int(me)] for sc, me in zip(scheme, meter)]     # natural order: scheme, meter

    def _only(self, logp, allowed: list[int]):
        mask = torch.ones(logp.shape[-1], dtype=torch.bool)
        mask[allowed] = False
        return filtered_probs(logp.masked_fill(mask, -math.inf), self.temperature, self.top_p, self.top_k)

    def _logits(self, logp):
        """Logits and temperature for :func:`.common.filtered_probs`: the decoding config's temperature, or
        with ``word_temperature`` [low, high] one drawn uniformly for each row and word (the original's
        ``np.random.uniform(temp_min, temp_max)`` in ``sample_sent``)."""
        if self.cfg["word_temperature"] is None:
            return logp, self.temperature
        low, high = self.cfg["word_temperature"]
        return logp / torch.empty(logp.shape[0], 1).uniform_(low, high), 1.0

    def _allowed(self, seen, ends, recent):
        """Rows x vocabulary: what the original's ``sample_sent`` lets a verse draw next, given the lower-cased
        type counts ``seen`` of the quatrain so far (this verse included), its earlier end words ``ends`` and the
        verse's last three tokens ``recent``: no word twice unless a stopword or punctuation, nothing three
        times, no earlier end word, none of the last three tokens, no avoided symbol."""
        banned = (seen >= 2) | ((seen >= 1) & ~self.free) | ends | self.never
        allowed = ~banned[:, self.lower_id]
        return allowed.scatter_(1, recent, False)

    def _rhyme_allowed(self, pos, neg):
        """Rows x vocabulary: the words that may end a verse whose end word must rhyme with ``pos`` (cosine >=
        rhyme_threshold) and must not rhyme with ``neg`` (cosine <= 0.7), ids or -1 for none; punctuation, which
        precedes the end word in generation order, stays allowed, ``<eol>`` does not (the verse needs its end
        word; the original rejects an ``<eos>`` as not rhyming)."""
        ok = torch.ones(pos.shape[0], self.rhyme_table.shape[0], dtype=torch.bool)
        for target, keep in ((pos, lambda s: s >= float(self.cfg["rhyme_threshold"])),
                             (neg, lambda s: s <= NON_RHYME_THRESHOLD)):
            rows = (target >= 0).nonzero().squeeze(1)
            if rows.numel():
                sims = self.rhyme_table[target[rows]] @ self.rhyme_table.T
                ok[rows] &= keep(sims)
        ok |= ~self.is_word
        ok[:, self.vocab.eol] = False
        return ok

    def _decode(self, keys, mem, vis, budget, pos, neg, seen, ends):
        """Sample one verse per row (right to left) under the repetition and rhyme constraints. Returns the
        token buffer (R, T) in generation order, lengths, finished and failed flags and end-word ids; ``seen``
        is updated in place with each row's tokens."""
        r = budget.shape[0]
        steps = int(budget.max()) if r else 0
        buf = torch.full((r, max(steps, 1)), self.vocab.pad, dtype=torch.long)
        length = torch.zeros(r, dtype=torch.long)
        finished = torch.zeros(r, dtype=torch.bool)
        failed = torch.zeros(r, dtype=torch.bool)
        alive = budget > 0
        end = torch.full((r,), -1, dtype=torch.long)
        rhymed = (pos >= 0) | (neg >= 0)
        d = self.lm.decoder.hidden_size
        h = torch.zeros(1, r, d)
        c = torch.zeros(1, r, d)
        tok = torch.full((r,), self.vocab.bos, dtype=torch.long)
        pad_col = torch.full((r, 3), self.vocab.pad, dtype=torch.long)
        attempts = int(self.cfg["rhyme_attempts"])
        # rows per chunk: a (rows x vocabulary) float tensor stays below ~16 MB, so that the allocator reuses
        # its memory instead of mapping fresh pages at every step (large vocabularies: much system time)
        chunk = max(64, (1 << 22) // len(self.vocab))
        for t in range(steps):
            live = alive.nonzero().squeeze(1)
            if live.numel() == 0:
                break
            recent = torch.cat([pad_col, buf[:, :t]], dim=1)[:, -3:]
            for idx in torch.split(live, chunk):
                logp, (hn, cn) = self._step(tok[idx], (h[:, idx], c[:, idx]), keys[idx], mem[idx], vis[idx])
                h[:, idx], c[:, idx] = hn, cn
                probs = filtered_probs(*self._logits(logp), self.top_p, self.top_k, self.banned)
                allowed = self._allowed(seen[idx], ends[idx], recent[idx])
                first = (end[idx] < 0) & rhymed[idx]
                if first.any():      # the end word (first word drawn) must meet the scheme
                    allowed[first] &= self._rhyme_allowed(pos[idx[first]], neg[idx[first]])
                nxt, fail = constrained_draw(probs, allowed, attempts)
                failed[idx[fail]] = True
                new_end = (end[idx] < 0) & self.is_word[nxt]
                end[idx[new_end]] = nxt[new_end]
                buf[idx, t] = nxt
                eol = (nxt == self.vocab.eol) & ~fail
                finished[idx[eol]] = True
                grow = ~eol & ~fail
                length[idx[grow]] += 1
                seen[idx[grow], self.lower_id[nxt[grow]]] += 1
                tok[idx] = nxt
                stop = eol | fail | (t + 1 >= budget[idx])
                alive[idx[stop]] = False
        return buf, length, finished, failed, end

    @torch.no_grad()
    def generate(self, size: int, max_tokens: int) -> list[dict]:
        """``size`` quatrain attempts: each ``{"lines" or None, "reason", "scheme", "constrained",
        "restarts"}``. A quatrain that fails (a candidate verse empty or a word rejected ``rhyme_attempts``
        times) is started over with a new scheme, up to ``restarts`` times, as the original's ``reset()``."""
        results: list[dict] = [{} for _ in range(size)]
        todo = list(range(size))
        constrained = [0] * size
        for attempt in range(int(self.cfg["restarts"]) + 1):
            again = []
            for p, res in zip(todo, self._quatrains(len(todo), max_tokens)):
                constrained[p] += res["constrained"]
                results[p] = {**res, "constrained": constrained[p], "restarts": attempt}
                if res["reason"] in RESTART_REASONS:
                    again.append(p)
            todo = again
            if not todo:
                break
        return results

    def _quatrains(self, size: int, max_tokens: int) -> list[dict]:
        """One try at ``size`` quatrains, verse by verse, ``candidates`` verses per quatrain and verse."""
        cfg, vocab, lm = self.cfg, self.vocab, self.lm
        k = int(cfg["candidates"])
        mem = lm.null.view(1, 1, -1).expand(size, 1, -1)
        vis = torch.ones(size, 1, dtype=torch.bool)
        uniform = cfg["scheme_draw"] == "uniform"
        schemes = draw_schemes(size, cfg["scheme_draw"], self.scheme_counts) if uniform or not self.style_ids \
            else None
        if self.style_ids:
            styles = self._style_rows(mem, vis, schemes)
            enc, m = self._encode(styles)
            mem, vis = torch.cat([mem, enc], dim=1), torch.cat([vis, m], dim=1)
            schemes = [vocab[s[0]][len("<scheme="):-1] for s in styles]
        used = torch.zeros(size, dtype=torch.long)
        valid = [True] * size
        results = [{"lines": [], "reason": None, "scheme": s, "constrained": 0} for s in schemes]
        ends = torch.full((size, 4), -1, dtype=torch.long)
        seen = torch.zeros(size, len(self.free), dtype=torch.uint8)      # lower-cased type counts
        end_mask = torch.zeros(size, len(self.free), dtype=torch.bool)
        rep = lambda x: x.repeat_interleave(k, dim=0)  # noqa: E731
        for v in range(4):
            pos = torch.full((size,), -1, dtype=torch.long)
            neg = torch.full((size,), -1, dtype=torch.long)
            for p, sch in enumerate(schemes):
                u_pos, u_neg = rhyme_targets(sch, v)
                if valid[p] and u_pos is not None:
                    pos[p] = ends[p, u_pos]
                    results[p]["constrained"] += 1
                if valid[p] and u_neg is not None:
                    neg[p] = ends[p, u_neg]
            budget = (max_tokens - used).clamp(min=0)
            budget[torch.tensor([not x for x in valid])] = 0
            cand_seen = rep(seen)
            buf, length, finished, failed, end = self._decode(
                rep(lm.att_k(mem)), rep(mem), rep(vis), rep(budget), rep(pos), rep(neg), cand_seen, rep(end_mask))
            toks = [buf[i, : length[i]].tolist()[::-1] for i in range(buf.shape[0])]
            words = [[vocab[t] for t in row] for row in toks]
            ok = [bool(finished[i]) and verse_ok(words[i]) for i in range(len(words))]
            texts = [detokenize(w) if o else "" for w, o in zip(words, ok)]
            pm = torch.full((len(texts),), math.inf)
            cand = [i for i, o in enumerate(ok) if o]
            if cand:
                lines = [self.L.tables.char_ids(pm_text(texts[i], cfg["pm_max_chars"]) or " ") for i in cand]
                pm[cand] = self.L.batcher.pm_lines(lines)
            chosen_rows = []
            for p in range(size):
                rows = range(p * k, (p + 1) * k)
                reason = None
                if not valid[p]:
                    pass
                elif any(bool(failed[i]) for i in rows):
                    reason = "constraints"
                elif any(bool(finished[i]) and not ok[i] for i in rows):
                    reason = "empty_line"
                elif not any(ok[i] for i in rows):
                    reason = "truncated"
                if not valid[p] or reason:
                    valid[p] = False
                    results[p]["reason"] = results[p]["reason"] or reason
                    chosen_rows.append([])
                    continue
                pool = [i for i in rows if ok[i]]
                pick = pool[rerank(pm[pool], float(cfg["rerank_temperature"]), cfg["rerank"])]
                results[p]["lines"].append(texts[pick])
                ends[p, v] = end[pick]
                end_mask[p, self.lower_id[end[pick]]] = True
                seen[p] = cand_seen[pick]
                used[p] += int(length[pick]) + 1
                chosen_rows.append(toks[pick])
            enc, m = self._encode(chosen_rows)
            mem, vis = torch.cat([mem, enc], dim=1), torch.cat([vis, m], dim=1)
        for p in range(size):
            if not valid[p]:
                results[p]["lines"] = None
        return results


def _attempt(res: dict) -> Attempt:
    """A :meth:`Generator.generate` result as an attempt of the shared loop: a failed quatrain keeps the
    Generator's reason (``truncated``, ``empty_line`` or ``constraints``)."""
    info = {"constrained": res["constrained"], "restarts": res["restarts"], "scheme": res["scheme"]}
    if res["lines"] is None:
        return Attempt([], res["reason"] != "truncated", reason=res["reason"], info=info)
    return Attempt(res["lines"], True, info=info)


def sample(model_dir: str, decoding: dict, sampling: dict, out: str, stats: str, *, threads: int = 1,
           id_prefix: str = "", progress: bool = True) -> dict:
    """Sample until ``n`` valid quatrains or ``max_attempts`` quatrain generations; write the samples JSONL
    and the stats JSON (:func:`poeval.generators.sampling.sample_loop`). ``sampling`` is a params
    ``sampling`` block (:func:`poeval.generators.sampling.resolve`; ``max_new_bytes``, for byte-level
    models, does not apply). A quatrain is valid when each of its four verses ended with ``<eol>`` within
    ``max_new_tokens`` generated tokens in all (``<eol>`` included; else ``truncated``) and has a word
    (else ``empty_line``). Deterministic for equal seed, batch_size and threads."""
    temperature, top_p, top_k = ancestral_params(decoding, ARCH)
    sampling = resolve_sampling(sampling)
    max_tokens = sampling["max_new_tokens"]
    if max_tokens < 4:   # a rule of this port that the schema's posint cannot express
        raise PoevalError(f"sample: max_new_tokens must be an integer >= 4 (four verses), got {max_tokens!r}")
    if not Path(model_dir).is_dir():
        raise PoevalError(f"model directory not found: {model_dir}")
    torch.set_num_threads(int(threads))
    loaded = Loaded(model_dir)
    gen = Generator(loaded, temperature, top_p, top_k)

    def extra(counted: list[Attempt]) -> dict:
        targets = collections.Counter(a.info["scheme"] for a in counted if a.reason is None)
        return {
            "max_new_tokens": max_tokens,
            "arch": ARCH,
            "candidates": int(loaded.cfg["candidates"]),
            "rhyme_threshold": float(loaded.cfg["rhyme_threshold"]),
            "rhyme_attempts": int(gen.cfg["rhyme_attempts"]),
            "restarts": int(gen.cfg["restarts"]),
            "rerank": gen.cfg["rerank"],
            "rerank_temperature": float(gen.cfg["rerank_temperature"]),
            "scheme_draw": gen.cfg["scheme_draw"],
            "word_temperature": gen.cfg["word_temperature"],
            "scheme_source": gen.scheme_source,
            "target_schemes": dict(sorted(targets.items())),
            "rhyme_constrained_verses": sum(a.info["constrained"] for a in counted),
            "quatrain_restarts": sum(a.info["restarts"] for a in counted),
        }

    return sample_loop(lambda size: [_attempt(r) for r in gen.generate(size, max_tokens)], out, stats,
                       model_dir=model_dir, decoding=decoding, sampling=sampling, id_prefix=id_prefix,
                       progress=progress, desc="sample deepspeare", extra=extra)
