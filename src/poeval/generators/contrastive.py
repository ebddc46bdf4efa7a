"""Contrastive search decoding (Su et al., 2022, "A Contrastive Framework for Neural Text Generation").

transformers 5 moved contrastive search out of the library (into a Hub repo that needs network access and
``trust_remote_code``), so we keep our own implementation. At each step, among the top-k candidates v of
the next-token distribution p(v | x<t), each gets the score

    s(v) = (1 - alpha) * p(v | x<t)  -  alpha * max_{j<t} cos(h_v, h_j)

where h_v is the last-layer hidden state of v appended to the context and h_j are the last-layer hidden
states of all earlier non-padding positions (prompt included). The first term keeps the text likely, the
second penalises candidates whose representation repeats the context. alpha = 0 is greedy decoding.

Su et al. take ``argmax_v s(v)`` (``score_temperature`` 0, the default here): deterministic, so from one
prompt every generation is the same text. With ``score_temperature`` tau > 0 the candidate is instead drawn
from ``softmax(s / tau)`` over the top-k (by the Gumbel-max trick: argmax of s / tau + Gumbel noise). This
stochastic choice is poeval's own variant: Su et al. (2022) and Su & Collier (2023, "Contrastive Search Is
What You Need for Neural Text Generation") both take the argmax, and compare it with sampling methods for
open-ended generation from a prompt, where the prompt supplies the diversity. Unprompted quatrains start
from BOS alone, so the choice must be random somewhere; here the candidate set (top-k), the score and the
degeneration penalty stay theirs, and tau -> 0 recovers their argmax. The noise comes from the global
torch RNG (or ``generator``), so the output is deterministic given the seed.

Entry points:

* ``contrastive_search(model, input_ids, ...)``: a plain function.
* ``contrastive_generate``: the same loop shaped as a transformers 5 ``custom_generate`` callable, so that
  ``model.generate(input_ids, custom_generate=contrastive_generate, top_k=4, penalty_alpha=0.6,
  max_new_tokens=..., eos_token_id=..., pad_token_id=...)`` works (``score_temperature=...`` too);
  ``generate`` prepares the special tokens, length limits, logits processors and stopping criteria and
  hands them to it.

Each step runs one forward pass over the batch x k candidates on top of the KV cache, as in the paper's
reference algorithm; the cache row of the chosen candidate is then kept, so its logits and hidden state
serve the next step without a second pass.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import Any, Callable

import torch
import torch.nn.functional as F

from poeval.errors import PoevalError

# Model kwargs that `generate` hands to a custom_generate callable and that we rebuild ourselves.
_REBUILT_KWARGS = {"attention_mask", "position_ids", "cache", "past_key_values", "use_cache", "logits_to_keep"}


@dataclass
class _State:
    """Everything the next step needs; one row per prompt."""

    seqs: torch.Tensor  # (B, L) token ids so far
    mask: torch.Tensor  # (B, L) 1 for real tokens, 0 for left padding
    hist: torch.Tensor  # (B, L, D) unit-norm last-layer hidden states, for the degeneration penalty
    logits: torch.Tensor  # (B, V) next-token logits
    cache: Any  # KV cache covering all L positions


# ------------------------------------------------------------------------------------------------
# argument checks


def _check_args(top_k: Any, penalty_alpha: Any, max_new_tokens: Any, score_temperature: Any = 0.0) -> None:
    # bool is an int subclass; True as top_k is surely a mistake.
    if not isinstance(top_k, int) or isinstance(top_k, bool) or top_k < 1:
        raise PoevalError(f"contrastive search: top_k must be an integer >= 1, got {top_k!r}")
    if (
        not isinstance(penalty_alpha, (int, float))
        or isinstance(penalty_alpha, bool)
        or not 0.0 <= penalty_alpha <= 1.0  # also rejects NaN
    ):
        raise PoevalError(f"contrastive search: penalty_alpha must be a number in [0, 1], got {penalty_alpha!r}")
    if not isinstance(max_new_tokens, int) or isinstance(max_new_tokens, bool) or max_new_tokens < 0:
        raise PoevalError(f"contrastive search: max_new_tokens must be an integer >= 0, got {max_new_tokens!r}")
    tau = score_temperature
    if not isinstance(tau, (int, float)) or isinstance(tau, bool) or not 0.0 <= tau < math.inf:
        raise PoevalError(f"contrastive search: score_temperature must be a finite number >= 0, got {tau!r}")


def _check_inputs(input_ids: Any, attention_mask: Any) -> torch.Tensor:
    if not isinstance(input_ids, torch.Tensor) or input_ids.dim() != 2 or input_ids.shape[1] == 0:
        raise PoevalError("contrastive search: input_ids must be a non-empty 2-D tensor (batch, length)")
    if attention_mask is None:
        return torch.ones_like(input_ids)
    if not isinstance(attention_mask, torch.Tensor) or attention_mask.shape != input_ids.shape:
        raise PoevalError("contrastive search: attention_mask must be a tensor shaped like input_ids")
    if (attention_mask[:, -1] == 0).any():
        # The next token is predicted from the last column, so right padding would give wrong continuations.
        raise PoevalError("contrastive search: prompts must be left-padded (last attention_mask column all 1)")
    return attention_mask.to(torch.long)


def _token_ids(value: Any, device: torch.device) -> torch.Tensor | None:
    """Normalise an int / list / tensor of token ids to a 1-D tensor (None stays None)."""
    if value is None:
        return None
    ids = torch.as_tensor(value, dtype=torch.long, device=device).reshape(-1)
    return ids if ids.numel() else None


# ------------------------------------------------------------------------------------------------
# model calls


def _cache_name(model: Any) -> str:
    # transformers 5.x renamed `past_key_values` to `cache`; accept either spelling.
    params = inspect.signature(model.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def _forward(model: Any, ids: torch.Tensor, mask: torch.Tensor, cache: Any, last_only: bool):
    """Run the model on `ids` after `cache`; return (last logits, last-layer hidden states, cache)."""
    n_new = ids.shape[1]
    # Positions count real tokens only, so left padding does not shift them (as `generate` does).
    positions = (mask.cumsum(-1) - 1).clamp_min(0)[:, -n_new:]
    kwargs = {"input_ids": ids, "attention_mask": mask, "position_ids": positions, "use_cache": True}
    kwargs["output_hidden_states"] = True
    if cache is not None:
        kwargs[_cache_name(model)] = cache
    if last_only and "logits_to_keep" in inspect.signature(model.forward).parameters:
        kwargs["logits_to_keep"] = 1  # the prompt's other logits are never used
    out = model(**kwargs, return_dict=True)
    new_cache = out.cache if getattr(out, "cache", None) is not None else out.past_key_values
    return out.logits[:, -1].float(), out.hidden_states[-1], new_cache


def _prefill(model: Any, input_ids: torch.Tensor, mask: torch.Tensor) -> _State:
    logits, hidden, cache = _forward(model, input_ids, mask, None, last_only=True)
    hist = F.normalize(hidden.float(), dim=-1)
    return _State(input_ids, mask, hist, logits, cache)


# ------------------------------------------------------------------------------------------------
# one decoding step


def _scores(top_p: torch.Tensor, cand_h: torch.Tensor, state: _State, alpha: float) -> torch.Tensor:
    """(1 - alpha) * p(v) - alpha * max_j cos(h_v, h_j) for each of the (B, k) candidates."""
    sims = torch.einsum("bkd,bld->bkl", cand_h, state.hist)
    # Padding is not context: exclude it from the max (also hides NaN states some models give pad rows).
    sims = sims.masked_fill(state.mask[:, None, :] == 0, -math.inf)
    # clamp: a row with no real context would give -inf, and 0 * inf is NaN when alpha = 0.
    penalty = sims.max(dim=-1).values.clamp_min(-1.0)
    return (1.0 - alpha) * top_p - alpha * penalty


def _choose(scores: torch.Tensor, tau: float, generator: torch.Generator | None) -> torch.Tensor:
    """Index of the chosen candidate per row: argmax of the score (Su et al.), or with tau > 0 a draw from
    softmax(score / tau) by the Gumbel-max trick. One (B, k) uniform draw per step, also for rows that
    have stopped, so a row's noise does not depend on when the others end."""
    if tau == 0:
        return scores.argmax(dim=-1)
    # a generator draws on its own device (CPU); the global RNG on the scores' device
    u = torch.rand(scores.shape, generator=generator, device="cpu" if generator is not None else scores.device)
    gumbel = -torch.log(-torch.log(u.to(scores.device).clamp(1e-20, 1.0 - 1e-7)))  # u = 0 or 1 would give inf
    return (scores / tau + gumbel).argmax(dim=-1)


def _step(model: Any, state: _State, k: int, alpha: float, processor: Callable | None, tau: float = 0.0,
          generator: torch.Generator | None = None):
    """Choose one token per row; return (tokens (B,), state with that token appended)."""
    logits = processor(state.seqs, state.logits) if processor is not None else state.logits
    top_p, top_ids = logits.softmax(dim=-1).topk(k, dim=-1)  # (B, k)
    batch = top_ids.shape[0]

    # One forward over all B*k candidates: row b*k + i of the expanded cache continues prompt b with candidate i.
    state.cache.batch_repeat_interleave(k)
    ones = state.mask.new_ones(batch, 1)
    cand_mask = torch.cat([state.mask, ones], dim=-1).repeat_interleave(k, dim=0)
    cand_logits, cand_hidden, cache = _forward(model, top_ids.reshape(-1, 1), cand_mask, state.cache, False)
    cand_h = F.normalize(cand_hidden[:, -1].float(), dim=-1).view(batch, k, -1)

    best = _choose(_scores(top_p, cand_h, state, alpha), tau, generator)  # (B,)
    rows = torch.arange(batch, device=best.device)
    tokens = top_ids[rows, best]
    # Keep only the chosen candidate's row: its cache, logits and hidden state are the next step's context.
    keep = rows * k + best
    cache.batch_select_indices(keep)
    new_state = _State(
        seqs=torch.cat([state.seqs, tokens[:, None]], dim=-1),
        mask=torch.cat([state.mask, ones], dim=-1),
        hist=torch.cat([state.hist, cand_h[rows, best][:, None]], dim=1),
        logits=cand_logits[keep],
        cache=cache,
    )
    return tokens, new_state


# ------------------------------------------------------------------------------------------------
# public API


@torch.no_grad()
def contrastive_search(
    model: Any,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None = None,
    *,
    top_k: int,
    penalty_alpha: float,
    max_new_tokens: int,
    eos_token_id: int | list[int] | torch.Tensor | None = None,
    pad_token_id: int | torch.Tensor | None = None,
    logits_processor: Callable | None = None,
    stopping_criteria: Callable | None = None,
    score_temperature: float = 0.0,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Contrastive search for a decoder-only causal LM; returns prompt + generated ids, like ``generate``.

    Prompts of different lengths must be left-padded with ``attention_mask`` marking real tokens. A row
    stops after emitting any ``eos_token_id``; later positions get ``pad_token_id`` (default: the first eos
    id). Generation ends when every row has stopped or after ``max_new_tokens``. ``logits_processor`` and
    ``stopping_criteria`` (transformers-style callables taking ``(ids, scores)``) are optional.
    ``score_temperature`` 0 is Su et al.'s argmax, fully deterministic (model in eval mode, dropout off);
    > 0 draws the candidate from softmax(score / score_temperature), with noise from ``generator`` (a CPU
    ``torch.Generator``) or else the global torch RNG.
    """
    _check_args(top_k, penalty_alpha, max_new_tokens, score_temperature)
    mask = _check_inputs(input_ids, attention_mask)
    if max_new_tokens == 0:
        return input_ids
    eos = _token_ids(eos_token_id, input_ids.device)
    pad = _token_ids(pad_token_id, input_ids.device)
    pad = pad[0] if pad is not None else (eos[0] if eos is not None else None)

    state = _prefill(model, input_ids, mask)
    k = min(top_k, state.logits.shape[-1])  # cannot have more candidates than the vocabulary
    unfinished = torch.ones(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
    for _ in range(max_new_tokens):
        tokens, state = _step(model, state, k, float(penalty_alpha), logits_processor, float(score_temperature),
                              generator)
        if pad is not None:
            # Stopped rows keep decoding (cheaper than reshaping the batch) but show only padding.
            state.seqs[:, -1] = torch.where(unfinished, tokens, pad)
        if eos is not None:
            unfinished &= ~torch.isin(tokens, eos)
        if stopping_criteria is not None:
            unfinished &= ~stopping_criteria(state.seqs, None)
        if not unfinished.any():
            break
    return state.seqs


def contrastive_generate(
    model: Any,
    input_ids: torch.Tensor,
    logits_processor: Callable | None = None,
    stopping_criteria: Callable | None = None,
    generation_config: Any = None,
    score_temperature: float = 0.0,
    **model_kwargs: Any,
) -> torch.Tensor:
    """Decoding loop for ``model.generate(..., custom_generate=contrastive_generate)``.

    ``generate`` folds ``top_k``, ``penalty_alpha``, ``max_new_tokens``/``max_length``, ``eos_token_id`` and
    ``pad_token_id`` into ``generation_config``, builds the logits processors and stopping criteria, then
    calls this with the (possibly expanded) prompt and model kwargs. Always returns a LongTensor; a
    streamer or ``synced_gpus`` is not used (``generate`` does not pass them to callables).
    ``score_temperature`` (a ``generate`` keyword that ``generate`` hands through by name) selects the
    stochastic candidate choice.
    """
    cfg = generation_config if generation_config is not None else model.generation_config
    if getattr(cfg, "return_dict_in_generate", False):
        raise PoevalError("contrastive search returns token ids only; return_dict_in_generate is not supported")
    _reject_unhandled(model_kwargs)
    return contrastive_search(
        model,
        input_ids,
        model_kwargs.get("attention_mask"),  # None when generate found no padding
        top_k=cfg.top_k,
        penalty_alpha=cfg.penalty_alpha,
        max_new_tokens=cfg.max_length - input_ids.shape[1],
        eos_token_id=cfg.eos_token_id,
        pad_token_id=cfg.pad_token_id,
        logits_processor=logits_processor or None,  # an empty LogitsProcessorList is a no-op
        stopping_criteria=stopping_criteria or None,
        score_temperature=score_temperature,
    )


def _reject_unhandled(model_kwargs: dict[str, Any]) -> None:
    """Fail loudly on inputs we would otherwise silently drop (extra model inputs, a pre-filled cache)."""
    extra = sorted(k for k, v in model_kwargs.items() if v is not None and k not in _REBUILT_KWARGS)
    if extra:
        raise PoevalError(f"contrastive search does not support these generate inputs: {', '.join(extra)}")
    for name in ("cache", "past_key_values"):
        cache = model_kwargs.get(name)
        if cache is not None and cache.get_seq_length() > 0:
            raise PoevalError("contrastive search cannot continue from a pre-filled KV cache")
