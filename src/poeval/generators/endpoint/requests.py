"""One request per attempt: the decoding config mapped onto the OpenAI request, each attempt's seed, and the
key that names a request in the request log.

What the OpenAI schema has, it carries: ``temperature``, ``top_p``, ``max_tokens``, ``seed``. What it lacks
goes the way each server takes it (:data:`TOP_K`): vLLM, SGLang and llama.cpp's llama-server read a
``top_k`` field of the body; transformers serve reads a ``generation_config`` string, without which it
decodes greedily whatever the temperature, so that one always carries ``do_sample``. Ollama's and OpenAI's
endpoints have no ``top_k``: a config that needs it is refused before any request, as contrastive search
always is (no server runs it).
"""

from __future__ import annotations

import hashlib
import json

from poeval.errors import PoevalError
from poeval.generators.decoding import Ancestral, Decoding, as_run
from poeval.generators.endpoint.connection import Endpoint
from poeval.generators.prompting import Prompt

# How each server kind takes top_k: "field" (a body field), "generation_config" (transformers), None (refused).
TOP_K = {"vllm": "field", "sglang": "field", "llama.cpp": "field", "transformers": "generation_config",
         "ollama": None, "openai": None, "other": None}
SEED_MASK = 0x7FFFFFFF   # 31 bits: every server takes it (llama.cpp and Ollama read a signed 32-bit seed)


def refusal(endpoint: Endpoint, decoding: Decoding) -> str | None:
    """Why ``endpoint`` cannot run ``decoding`` (None if it can): contrastive search always; top_k where
    the server has no way to take it."""
    decoding = as_run(decoding)
    if not isinstance(decoding, Ancestral):
        return "contrastive search needs the model's hidden states, which no endpoint returns"
    if decoding.top_k and TOP_K[endpoint.server] is None:
        return (f"top_k {decoding.top_k}: server '{endpoint.server}' takes no top_k (the OpenAI schema has none; "
                "vllm, sglang, llama.cpp and transformers take it)")
    return None


def decoding_fields(endpoint: Endpoint, decoding: Decoding, max_tokens: int) -> dict:
    """The request fields of an ancestral ``decoding``: the OpenAI schema's, then top_k (and transformers'
    ``do_sample``) as :data:`TOP_K` says; top_k 0 (off) is sent to no one."""
    decoding = as_run(decoding)
    fields = {"temperature": decoding.temperature, "top_p": decoding.top_p, "max_tokens": max_tokens}
    how = TOP_K[endpoint.server]
    if how == "generation_config":
        config = {"do_sample": True} | ({"top_k": decoding.top_k} if decoding.top_k else {"top_k": 0})
        return fields | {"extra_body": {"generation_config": json.dumps(config, sort_keys=True)}}
    if how == "field" and decoding.top_k:
        return fields | {"extra_body": {"top_k": decoding.top_k}}
    return fields


def template(endpoint: Endpoint, decoding: Decoding, max_tokens: int, prompt: Prompt, style: str | None) -> dict:
    """Every field of a request but its seed: the route, the model, the prompt and the decoding."""
    reason = refusal(endpoint, decoding)
    if reason:
        raise PoevalError(f"{endpoint.where()} cannot run decoding {json.dumps(decoding.to_dict())}: {reason}")
    return {"route": endpoint.api, "model": endpoint.model, **prompt.sent(style),
            **decoding_fields(endpoint, decoding, max_tokens)}


def seed(base: int, index: int) -> int:
    """The seed of attempt ``index`` under ``sampling.seed`` ``base``: the first 31 bits of
    sha256("<base>/<index>"), so a rerun asks for the same seeds and two bases share none by construction."""
    digest = hashlib.sha256(f"{base}/{index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & SEED_MASK


def request(body: dict, seed_value: int) -> dict:
    """The request of one attempt: the template with its seed."""
    return body | {"seed": seed_value}


def key(req: dict) -> str:
    """The request log's key of a request: sha256 of its canonical JSON (every field, the seed included;
    not the URL, so a server moved to another address still finds its answers)."""
    return hashlib.sha256(json.dumps(req, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def send(client, req: dict):
    """Send ``req`` with the openai client; return the response object."""
    fields = {k: v for k, v in req.items() if k != "route"}
    if req["route"] == "chat":
        return client.chat.completions.create(**fields)
    return client.completions.create(**fields)


def answer(response, route: str) -> dict:
    """What the request log keeps of a response: its text, how it ended, the model and fingerprint the
    server reported, and the token usage."""
    choice = response.choices[0]
    text = choice.message.content if route == "chat" else choice.text
    usage = response.usage.model_dump(exclude_none=True) if getattr(response, "usage", None) else {}
    return {"text": text or "", "finish_reason": choice.finish_reason, "model": getattr(response, "model", None),
            "system_fingerprint": getattr(response, "system_fingerprint", None),
            "usage": {k: v for k, v in usage.items() if isinstance(v, int)}}
