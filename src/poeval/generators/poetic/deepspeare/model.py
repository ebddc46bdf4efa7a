"""DeepSpeare's three models and their losses (package docstring: :mod:`poeval.generators.poetic.deepspeare`):
the language model, the pentameter model and the rhyme model, and the :class:`Batcher` that turns encoded
poems into tensors and computes the joint losses of a batch."""

from __future__ import annotations

import random

import torch
import torch.nn.functional as F
from torch import nn

from poeval.errors import PoevalError
from poeval.generators.poetic.deepspeare.data import PAD_CHAR, SPECIAL_CHAR, Tables, is_vowel, row_order

N_STRESS = 10  # iambic pentameter: S- S+ x 5
STRESS_TARGET = [0.0, 1.0] * (N_STRESS // 2)


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


def cell_dropout(cfg: dict) -> float:
    """The dropout on an LSTM's outputs (``dropout_scope: cells``, the original's ``DropoutWrapper`` with
    ``output_keep_prob`` around every cell of sonnet_model.py); 0 under ``words``, and for a checkpoint
    written before the switch existed."""
    return float(cfg["dropout"]) if cfg.get("dropout_scope") == "cells" else 0.0


def drop_outputs(x, p: float, training: bool):
    """``x`` with dropout ``p`` in training; at 0 ``x`` itself, so that no random number is drawn (the default
    trains bit for bit as before the switch)."""
    return F.dropout(x, p, training) if p and training else x


class BiLSTM(nn.Module):
    """A one-layer bidirectional LSTM over right-padded sequences. The backward direction runs a second
    LSTM over each sequence reversed within its length, so no packing is needed (packed sequences are
    several times slower to train on CPU). ``dropout`` applies to both directions' outputs in training (the
    final states are read from them, as the original's ``get_last_hidden`` reads its wrapped cells')."""

    def __init__(self, input_size: int, hidden_size: int, dropout: float = 0.0):
        super().__init__()
        self.fwd = nn.LSTM(input_size, hidden_size, batch_first=True)
        self.bwd = nn.LSTM(input_size, hidden_size, batch_first=True)
        self.dropout = dropout

    def forward(self, x, lengths):
        """x (N, L, D), lengths (N,) >= 1 -> outputs (N, L, 2H) (undefined at padding: mask them), final states (N, 2H):
        the forward state after the last token and the backward state after the first."""
        n, width, _ = x.shape
        lengths = lengths.clamp(min=1, max=width)
        t = torch.arange(width).unsqueeze(0)
        valid = t < lengths.unsqueeze(1)
        rev = torch.where(valid, lengths.unsqueeze(1) - 1 - t, t)            # reverse the valid part
        of = drop_outputs(run_lstm(self.fwd, x, lengths), self.dropout, self.training)
        ob = drop_outputs(run_lstm(self.bwd, x.gather(1, rev.unsqueeze(-1).expand_as(x)), lengths), self.dropout,
                          self.training)
        ob = ob.gather(1, rev.unsqueeze(-1).expand_as(ob))
        out = torch.cat([of, ob], dim=-1)
        last = of[torch.arange(n), lengths - 1]
        return out, torch.cat([last, ob[:, 0]], dim=-1)


class LanguageModel(nn.Module):
    def __init__(self, cfg: dict, n_words: int, pad: int):
        super().__init__()
        wd, e, d, a = cfg["word_dim"], cfg["enc_dim"], cfg["dec_dim"], cfg["attn_dim"]
        self.pad = pad
        self.embed = nn.Embedding(n_words, wd, padding_idx=pad)
        self.encoder = BiLSTM(wd, e, cell_dropout(cfg))
        self.sel_h = nn.Linear(2 * e, 2 * e)
        self.sel_s = nn.Linear(2 * e, 2 * e, bias=False)
        self.null = nn.Parameter(torch.zeros(2 * e))
        # input: the word embedding and the word's characters as the pentameter model's encoder reads them
        self.decoder = nn.LSTM(wd + 2 * cfg["pm_enc_dim"], d, batch_first=True)
        self.att_q = nn.Linear(d, a, bias=False)
        self.att_k = nn.Linear(2 * e, a)
        # lm_attention concat (the original's lm_attention): v^T tanh(W_k m + W_q s + b), W_k's bias the b
        self.att_v = nn.Linear(a, 1, bias=False) if cfg.get("lm_attention") == "concat" else None
        # the original's gated unit (sonnet_model.py gated_layer): update and reset gates, biases from 1
        self.update = nn.Linear(2 * e + d, d)
        self.reset = nn.Linear(2 * e + d, d)
        self.cand = nn.Linear(2 * e + d, d)
        for gate in (self.update, self.reset):
            nn.init.ones_(gate.bias)
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

    def encode_verses(self, words, lengths):
        """words (N, L) in natural order -> selected states (N, L, 2E)."""
        x = self.drop(self.embed(words))
        out, s = self.encoder(x, lengths)
        return out * torch.sigmoid(self.sel_h(out) + self.sel_s(s).unsqueeze(1))

    def attention_scores(self, s, keys):
        """Scores of decoder states ``s`` (..., T, D) over the memory's keys ``keys`` = ``att_k(mem)``
        (..., M, A): (..., T, M). Bilinear: ``att_q(s) . key``; concat (``lm_attention``, the original's):
        ``att_v(tanh(key + att_q(s)))``."""
        q = self.att_q(s)
        if self.att_v is None:
            return q @ keys.transpose(-1, -2)
        return self.att_v(torch.tanh(keys.unsqueeze(-3) + q.unsqueeze(-2))).squeeze(-1)

    def step_scores(self, s, keys):
        """:meth:`attention_scores` of one decoder step, ``s`` (N, D) over ``keys`` (N, M, A): (N, M)."""
        if self.att_v is None:   # the generator's own bmm, as before the switch: the default samples bit for bit
            return torch.bmm(keys, self.att_q(s).unsqueeze(-1)).squeeze(-1)
        return self.attention_scores(s.unsqueeze(1), keys).squeeze(1)

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
        """The decoder state ``s`` (N, D) combined with its attention context ``ctx`` (N, 2E) by the original's
        GRU-like gated unit: ``z``, ``r`` = sigmoid of [ctx, s], candidate ``tanh([ctx, r * s])``,
        output ``(1 - z) * s + z * candidate``."""
        both = torch.cat([ctx, s], dim=-1)
        z, r = torch.sigmoid(self.update(both)), torch.sigmoid(self.reset(both))
        c = torch.tanh(self.cand(torch.cat([ctx, r * s], dim=-1)))
        return (1 - z) * s + z * c


class PentameterModel(nn.Module):
    def __init__(self, cfg: dict):
        super().__init__()
        e, d, a = cfg["pm_enc_dim"], cfg["pm_dec_dim"], cfg["pm_attn_dim"]
        self.encoder = BiLSTM(cfg["char_dim"], e, cell_dropout(cfg))
        self.decoder = nn.LSTMCell(2 * e, d)
        self.dropout = cell_dropout(cfg)
        self.att_h = nn.Linear(2 * e, a, bias=False)
        self.att_s = nn.Linear(d, a)
        self.att_v = nn.Linear(a, 1, bias=False)
        self.out = nn.Linear(2 * e, 1)
        # the decoder's first input, learned (the original's dec_init_input, TF's default Glorot-uniform draw)
        self.init_input = nn.Parameter(torch.empty(2 * e).uniform_(-(3 / (2 * e)) ** 0.5, (3 / (2 * e)) ** 0.5))
        self.sigma = float(cfg["pm_sigma"])
        # pm_window original (sonnet_model.py compute_pm_loss): the centre's learned step, an MLP of the
        # decoder output and the last centre (miu_w, miu_b, miu_v)
        self.loc = None
        if cfg.get("pm_window") == "original":
            self.loc = nn.Sequential(nn.Linear(d + 1, a), nn.Tanh(), nn.Linear(a, 1, bias=False))
        self.rep_scale, self.cov_scale = float(cfg["pm_repeat_scale"]), float(cfg["pm_cov_scale"])
        self.cov_threshold = float(cfg["pm_cov_threshold"])

    def forward(self, char_emb, chars, lengths, vowels, spaces):
        """Per-verse losses (N,) and their parts: chars (N, L) with lengths, vowels and spaces (N, L) bool. The
        attention never rests on a pad or a space (the original masks both); ``attention``: the summed
        attention per character (N, L)."""
        h, _ = self.encoder(char_emb(chars), lengths)
        n, width, _ = h.shape
        mask = (torch.arange(width).unsqueeze(0) < lengths.unsqueeze(1)) & ~spaces
        pos = torch.arange(width, dtype=h.dtype).unsqueeze(0)
        keys = self.att_h(h)
        state = (h.new_zeros(n, self.decoder.hidden_size), h.new_zeros(n, self.decoder.hidden_size))
        prev = self.init_input.expand(n, -1)
        cum = h.new_zeros(n, width)
        rep = h.new_zeros(n)
        mu = None if self.loc is None else h.new_zeros(n)
        logits = []
        for _ in range(N_STRESS):
            state = self.decoder(prev, state)
            # the cell's output, dropped as the original's wrapped dec_cell; the state it carries is not
            out = drop_outputs(state[0], self.dropout, self.training)
            if self.loc is None:
                f, mu = self._monotone(keys, out, mask, pos, mu)
            else:
                f, mu = self._original(keys, out, mask, pos, mu, lengths)
            rep = rep + torch.minimum(f, cum).sum(-1)
            cum = cum + f
            prev = torch.bmm(f.unsqueeze(1), h).squeeze(1)
            logits.append(self.out(prev).squeeze(-1))
        logits = torch.stack(logits, dim=1)
        target = logits.new_tensor(STRESS_TARGET).expand_as(logits)
        ce = F.binary_cross_entropy_with_logits(logits, target, reduction="none").sum(-1)
        cov = F.relu(self.cov_threshold * vowels.to(h.dtype) - cum).sum(-1)
        loss = ce + self.rep_scale * rep + self.cov_scale * cov
        return loss, {"ce": ce, "repeat": rep, "coverage": cov, "attention": cum}

    def _monotone(self, keys, out, mask, pos, mu):
        """poeval's window: the centre is the content attention's expected position, never moving back; a
        Gaussian around it reweights the attention, renormalised. Returns (attention, centre)."""
        e = self.att_v(torch.tanh(keys + self.att_s(out).unsqueeze(1))).squeeze(-1)
        a = torch.softmax(e.masked_fill(~mask, -1e9), dim=-1)
        p = (a * pos).sum(-1)
        mu = p if mu is None else torch.maximum(mu, p)
        w = a * torch.exp(-((pos - mu.unsqueeze(1)) ** 2) / (2 * self.sigma ** 2)) * mask
        return w / w.sum(-1, keepdim=True).clamp_min(1e-8), mu

    def _original(self, keys, out, mask, pos, mu, lengths):
        """The original's window (sonnet_model.py ``attend``): the centre ``mu`` (a share of the verse, from
        0) steps forward by a learned sigmoid, capped at 1; the encoder states are weighted by the Gaussian
        around ``mu`` x (length - 1) before the content score (``att_h`` has no bias, so weighting its output
        is weighting its input), and the attention is softmax(score + the Gaussian's log). Returns
        (attention, centre)."""
        mu = torch.clamp(torch.sigmoid(self.loc(torch.cat([out, mu.unsqueeze(1)], dim=-1))).squeeze(-1) + mu, max=1.0)
        centre = mu * (lengths.to(out.dtype) - 1)
        log_w = -((pos - centre.unsqueeze(1)) ** 2) / (2 * self.sigma ** 2)
        e = self.att_v(torch.tanh(keys * log_w.exp().unsqueeze(-1) + self.att_s(out).unsqueeze(1))).squeeze(-1)
        return torch.softmax((e + log_w).masked_fill(~mask, -1e9), dim=-1), mu


class RhymeModel(nn.Module):
    """The original's rhyme model (sonnet_model.py ``init_rm``): a one-directional LSTM over a word's
    characters, its last state the word's encoding."""

    def __init__(self, cfg: dict):
        super().__init__()
        self.encoder = nn.LSTM(cfg["char_dim"], cfg["rm_dim"], batch_first=True)
        self.delta = float(cfg["rm_delta"])
        self.dropout = cell_dropout(cfg)

    def embed(self, char_emb, chars, lengths):
        lengths = lengths.clamp(min=1, max=chars.shape[1])
        out = drop_outputs(run_lstm(self.encoder, char_emb(chars), lengths), self.dropout, self.training)
        return F.normalize(out[torch.arange(len(lengths)), lengths - 1], dim=-1)

    def loss(self, u, quatrains, negatives):
        """u (W, H) normalised encodings; quatrains (Q, 4) and negatives (Q, 4, K), one set per target, index u.
        Mean margin loss over the 4 targets of every quatrain."""
        uq = u[quatrains]                                   # (Q, 4, H)
        sim = uq @ uq.transpose(1, 2)                       # (Q, 4, 4)
        others = sim.masked_fill(torch.eye(4, dtype=torch.bool), -2.0)
        parts = [others]
        if negatives.shape[-1]:
            parts.append(torch.einsum("qth,qtkh->qtk", uq, u[negatives]))   # (Q, 4, K)
        return self._margin(torch.cat(parts, dim=-1))

    def target_loss(self, u, quatrains, targets, negatives):
        """The same margin loss for single targets, as the original's rhyme batches hold them (util.py
        ``create_rhyme_batch``: a target word, its quatrain's other three end words and ``rm_neg`` negatives):
        quatrains (T, 4) and negatives (T, K) index u, targets (T,) is the target's position in its quatrain."""
        uq = u[quatrains]                                                    # (T, 4, H)
        ut = uq[torch.arange(len(targets)), targets]                         # (T, H)
        others = (uq @ ut.unsqueeze(-1)).squeeze(-1).masked_fill(F.one_hot(targets, 4).bool(), -2.0)
        return self._margin(torch.cat([others, (u[negatives] @ ut.unsqueeze(-1)).squeeze(-1)], dim=-1))

    def _margin(self, q):
        """Mean of ``max(0, delta - top1 + top2)`` over the rows of similarities ``q`` (..., C)."""
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

    def word_chars(self, chars, lengths):
        """The language model's character features of words (N, 2 x pm_enc_dim): the final states of the
        pentameter model's character encoder, as the original's ``init_lm`` reads ``self.char_encodings``
        of ``init_pm`` (sonnet_model.py)."""
        return self.pentameter.encoder(self.chars(chars), lengths)[1]

    def states(self) -> dict:
        return {k: {n: t.detach().clone() for n, t in getattr(self, k).state_dict().items()} for k in self.PARTS}

    def load_states(self, states: dict) -> None:
        missing = [k for k in self.PARTS if k not in states]
        if missing:
            raise PoevalError(f"checkpoint lacks the weights of {missing}")
        for k in self.PARTS:
            want, have = set(getattr(self, k).state_dict()), set(states[k])
            if want != have:   # a checkpoint of an earlier port (before the original's rhyme model and gates)
                raise PoevalError(f"checkpoint's {k} weights are of an earlier DeepSpeare port (missing "
                                  f"{sorted(want - have)[:3]}, unknown {sorted(have - want)[:3]}): train it again")
            getattr(self, k).load_state_dict(states[k])


# --- batches and losses


def _pad2(seqs: list[list[int]], value: int = 0, min_width: int = 1):
    width = max([min_width, *map(len, seqs)])
    out = torch.full((len(seqs), width), value, dtype=torch.long)
    for i, s in enumerate(seqs):
        if s:
            out[i, : len(s)] = torch.tensor(s, dtype=torch.long)
    return out, torch.tensor([len(s) for s in seqs], dtype=torch.long)


def decoder_sequences(rows: list[list[list[int]]], n_rows: int, carried: bool, bos: int, eol: int):
    """The language model's decoder sequences for poems of rows (token ids, in reading order) as (inputs,
    targets, row of each target), poem by poem. ``carried``: one sequence per poem, ``<bos>`` and then each
    row right to left with its ``<eol>``, so that the state flows from row to row as in the original's
    training (its ``create_word_batch`` joins a chunk's lines the same way, and ``run_epoch`` feeds each
    chunk's final state to the next). Else one sequence per row slot (``n_rows`` per poem; a missing row is
    ``[<bos>]`` with no target), each from a fresh state."""
    out = []
    for poem in rows:
        parts = [([*row[::-1], eol], k) for k, row in enumerate(poem)]
        if carried:
            targets = [t for toks, _ in parts for t in toks]
            out.append(([bos, *targets[:-1]], targets, [k for toks, k in parts for _ in toks]))
            continue
        for k in range(n_rows):
            toks = parts[k][0] if k < len(parts) else []
            out.append(([bos, *toks[:-1]] if toks else [bos], toks, [k] * len(toks)))
    return out


def chunk_ids(verse: list[bool], verses: int) -> list[int]:
    """The chunk of each row (in reading order) when a poem is cut every ``verses`` verses; a style row
    goes with the verse after it."""
    out, seen = [], 0
    for is_verse in verse:
        out.append(seen // verses)
        seen += is_verse
    return out


def _chunk_seqs(seqs: list[tuple], ids: list[list[int]], c: int, carried: bool, bos: int) -> list[tuple]:
    """The part of each poem's decoder sequences (:func:`decoder_sequences`) in chunk ``c``. Carried: the
    slice of the poem's one sequence whose targets lie in the chunk (it starts with the previous row's
    ``<eol>``, where the chunk before ended). Fresh: the chunk's rows, each its own sequence, filled up to the
    same number per poem with empty ones."""
    if carried:
        out = []
        for (inp, tgt, rk), i in zip(seqs, ids):
            keep = [t for t, k in enumerate(rk) if i[k] == c]
            a, b = (keep[0], keep[-1] + 1) if keep else (0, 0)
            out.append((inp[a:b], tgt[a:b], rk[a:b]))
        return out
    per = len(seqs) // len(ids)
    mine = [[q for q in seqs[p * per:(p + 1) * per] if q[2] and i[q[2][0]] == c] for p, i in enumerate(ids)]
    g = max(1, max(map(len, mine)))
    return [q for m in mine for q in m + [([bos], [], [])] * (g - len(m))]


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
        enc = self.model.word_chars(self.type_chars[uniq], self.type_len[uniq])
        return enc[inv]

    def lm_loss(self, poems: list[dict]):
        """Summed next-token cross-entropy over every row of ``poems`` and the number of predicted tokens.
        The rows are read in ``line_order`` (:func:`.data.row_order`), each right to left and ended by
        ``<eol>``, each attending over the poem's rows read before it; with ``verse_state: carried`` the
        poem is one decoder sequence (the state flows from verse to verse, as the original's, which feeds
        each chunk's final state to the next: sonnet_train.py ``run_epoch``), with ``fresh`` each row starts
        from a zero state."""
        rows, _ = self._reading(poems)
        n_rows = max(len(r) for r in rows)
        mem, vis = self._context(rows, n_rows)                                # (P, M, 2E), (P, V, M)
        seqs = decoder_sequences(rows, n_rows, self.cfg["verse_state"] == "carried", self.vocab.bos, self.vocab.eol)
        loss, n, _ = self._decode(seqs, len(rows), mem, vis)
        return loss, n

    def lm_chunks(self, poems: list[dict], verses: int):
        """The language model's loss over ``poems`` cut into chunks of ``verses`` verses, as the original's
        truncated backpropagation (util.py ``create_word_batch`` with ``bptt_truncate``; sonnet_train.py
        ``run_epoch``): a generator of each chunk's (summed cross-entropy, predicted tokens) in reading order,
        for the caller to backpropagate and step before it asks for the next one. A chunk's decoder starts
        where the previous one ended, detached (``verse_state: carried``; the original feeds the state back as
        a value), or from zero per row (``fresh``); its rows attend over the rows read before them, encoded
        again for each chunk with the weights of the moment, as the original encodes a chunk's history.
        ``lm_context: chunks`` lets a chunk's rows attend over the earlier chunks' rows only, as the original's
        training (util.py ``create_word_batch``: one history per chunk, the words of the chunks before it)."""
        rows, verse = self._reading(poems)
        ids = [chunk_ids(v, verses) for v in verse]
        by_chunk = self.cfg["lm_context"] == "chunks"
        carried = self.cfg["verse_state"] == "carried"
        seqs = decoder_sequences(rows, max(map(len, rows)), carried, self.vocab.bos, self.vocab.eol)
        dim = self.model.lm.decoder.hidden_size
        state = (torch.zeros(1, len(rows), dim), torch.zeros(1, len(rows), dim)) if carried else None
        for c in range(max(i[-1] for i in ids) + 1):
            prefix = [r[:sum(k <= c for k in i)] for r, i in zip(rows, ids)]   # the chunk's rows and those before
            groups = [i[:len(r)] for r, i in zip(prefix, ids)] if by_chunk else None
            mem, vis = self._context(prefix, max(map(len, prefix)), groups)
            part = _chunk_seqs(seqs, ids, c, carried, self.vocab.bos)
            loss, n, state = self._decode(part, len(rows), mem, vis, state)
            yield loss, n

    def lm_chunk_count(self, poems: list[dict], verses: int) -> int:
        """How many chunks :meth:`lm_chunks` yields for ``poems``."""
        return max(chunk_ids(v, verses)[-1] for v in self._reading(poems)[1]) + 1

    def _reading(self, poems: list[dict]):
        """The poems' rows in reading order (:func:`.data.row_order`), and whether each is a verse."""
        orders = [row_order(p["verse"], self.cfg["line_order"]) for p in poems]
        return ([[p["rows"][i] for i in o] for p, o in zip(poems, orders)],
                [[p["verse"][i] for i in o] for p, o in zip(poems, orders)])

    def _decode(self, seqs, n_poems: int, mem, vis, state=None):
        """Summed cross-entropy and predicted tokens of decoder sequences ``seqs`` (the same number per poem,
        :func:`decoder_sequences`), each position attending over its poem's ``mem`` as its row's ``vis``
        allows, and the decoder's final states. ``state``: (h, c) to start each sequence from (the final
        states come back detached); None: zero, and none come back."""
        m, vocab = self.model.lm, self.vocab
        dec_types, dec_len = _pad2([q[0] for q in seqs], vocab.pad)
        width = dec_types.shape[1]
        target_types, _ = _pad2([q[1] for q in seqs], vocab.pad, width)
        row_of, _ = _pad2([q[2] for q in seqs], 0, width)
        target = self.words_of(target_types).masked_fill(target_types == vocab.pad, vocab.pad)
        x = torch.cat([m.embed(self.words_of(dec_types)), self.char_vectors(dec_types)], dim=-1)
        s, state = self._run_decoder(m.drop(x), dec_len, state)              # (P*G, L, D), G sequences per poem
        s = s.reshape(n_poems, -1, s.shape[-1])                              # (P, T, D)
        row_of = row_of.view(n_poems, -1)
        scores = m.attention_scores(s, m.att_k(mem))                         # (P, T, M)
        vis_pos = vis[torch.arange(n_poems).unsqueeze(1), row_of]            # (P, T, M): the position's row's view
        att = torch.softmax(scores.masked_fill(~vis_pos, -1e9), dim=-1)
        ctx = att @ mem                                                      # (P, T, 2E)
        sel = (target != vocab.pad).view(n_poems, -1)                        # predicted positions only
        h = m.mix(s[sel], ctx[sel])
        loss = m.nll_sum(m.drop(h), target.view(n_poems, -1)[sel])
        return loss, int(sel.sum()), state

    def _run_decoder(self, x, lengths, state):
        """The decoder over ``x`` (N, L, in); with ``state`` (h, c) (1, N, D) packed, so that each sequence's
        final state is its own (a sequence of length 0 keeps its state)."""
        lstm = self.model.lm.decoder
        if state is None:
            return run_lstm(lstm, x, lengths), None
        live = lengths > 0
        h, c = state[0].clone(), state[1].clone()
        packed = nn.utils.rnn.pack_padded_sequence(x[live], lengths[live], batch_first=True, enforce_sorted=False)
        out, (h_live, c_live) = lstm(packed, (h[:, live], c[:, live]))
        s = x.new_zeros(x.shape[0], x.shape[1], lstm.hidden_size)
        s[live] = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])[0]
        h[:, live], c[:, live] = h_live.detach(), c_live.detach()
        return s, (h, c)

    def _context(self, rows: list[list[list[int]]], n_rows: int, groups: list[list[int]] | None = None):
        """The encoded rows of each poem behind a learned null slot (P, 1 + V*Le, 2E), and which of them row
        ``k`` may attend to (P, V, 1 + V*Le): the null slot and the tokens of rows read before it, or, given
        each row's group (``groups``, per poem: the chunk ids), the tokens of rows of an earlier group."""
        m, n_poems = self.model.lm, len(rows)
        flat = [r[k] if k < len(r) else [] for r in rows for k in range(n_rows)]
        enc_types, enc_len = _pad2(flat, self.vocab.pad)
        le = enc_types.shape[1]
        mem = m.encode_verses(self.words_of(enc_types), enc_len).reshape(n_poems, n_rows * le, -1)
        mem = torch.cat([m.null.expand(n_poems, 1, -1), mem], dim=1)
        tok_ok = (torch.arange(le).unsqueeze(0) < enc_len.unsqueeze(1)).view(n_poems, n_rows, le)
        # each row's group: its own position unless grouped; earlier[p, k, j]: row j's group is before row k's
        g = torch.arange(n_rows).expand(n_poems, n_rows) if groups is None else _pad2(groups, 0, n_rows)[0]
        earlier = g.unsqueeze(1) < g.unsqueeze(2)
        vis = (earlier.view(n_poems, n_rows, n_rows, 1) & tok_ok.view(n_poems, 1, n_rows, le))
        vis = torch.cat([torch.ones(n_poems, n_rows, 1, dtype=torch.bool), vis.view(n_poems, n_rows, -1)], dim=-1)
        return mem, vis

    def pm_loss(self, poems: list[dict]):
        lines = [x for p in poems for x in p["pm"]]
        if not lines:
            return torch.zeros(())
        return self.pm_lines(lines).mean()

    def pm_lines(self, lines: list[list[int]]):
        chars, lengths = _pad2(lines, PAD_CHAR)
        vowels = self._vowel_ids()[chars]
        space = self.tables.cstoi.get(" ", -1)   # a corpus of one-word verses has no space
        loss, _ = self.model.pentameter(self.model.chars, chars, lengths, vowels, chars == space)
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
        """Margin loss over the quatrains of ``poems``; each end word's negatives: ``rm_neg`` words drawn
        uniformly from the vocabulary (the original's ``create_rhyme_batch``), with ``rng``, else with a fixed
        seed, for a fixed dev score."""
        quats = [q for p in poems for q in p["ends"]]
        if not quats:
            return torch.zeros(())
        u, qt, nt = self._rhyme_inputs(quats, 4 * len(quats), rng or random.Random(0))
        return self.model.rhyme.loss(u, qt, nt.view(len(quats), 4, -1))

    def rm_targets(self, items: list[tuple[list[int], int]], rng: random.Random):
        """Margin loss of single rhyme targets ``items``: (a quatrain's four end-word type ids, the target's
        position), each with ``rm_neg`` negatives drawn with ``rng`` (:meth:`rm_loss`)."""
        u, qt, nt = self._rhyme_inputs([q for q, _ in items], len(items), rng)
        targets = torch.tensor([t for _, t in items], dtype=torch.long)
        return self.model.rhyme.target_loss(u, qt, targets, nt)

    def _rhyme_inputs(self, quats: list[list[int]], n_sets: int, rng: random.Random):
        """The encodings of the words in play, the quatrains (Q, 4) as indices into them, and ``n_sets`` sets
        of ``rm_neg`` vocabulary negatives (n_sets, K), drawn in order with ``rng``."""
        pool = self.negative_pool()
        k = self.cfg["rm_neg"] if pool else 0
        negs = [[pool[rng.randrange(len(pool))] for _ in range(k)] for _ in range(n_sets)]
        words = sorted({w for q in quats for w in q} | {w for n in negs for w in n})
        index = {w: j for j, w in enumerate(words)}
        qt = torch.tensor([[index[w] for w in q] for q in quats], dtype=torch.long)
        nt = torch.tensor([[index[w] for w in n] for n in negs], dtype=torch.long).view(n_sets, k)
        return self.rhyme_embed(words), qt, nt

    def negative_pool(self) -> list[int]:
        """The rhyme model's negative words: every vocabulary type but the special and style tokens."""
        if not hasattr(self, "_negative_pool"):
            self._negative_pool = [i for i, w in enumerate(self.vocab.itos) if w not in self.tables.specials]
        return self._negative_pool
