"""Tests for poeval.lm: tiny GPT-2 models trained from scratch on a made-up corpus (CPU, seconds)."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # no model hub: nothing here may touch the network

import json
import random
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from poeval import lm  # noqa: E402
from poeval.errors import PoevalError  # noqa: E402
from poeval.io import read_json, read_jsonl, write_jsonl  # noqa: E402

ADJ = "silver quiet golden broken gentle hollow bitter tender ancient restless".split()
NOUN = "river candle meadow harbor shadow lantern orchard sparrow window morning".split()
VERB = "sings sleeps burns waits drifts falls turns breaks".split()
PREP = "beneath beyond across within upon".split()
TRAIN_ONLY = "nightingale"  # frequent in train: must become one token
DEV_ONLY = "zqxjvkw"  # frequent in dev only, letters never adjacent in train: must stay single bytes

TINY = {
    "arch": "gpt2",
    "size": "XS",
    "init": "scratch",
    "name_or_path": None,
    "vocab_size": 400,
    "n_layer": 1,
    "n_embd": 32,
    "n_head": 2,
    "n_positions": 96,
}
TRAIN_CFG = {
    "seed": 1,
    "batch_size": 16,
    "max_steps": 150,
    "lr": 3e-3,
    "warmup_steps": 10,
    "weight_decay": 0.01,
    "eval_every": 25,
    "eval_quatrains": 20,
    "patience": 0,
}
VANILLA = {"temperature": 1.0, "top_p": 1.0, "top_k": 0}


def _line(rng: random.Random, extra: str | None = None) -> str:
    words = ["the", rng.choice(ADJ), rng.choice(NOUN), rng.choice(VERB), rng.choice(PREP), "the", rng.choice(NOUN)]
    return " ".join(words + ([extra] if extra else []))


def _quatrains(n: int, seed: int, word: str) -> list[dict]:
    rng = random.Random(seed)
    return [
        {"id": f"s{seed}-{i:03d}", "lines": [_line(rng, word), _line(rng), _line(rng, word), _line(rng, word)]}
        for i in range(n)
    ]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("lm_corpus")
    write_jsonl(root / "train.jsonl", _quatrains(60, 1, TRAIN_ONLY))
    write_jsonl(root / "dev.jsonl", _quatrains(20, 2, DEV_ONLY))
    return root / "train.jsonl", root / "dev.jsonl"


def _train(corpus, out: Path, *, model_cfg=None, **overrides) -> dict:
    train, dev = corpus
    return lm.train(str(train), str(dev), str(out), model_cfg or TINY, {**TRAIN_CFG, **overrides}, progress=False)


@pytest.fixture(scope="module")
def trained(corpus, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("lm_model") / "tiny"
    _train(corpus, out)
    return out


def _state(model_dir: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(model_dir / "model.safetensors"))


# ---------------------------------------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    "text, finished, lines, reason",
    [
        ("a\nb\nc\nd", True, ["a", "b", "c", "d"], None),
        ("  a b \n\tc\nd  \n e", True, ["a b", "c", "d", "e"], None),
        ("a\nb\nc\nd", False, None, "truncated"),
        ("a\nb\nc", True, None, "wrong_line_count:3"),
        ("a\nb\nc\nd\n", True, None, "wrong_line_count:5"),  # a trailing newline is not dropped
        ("", True, None, "wrong_line_count:1"),
        ("a\n\nc\nd", True, None, "empty_line"),
        ("a\n   \nc\nd", True, None, "empty_line"),
    ],
)
def test_parse_quatrain(text, finished, lines, reason):
    assert lm.parse_quatrain(text, finished) == (lines, reason)


def test_decoding_kwargs():
    assert lm.decoding_kwargs(VANILLA) == {"do_sample": True, "temperature": 1.0, "top_p": 1.0, "top_k": 0}
    assert lm.decoding_kwargs({"temperature": 0.7})["top_k"] == 0  # top-k off unless asked for
    for bad in ({"temperature": 0}, {"top_p": 0}, {"top_p": 1.5}, {"top_k": -1}, {"typical_p": 0.9}):
        with pytest.raises(PoevalError):
            lm.decoding_kwargs(bad)


# ---------------------------------------------------------------------------------------------- training


def test_tokenizer_is_trained_on_train_split_only(trained, corpus):
    _, tok = lm.load(str(trained))
    assert tok.bos_token == tok.eos_token == tok.pad_token == "<|endoftext|>"
    assert len(tok) == TINY["vocab_size"]
    # a word that is frequent in train became a single token ...
    assert tok.tokenize(" " + TRAIN_ONLY) == ["Ġ" + TRAIN_ONLY]
    # ... while an equally frequent dev-only word whose letter pairs never occur in train got no merge at all
    assert tok.tokenize(" " + DEV_ONLY) == ["Ġ"] + list(DEV_ONLY)
    # control: had dev text leaked into tokenizer training, the dev-only word would have been merged
    texts = ["\n".join(r["lines"]) for path in corpus for r in read_jsonl(path)]
    leaked = lm.train_tokenizer(texts, TINY["vocab_size"])
    assert len(leaked.tokenize(" " + DEV_ONLY)) < 1 + len(DEV_ONLY)
    # the quatrain text round-trips with BOS/EOS as single special tokens
    text = lm.quatrain_text(["the river", "sings", "a b", "c"], tok.bos_token, tok.eos_token)
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert ids[0] == ids[-1] == tok.eos_token_id and tok.eos_token_id not in ids[1:-1]
    assert tok.decode(ids, skip_special_tokens=True) == "the river\nsings\na b\nc"


def test_training_log_and_loss_decreases(trained):
    log = read_json(trained / "training_log.json")
    evals, summary = log["evals"], log["summary"]
    assert [e["step"] for e in evals] == [25, 50, 75, 100, 125, 150]
    for e in evals:
        assert {"step", "train_loss", "dev_loss", "tokens_per_s", "elapsed_s"} <= set(e)
    assert evals[-1]["train_loss"] < evals[0]["train_loss"] - 1.0
    assert summary["best_dev_loss"] == min(e["dev_loss"] for e in evals) < evals[0]["dev_loss"]
    assert summary["best_step"] in [e["step"] for e in evals]
    assert summary["stopped_early"] is False
    assert summary["tokens_per_s"] > 0 and summary["n_params"] > 0
    assert summary["truncated_train"] == 0
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= {p.name for p in trained.iterdir()}
    # no temp directories left next to the checkpoint
    assert [p.name for p in trained.parent.iterdir()] == [trained.name]


def test_best_checkpoint_is_saved(corpus, tmp_path):
    """With patience off and a high lr the model overfits; the saved weights are the best-dev ones."""
    out = tmp_path / "m"
    summary = _train(corpus, out, max_steps=60, eval_every=10, lr=1e-2)
    model, tok = lm.load(str(out))
    dev = [r["lines"] for r in read_jsonl(corpus[1])]
    ids, _ = lm._encode(tok, dev, 96)
    assert lm._dev_loss(model, ids, tok.pad_token_id, 32) == pytest.approx(summary["best_dev_loss"], rel=1e-5)


@pytest.mark.parametrize("grouping", [0, 3])
def test_training_is_deterministic(corpus, tmp_path, grouping):
    kw = {"max_steps": 30, "eval_every": 10, "length_grouping": grouping}
    _train(corpus, tmp_path / "a", **kw)
    _train(corpus, tmp_path / "b", **kw)
    _train(corpus, tmp_path / "c", **kw, seed=2)
    a, b, c = (_state(tmp_path / x) for x in "abc")
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not all(torch.equal(a[k], c[k]) for k in a)
    assert (tmp_path / "a" / "tokenizer.json").read_bytes() == (tmp_path / "b" / "tokenizer.json").read_bytes()


def test_early_stopping(corpus, tmp_path):
    # lr 0: the dev loss never improves after the first evaluation
    summary = _train(corpus, tmp_path / "m", lr=0.0, max_steps=1000, eval_every=5, patience=2)
    assert summary["stopped_early"] is True
    assert summary["best_step"] == 5
    assert summary["steps"] == 15
    assert len(read_json(tmp_path / "m" / "training_log.json")["evals"]) == 3


def test_retraining_replaces_output_dir(corpus, tmp_path):
    out = tmp_path / "m"
    out.mkdir()
    (out / "stale.txt").write_text("old")
    _train(corpus, out, max_steps=5, eval_every=5)
    assert not (out / "stale.txt").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]


def test_bad_config_is_a_poeval_error(corpus, tmp_path):
    with pytest.raises(PoevalError, match="arch"):
        _train(corpus, tmp_path / "m", model_cfg={**TINY, "arch": "llama"})
    with pytest.raises(PoevalError, match="max_steps"):
        _train(corpus, tmp_path / "m", max_steps=0)
    with pytest.raises(PoevalError, match="learning_rate"):
        _train(corpus, tmp_path / "m", learning_rate=0.1)
    assert not (tmp_path / "m").exists()


# ---------------------------------------------------------------------------------------------- loading


def test_load_saved_dir(trained):
    model, tok = lm.load(str(trained))
    assert type(model).__name__ == "GPT2LMHeadModel"
    assert model.config.n_layer == 1 and model.config.n_embd == 32
    assert model.config.eos_token_id == tok.eos_token_id == model.generation_config.eos_token_id


def test_load_missing_model_offline(monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(PoevalError, match=r"no/such-model.*models\.gpt2-ft\.name_or_path"):
        lm.load("no/such-model", name="gpt2-ft")
    with pytest.raises(PoevalError, match=r"models\.local\.name_or_path.*no such directory"):
        lm.load("./no/such/dir", name="local")


def test_pretrained_missing_fails_before_training(corpus, tmp_path, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    cfg = {"arch": "gpt2", "init": "pretrained", "name_or_path": "no/such-model"}
    with pytest.raises(PoevalError, match=r"models\.big\.name_or_path"):
        lm.train(str(corpus[0]), str(corpus[1]), str(tmp_path / "m"), cfg, TRAIN_CFG, progress=False, name="big")
    assert list(tmp_path.iterdir()) == []


def test_finetune_from_local_dir(corpus, trained, tmp_path):
    cfg = {"arch": "gpt2", "init": "pretrained", "name_or_path": str(trained)}
    summary = _train(corpus, tmp_path / "ft", model_cfg=cfg, max_steps=10, eval_every=5, lr=1e-3)
    base = read_json(trained / "training_log.json")["summary"]
    assert summary["vocab_size"] == base["vocab_size"]
    assert summary["n_params"] == base["n_params"]
    # starts from the trained weights, so the first dev loss is already near the base model's
    first = read_json(tmp_path / "ft" / "training_log.json")["evals"][0]["dev_loss"]
    assert first < read_json(trained / "training_log.json")["evals"][0]["dev_loss"]


# ---------------------------------------------------------------------------------------------- sampling


def _sample(model_dir, tmp_path, name="s", **kw):
    out, stats = tmp_path / f"{name}.jsonl", tmp_path / f"{name}.json"
    args = {"n": 8, "batch_size": 16, "max_attempts": 160, "seed": 1, "progress": False, **kw}
    n = args.pop("n")
    result = lm.sample(str(model_dir), VANILLA, n, str(out), str(stats), **args)
    return list(read_jsonl(out)), read_json(stats), result


def test_sample_writes_valid_quatrains_and_stats(trained, tmp_path):
    records, stats, result = _sample(trained, tmp_path, id_prefix="tiny-")
    assert stats == json.loads(json.dumps(result))
    assert 0 < len(records) <= 8
    for i, rec in enumerate(records):
        assert rec["id"] == f"tiny-{i:05d}"
        assert len(rec["lines"]) == 4
        assert all(line == line.strip() and line for line in rec["lines"])
    assert stats["valid"] == len(records)
    assert stats["valid"] + sum(stats["reasons"].values()) == stats["attempts"] <= 160
    assert stats["validity_rate"] == pytest.approx(stats["valid"] / stats["attempts"])
    assert stats["decoding"] == VANILLA and stats["seed"] == 1
    assert stats["elapsed_s"] >= 0
    if len(records) < 8:
        assert stats["attempts"] == 160
    assert all(r == "truncated" or r == "empty_line" or r.startswith("wrong_line_count:") for r in stats["reasons"])


def test_sample_missing_model_dir(tmp_path):
    with pytest.raises(PoevalError, match="model directory not found"):
        lm.sample(str(tmp_path / "nope"), VANILLA, 5, str(tmp_path / "s.jsonl"), str(tmp_path / "s.json"))


def test_sample_zero_valid(trained, tmp_path):
    records, stats, _ = _sample(trained, tmp_path, max_new_tokens=1, max_attempts=20)
    assert records == []
    assert (tmp_path / "s.jsonl").read_text() == ""
    assert stats["valid"] == 0 and stats["validity_rate"] == 0.0
    assert stats["attempts"] == 20 == sum(stats["reasons"].values())


def test_sampling_is_deterministic(trained, tmp_path):
    a, sa, _ = _sample(trained, tmp_path, "a", n=5, max_attempts=48)
    b, sb, _ = _sample(trained, tmp_path, "b", n=5, max_attempts=48)
    c, sc, _ = _sample(trained, tmp_path, "c", n=5, max_attempts=48, seed=2)
    assert a == b and sa["reasons"] == sb["reasons"] and sa["attempts"] == sb["attempts"]
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    assert (a, sa["reasons"]) != (c, sc["reasons"])
