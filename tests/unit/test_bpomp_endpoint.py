"""`poeval bpomp score --endpoint`: causal scores through an OpenAI-compatible server (poeval.bpomp.endpoint).

Three tiers:

- a real server without prompt log-probabilities: ``transformers serve`` (the session fixture ``served_tiny``)
  ignores ``echo``/``logprobs``, and must give the one-line error with nothing written;
- the positive path on ``servers.FaultServer``'s scripted ``("logprobs", tokens, token_logprobs)`` answer (what
  vLLM answers; vLLM itself needs a GPU): the sum, the framing that reached the request body, the output keys,
  and the key that never reaches any output;
- a real vLLM run, the slow tier (``-m vllm``, not in CI): skipped unless ``POEVAL_VLLM_URL`` names a running
  ``vllm serve`` of ``POEVAL_VLLM_MODEL`` (a folder or hub id that poeval can also load in-process).
"""

import json
import os

import pytest

from poeval import cli
from poeval.io import read_json, read_jsonl, write_jsonl

from servers import FaultServer

# short, in the words of the tiny model's corpus: transformers serve answers 500 past its 96 positions
ORIGINAL = ["the sun is warm today", "the sea is calm and blue", "I walk", "I talk", "and think of you"]
CORRUPTED = ORIGINAL[:3] + [ORIGINAL[4], ORIGINAL[3]]
KEY = "sk-test-bpomp-0123456789abcdefXYZ"   # a made-up key that must never reach an output
PAIR_KEYS = {"id", "task", "original", "corrupted"}
SCORE_KEYS = {"score_original", "score_corrupted", "scorer", "tokens_original", "tokens_corrupted"}


@pytest.fixture
def pairs(tmp_path):
    path = tmp_path / "pairs.jsonl"
    write_jsonl(path, [{"id": "p1", "task": "line_swap", "original": ORIGINAL, "corrupted": CORRUPTED}])
    return path


def score(pairs, out, *args) -> list[str]:
    return ["bpomp", "score", str(pairs), "--kind", "causal", "--out", str(out), *args]


def test_a_server_without_prompt_logprobs_gets_one_line_and_nothing_is_written(served_tiny, pairs, tmp_path, capsys):
    out, stats = tmp_path / "scores.jsonl", tmp_path / "stats.json"
    argv = score(pairs, out, "--stats", str(stats), "--endpoint", served_tiny.base_url, "--endpoint-model",
                 served_tiny.model, "--server", "transformers", "--bos", served_tiny.bos)
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert err == (f"poeval: error: endpoint {served_tiny.base_url} (model {served_tiny.model!r}): no prompt "
                   "log-probabilities (echo + logprobs on /v1/completions); BPoMP through an endpoint needs a server "
                   "that returns them: vLLM (llama.cpp's llama-server and transformers serve do not)")
    assert not out.exists() and not stats.exists()


def test_scores_are_the_sums_after_the_first_token_of_the_framed_text(pairs, tmp_path, monkeypatch, capsys):
    """The texts are asked in sorted order (one request in flight), each answered by its scripted tokens. Each
    sum leaves out the first token (the BOS, no prefix) and the token the server generated after the prompt."""
    monkeypatch.setenv("POEVAL_TEST_BPOMP_KEY", KEY)
    answers = {"original": (["<s>", "the", " sun", "</s>"], [None, -1.0, -2.5, -0.25]),
               "corrupted": (["<s>", "the", "</s>"], [None, -0.5, -0.125])}
    order = sorted(answers, key=lambda side: "\n".join({"original": ORIGINAL, "corrupted": CORRUPTED}[side]))
    script = [("logprobs", *answers[side]) for side in order]
    out, stats = tmp_path / "scores.jsonl", tmp_path / "stats.json"
    with FaultServer(script) as server:
        argv = score(pairs, out, "--stats", str(stats), "--endpoint", server.base_url, "--endpoint-model", "m",
                     "--server", "vllm", "--api-key-env", "POEVAL_TEST_BPOMP_KEY", "--bos", "<s>", "--eos", "</s>",
                     "--max-concurrency", "1")
        assert cli.main(argv) == 0
    printed = capsys.readouterr()
    (record,) = read_jsonl(out)
    assert set(record) == PAIR_KEYS | SCORE_KEYS and record["scorer"] == "causal"
    assert record["score_original"] == -1.0 - 2.5 - 0.25 and record["score_corrupted"] == -0.5 - 0.125
    assert record["tokens_original"] == 3 and record["tokens_corrupted"] == 2   # the tokens each sum holds
    assert all(b["max_tokens"] == 1 for b in (r.body for r in server.posts))   # so GENERATED was sent and left out
    bodies = [r.body for r in server.posts]
    assert [b["prompt"] for b in bodies] == [f"<s>{t}</s>" for t in sorted(map("\n".join, (ORIGINAL, CORRUPTED)))]
    assert all(b["echo"] is True and b["logprobs"] in (0, 1) and b["max_tokens"] == 1 and b["temperature"] == 0
               and b["add_special_tokens"] is False and b["model"] == "m" for b in bodies)
    assert {r.headers["authorization"] for r in server.posts} == {f"Bearer {KEY}"}   # the key was used ...
    for text in (out.read_text(), stats.read_text(), printed.out, printed.err):        # ... and written nowhere
        assert KEY not in text
    where = read_json(stats)["endpoint"]
    assert where["base_url"] == server.base_url and where["model"] == "m" and where["server"] == "vllm"
    assert json.loads(printed.out)["endpoint"] == where


def test_a_refused_request_is_one_line_without_the_key(pairs, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("POEVAL_TEST_BPOMP_KEY", KEY)
    out = tmp_path / "scores.jsonl"
    with FaultServer([("status", 401, None)]) as server:
        argv = score(pairs, out, "--endpoint", server.base_url, "--endpoint-model", "m",
                     "--api-key-env", "POEVAL_TEST_BPOMP_KEY")
        assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "HTTP 401" in err and KEY not in err
    assert not out.exists()


def test_masked_through_an_endpoint_is_refused(pairs, tmp_path, capsys):
    argv = ["bpomp", "score", str(pairs), "--kind", "masked", "--out", str(tmp_path / "s.jsonl"),
            "--endpoint", "http://127.0.0.1:9/v1", "--endpoint-model", "m"]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("poeval: error: --endpoint scores causal LMs only") and len(err.splitlines()) == 1


def test_model_and_endpoint_together_are_refused(pairs, tmp_path, capsys):
    argv = score(pairs, tmp_path / "s.jsonl", "--model", "gpt2", "--endpoint", "http://127.0.0.1:9/v1")
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    assert exit_.value.code == 2
    assert "argument --endpoint: not allowed with argument --model" in capsys.readouterr().err


def test_endpoint_options_without_an_endpoint_are_refused(pairs, tmp_path, capsys):
    assert cli.main(score(pairs, tmp_path / "s.jsonl", "--model", "gpt2", "--bos", "<s>")) == 2
    assert "--bos apply to --endpoint only" in capsys.readouterr().err


@pytest.mark.vllm
@pytest.mark.skipif(not os.environ.get("POEVAL_VLLM_URL"), reason="POEVAL_VLLM_URL names no running vllm serve")
def test_vllm_scores_equal_the_in_process_scores():
    """``vllm serve MODEL --dtype float32`` at POEVAL_VLLM_URL (e.g. http://127.0.0.1:8000/v1), MODEL in
    POEVAL_VLLM_MODEL: the endpoint's scores equal :func:`poeval.bpomp.scoring.causal_scores` to 1e-4."""
    from poeval.bpomp.endpoint import endpoint, endpoint_scores
    from poeval.bpomp.scoring import causal_scores, pair_text
    from poeval.generators.checkpoint import load, text_bounds

    name = os.environ["POEVAL_VLLM_MODEL"]
    model, tok = load(name)
    texts = [pair_text(ORIGINAL), pair_text(CORRUPTED)]
    bos, eos = text_bounds(tok)
    served = endpoint_scores(endpoint(os.environ["POEVAL_VLLM_URL"], name, server="vllm"), texts, bos, eos)
    assert served == pytest.approx(causal_scores(model.eval(), tok, texts), abs=1e-4)
