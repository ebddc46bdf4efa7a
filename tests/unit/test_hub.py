"""Offline by default (poeval.hub): a model that is not on this machine fails at once, naming the parameter
that gave it, and nothing reaches the network unless POEVAL_ONLINE=1."""

import json
import os
import shutil
import socket
import subprocess
import time

import pytest
import yaml

from poeval import cli, hub, paths
from poeval.bpomp import scoring
from poeval.errors import PoevalError
from poeval.generators.checkpoint import load
from poeval.metrics import semantic
from helpers import BIN, ROOT, _workdir

PAIR = {"id": "a", "task": "word_swap", "original": ["one two"], "corrupted": ["two one"]}


@pytest.fixture
def no_network(monkeypatch, tmp_path):
    """HF_HUB_OFFLINE unset, an empty Hugging Face cache, and every attempt to reach the network refused
    and recorded (the returned list)."""
    from huggingface_hub import constants

    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", hub.ONLINE_ENV):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    # huggingface_hub read both when it was first imported (conftest sets HF_HUB_OFFLINE=1)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    attempts = []

    def refuse(*args, **kwargs):
        attempts.append(args[:2])
        raise OSError("no network in this test")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    return attempts


@pytest.fixture
def pairs(tmp_path):
    path = tmp_path / "pairs.jsonl"
    path.write_text(json.dumps(PAIR) + "\n")
    return path


@pytest.mark.parametrize("kind", ["causal", "masked"])
def test_a_scorer_model_that_is_not_here_fails_at_once_naming_its_key(no_network, pairs, tmp_path, kind):
    t0 = time.perf_counter()
    with pytest.raises(PoevalError, match=r"'gpt2' given by bpomp\.scorers\.0\.model: .*POEVAL_ONLINE=1"):
        scoring.write_scores(str(pairs), "gpt2", kind, str(tmp_path / "s.jsonl"), model_key="bpomp.scorers.0.model")
    assert no_network == [] and time.perf_counter() - t0 < 5   # Hugging Face retried for about a minute


def test_bpomp_score_names_its_model_option(no_network, pairs, tmp_path, capsys):
    t0 = time.perf_counter()
    assert cli.main(["bpomp", "score", str(pairs), "--model", "gpt2", "--kind", "causal",
                     "--out", str(tmp_path / "s.jsonl")]) == 2
    assert "'gpt2' given by --model:" in capsys.readouterr().err
    assert no_network == [] and time.perf_counter() - t0 < 5


def test_generator_and_encoder_models_name_their_keys(no_network, tmp_path):
    with pytest.raises(PoevalError, match=r"'gpt2' given by models\.gpt2-ft\.name_or_path"):
        load("gpt2", name="gpt2-ft")
    with pytest.raises(PoevalError, match=r"'gpt2' given by models\.gpt2-ft\.tokenizer"):
        load(str(tmp_path), name="gpt2-ft", tokenizer="gpt2")
    with pytest.raises(PoevalError, match=r"given by models\.local\.name_or_path: no such directory"):
        load("./no/such/dir", name="local")
    with pytest.raises(PoevalError, match=r"given by metrics\.semantic\.encoder"):
        semantic.load_encoder("sentence-transformers/paraphrase-MiniLM-L3-v2")
    assert no_network == []


def test_only_poeval_online_lets_a_hub_id_through(no_network, monkeypatch):
    with pytest.raises(PoevalError, match="given by --model"):
        hub.resolve("gpt2", "--model")
    hub.apply()
    assert os.environ["HF_HUB_OFFLINE"] == "1" and hub.local_files_only()
    monkeypatch.setenv(hub.ONLINE_ENV, "1")
    monkeypatch.delenv("HF_HUB_OFFLINE")
    hub.apply()
    assert "HF_HUB_OFFLINE" not in os.environ and not hub.local_files_only()
    assert hub.resolve("gpt2", "--model") == "gpt2"   # from_pretrained may now download it
    assert no_network == []


def test_the_workflow_names_the_scorer_key(tmp_path):
    """Through the config: the bpomp_score job of a scorer whose model is a hub id that is not here fails
    at once, without HF_HUB_OFFLINE, and its log names bpomp.scorers.<i>.model."""
    work = _workdir(tmp_path)
    shutil.copy(ROOT / "config" / "bpomp" / "tiny.yaml", work / "config" / "bpomp" / "tiny.yaml")
    (work / "config" / "hub.yaml").write_text(yaml.safe_dump({"bpomp": {
        "corpus": {"path": "limericks_in.jsonl"}, "pairs": {"tasks": ["word_swap"]},
        "scorers": [{"name": "gpt2-s", "kind": "causal", "model": "gpt2-s"},
                    {"name": "hub", "kind": "causal", "model": "gpt2"}]}}))
    (work / "limericks_in.jsonl").write_text("{}\n")
    for path in (paths.limericks(), paths.bpomp_pairs("word_swap")):   # upstream outputs, newer than their inputs
        time.sleep(0.01)
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_text(json.dumps(PAIR) + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", hub.ONLINE_ENV)}
    env |= {"PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "HF_HOME": str(tmp_path / "hf")}
    t0 = time.perf_counter()
    proc = subprocess.run(
        [str(BIN / "snakemake"), paths.bpomp_scores("hub", "word_swap"), "--snakefile", str(ROOT / "Snakefile"),
         "--directory", str(work), "-c", "1", "--allowed-rules", "bpomp_score",
         "--configfile", "config/scale/tiny.yaml", "config/bpomp/tiny.yaml", "config/hub.yaml"],
        cwd=work, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0, proc.stdout[-2000:]
    log_file = work / paths.log("bpomp", "score", "hub", "word_swap")
    assert log_file.is_file(), proc.stderr[-3000:]
    log = log_file.read_text()
    assert "'gpt2' given by bpomp.scorers.1.model" in log, log + proc.stderr[-2000:]
    assert "Retrying" not in log and time.perf_counter() - t0 < 120
