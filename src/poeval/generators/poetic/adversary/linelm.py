"""The line LM: a word-level LSTM language model that writes each verse right to left from its forced end
word, the last verse first (the original's ``VanillaLM`` in ``models_lm.py``: 600 hidden units, 100-dim
embeddings, the output layer tied to them through a projection, dropout 0.3). It is trained by maximum
likelihood (the engine) and then frozen; it samples at temperature 1 without top-k or top-p, whatever the
decoding config says (``VanillaLM._sample``), rejecting the unknown word as the original does."""

from __future__ import annotations

import functools

from poeval.generators.poetic.adversary.endings import common_pad
from poeval.generators.poetic.adversary.settings import N_LINES
from poeval.generators.poetic.common import Vocab, draw, filtered_probs


@functools.lru_cache(maxsize=None)
def _model_class():
    """The torch module (defined on first use, so importing this module does not import torch)."""
    import torch
    import torch.nn as nn

    class LockedDropout(nn.Module):
        """Dropout with one mask per sequence, the same at every time step (the original's ``LockedDropout``
        in models_lm.py, on its embeddings and LSTM outputs)."""

        def __init__(self, p: float):
            super().__init__()
            self.p = p

        def forward(self, x):            # x (B, T, D)
            if not self.training or not self.p:
                return x
            mask = x.new_empty(x.shape[0], 1, x.shape[2]).bernoulli_(1 - self.p) / (1 - self.p)
            return x * mask

    class WordLM(nn.Module):
        """Word-level LSTM LM. The output distribution is a full softmax whose weights can be tied to the
        input embeddings through a hidden -> emb_dim projection (the original's), or an adaptive softmax
        (Grave et al. 2017: exact normalised probabilities at a fraction of a full softmax's CPU cost).
        Dropout on the embeddings and the LSTM outputs is the original's under ``locked``, else ordinary."""

        def __init__(self, vocab_size: int, emb_dim: int, hidden: int, layers: int, dropout: float,
                     softmax: str, cutoffs: list[int], div_value: float, tie: bool, dropout_kind: str | None):
            super().__init__()
            self.emb = nn.Embedding(vocab_size, emb_dim, padding_idx=0)
            self.lstm = nn.LSTM(emb_dim, hidden, layers, batch_first=True, dropout=dropout if layers > 1 else 0.0)
            self.drop = LockedDropout(dropout) if dropout_kind == "locked" else nn.Dropout(dropout)
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

        def log_probs(self, h):
            """Log-probabilities of every next token, (N, V), from hidden states (N, H)."""
            if self.ada is not None:
                return self.ada.log_prob(h)
            return torch.log_softmax(self.out(self.proj(h) if self.proj is not None else h).float(), dim=-1)

        def target_log_probs(self, h, targets):
            """Log-probability of ``targets`` (N,) under hidden states (N, H)."""
            if self.ada is not None:
                return self.ada(h, targets).output
            return self.log_probs(h).gather(-1, targets.unsqueeze(-1)).squeeze(-1)

    return WordLM


def build(cfg: dict, vocab_size: int):
    return _model_class()(vocab_size, cfg["emb_dim"], cfg["hidden"], cfg["layers"], float(cfg["dropout"]),
                          cfg["softmax"], cfg["cutoffs"], cfg["div_value"], cfg["tie_weights"],
                          cfg.get("dropout_kind"))   # None: a checkpoint from before the switch, ordinary


def nll(lm, seqs: list[list[int]]):
    """(summed token NLL, number of predicted tokens) of id sequences that start with <bos>."""
    ids = common_pad(seqs)
    h, _ = lm(ids[:, :-1])
    targets = ids[:, 1:]
    mask = targets != 0
    return -lm.target_log_probs(h[mask], targets[mask]).sum(), int(mask.sum())


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


def banned_ids(vocab: Vocab) -> list[int]:
    """What the line LM never draws: padding, <unk> (the original resamples it), <bos>, <eos> and the
    style tokens (they only open a sequence)."""
    return [vocab.pad, vocab.unk, vocab.bos, vocab.eos,
            *(i for i, w in enumerate(vocab.itos) if w.startswith(("<scheme=", "<meter=")))]


def write(lm, vocab: Vocab, prefix, endings, max_tokens: int) -> tuple[list[list[list[int]]], list[bool]]:
    """Write the verses of a batch of quatrains: ``prefix`` (B, P) ids (``<bos>`` and a conditioned
    model's style tokens), ``endings`` (B, 4) end-word ids in verse order. After each line separator the
    token drawn is replaced by the next verse's end word (verse 4 first), as ``VanillaLM._sample`` does;
    the other tokens are drawn at temperature 1, unfiltered, until the next separator. Returns per row
    the verses in the order written (verse 4 first, each right to left from its end word) and whether
    all four were closed within ``max_tokens`` tokens (separators and end words included)."""
    import torch

    n = prefix.shape[0]
    ban = banned_ids(vocab)
    lm.eval()
    verses: list[list[list[int]]] = [[[]] for _ in range(n)]
    k, force, done = [0] * n, [True] * n, [False] * n
    with torch.no_grad():
        h, state = lm(torch.cat([prefix, torch.full((n, 1), vocab.eol, dtype=torch.long)], 1))
        for _ in range(max_tokens):
            nxt = draw(filtered_probs(lm.log_probs(h[:, -1]), 1.0, 1.0, 0, ban)).squeeze(1)
            for i in range(n):
                if done[i]:
                    continue
                if force[i]:
                    nxt[i], force[i] = endings[i, N_LINES - 1 - k[i]], False
                    verses[i][-1].append(int(nxt[i]))
                elif int(nxt[i]) == vocab.eol:
                    k[i] += 1
                    done[i] = k[i] == N_LINES
                    if not done[i]:
                        verses[i].append([])
                        force[i] = True
                else:
                    verses[i][-1].append(int(nxt[i]))
            if all(done):
                break
            h, state = lm(nxt.unsqueeze(1), state)
    return verses, done
