"""BPoMP's causal scores from a server: each text's log-probability through an OpenAI-compatible
``/v1/completions`` endpoint (``poeval bpomp score --endpoint``; docs/bpomp.md "Scoring through an endpoint").

The request is the OpenAI legacy completions API's way to read a prompt's log-probabilities: ``echo: true``
returns the prompt with the completion, and ``logprobs: N`` (an integer) adds ``choices[0].logprobs`` with
``tokens``, ``token_logprobs`` and ``text_offset`` for every echoed token, ``token_logprobs[0]`` being null
(the first token has no prefix). OpenAI's own API no longer serves ``echo`` with ``logprobs``. vLLM does
(``vllm serve``, /v1/completions, with no server flag: ``--max-logprobs``, default 20, only caps N); llama.cpp's
``llama-server`` refuses ``echo`` ("Only no echo is supported"; upstream issue ggml-org/llama.cpp#8942, PR #15189
unmerged), and ``transformers serve`` ignores both fields and answers ``logprobs: null``. A server that gives no
prompt log-probabilities gets one error line (:func:`missing`) and nothing is written.

Framing is the in-process scorer's (:func:`poeval.bpomp.scoring.causal_ids`): ``bos + text + eos`` is the
prompt, and the score is the sum of ``token_logprobs`` after the first token (the BOS when one is given), the
EOS included. The server cannot say which BOS and EOS the model was trained with, so the caller gives them
(``--bos``/``--eos``; empty by default: then the first token of the text is the unscored one). On vLLM the request
also sends ``add_special_tokens: false``, so that vLLM's tokenizer adds no BOS of its own to the prompt.

``max_tokens`` is 1, not 0: vLLM refuses 0 (it always generates a token: vllm-project/vllm#9336). The generated
token's entry follows the prompt's in ``token_logprobs`` and is cut off by the prompt's token count
(``usage.prompt_tokens``, else ``text_offset``).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

from poeval.bpomp.scoring import pair_texts, read_pairs, write_scored
from poeval.errors import PoevalError
from poeval.generators.endpoint.connection import Endpoint, fail, public_url

NEEDS = ("no prompt log-probabilities (echo + logprobs on /v1/completions); BPoMP through an endpoint needs a "
         "server that returns them: vLLM (llama.cpp's llama-server and transformers serve do not)")
# what the ``endpoint`` record of the stats holds: never the key or its variable's value
PUBLIC = ("model", "server", "max_concurrency")


def endpoint(base_url: str, model: str, *, api_key_env: str | None = None, server: str = "other",
             max_concurrency: int = 4, timeout: float = 120.0, max_retries: int = 5) -> Endpoint:
    """An :class:`Endpoint` for scoring: /v1/completions, every failure fatal (scores have no gaps)."""
    return Endpoint(name=None, base_url=base_url, model=model, api="completions", api_key_env=api_key_env,
                    server=server, max_concurrency=max_concurrency, timeout=timeout, max_retries=max_retries,
                    max_failed_requests=0)


def missing(where: Endpoint) -> PoevalError:
    """The one line for a server whose answer holds no prompt log-probabilities."""
    return PoevalError(f"{where.where()}: {NEEDS}")


def request(where: Endpoint, prompt: str) -> dict:
    """The keyword arguments of ``client.completions.create`` that ask for ``prompt``'s log-probabilities."""
    body = {"model": where.model, "prompt": prompt, "echo": True, "logprobs": 1, "max_tokens": 1, "temperature": 0}
    if where.server == "vllm":
        body["extra_body"] = {"add_special_tokens": False}   # the prompt holds its BOS already (or none)
    return body


def prompt_count(response, prompt: str) -> int | None:
    """How many of the echoed tokens are the prompt's: ``usage.prompt_tokens``, else the tokens that start
    inside the prompt (``text_offset``); None when the response says neither."""
    usage = getattr(response, "usage", None)
    if usage is not None and isinstance(getattr(usage, "prompt_tokens", None), int):
        return usage.prompt_tokens
    offsets = getattr(response.choices[0].logprobs, "text_offset", None)
    return None if not offsets else sum(1 for o in offsets if o < len(prompt))


def token_logprobs(response, prompt: str, where: Endpoint) -> list[float]:
    """The prompt's token log-probabilities after its first token; :func:`missing` when the answer lacks them
    (no ``logprobs``, or fewer entries than the prompt has tokens: the generated tokens' only)."""
    logprobs = response.choices[0].logprobs if response.choices else None
    values = getattr(logprobs, "token_logprobs", None)
    count = prompt_count(response, prompt) if values else None
    if not values or not count or len(values) < count:
        raise missing(where)
    scored = values[1:count]
    if any(v is None for v in scored):
        raise missing(where)
    return [float(v) for v in scored]


def text_score(client, where: Endpoint, prompt: str) -> tuple[float, int]:
    """Summed log-probability (natural log) of ``prompt``'s tokens after the first, and how many tokens
    that sum holds, from one request."""
    import openai

    try:
        response = client.completions.create(**request(where, prompt))
    except openai.APIStatusError as err:
        raise PoevalError(f"{fail(where, err)} (asked for prompt log-probabilities: echo + logprobs)") from None
    except (openai.APIConnectionError, openai.APITimeoutError) as err:
        raise PoevalError(f"{where.where()}: no answer after {where.max_retries} retries "
                          f"({type(err).__name__})") from None
    values = token_logprobs(response, prompt, where)
    return sum(values), len(values)


def endpoint_scores(where: Endpoint, texts: Sequence[str], bos: str = "", eos: str = "",
                    progress: bool = False, counts: list[int] | None = None) -> list[float]:
    """The score of each text framed ``bos + text + eos``, in order (``counts``, when given, receives the
    tokens each score sums). The first text is asked alone, so that a server without prompt
    log-probabilities costs one request; the rest go ``max_concurrency`` at a time."""
    from poeval.progress import progress_bar

    client = where.client()
    prompts = [bos + t + eos for t in texts]
    answers = [text_score(client, where, prompts[0])] if prompts else []
    # the bar starts after the first answer: a server that fails it leaves one error line on stderr, no bar
    with progress_bar(total=len(prompts), initial=len(answers), progress=progress,
                      desc="causal (endpoint)") as bar, ThreadPoolExecutor(where.max_concurrency) as pool:
        for answer in pool.map(lambda p: text_score(client, where, p), prompts[1:]):
            answers.append(answer)
            bar.update(1)
    if counts is not None:
        counts.extend(n for _, n in answers)
    return [score for score, _ in answers]


def write_endpoint_scores(pairs_jsonl: str, model: str, kind: str, out: str, *, where: Endpoint, bos: str = "",
                          eos: str = "", progress: bool = True) -> dict:
    """:func:`poeval.bpomp.scoring.write_scores` through an endpoint: the same output records (scorer
    ``causal``); the stats add ``endpoint`` (public URL, model, server, never the key). ``model`` is the
    label the stats record (the endpoint's model)."""
    if kind != "causal":
        raise PoevalError(f"an endpoint scores causal LMs only (kind causal), got {kind!r}")
    pairs = read_pairs(pairs_jsonl)
    texts = pair_texts(pairs)
    counts: list[int] = []
    scores = dict(zip(texts, endpoint_scores(where, texts, bos, eos, progress, counts)))
    stats = write_scored(out, pairs, scores, "causal", dict(zip(texts, counts)))
    record = {key: getattr(where, key) for key in PUBLIC}
    return {**stats, "endpoint": {"base_url": public_url(where.base_url), **record, "bos": bos, "eos": eos}}
