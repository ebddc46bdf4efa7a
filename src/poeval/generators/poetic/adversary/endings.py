"""The endings model: a word-level LSTM that writes a quatrain's four line-ending words (the original's
``GeneratorModel`` in ``models.py``: start symbol, a one-layer LSTM cell, a full softmax over the whole
vocabulary; trained by maximum likelihood, ``get_loss``, and by REINFORCE). The decoding config's
temperature (and top-k / top-p, which the original lacks) apply here and nowhere else."""

from __future__ import annotations

import functools

from poeval.generators.poetic import common
from poeval.generators.poetic.adversary.settings import N_LINES
from poeval.generators.poetic.common import Vocab


@functools.lru_cache(maxsize=None)
def _model_class():
    """The torch module (defined on first use, so importing this module does not import torch)."""
    import torch.nn as nn

    class EndingsModel(nn.Module):
        def __init__(self, vocab_size: int, emb_dim: int, hidden: int):
            super().__init__()
            self.emb = nn.Embedding(vocab_size, emb_dim, padding_idx=0)
            self.lstm = nn.LSTM(emb_dim, hidden, batch_first=True)
            self.out = nn.Linear(hidden, vocab_size)

        def forward(self, ids, state=None):
            """Logits of the next token after each input, (B, T, V), and the LSTM state."""
            h, state = self.lstm(self.emb(ids), state)
            return self.out(h), state

    return EndingsModel


def build(cfg: dict, vocab_size: int):
    return _model_class()(vocab_size, cfg["endings_emb"], cfg["endings_hidden"])


def mle_loss(model, seqs: list[list[int]]):
    """The original's endings loss: per quatrain the mean cross-entropy of its end words and end symbol
    (style tokens too when conditioned), summed over the batch (``get_loss``)."""
    import torch
    import torch.nn.functional as F

    ids = common_pad(seqs)
    logits, _ = model(ids[:, :-1])
    targets = ids[:, 1:]
    per_tok = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=0,
                              reduction="none").view(targets.shape)
    mask = (targets != 0).float()
    return (per_tok.sum(1) / mask.sum(1).clamp(min=1)).sum(), torch.tensor(float(mask.sum()))


def common_pad(seqs: list[list[int]], pad: int = 0):
    import torch

    width = max(len(s) for s in seqs)
    out = torch.full((len(seqs), width), pad, dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = torch.tensor(s, dtype=torch.long)
    return out


def word_ban(vocab: Vocab) -> list[int]:
    """Ids the endings model never draws as an end word: specials, style tokens and non-words (its
    training targets are words only; the original resamples its end symbol and unknown word)."""
    return [i for i, w in enumerate(vocab.itos) if w.startswith("<") or not common.is_word(w)]


def original_ban(vocab: Vocab) -> list[int]:
    """What the original's endings model never draws: its end symbol and unknown word (it resamples them)."""
    return [vocab.eos, vocab.unk]


def ban_tally() -> dict:
    """An empty tally for :func:`banned_mass`."""
    return {"draws": 0, "mass": 0.0, "mass_beyond_original": 0.0}


def banned_mass(acc: dict, logits, temperature: float, ban: list[int], theirs: list[int]) -> None:
    """Add to ``acc`` (a :func:`ban_tally`) the end-word draws (``draws``) and the probability mass, at
    ``temperature`` before top-k and top-p, on the ids banned here (``mass``) and on those of them that the original would draw, being
    banned here only (``mass_beyond_original``: specials, style tokens, punctuation)."""
    import torch

    probs = torch.softmax(logits.float() / max(temperature, 1e-6), -1)
    here = probs[:, ban].sum(-1)
    acc["draws"] += len(here)
    acc["mass"] += float(here.sum())
    acc["mass_beyond_original"] += float(here.sum() - probs[:, theirs].sum())


def style_slots(vocab: Vocab, conditioned: bool) -> list[list[int]]:
    """The ids allowed in each style slot of a conditioned model (scheme, then metre); none otherwise."""
    if not conditioned:
        return []
    schemes = [i for i, w in enumerate(vocab.itos) if w.startswith("<scheme=")]
    meters = [i for i, w in enumerate(vocab.itos) if w.startswith("<meter=")]
    return [schemes, meters] if schemes and meters else []


def sample(model, vocab: Vocab, n: int, *, slots: list[list[int]], temperature: float = 1.0, top_p: float = 1.0,
           top_k: int = 0, banned: dict | None = None):
    """Draw ``n`` quatrains' style tokens (a conditioned model's slots) and four end words at once, all
    under the decoding config's temperature, top-k and top-p. Returns ids (n, len(slots) + 4). ``banned``,
    when given, adds up how much the ban matters (:func:`banned_mass`)."""
    import math

    import torch

    ban = word_ban(vocab)
    masks = []
    for allowed in slots:
        m = torch.ones(len(vocab), dtype=torch.bool)
        m[list(allowed)] = False
        masks.append(m)
    x, state, cols = torch.full((n, 1), vocab.bos, dtype=torch.long), None, []
    model.eval()
    with torch.no_grad():
        for t in range(len(masks) + N_LINES):
            logits, state = model(x, state)
            logits = logits[:, -1]
            if t < len(masks):
                probs = common.filtered_probs(logits.masked_fill(masks[t], -math.inf), temperature, top_p, top_k)
            else:
                probs = common.filtered_probs(logits, temperature, top_p, top_k, ban)
                if banned is not None:
                    banned_mass(banned, logits, temperature, ban, original_ban(vocab))
            x = common.draw(probs)
            cols.append(x.squeeze(1))
    return torch.stack(cols, 1)


def endings_logprob(model, bos: int, row: list[int], n_style: int, params: dict | None = None):
    """The log-probability (with gradients) of a drawn row's four end words under the model's
    unfiltered softmax at temperature 1 (the original's ``Categorical.log_prob`` of each action), the
    row's style tokens given. With ``params`` (tensors standing for the model's parameters,
    :func:`torch.func.functional_call`) the gradients go to those tensors."""
    import torch
    from torch.func import functional_call

    ids = torch.tensor([[bos, *row]], dtype=torch.long)
    inputs = (ids[:, :-1],)
    logits, _ = model(*inputs) if params is None else functional_call(model, params, inputs)
    logp = torch.log_softmax(logits[0].float(), -1).gather(1, ids[0, 1:].unsqueeze(1)).squeeze(1)
    return logp[n_style:].sum()
