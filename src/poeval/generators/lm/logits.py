"""Logits only where they are needed. A large vocabulary makes the output layer most of a small model's cost
(Gemma 3 270M: 262,144 x 640, 168M of 268M weights), so sampling asks for the last position only, and training
and scoring project only the positions that have a next token to predict, through the model's own head and
its own post-processing of the logits (Gemma's final soft-capping, for one)."""

from __future__ import annotations

import contextlib
import inspect

CHUNK = 128   # positions per log-sum-exp: a (chunk x vocabulary) float tensor at a time, not (batch x length x V)


def keep_last(model) -> dict:
    """Forward keyword arguments that compute the logits of the last position only (transformers'
    ``logits_to_keep=1``) where the model's forward takes them, else none: the caller still takes ``[:, -1]``,
    which is then the same tensor. A peft wrapper passes keywords through, so its base model is asked."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return {"logits_to_keep": 1} if "logits_to_keep" in inspect.signature(base.forward).parameters else {}


@contextlib.contextmanager
def head_at(model, rows, pos):
    """Within the block, the output projection sees only the hidden states at ``(rows[i], pos[i])``, so the
    forward's logits are ``(N, 1, V)``; the yielded list is non-empty once that happened. A head that does not
    call its output-embedding module leaves the logits full-length (the list stays empty)."""
    fired: list[bool] = []
    head = model.get_output_embeddings()
    if head is None:
        yield fired
        return

    def select(_module, args):
        fired.append(True)
        return (args[0][rows, pos].unsqueeze(1),) + tuple(args[1:])

    handle = head.register_forward_pre_hook(select)
    try:
        yield fired
    finally:
        handle.remove()


def logits_at(model, rows, pos, **inputs):
    """The ``(N, V)`` logits of the positions ``(rows[i], pos[i])`` of a forward on ``inputs``."""
    with head_at(model, rows, pos) as fired:
        logits = model(**inputs).logits
    return logits[:, 0] if fired else logits[rows, pos]


def next_token_logprobs(model, input_ids, attention_mask, targets):
    """``(rows, logp)``: for each position ``p`` of row ``r`` whose next token ``targets[r, p]`` (``(B, T-1)``,
    ``-100`` for none) is predicted, ``log P(targets[r, p] | input_ids[r, :p+1])`` in float, differentiable.
    The same as ``log_softmax(logits[:, :-1].float())`` gathered at the targets, up to float rounding."""
    import torch

    rows, pos = torch.nonzero(targets != -100, as_tuple=True)
    logits = logits_at(model, rows, pos, input_ids=input_ids, attention_mask=attention_mask)
    wanted = targets[rows, pos]
    picked = logits.gather(1, wanted[:, None]).squeeze(1).float()
    norm = torch.cat([torch.logsumexp(logits[c:c + CHUNK].float(), dim=-1) for c in range(0, len(rows), CHUNK)]
                     or [logits.new_zeros(0).float()])
    return rows, picked - norm
