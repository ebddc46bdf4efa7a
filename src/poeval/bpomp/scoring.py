"""Sentence scores for minimal pairs: causal log-likelihood and masked pseudo-log-likelihood (PLL).

* Causal: the sum of the token log-probabilities of the whole text (lines joined with ``"\\n"``), framed
  as the generators frame a quatrain (BOS, the text, EOS; :mod:`poeval.generators.text_scores`, which the
  quality family's fluency shares).
* Masked (Salazar et al. 2020, "Masked Language Model Scoring"): every non-special token is masked in
  turn and ``log P(token | rest)`` is summed. Variant ``within_word_l2r`` (Kauf & Ivanova 2023, "A Better
  Way to Do Masked Language Model Scoring") also masks the tokens of the same word to the right of the
  scored token, so a multi-token word cannot be read off its own later pieces. Words are the fast
  tokenizer's ``word_ids``. Each masked copy is one row of a batch; rows of all texts are sorted by
  length and batched together, and only the masked position goes through the output projection.
"""

from __future__ import annotations

from typing import Sequence

from poeval import hub, io
from poeval.errors import PoevalError
from poeval.generators.checkpoint import load, orient, verse_order
from poeval.generators.lm.logits import logits_at
from poeval.generators.text_scores import causal_ids, check_len, token_logprobs

KINDS = ("causal", "masked")
VARIANTS = ("original", "within_word_l2r")


# --- models --------------------------------------------------------------------------------------

def load_masked(name_or_path: str, key: str = "model"):
    """``(model, tokenizer)`` of a masked LM from a local directory or a hub id (offline unless the user
    allows downloads: :mod:`poeval.hub`), in eval mode; errors name ``key``, the parameter that gave it."""
    ref = hub.resolve(name_or_path, key, "masked language model")
    from transformers import AutoModelForMaskedLM, AutoTokenizer   # after the check: it takes seconds

    try:
        local = hub.local_files_only()
        tok = AutoTokenizer.from_pretrained(ref, local_files_only=local, trust_remote_code=False)
        model = AutoModelForMaskedLM.from_pretrained(ref, local_files_only=local, trust_remote_code=False)
    except hub.LOAD_ERRORS as err:
        raise PoevalError(f"cannot load masked language model {name_or_path!r} given by {key}: "
                          f"{hub.load_problem(err, ref)}") from None
    return model.eval(), tok


def resolve_model(model, kind: str, key: str = "model"):
    """``(model, tokenizer)`` from a path/id (given by the parameter ``key``) or an already loaded pair."""
    if kind not in KINDS:
        raise PoevalError(f"scorer kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if isinstance(model, (tuple, list)) and len(model) == 2:
        return model[0].eval(), model[1]
    if not isinstance(model, str) or not model:
        raise PoevalError("model must be a path / hub id or a (model, tokenizer) pair")
    from poeval import device

    m, tok = load_masked(model, key) if kind == "masked" else load(model, key=key)
    return m.to(device.resolve()).eval(), tok


def _progress(total: int, progress: bool, desc: str):
    from poeval.progress import progress_bar

    return progress_bar(total=total, progress=progress, desc=desc)


# --- causal --------------------------------------------------------------------------------------

def causal_scores(model, tokenizer, texts: Sequence[str], batch_size: int = 16, progress: bool = False) -> list[float]:
    """Summed log-probability (natural log) of each text under a causal LM (:mod:`poeval.generators.text_scores`)."""
    return [total for total, _ in token_logprobs(model, tokenizer, texts, batch_size, progress)]


# --- masked --------------------------------------------------------------------------------------

def _masked_rows(tokenizer, text: str, variant: str, span: tuple[int, int] | None) -> tuple[list[int], list[tuple[int, list[int]]]]:
    """Token ids of ``text`` and one ``(scored position, [positions to mask])`` per scored token."""
    enc = tokenizer(text, return_special_tokens_mask=True, return_offsets_mapping=span is not None)
    ids, special = enc["input_ids"], enc["special_tokens_mask"]
    words = enc.word_ids()
    rows = []
    for p, tid in enumerate(ids):
        if special[p]:
            continue
        if span is not None:
            a, b = enc["offset_mapping"][p]
            if b <= span[0] or a >= span[1]:
                continue
        masked = [p]
        if variant == "within_word_l2r" and words[p] is not None:
            q = p + 1
            while q < len(ids) and words[q] == words[p] and not special[q]:
                masked.append(q)
                q += 1
        rows.append((p, masked))
    return ids, rows


def masked_scores(model, tokenizer, texts: Sequence[str], variant: str = "original", batch_size: int = 64,
                  spans: Sequence[tuple[int, int]] | None = None, progress: bool = False) -> list[float]:
    """Pseudo-log-likelihood of each text (only tokens overlapping ``spans[k]`` when given)."""
    import torch

    if variant not in VARIANTS:
        raise PoevalError(f"PLL variant must be one of {', '.join(VARIANTS)}, got {variant!r}")
    if not getattr(tokenizer, "is_fast", False):
        raise PoevalError("masked scoring needs a fast (Rust) tokenizer for word boundaries")
    if tokenizer.mask_token_id is None:
        raise PoevalError("masked scoring needs a tokenizer with a mask token")
    encoded = [_masked_rows(tokenizer, t, variant, spans[k] if spans else None) for k, t in enumerate(texts)]
    check_len(model, [len(ids) for ids, _ in encoded])
    jobs = [(k, p, m) for k, (_, rows) in enumerate(encoded) for p, m in rows]
    jobs.sort(key=lambda j: -len(encoded[j[0]][0]))  # similar lengths share a batch: little padding
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    device = next(model.parameters()).device
    out = [0.0] * len(texts)
    bar = _progress(len(jobs), progress, f"PLL {variant}")
    with torch.inference_mode():
        for b in range(0, len(jobs), batch_size):
            batch = jobs[b:b + batch_size]
            width = len(encoded[batch[0][0]][0])
            ids = torch.full((len(batch), width), pad, dtype=torch.long)
            att = torch.zeros((len(batch), width), dtype=torch.long)
            targets = []
            for r, (k, p, masked) in enumerate(batch):
                seq = encoded[k][0]
                ids[r, : len(seq)] = torch.tensor(seq)
                att[r, : len(seq)] = 1
                ids[r, masked] = tokenizer.mask_token_id
                targets.append(seq[p])
            rows = torch.arange(len(batch), device=device)
            pos = torch.tensor([p for _, p, _ in batch], device=device)
            sel = logits_at(model, rows, pos, input_ids=ids.to(device), attention_mask=att.to(device))
            logp = torch.log_softmax(sel.float(), dim=-1)
            lp = logp[rows, torch.tensor(targets, device=logp.device)].tolist()
            for (k, _, _), v in zip(batch, lp):
                out[k] += v
            bar.update(len(batch))
    bar.close()
    return out


# --- files ---------------------------------------------------------------------------------------

def pair_text(lines: Sequence[str]) -> str:
    return "\n".join(lines)


def score_texts(model, tokenizer, kind: str, texts: Sequence[str], variant: str = "original",
                batch_size: int | None = None, progress: bool = False) -> list[float]:
    if kind == "causal":
        return causal_scores(model, tokenizer, texts, batch_size or 16, progress)
    if kind == "masked":
        return masked_scores(model, tokenizer, texts, variant, batch_size or 64, progress=progress)
    raise PoevalError(f"scorer kind must be one of {', '.join(KINDS)}, got {kind!r}")


def token_counts(model, tokenizer, kind: str, texts: Sequence[str], variant: str = "original") -> list[int]:
    """How many tokens each text's score sums: causal, every token after the BOS (the EOS included); masked,
    every non-special token. The per-token accuracy divides the score by it (:func:`.analysis.accuracy`)."""
    if kind == "causal":
        order = verse_order(model)
        return [len(causal_ids(tokenizer, "\n".join(orient(t.split("\n"), order)))) - 1 for t in texts]
    return [len(_masked_rows(tokenizer, t, variant, None)[1]) for t in texts]


def parameter_count(model) -> int:
    """The model's parameters, each tensor once (tied input and output embeddings count once)."""
    return int(sum(p.numel() for p in model.parameters()))


def read_pairs(pairs_jsonl: str) -> list[dict]:
    """The pairs of a pairs file, each checked for its ``original`` and ``corrupted`` line lists."""
    pairs = list(io.read_jsonl(pairs_jsonl))
    if not pairs:
        raise io.nothing_usable(pairs_jsonl, 0, {}, "pairs")
    for n, p in enumerate(pairs, 1):
        if not all(isinstance(p.get(f), list) for f in ("original", "corrupted")):
            raise PoevalError(f"{pairs_jsonl}: record {n}: a pair needs 'original' and 'corrupted' line lists")
    return pairs


def pair_texts(pairs: Sequence[dict]) -> list[str]:
    """Every distinct text of the pairs, sorted: each is scored once."""
    return sorted({pair_text(p[f]) for p in pairs for f in ("original", "corrupted")})


def write_scored(out: str, pairs: list[dict], scores: dict[str, float], label: str,
                 tokens: dict[str, int] | None = None) -> dict:
    """Write the pairs with ``score_original``, ``score_corrupted`` (looked up by text), ``scorer`` and,
    when ``tokens`` is given, ``tokens_original`` and ``tokens_corrupted`` (the tokens each score sums)."""
    for p in pairs:
        p["score_original"] = scores[pair_text(p["original"])]
        p["score_corrupted"] = scores[pair_text(p["corrupted"])]
        p["scorer"] = label
        if tokens is not None:
            p["tokens_original"] = tokens[pair_text(p["original"])]
            p["tokens_corrupted"] = tokens[pair_text(p["corrupted"])]
    io.write_jsonl(out, pairs)
    return {"pairs": len(pairs), "texts": len(scores), "scorer": label}


def write_scores(pairs_jsonl: str, model, kind: str, out: str, variant: str = "original",
                 batch_size: int | None = None, threads: int | None = None, progress: bool = True,
                 model_key: str = "model") -> dict:
    """Score both texts of every pair; write the pairs with ``score_original``, ``score_corrupted``
    (natural-log (pseudo-)log-likelihoods), ``scorer``, ``tokens_original`` and ``tokens_corrupted``. Each
    distinct text is scored once. ``model_key`` names the parameter that gave ``model`` in errors (the
    workflow's: ``bpomp.scorers.<i>.model``). The stats returned add the model's ``parameters``."""
    if threads is not None and (not isinstance(threads, int) or threads < 1):
        raise PoevalError(f"threads must be a positive integer, got {threads!r}")
    if kind not in KINDS:
        raise PoevalError(f"scorer kind must be one of {', '.join(KINDS)}, got {kind!r}")
    pairs = read_pairs(pairs_jsonl)
    m, tok = resolve_model(model, kind, model_key)   # a model that cannot be loaded fails before torch is imported
    if threads is not None:
        import torch

        torch.set_num_threads(threads)
    texts = pair_texts(pairs)
    scores = dict(zip(texts, score_texts(m, tok, kind, texts, variant, batch_size, progress)))
    tokens = dict(zip(texts, token_counts(m, tok, kind, texts, variant)))
    label = "causal" if kind == "causal" else f"masked:{variant}"
    return {**write_scored(out, pairs, scores, label, tokens), "parameters": parameter_count(m)}
