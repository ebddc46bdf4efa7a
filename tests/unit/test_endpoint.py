"""The endpoint generator (poeval.generators.endpoint) against real servers on 127.0.0.1.

Normal paths run against ``transformers serve`` of a tiny GPT-2 (the session fixture ``served_tiny``):
sampling over completions and chat, the request log and the resume after a kill, a server killed and
restarted mid-run, a wrong model name. The faults a real server cannot be made to give (429 storms, 5xx past
the budget, 401, a hung socket, the key on the wire) use tests/servers.py's FaultServer: the tests that use
it say so in their names (``fault_``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from poeval.errors import PoevalError
from poeval.generators import endpoint
from poeval.generators.decoding import parse_decoding
from poeval.generators.endpoint import requests as req
from poeval.generators.endpoint.connection import Endpoint, key_problems, public_url
from poeval.generators.endpoint.requestlog import log_path
from poeval.generators.interface import TrainInputs
from poeval.generators.prompting import prompt_for, scheme_words
from poeval.io import read_jsonl

from helpers import ROOT


def _records(path) -> list[dict]:
    return list(read_jsonl(path))


VANILLA = {"temperature": 0.3}   # the tiny model writes quatrains at a low temperature


def _entry(base_url: str, model: str, **over) -> dict:
    return {"arch": "endpoint", "base_url": base_url, "model": model, "api": "completions",
            "server": "transformers", "max_concurrency": 1, "max_retries": 0, "timeout": 30} | over


def _connect(tmp_path: Path, entry: dict, name: str = "ep") -> str:
    out = tmp_path / "model"
    endpoint.fit(TrainInputs(None, None), str(out), entry, "none", lang="en", name=name, progress=False)
    return str(out)


def _sample(model_dir: str, out: Path, entry: dict, n: int = 4, attempts: int = 12, decoding=VANILLA,
            style=None, **sampling):
    prompt = prompt_for(entry, "en")
    block = {"n": n, "max_attempts": attempts, "max_new_tokens": 40, "seed": 3} | sampling
    return endpoint.sample(model_dir, decoding, block, str(out), str(out.with_suffix(".stats.json")),
                           progress=False, style=style, prompt=prompt)


@pytest.fixture
def tiny_entry(served_tiny):
    return _entry(served_tiny.base_url, served_tiny.model, prompt={"text": served_tiny.bos})


# --- what a request carries ------------------------------------------------------------------------

def test_top_k_travels_the_way_each_server_takes_it():
    decoding = parse_decoding({"temperature": 0.7, "top_k": 5})
    ep = lambda server: Endpoint(None, "http://h/v1", "m", "chat", None, server, 1, 1, 0, 0)  # noqa: E731
    assert req.decoding_fields(ep("vllm"), decoding, 9) == {"temperature": 0.7, "top_p": 1.0, "max_tokens": 9,
                                                            "extra_body": {"top_k": 5}}
    transformers = req.decoding_fields(ep("transformers"), decoding, 9)["extra_body"]
    assert json.loads(transformers["generation_config"]) == {"do_sample": True, "top_k": 5}
    # top_k 0 (off) goes to nobody; transformers still needs do_sample, or it decodes greedily
    plain = parse_decoding({"temperature": 0.7})
    assert "extra_body" not in req.decoding_fields(ep("vllm"), plain, 9)
    assert json.loads(req.decoding_fields(ep("transformers"), plain, 9)["extra_body"]["generation_config"]) == {
        "do_sample": True, "top_k": 0}
    assert "takes no top_k" in req.refusal(ep("openai"), decoding)
    assert req.refusal(ep("openai"), plain) is None
    assert "contrastive" in req.refusal(ep("vllm"), parse_decoding({"top_k": 4, "penalty_alpha": 0.6}))


def test_seeds_are_a_fixed_function_of_the_sampling_seed_and_the_index():
    import hashlib

    first = [req.seed(1, i) for i in range(50)]
    assert first == [req.seed(1, i) for i in range(50)]
    assert len(set(first)) == 50 and not set(first) & {req.seed(2, i) for i in range(50)}
    assert first[0] == int.from_bytes(hashlib.sha256(b"1/0").digest()[:4], "big") & 0x7FFFFFFF
    assert all(0 <= s < 2**31 for s in first)


def test_scheme_words_say_which_lines_rhyme():
    assert scheme_words("abab", "en") == "lines 1 and 3 rhyme, lines 2 and 4 rhyme"
    assert scheme_words("aabb", "de") == "die Verse 1 und 2 reimen sich, die Verse 3 und 4 reimen sich"
    assert scheme_words("abcd", "en") == "no two lines rhyme"
    assert scheme_words("aaaa", "en") == "all four lines rhyme"
    assert scheme_words("abcb", "en") == "lines 2 and 4 rhyme, line 1 rhymes with no other, line 3 rhymes with no other"
    assert scheme_words("aaba", "en") == "lines 1, 2 and 4 rhyme, line 3 rhymes with no other"


def test_the_prompt_asks_for_the_scheme_in_words():
    prompt = prompt_for({"arch": "endpoint", "api": "chat", "prompt": {"system": "Be brief."}}, "en")
    messages = prompt.messages("abba")
    assert messages[0] == {"role": "system", "content": "Be brief."}
    assert "rhyme scheme is ABBA (lines 1 and 4 rhyme, lines 2 and 3 rhyme)" in messages[1]["content"]
    assert "{" not in prompt.messages(None)[-1]["content"]


def test_a_literal_key_in_params_is_refused_without_echoing_it():
    from poeval.params import resolve
    from poeval.config import read

    params = read(ROOT / "params.yaml")
    params["models"]["ep"] = _entry("http://127.0.0.1:1/v1", "m", api_key_env="sk-live-0123456789abcdef")
    with pytest.raises(PoevalError) as err:
        resolve(params)
    assert "looks like a key, not a variable name" in str(err.value)
    assert "0123456789abcdef" not in str(err.value)
    assert key_problems("ep", {"api_key": "x"})[0].startswith("key models.ep.api_key: a literal key is refused")
    params["models"]["ep"] = _entry("http://user:pw@127.0.0.1:1/v1?key=1", "m")
    with pytest.raises(PoevalError, match="no credentials or query string"):
        resolve(params)
    assert public_url("http://u:p@h:8000/v1?k=1#f") == "http://h:8000/v1"


def test_params_refuse_a_decoding_config_the_endpoint_cannot_run():
    from poeval.config import read
    from poeval.params import resolve

    params = read(ROOT / "params.yaml")
    params["models"]["ep"] = _entry("http://127.0.0.1:1/v1", "m", server="openai")
    params["systems"] = ["ep"]
    params["decoding"]["k5"] = {"temperature": 1.0, "top_k": 5}
    params["decodings"] = ["vanilla", "k5"]
    with pytest.raises(PoevalError) as err:
        resolve(params)
    assert "key decodings.1: decoding config 'k5' cannot run on endpoint system 'ep': top_k 5" in str(err.value)


# --- against transformers serve ----------------------------------------------------------------------

def test_completions_sample_and_a_rerun_sends_nothing_twice(served_tiny, tiny_entry, tmp_path):
    model_dir = _connect(tmp_path, tiny_entry)
    before = served_tiny.requests()
    stats = _sample(model_dir, tmp_path / "a.jsonl", tiny_entry)
    first = _records(tmp_path / "a.jsonl")
    sent = served_tiny.requests() - before
    assert stats["valid"] == 4 and sent == stats["attempts"] == stats["requests"]["sent_now"]
    assert stats["reported"]["models"] == [served_tiny.model]
    assert stats["sent"]["request"]["prompt"] == served_tiny.bos and stats["provenance"]["params"]["prompt"]
    # the rerun reads every answer from the request log: no request reaches the server
    again = _sample(model_dir, tmp_path / "a.jsonl", tiny_entry)
    assert served_tiny.requests() - before == sent
    assert again["requests"]["from_log"] == stats["attempts"] and again["requests"]["sent_now"] == 0
    assert _records(tmp_path / "a.jsonl") == first
    # one request at a time, the server repeats a seed: a fresh log gives the same samples
    fresh = tmp_path / "fresh"
    _sample(model_dir, fresh / "a.jsonl", tiny_entry)
    assert _records(fresh / "a.jsonl") == _records(tmp_path / "a.jsonl")


def test_chat_answers_are_cleaned_and_the_scheme_is_asked(served_tiny, tmp_path):
    """The tiny model answers no valid quatrain to a chat request: the sample is an error naming the reasons, after
    every request was answered and logged; what each request asked is the user message with the scheme."""
    # a short prompt: the tiny model has 128 positions (the default prompts are for real instruct models)
    entry = _entry(served_tiny.base_url, served_tiny.model, api="chat", conditioned=True,
                   prompt={"user": "a quatrain", "user_style": "{scheme}: {scheme_words}"})
    model_dir = _connect(tmp_path, entry)
    with pytest.raises(PoevalError, match=r": 0 of 3 attempts gave a valid quatrain \(truncated 3\); raise"):
        _sample(model_dir, tmp_path / "c.jsonl", entry, n=2, attempts=3, style="abab")
    assert _logged(tmp_path / "c.jsonl") == 3   # each answer is kept for a rerun
    assert not (tmp_path / "c.jsonl").exists() and not (tmp_path / "c.stats.json").exists()
    body = req.template(endpoint.read(model_dir), parse_decoding(VANILLA), 40, prompt_for(entry, "en"), "abab")
    assert body["messages"][-1]["content"] == "ABAB: lines 1 and 3 rhyme, lines 2 and 4 rhyme"


def test_a_wrong_model_fails_at_once_with_one_line(served_tiny, tmp_path):
    listed = _entry(served_tiny.base_url, "no-such-model", server="vllm")
    with pytest.raises(PoevalError, match=r"the server does not serve this model \(it lists"):
        _connect(tmp_path / "vllm", listed)
    # transformers serve loads any folder a request names, so its list is not checked: the first request fails
    entry = _entry(served_tiny.base_url, "no-such-model", prompt={"text": served_tiny.bos}, max_retries=3)
    model_dir = _connect(tmp_path, entry)
    start = time.monotonic()
    with pytest.raises(PoevalError) as err:
        _sample(model_dir, tmp_path / "w.jsonl", entry)
    assert time.monotonic() - start < 5 and "\n" not in str(err.value)
    assert f"endpoint {served_tiny.base_url} (model 'no-such-model'): HTTP 400" in str(err.value)
    assert not (tmp_path / "w.jsonl").exists()


def test_contrastive_is_refused_before_any_request(served_tiny, tiny_entry, tmp_path):
    model_dir = _connect(tmp_path, tiny_entry)
    before = served_tiny.requests()
    with pytest.raises(PoevalError, match="cannot run decoding .*contrastive search"):
        _sample(model_dir, tmp_path / "x.jsonl", tiny_entry, decoding={"top_k": 4, "penalty_alpha": 0.6})
    assert served_tiny.requests() == before and not log_path(tmp_path / "x.jsonl").exists()


def _cli_sample(model_dir: str, out: Path, entry: dict, n: int) -> list[str]:
    from poeval.jobs.sample import from_options

    job = from_options(VANILLA, {"n": n, "max_attempts": 4 * n, "max_new_tokens": 40, "seed": 5}, None, "k-",
                       prompt=prompt_for(entry, "en"))
    return [str(Path(sys.executable).with_name("poeval")), "sample", model_dir, "--job", job.to_json(), "--out", str(out),
            "--stats", str(out.with_suffix(".stats.json"))]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_killed_job_resumes_without_sending_a_request_twice(served_tiny, tiny_entry, tmp_path, sig):
    """Stopped mid-run, then the rerun: the samples equal those of an uninterrupted run with the same seeds
    (one request in flight). SIGTERM (Snakemake, scancel) lets the request in flight finish into the log, so
    the server sees each request once; after SIGKILL that one request may be sent again."""
    model_dir = _connect(tmp_path, tiny_entry)
    whole = _sample(model_dir, tmp_path / "whole" / "s.jsonl", tiny_entry, n=8, attempts=32, seed=5)
    out = tmp_path / "cut" / "s.jsonl"
    before = served_tiny.requests()
    proc = subprocess.Popen(_cli_sample(model_dir, out, tiny_entry, 8), stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and _logged(out) < 3:
        time.sleep(0.02)
    proc.send_signal(sig)
    proc.wait()
    cut = _logged(out)
    assert 3 <= cut < whole["attempts"] and not out.exists()
    assert subprocess.run(_cli_sample(model_dir, out, tiny_entry, 8), capture_output=True).returncode == 0
    stats = json.loads(out.with_suffix(".stats.json").read_text())
    assert stats["attempts"] == whole["attempts"]
    sent = served_tiny.requests() - before
    assert sent == stats["attempts"] if sig == signal.SIGTERM else stats["attempts"] <= sent <= stats["attempts"] + 1
    assert stats["requests"]["from_log"] >= cut
    assert [r["lines"] for r in _records(out)] == [r["lines"] for r in _records(tmp_path / "whole" / "s.jsonl")]


def _logged(out: Path) -> int:
    path = log_path(out)
    return max(len(path.read_text().splitlines()) - 1, 0) if path.exists() else 0


def test_a_server_killed_and_restarted_mid_run_is_waited_for(tiny_gpt2, tmp_path):
    """Its own server (the shared one stays up): killed after the first answers, started again on the same
    port a second later, from the main thread (a server's parent-death signal follows its starting thread)."""
    import threading

    from servers import Served

    with Served(tiny_gpt2, tmp_path / "logs") as served:
        entry = _entry(served.base_url, served.model, prompt={"text": served.bos}, max_retries=6)
        model_dir = _connect(tmp_path, entry)
        expected = _sample(model_dir, tmp_path / "ref" / "s.jsonl", entry, n=6, attempts=24)
        out = tmp_path / "r.jsonl"
        result = {}
        worker = threading.Thread(target=lambda: result.update(_sample(model_dir, out, entry, n=6, attempts=24)))
        worker.start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and _logged(out) < 2:
            time.sleep(0.01)
        served.kill()
        time.sleep(1.0)
        served.restart()
        worker.join(120)
    assert result["valid"] == expected["valid"] and _logged(out) >= result["attempts"]
    assert _records(out) == _records(tmp_path / "ref" / "s.jsonl")


# --- faults a real server cannot be made to give (FaultServer) -----------------------------------------

def test_fault_429_storm_and_5xx_are_retried_and_the_key_never_written(tmp_path, monkeypatch):
    from servers import FaultServer

    secret = "sk-test-6f1c0ddb9e2a4b7c"
    monkeypatch.setenv("POEVAL_TEST_KEY", secret)
    quatrain = "one line\ntwo line\nthree line\nfour line"
    script = [("status", 429, 0), ("status", 429, None), ("status", 503, None), ("ok", quatrain)]
    with FaultServer(script, default=("ok", quatrain)) as server:
        entry = _entry(server.base_url, "fault-model", api="chat", server="vllm", api_key_env="POEVAL_TEST_KEY",
                       max_retries=4)
        model_dir = _connect(tmp_path, entry)
        stats = _sample(model_dir, tmp_path / "s.jsonl", entry, n=2, attempts=4)
        posts = server.posts
    assert stats["valid"] == 2 and stats["requests"]["failed_now"] == 0
    assert len(posts) == 5 and {p.headers["authorization"] for p in posts} == {f"Bearer {secret}"}
    assert [p.body["seed"] for p in posts][3:] == [req.seed(3, 0), req.seed(3, 1)]
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(written) >= 5 and not [p for p in written if secret in p.read_text(errors="replace")]


def test_fault_a_budget_of_failed_requests_ends_the_job_cleanly(tmp_path):
    from servers import FaultServer

    quatrain = "one line\ntwo line\nthree line\nfour line"
    with FaultServer([("ok", quatrain)], default=("status", 500, None)) as server:
        entry = _entry(server.base_url, "fault-model", api="chat", server="vllm", max_failed_requests=2)
        model_dir = _connect(tmp_path, entry)
        with pytest.raises(PoevalError) as err:
            _sample(model_dir, tmp_path / "s.jsonl", entry, n=3, attempts=5)
    assert "3 requests failed after 0 retries each (max_failed_requests 2; last: HTTP 500)" in str(err.value)
    assert "rerun to resume" in str(err.value) and not (tmp_path / "s.jsonl").exists()
    assert _logged(tmp_path / "s.jsonl") == 1   # the answer that arrived is kept for the rerun


def test_fault_401_fails_at_once_and_a_hung_socket_times_out(tmp_path):
    from servers import FaultServer

    with FaultServer([("status", 401, None)]) as server:
        entry = _entry(server.base_url, "fault-model", api="chat", server="vllm", max_retries=3)
        model_dir = _connect(tmp_path, entry)
        with pytest.raises(PoevalError, match=r"model 'fault-model'\): HTTP 401: the key is missing or wrong"):
            _sample(model_dir, tmp_path / "k.jsonl", entry)
        assert len(server.posts) == 1   # not retried
    quatrain = "one line\ntwo line\nthree line\nfour line"
    with FaultServer([("hang", 5)], default=("ok", quatrain)) as server:
        entry = _entry(server.base_url, "fault-model", api="chat", server="vllm", timeout=0.5, max_retries=1)
        model_dir = _connect(tmp_path / "hang", entry)
        stats = _sample(model_dir, tmp_path / "h.jsonl", entry, n=1, attempts=2)
    assert stats["valid"] == 1


def test_a_foreign_request_log_is_never_appended_to(tmp_path, tiny_entry):
    out = tmp_path / "s.jsonl"
    log_path(out).write_text("my notes\n")
    model_dir = _connect(tmp_path, tiny_entry)
    with pytest.raises(PoevalError, match="not a poeval request log"):
        _sample(model_dir, out, tiny_entry)
    assert log_path(out).read_text() == "my notes\n"


# --- an instruction-tuned checkpoint in-process: the same prompt, no server --------------------------------

def test_an_in_process_chat_checkpoint_is_asked_through_its_chat_template(tiny_gpt2, tmp_path):
    from servers import with_chat_template
    from transformers import AutoTokenizer

    from poeval.generators import lm
    from poeval.generators.lm.generation import chat_ids

    model = with_chat_template(tiny_gpt2, tmp_path / "chat")
    entry = {"arch": "gpt2", "api": "chat", "prompt": {"user": "a quatrain", "user_style": "{scheme}: {scheme_words}"}}
    out = tmp_path / "s.jsonl"
    # the tiny model answers no valid quatrain to the chat prompt: an error naming the reasons, nothing written
    with pytest.raises(PoevalError, match=r"chat: 0 of 6 attempts gave a valid quatrain \(truncated 6\)"):
        lm.sample(str(model), VANILLA, {"n": 3, "max_attempts": 6, "batch_size": 6, "max_new_tokens": 40},
                  str(out), str(tmp_path / "s.stats.json"), progress=False, style="abab",
                  prompt=prompt_for(entry, "en"))
    assert not out.exists() and not (tmp_path / "s.stats.json").exists()
    tokenizer = AutoTokenizer.from_pretrained(model, trust_remote_code=False)
    asked = tokenizer.decode(chat_ids(tokenizer, prompt_for(entry, "en"), "abab"))
    assert "ABAB: lines 1 and 3 rhyme, lines 2 and 4 rhyme" in asked and asked != tokenizer.decode(
        chat_ids(tokenizer, prompt_for(entry, "en"), None))
    # a checkpoint without a chat template cannot be asked
    with pytest.raises(PoevalError, match="needs a checkpoint with a chat template"):
        lm.sample(str(tiny_gpt2), VANILLA, {"n": 1, "max_attempts": 1}, str(out), str(tmp_path / "t.json"),
                  progress=False, prompt=prompt_for(entry, "en"))


@pytest.mark.parametrize("change, problem", [
    ({"api": "chat", "training": None}, "key models.mine.api: chat samples an instruction-tuned checkpoint as it is"),
    ({"prompt": {"user": "x"}, "api": "completions"}, "key models.mine.prompt: an in-process checkpoint is prompted"),
    ({"conditioned": True, "api": "completions"}, "key models.mine.training: none would leave the style tokens"),
    ({"conditioned": True, "api": "chat"}, None),
])
def test_params_rules_of_an_in_process_chat_checkpoint(change, problem):
    from poeval.config import read
    from poeval.params import resolve

    params = read(ROOT / "params.yaml")
    mine = {"arch": "llama", "size": "S", "init": "pretrained", "name_or_path": "smollm2-135m", "training": "none"}
    params["models"]["mine"] = {k: v for k, v in (mine | change).items() if v is not None}
    if problem is None:
        assert resolve(params)["models"]["mine"]["api"] == "chat"
        return
    with pytest.raises(PoevalError) as err:
        resolve(params)
    assert problem in str(err.value)


def test_serves_makes_the_served_checkpoint_an_input_of_rule_train(tmp_path):
    """``serves``: rule train of the endpoint waits for the checkpoint (a system's, or a release's import) and
    hands it to `poeval train --served`, which records it; an endpoint reads no split."""
    import shutil

    import yaml

    from helpers import snakemake

    (tmp_path / "config" / "scale").mkdir(parents=True)
    shutil.copy(ROOT / "params.yaml", tmp_path / "params.yaml")
    shutil.copy(ROOT / "config" / "scale" / "tiny.yaml", tmp_path / "config" / "scale" / "tiny.yaml")
    url = "http://127.0.0.1:1/v1"
    overlay = {"models": {"ep": _entry(url, "models/en/gpt2-s", serves="gpt2-s"),
                          "chat": _entry(url, "m", api="chat", serves="smollm2-135m")},
               "systems": ["ep", "chat"], "decodings": ["vanilla"], "style_adherence": {"pairs": None}}
    (tmp_path / "config" / "ep.yaml").write_text(yaml.safe_dump(overlay))
    overlay["models"]["ep"]["max_concurrency"] = 3
    (tmp_path / "config" / "ep.yaml").write_text(yaml.safe_dump(overlay))
    proc = snakemake(tmp_path, "-n", "-p", "models/en/ep", "models/en/chat", "results/samples/en/ep/vanilla.jsonl",
                     configs=("config/scale/tiny.yaml", "config/ep.yaml"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "poeval train --served models/en/gpt2-s --out models/en/ep" in proc.stdout
    assert "poeval train --served models/pretrained/smollm2-135m --out models/en/chat" in proc.stdout
    assert "rule import_pretrained" in proc.stdout   # the release is imported first
    sample = proc.stdout.split("\nrule sample:")[1].split("\n\n")[0]
    assert "endpoint_requests=3" in sample   # --resources endpoint_requests=N bounds the requests of all jobs


@pytest.mark.vllm
@pytest.mark.skipif(not os.environ.get("POEVAL_VLLM_URL"), reason="needs a vLLM server: POEVAL_VLLM_URL, POEVAL_VLLM_MODEL")
def test_vllm_repeats_seeded_samples_under_concurrency(tmp_path):
    """The slow tier (``-m vllm``, not in CI): vLLM honours each request's seed under concurrency, so two runs
    at max_concurrency 4, each with a fresh request log, give the same samples."""
    entry = _entry(os.environ["POEVAL_VLLM_URL"], os.environ["POEVAL_VLLM_MODEL"], server="vllm", max_concurrency=4,
                   max_retries=2)
    model_dir = _connect(tmp_path, entry)
    runs = [_sample(model_dir, tmp_path / str(i) / "s.jsonl", entry, n=8, attempts=40) for i in range(2)]
    assert runs[0]["attempts"] == runs[1]["attempts"]
    assert _records(tmp_path / "0" / "s.jsonl") == _records(tmp_path / "1" / "s.jsonl")


def test_a_chat_checkpoint_conditioned_by_prompt_gets_no_style_tokens(tiny_gpt2, tiny_corpus, tmp_path):
    """conditioned: true with api: chat is conditioning by prompt: rule train (training: none) saves the
    checkpoint as it is, with its chat template and without untrained style tokens."""
    from servers import with_chat_template
    from transformers import AutoTokenizer

    from poeval.generators.lm.build import has_style_tokens
    from poeval.generators.lm.training import train

    model = with_chat_template(tiny_gpt2, tmp_path / "chat")
    cfg = {"arch": "gpt2", "init": "pretrained", "name_or_path": str(model), "conditioned": True, "api": "chat"}
    train(str(tiny_corpus[0]), str(tiny_corpus[1]), str(tmp_path / "out"), cfg, "none", progress=False)
    tokenizer = AutoTokenizer.from_pretrained(tmp_path / "out")
    assert not has_style_tokens(tokenizer) and tokenizer.chat_template
    assert len(tokenizer) == len(AutoTokenizer.from_pretrained(model))
