"""Sampling a transformer LM: batches of generations from BOS (or a style prompt) under a typed decoding,
each row cut at its end, parsed into a quatrain or a failure reason (:mod:`poeval.generators.sampling`)."""

from __future__ import annotations

import math
from pathlib import Path

from poeval import device
from poeval.errors import PoevalError
from poeval.generators.checkpoint import load, max_positions, orient, text_bounds, verse_order
from poeval.generators.decoding import Ancestral, Contrastive, Decoding, as_run, parse_decoding
from poeval.generators.engine import quiet_transformers
from poeval.generators.lm.build import has_style_tokens
from poeval.generators.lm.logits import keep_last
from poeval.generators.sampling import (N_VERSES, PAPER_MIN_NEW_TOKENS, Attempt, check_quatrain, paper_loop,
                                       sample_loop)
from poeval.generators.sampling import resolve as resolve_sampling
from poeval.generators.prompting import Prompt
from poeval.poetry.style import SCHEMES, STYLE_TOKENS, strip_style


def generate_kwargs(decoding: Decoding) -> dict:
    """transformers ``generate`` keyword arguments of a decoding (:func:`~poeval.generators.decoding.as_run`
    first: mode paper is top-k sampling): ancestral sampling, or contrastive search through
    :func:`poeval.generators.contrastive.contrastive_generate` at the search's temperature. top_k=0 disables
    top-k filtering; it is passed explicitly to override generation_config defaults."""
    from poeval.generators.contrastive import contrastive_generate

    decoding = as_run(decoding)
    if isinstance(decoding, Ancestral):
        return {"do_sample": True, "temperature": decoding.temperature, "top_p": decoding.top_p,
                "top_k": decoding.top_k}
    return {"custom_generate": contrastive_generate, "do_sample": False, "top_k": decoding.top_k,
            "penalty_alpha": decoding.penalty_alpha, "score_temperature": decoding.search_temperature}


def stop_ids(tokenizer) -> list[int]:
    """The tokens that end a generation: the EOS first, then every other special token of the tokenizer
    except the style tokens (``<|endoftext|>`` or ``<|im_start|>`` of a chat model's tokenizer, a byte
    model's ``<pad>``). A text is never silently cut or stripped at one of these: only the EOS makes a
    quatrain valid, any other gives ``special_token``."""
    eos = tokenizer.convert_tokens_to_ids(text_bounds(tokenizer)[1])
    special = set(tokenizer.all_special_ids) | {i for i, t in tokenizer.added_tokens_decoder.items() if t.special}
    special -= {tokenizer.convert_tokens_to_ids(t) for t in STYLE_TOKENS}
    return [eos] + sorted(special - {eos})


def newline_counts(tokenizer, size: int):
    """Per token id (``size``: the model's vocabulary), how many newlines its text holds."""
    import torch

    counts = torch.zeros(size, dtype=torch.long)
    texts = tokenizer.batch_decode([[i] for i in range(min(size, len(tokenizer)))])
    counts[: len(texts)] = torch.tensor([t.count("\n") for t in texts])
    return counts


def _fifth_verse(counts, start: int):
    """A stopping criterion: a row whose generated text holds four newlines has begun a fifth verse and
    can no longer be a quatrain, so it stops there (``extra_verse``) instead of running to the budget."""
    from transformers import StoppingCriteria

    class FifthVerse(StoppingCriteria):
        def __call__(self, input_ids, scores, **kwargs):
            return counts.to(input_ids.device)[input_ids[:, start:]].sum(dim=1) >= N_VERSES

    return FifthVerse()


def generate_batch(model, prompt, decoding: Decoding, max_new_tokens: int, stops: list[int], pad: int, counts=None,
                   min_new_tokens: int = 0):
    """One batch of generations from ``prompt``; a row ends at any of ``stops`` (:func:`stop_ids`) and, with
    ``counts`` (:func:`newline_counts`), at the start of a fifth verse. Contrastive search with the argmax
    (score_temperature 0) is deterministic, so from the same BOS prompt every attempt would give the same
    quatrain: its first token is drawn by ancestral sampling (temperature 1), and the search continues.
    ``decoding``: a typed decoding (:func:`~poeval.generators.decoding.parse_decoding`). Returns the (B, prompt + new) ids, rows padded with ``pad`` after
    they end; :func:`sample` runs it on each batch of attempts. ``min_new_tokens``: the EOS (``stops[0]``) is
    barred for that many first tokens (the paper's procedure, as transformers' min-length processor)."""
    import torch
    from transformers import StoppingCriteriaList

    decoding = as_run(decoding)
    if isinstance(decoding, Contrastive) and decoding.search_temperature == 0.0:
        with torch.no_grad():
            logits = model(input_ids=prompt, **keep_last(model)).logits[:, -1].float()
        if min_new_tokens > 0:
            logits[:, stops[0]] = -math.inf
        prompt = torch.cat([prompt, torch.multinomial(torch.softmax(logits, dim=-1), 1)], dim=1)
        max_new_tokens, min_new_tokens = max_new_tokens - 1, max(min_new_tokens - 1, 0)
        if max_new_tokens < 1:
            return prompt
        done = torch.isin(prompt[:, -1], torch.tensor(stops, device=prompt.device))   # nothing to continue
        if bool(done.all()):
            return prompt
    if isinstance(decoding, Ancestral):
        return _ancestral(model, prompt, decoding, max_new_tokens, stops, pad, counts, min_new_tokens)
    criteria = StoppingCriteriaList([_fifth_verse(counts, prompt.shape[1])] if counts is not None else [])
    minimum = {"min_new_tokens": min_new_tokens} if min_new_tokens > 0 else {}
    return model.generate(input_ids=prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=max_new_tokens,
                          eos_token_id=stops, pad_token_id=pad, stopping_criteria=criteria, **minimum,
                          **generate_kwargs(decoding))


def _warpers(decoding: Ancestral):
    """transformers' own temperature, top-k and top-p warpers, in the order its ``generate`` applies them."""
    from transformers import LogitsProcessorList, TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

    warpers = LogitsProcessorList()
    if decoding.temperature != 1.0:
        warpers.append(TemperatureLogitsWarper(decoding.temperature))
    if decoding.top_k:
        warpers.append(TopKLogitsWarper(decoding.top_k))
    if decoding.top_p < 1.0:
        warpers.append(TopPLogitsWarper(decoding.top_p))
    return warpers


def _ancestral(model, prompt, decoding: Ancestral, max_new_tokens: int, stops: list[int], pad: int, counts=None,
               min_new_tokens: int = 0):
    """Ancestral sampling as transformers' ``generate`` does it (the same warpers, then a multinomial draw
    from the softmax), except that a row that has ended (one of ``stops``, or with ``counts`` a fifth
    verse begun) leaves the batch and its key/value cache: the batch shrinks as rows end, instead of
    every row running until the longest has ended. Rows leave in groups (a tenth of the batch or more),
    so that the cache is not copied at every step. Returns ``prompt`` with the generated tokens, each row
    padded with ``pad`` after its end, as ``generate`` returns it. The EOS (``stops[0]``) gets no probability
    in the first ``min_new_tokens`` steps, set before the warpers as ``generate``'s min-length processor does."""
    import torch

    warpers, dev = _warpers(decoding), prompt.device
    stop = torch.tensor(stops, device=dev)
    counts = counts.to(dev) if counts is not None else None
    out = torch.full((prompt.shape[0], max_new_tokens), pad, dtype=torch.long, device=dev)
    rows = torch.arange(prompt.shape[0], device=dev)          # the batch rows still in the cache
    ended = torch.zeros(prompt.shape[0], dtype=torch.bool, device=dev)
    newlines = torch.zeros(prompt.shape[0], dtype=torch.long, device=dev)
    cache, step_input, last = None, prompt, keep_last(model)
    for step in range(max_new_tokens):
        output = model(input_ids=step_input, cache=cache, use_cache=True, **last)
        cache = output.cache
        logits = output.logits[:, -1].float()
        if step < min_new_tokens:
            logits[:, stops[0]] = -math.inf
        probs = torch.softmax(warpers(None, logits), dim=-1)
        token = torch.multinomial(probs, num_samples=1).squeeze(1)
        live = ~ended
        out[rows[live], step] = token[live]
        if counts is not None:
            newlines += counts[token]
        ended |= torch.isin(token, stop) | (newlines >= N_VERSES if counts is not None else False)
        if bool(ended.all()):
            break
        if int(ended.sum()) * 10 >= len(rows):   # drop the ended rows from the batch and the cache
            keep = torch.nonzero(~ended).squeeze(1)
            cache.batch_select_indices(keep)
            rows, token, newlines, ended = rows[keep], token[keep], newlines[keep], ended[keep]
        step_input = token[:, None]
    return torch.cat([prompt, out], dim=1)


def is_byte_level(tokenizer) -> bool:
    return type(tokenizer).__name__.startswith("ByT5")


def parse_quatrain(text: str, finished: bool = True) -> tuple[list[str] | None, str | None]:
    """Return ``(lines, None)`` for a valid quatrain, else ``(None, reason)``: the text's lines (split on
    newlines) under :func:`poeval.generators.sampling.check_quatrain` (ended with EOS, exactly four lines,
    each with a word, :func:`poeval.text.verse_problem`; reasons ``extra_verse``, ``truncated``, ``wrong_line_count:<k>``, ``empty_line``)."""
    return check_quatrain(text.split("\n"), finished)


def _attempt(tokenizer, row: list[int], stops: list[int], styled: bool, order: str = "forward") -> Attempt:
    """A generated row (after the prompt) as an attempt: its text up to the first of ``stops`` (the EOS
    first), split into verses (turned back to forward for a model of ``verse_order`` reversed). A row
    that a special token other than the EOS ended is ``special_token``, unless it already has more verses
    than a quatrain (``extra_verse``, :func:`poeval.generators.sampling.check_quatrain`)."""
    end = next((i for i, token in enumerate(row) if token in stops), None)
    text = tokenizer.decode(row if end is None else row[:end], skip_special_tokens=True)
    if styled:  # style tokens are special, so decode skipped them; make sure of it
        text = strip_style(text)
    verses = orient(text.split("\n"), order)
    foreign = end is not None and row[end] != stops[0] and len(verses) <= N_VERSES
    return Attempt(verses, end is not None, reason="special_token" if foreign else None)


def style_prompt(tokenizer, style: str | None) -> list[int]:
    """The prompt ids: BOS, then with ``style`` (a scheme such as ``"abab"``) the model's
    ``<scheme=abab>`` token. The metre token that training put after it is left to the model, which
    draws it from what it learned to follow that scheme (training always had one, so it comes next)."""
    ids = [tokenizer.convert_tokens_to_ids(text_bounds(tokenizer)[0])]
    if style is None:
        return ids
    if style not in SCHEMES:
        raise PoevalError(f"style {style!r} is not a four-line rhyme scheme (one of {', '.join(SCHEMES)})")
    if not has_style_tokens(tokenizer):
        raise PoevalError(f"style {style!r}: the model was not trained style-conditioned (it has no style tokens)")
    return ids + [tokenizer.convert_tokens_to_ids(f"<scheme={style}>")]


def _budget(sampling: dict, tokenizer, limit: int | None, prompt: int) -> int:
    """Tokens a generation may add after a ``prompt``-token prompt: ``max_new_bytes`` for a byte-level
    model when the block gives it (a byte-level model needs ~3x the steps of a BPE one), else
    ``max_new_tokens``; capped by the model's positions (``limit``)."""
    budget = sampling["max_new_tokens"]
    if sampling.get("max_new_bytes") is not None and is_byte_level(tokenizer):
        budget = sampling["max_new_bytes"]
    return budget if limit is None else min(budget, limit - prompt)


def sample(model_dir: str, decoding: Decoding | dict, sampling: dict, out: str, stats: str, *, threads: int = 1,
           id_prefix: str = "", progress: bool = True, style: str | None = None,
           prompt: Prompt | None = None) -> dict:
    """Sample until ``n`` valid quatrains or ``max_attempts`` generations; write JSONL + stats JSON.

    ``sampling`` is a params ``sampling`` block (:func:`poeval.generators.sampling.resolve`). Each
    generation starts from BOS, followed with ``style`` (a rhyme scheme such as ``"abab"``) by a
    style-conditioned model's scheme token (:func:`style_prompt`). It is a valid quatrain iff it ends with
    EOS within its budget (:func:`_budget`) and its text splits on newlines into exactly four lines, each
    with a word (:func:`poeval.text.verse_problem`, the rule evaluate's reader applies too); anything else is counted under its reason (``truncated``: no EOS within
    the budget; ``wrong_line_count:<k>``; ``empty_line``), never written and never repaired, and sampling
    goes on (:func:`poeval.generators.sampling.sample_loop`). Generations are parsed in order; counting
    stops at the one that yields the n-th valid quatrain, so ``valid`` equals the number of records
    written. The stats record ``validity_rate`` and ``distinct_share``. Deterministic for equal seed,
    batch_size and threads. ``procedure: paper`` samples as the paper's code instead (:func:`_sample_paper`).
    A ``prompt`` (``api: chat``) asks an instruction-tuned checkpoint through its chat template instead
    (:func:`_sample_chat`).
    """
    import torch

    decoding = parse_decoding(decoding)
    sampling = resolve_sampling(sampling)
    if not Path(model_dir).is_dir():
        raise PoevalError(f"model directory not found: {model_dir}")
    torch.set_num_threads(int(threads))
    with quiet_transformers(progress):
        model, tokenizer = load(model_dir)
    model.to(device.resolve())
    model.eval()
    loop = {"model_dir": model_dir, "decoding": decoding, "sampling": sampling, "id_prefix": id_prefix,
            "progress": progress}
    if prompt is not None:
        return _sample_chat(model, tokenizer, prompt, style, out, stats, **loop)
    prefix = style_prompt(tokenizer, style)
    max_new_tokens = _budget(sampling, tokenizer, max_positions(model), len(prefix))
    if sampling["procedure"] == "paper":
        return _sample_paper(model, tokenizer, prefix, max_new_tokens, out, stats, style,
                             model_dir=model_dir, decoding=decoding, sampling=sampling, id_prefix=id_prefix,
                             progress=progress)
    stops, pad = stop_ids(tokenizer), tokenizer.pad_token_id
    counts = newline_counts(tokenizer, model.get_output_embeddings().weight.shape[0])
    styled = has_style_tokens(tokenizer)  # a style-conditioned model: style tokens are stripped from its output
    order = verse_order(model)

    def generate(size: int) -> list[Attempt]:
        prompt = torch.tensor([prefix] * size, dtype=torch.long, device=device.of(model))
        with torch.no_grad(), quiet_transformers(progress):
            seqs = generate_batch(model, prompt, decoding, max_new_tokens, stops, pad, counts)
        return [_attempt(tokenizer, row, stops, styled, order) for row in seqs[:, len(prefix):].tolist()]

    return sample_loop(generate, out, stats, model_dir=model_dir, decoding=decoding, sampling=sampling,
                       id_prefix=id_prefix, progress=progress,
                       extra=lambda _: {"max_new_tokens": max_new_tokens, "byte_level": is_byte_level(tokenizer),
                                        **({"style": style} if style is not None else {})})


def paper_text(tokenizer, row: list[int], eos: int, order: str = "forward") -> tuple[str, bool]:
    """A generated row (after the prompt) as the paper's pipeline returned it, and whether the EOS ended it:
    decoded up to the EOS with every special token skipped (style tokens too), then transformers 4's
    tokenization-space clean-up (`` ,`` -> ``,``, `` 's`` -> ``'s``...), which its text-generation pipeline
    applied by default and transformers 5 no longer applies to a BPE tokenizer. A reversed model's verses
    are turned back."""
    end = row.index(eos) if eos in row else None
    text = tokenizer.decode(row[:end], skip_special_tokens=True, clean_up_tokenization_spaces=False)
    text = tokenizer.clean_up_tokenization(text)
    return "\n".join(orient(text.split("\n"), order)), end is not None


def _sample_paper(model, tokenizer, prefix: list[int], max_new_tokens: int, out: str, stats: str,
                  style: str | None, **loop) -> dict:
    """``sampling.procedure: paper`` (:func:`poeval.generators.sampling.paper_loop`): generations from BOS
    (the paper's ``<|endoftext|>`` prefix) that only the EOS ends, not before
    :data:`~poeval.generators.sampling.PAPER_MIN_NEW_TOKENS` new tokens, and that run on past a fourth verse
    to the budget (the paper's ``max_length``: params ``max_new_tokens``, or ``max_new_bytes`` for a
    byte-level model); other special tokens neither end a generation nor appear in its text."""
    import torch

    eos = tokenizer.convert_tokens_to_ids(text_bounds(tokenizer)[1])
    order = verse_order(model)

    def generate(size: int) -> list[tuple[str, bool]]:
        prompt = torch.tensor([prefix] * size, dtype=torch.long, device=device.of(model))
        with torch.no_grad(), quiet_transformers(loop["progress"]):
            seqs = generate_batch(model, prompt, loop["decoding"], max_new_tokens, [eos], tokenizer.pad_token_id,
                                  min_new_tokens=PAPER_MIN_NEW_TOKENS)
        return [paper_text(tokenizer, row, eos, order) for row in seqs[:, len(prefix):].tolist()]

    return paper_loop(generate, out, stats, **loop,
                      extra={"max_new_tokens": max_new_tokens, "byte_level": is_byte_level(tokenizer),
                             **({"style": style} if style is not None else {})})


def chat_ids(tokenizer, prompt: Prompt, style: str | None) -> list[int]:
    """The prompt ids of a chat request: the messages through the checkpoint's own chat template, ending
    where the assistant's answer begins (as an OpenAI-compatible server renders them)."""
    if prompt.api != "chat":
        raise PoevalError("an in-process checkpoint is prompted only with api: chat (api completions starts at "
                          "its BOS)")
    if not getattr(tokenizer, "chat_template", None):
        raise PoevalError("api: chat needs a checkpoint with a chat template (an instruction-tuned model)")
    text = tokenizer.apply_chat_template(prompt.messages(style), add_generation_prompt=True, tokenize=False)
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def _chat_attempt(tokenizer, row: list[int], stops: list[int]) -> Attempt:
    """A generated answer as an attempt: its text up to the first stop, cleaned by the chat rules
    (:mod:`poeval.generators.chat_answers`); a special token other than the EOS is ``special_token``."""
    from poeval.generators import chat_answers

    end = next((i for i, token in enumerate(row) if token in stops), None)
    cleaned = chat_answers.clean(tokenizer.decode(row if end is None else row[:end], skip_special_tokens=True))
    foreign = end is not None and row[end] != stops[0]
    return Attempt(cleaned.text.split("\n"), end is not None, reason="special_token" if foreign else None,
                   info={"cleaned": cleaned.rules})


def _sample_chat(model, tokenizer, prompt: Prompt, style: str | None, out: str, stats: str, **loop) -> dict:
    """An instruction-tuned checkpoint asked for a quatrain (params ``api: chat``): every attempt is the
    chat prompt, its answer runs to the EOS (no fifth-verse stop: a title or a preamble comes first) or
    the budget, and is cleaned before the validity rule, as an endpoint's chat answers are."""
    import collections

    import torch

    ids = chat_ids(tokenizer, prompt, style)
    max_new_tokens = _budget(loop["sampling"], tokenizer, max_positions(model), len(ids))
    stops, pad = stop_ids(tokenizer), tokenizer.pad_token_id

    def generate(size: int) -> list[Attempt]:
        batch = torch.tensor([ids] * size, dtype=torch.long, device=device.of(model))
        with torch.no_grad(), quiet_transformers(loop["progress"]):
            seqs = generate_batch(model, batch, loop["decoding"], max_new_tokens, stops, pad)
        return [_chat_attempt(tokenizer, row, stops) for row in seqs[:, len(ids):].tolist()]

    def extra(counted: list[Attempt]) -> dict:
        cleaned = collections.Counter(rule for a in counted for rule in a.info.get("cleaned", ()))
        return {"api": "chat", "max_new_tokens": max_new_tokens, "cleaned": dict(sorted(cleaned.items())),
                "sent": {"prompt_text": tokenizer.decode(ids)}, **({"style": style} if style is not None else {})}

    return sample_loop(generate, out, stats, **loop, extra=extra, prompt=prompt.to_dict())
