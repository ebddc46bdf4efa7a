"""Prompted judgement of BPoMP pairs: an instruct model is asked which of the two limericks is the original,
and its answer is read from the log-probabilities of the two answer letters, not sampled (Hu & Levy 2023,
"Prompting is not a substitute for probability measurements in large language models", compare this
metalinguistic judgement with the direct log-probability of the texts, :mod:`.scoring`).

Each pair is asked twice, once with the original as A and once as B, so that a preference for one letter
cancels: ``score_original`` is ``log P(A | original first) + log P(B | original second)`` (the answers that
name the original), ``score_corrupted`` the other two; :func:`.analysis.accuracy` then reads the output as it
reads text scores (a pair is right when the answers name the original more probably). The prompt is the
model's chat template (one user turn, :data:`QUESTION`, then the assistant's turn opened); the two letters must
each be one token of the tokenizer. The records keep the four log-probabilities under ``judgement``.
"""

from __future__ import annotations

from typing import Sequence

from poeval import io
from poeval.bpomp.scoring import check_len, pair_text, read_pairs, resolve_model
from poeval.errors import PoevalError

LETTERS = ("A", "B")
QUESTION = ("Here are two limericks. One is an original limerick; the other is a copy of it in which words or "
            "lines were changed.\n\nLimerick A:\n{a}\n\nLimerick B:\n{b}\n\n"
            "Which limerick is the original, A or B? Answer with the letter only.")


def letter_ids(tokenizer) -> list[int]:
    """The token id of each answer letter (each must be one token)."""
    ids = [tokenizer(letter, add_special_tokens=False)["input_ids"] for letter in LETTERS]
    if any(len(i) != 1 for i in ids):
        raise PoevalError("prompted judgement: the answer letters A and B must each be one token of the tokenizer")
    return [i[0] for i in ids]


def prompt_ids(tokenizer, first: Sequence[str], second: Sequence[str]) -> list[int]:
    """The chat prompt that shows ``first`` as A and ``second`` as B, the assistant's turn opened."""
    messages = [{"role": "user", "content": QUESTION.format(a=pair_text(first), b=pair_text(second))}]
    text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def answer_logprobs(model, tokenizer, prompts: Sequence[list[int]], batch_size: int = 8) -> list[tuple[float, float]]:
    """``(log P(A), log P(B))`` of the next token after each prompt (right-padded batches; the last real
    position of each row goes through the output layer)."""
    import torch

    from poeval.generators.lm.logits import logits_at

    letters = letter_ids(tokenizer)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    device = next(model.parameters()).device
    out = []
    with torch.inference_mode():
        for b in range(0, len(prompts), batch_size):
            batch = prompts[b:b + batch_size]
            width = max(len(p) for p in batch)
            ids = torch.full((len(batch), width), pad, dtype=torch.long)
            att = torch.zeros((len(batch), width), dtype=torch.long)
            for r, p in enumerate(batch):
                ids[r, : len(p)], att[r, : len(p)] = torch.tensor(p), 1
            rows = torch.arange(len(batch), device=device)
            last = torch.tensor([len(p) - 1 for p in batch], device=device)
            logp = torch.log_softmax(logits_at(model, rows, last, input_ids=ids.to(device),
                                               attention_mask=att.to(device)).float(), dim=-1)
            out += [(float(row[letters[0]]), float(row[letters[1]])) for row in logp]
    return out


def write_judgements(pairs_jsonl: str, model, out: str, batch_size: int = 8, model_key: str = "--model") -> dict:
    """Ask for every pair in both orders; write the pairs with ``score_original``, ``score_corrupted`` (summed
    answer log-probabilities, see the module doc), ``scorer: prompted`` and ``judgement``."""
    pairs = read_pairs(pairs_jsonl)
    m, tok = resolve_model(model, "causal", model_key)
    if not getattr(tok, "chat_template", None):
        raise PoevalError(f"{model_key}: the model's tokenizer has no chat template; prompted judgement needs an "
                          "instruct model")
    prompts = [prompt_ids(tok, *order) for p in pairs
               for order in ((p["original"], p["corrupted"]), (p["corrupted"], p["original"]))]
    check_len(m, [len(p) for p in prompts])
    answers = answer_logprobs(m, tok, prompts, batch_size)
    for k, p in enumerate(pairs):
        (a1, b1), (a2, b2) = answers[2 * k], answers[2 * k + 1]
        p["score_original"], p["score_corrupted"], p["scorer"] = a1 + b2, b1 + a2, "prompted"
        p["judgement"] = {"original_as_A": {"A": a1, "B": b1}, "original_as_B": {"A": a2, "B": b2}}
    io.write_jsonl(out, pairs)
    return {"pairs": len(pairs), "prompts": len(prompts), "scorer": "prompted",
            "answered_A": sum(a > b for a, b in answers) / len(answers)}
