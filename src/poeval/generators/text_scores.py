"""Causal log-likelihood of texts, framed as the generators frame a quatrain: the tokenizer's BOS (else EOS)
before the text, so that its first real token is scored too, and its EOS after it, so that the score is that
of the complete text (the chance that it ends there included); every token after the first is scored.
Texts are batched with right padding; padded positions are masked out of attention and never reach the
output layer (:func:`poeval.generators.lm.logits.next_token_logprobs`: no batch x length x vocabulary
tensor). A model trained with reversed verses (``verse_order: reversed``) scores each line reversed, as it
learnt them. BPoMP's causal scorer (:mod:`poeval.bpomp.scoring`) and the quality family's fluency
(:mod:`poeval.metrics.quality`) both score through :func:`token_logprobs`."""

from __future__ import annotations

from typing import Sequence

from poeval.errors import PoevalError
from poeval.generators.checkpoint import max_positions, orient, text_bounds, verse_order
from poeval.generators.lm.logits import next_token_logprobs


def causal_ids(tokenizer, text: str) -> list[int]:
    """``text`` framed as training frames a quatrain: BOS, the text, EOS (every id after the first is scored)."""
    try:
        bos, eos = text_bounds(tokenizer)
    except PoevalError:
        raise PoevalError("causal scoring needs a tokenizer with an EOS token") from None
    return tokenizer(bos + text + eos, add_special_tokens=False)["input_ids"]


def check_len(model, lengths: Sequence[int]) -> None:
    limit = max_positions(model)
    if limit and lengths and max(lengths) > limit:
        raise PoevalError(f"a text has {max(lengths)} tokens, more than the model's {limit} positions")


def token_logprobs(model, tokenizer, texts: Sequence[str], batch_size: int = 16,
                   progress: bool = False, desc: str = "causal") -> list[tuple[float, int]]:
    """``(summed log-probability in nats, scored tokens)`` of each text (lines joined by newlines) under a
    causal LM."""
    import torch

    from poeval.progress import progress_bar

    order = verse_order(model)
    seqs = [causal_ids(tokenizer, "\n".join(orient(t.split("\n"), order))) for t in texts]
    check_len(model, [len(s) for s in seqs])
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    device = next(model.parameters()).device
    order = sorted(range(len(seqs)), key=lambda k: -len(seqs[k]))
    out = [(0.0, 0)] * len(seqs)
    bar = progress_bar(total=len(seqs), progress=progress, desc=desc)
    with torch.inference_mode():
        for b in range(0, len(order), batch_size):
            idx = order[b:b + batch_size]
            width = len(seqs[idx[0]])
            ids = torch.full((len(idx), width), pad, dtype=torch.long)
            att = torch.zeros((len(idx), width), dtype=torch.long)
            for r, k in enumerate(idx):
                ids[r, : len(seqs[k])] = torch.tensor(seqs[k])
                att[r, : len(seqs[k])] = 1
            ids, att = ids.to(device), att.to(device)
            targets = ids[:, 1:].masked_fill(att[:, 1:] == 0, -100)
            rows, lp = next_token_logprobs(model, ids, att, targets)
            sums = torch.zeros(len(idx), device=lp.device).index_add_(0, rows, lp)
            for r, k in enumerate(idx):
                out[k] = (float(sums[r]), len(seqs[k]) - 1)
            bar.update(len(idx))
    bar.close()
    return out
