"""The test servers themselves (tests/servers.py): `transformers serve` of the tiny GPT-2 (served_tiny) and the
fault injector, driven by the real `openai` client."""

import socket
import time

import openai
import pytest
from servers import FaultServer, Served, free_port, generation_config

CLIENT = {"api_key": "sk-test", "max_retries": 0, "timeout": 60}


def client(base_url: str, **over) -> openai.OpenAI:
    return openai.OpenAI(base_url=base_url, **{**CLIENT, **over})


def complete(served: Served, seed: int, tokens: int = 24) -> str:
    out = client(served.base_url).completions.create(
        model=served.model, prompt=served.bos, max_tokens=tokens, seed=seed, extra_body=generation_config())
    return out.choices[0].text


# ---------------------------------------------------------------------------------------------- transformers serve

def test_free_port_binds():
    port = free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


def test_served_tiny_samples_reproducibly(served_tiny):
    assert served_tiny.bos == "<|endoftext|>"
    first, again, other = complete(served_tiny, 7), complete(served_tiny, 7), complete(served_tiny, 8)
    assert first.split() and first == again
    assert other != first   # sampling is on: a greedy model would give every seed the same text


def test_served_tiny_chats(served_tiny):
    out = client(served_tiny.base_url).chat.completions.create(
        model=served_tiny.model, messages=[{"role": "user", "content": "the sea"}], max_tokens=8, seed=1,
        extra_body=generation_config())
    assert out.choices[0].message.content
    assert out.model == served_tiny.model


def test_requests_counts_the_posts(served_tiny):
    before = {p: served_tiny.requests(p) for p in ("/v1/completions", "/v1/chat/completions", None)}
    api = client(served_tiny.base_url)
    api.models.list()   # a GET: not counted
    for seed in (1, 2):
        complete(served_tiny, seed, tokens=2)
    api.chat.completions.create(model=served_tiny.model, messages=[{"role": "user", "content": "sun"}], max_tokens=2)
    assert served_tiny.requests() == before["/v1/completions"] + 2
    assert served_tiny.requests("/v1/chat/completions") == before["/v1/chat/completions"] + 1
    assert served_tiny.requests(None) == before[None] + 3


def test_kill_then_restart_serves_on_the_same_port(served_tiny):
    port = served_tiny.port
    try:
        served_tiny.kill()
        assert not served_tiny.alive
        with pytest.raises(openai.APIConnectionError):
            complete(served_tiny, 1, tokens=2)
        served_tiny.restart()
        assert served_tiny.port == port and served_tiny.alive
        assert complete(served_tiny, 1, tokens=4).split()
    finally:   # the session's other tests share it
        if not served_tiny.alive:
            served_tiny.restart()


# ---------------------------------------------------------------------------------------------- the fault injector

def test_fault_server_follows_its_script():
    script = [("status", 429, 3), ("status", 401, None), ("close",), ("ok", "moon over water")]
    with FaultServer(script, default=("status", 503, None)) as fault:
        api = client(fault.base_url)
        ask = dict(model="m1", prompt="<s>", max_tokens=5, seed=11)
        with pytest.raises(openai.RateLimitError) as limited:
            api.completions.create(**ask)
        assert limited.value.response.headers["retry-after"] == "3"
        with pytest.raises(openai.AuthenticationError):
            api.completions.create(**ask)
        with pytest.raises(openai.APIConnectionError):
            api.completions.create(**ask)
        out = api.completions.create(**ask)
        assert out.choices[0].text == "moon over water" and out.model == "m1"
        assert out.system_fingerprint == "fp-test" and out.choices[0].finish_reason == "stop"
        with pytest.raises(openai.InternalServerError):   # the script is spent: the default
            api.completions.create(**ask)
    assert len(fault.posts) == 5
    assert all(r.path == "/v1/completions" and r.body["seed"] == 11 for r in fault.posts)
    assert all(r.headers["authorization"] == "Bearer sk-test" for r in fault.received)


def test_fault_server_chats_and_lists_models():
    with FaultServer([("status", 403, None)], default=("ok", "a quiet line")) as fault:
        api = client(fault.base_url)
        assert [m.id for m in api.models.list()] == ["fault-model"]
        chat = dict(model="m2", messages=[{"role": "user", "content": "hi"}], seed=5)
        with pytest.raises(openai.PermissionDeniedError):
            api.chat.completions.create(**chat)
        out = api.chat.completions.create(**chat)
    assert out.choices[0].message.content == "a quiet line" and out.model == "m2"
    assert [r.body["seed"] for r in fault.posts] == [5, 5]
    assert fault.posts[1].body["messages"] == chat["messages"]


def test_fault_server_hang_times_out_and_shuts_down():
    began = time.monotonic()
    with FaultServer([("hang", 60)]) as fault:
        with pytest.raises(openai.APITimeoutError):
            client(fault.base_url, timeout=1).completions.create(model="m", prompt="x", max_tokens=1)
    assert time.monotonic() - began < 10   # the exit woke the hanging handler
    assert len(fault.posts) == 1


def test_fault_server_rejects_unknown_actions():
    with pytest.raises(ValueError):
        FaultServer([("status", 418, None)])
    with pytest.raises(ValueError):
        FaultServer([("explode",)])
