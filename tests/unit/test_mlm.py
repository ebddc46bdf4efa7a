"""Tests for poeval.generators.mlm: tiny BERT-style masked LMs trained from scratch on made-up quatrains (CPU, seconds)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from poeval.bpomp import scoring  # noqa: E402
from poeval.errors import PoevalError  # noqa: E402
from poeval.generators import mlm  # noqa: E402
from poeval.io import read_json, write_jsonl  # noqa: E402
from helpers import Interrupted, assert_stamped  # noqa: E402

ADJ = "silver quiet golden broken gentle hollow bitter tender".split()
NOUN = "river candle meadow harbor shadow lantern orchard sparrow".split()
VERB = "sings sleeps burns waits drifts falls".split()
TINY = {"vocab_size": 200, "n_layer": 1, "n_embd": 32, "n_head": 2, "n_positions": 64, "dropout": 0.0,
        "batch_size": 16, "max_steps": 60, "lr": 3e-3, "warmup_steps": 5, "eval_every": 20, "eval_quatrains": 20,
        "patience": 0}


def _quatrains(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)

    def line():
        return f"the {rng.choice(ADJ)} {rng.choice(NOUN)} {rng.choice(VERB)} by the {rng.choice(NOUN)}"

    return [{"id": f"q{seed}-{i}", "lines": [line() for _ in range(4)]} for i in range(n)]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("mlm_corpus")
    write_jsonl(root / "train.jsonl", _quatrains(80, 1))
    write_jsonl(root / "dev.jsonl", _quatrains(20, 2))
    return root / "train.jsonl", root / "dev.jsonl"


@pytest.fixture(scope="module")
def trained(corpus, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("mlm") / "bert"
    mlm.train_mlm(str(corpus[0]), str(corpus[1]), str(out), TINY, progress=False, name="tiny")
    return out


def test_tokenizer_keeps_line_breaks_and_specials():
    tok = mlm.train_tokenizer(["The cat sat\non the mat", "a dog\nran far"] * 5, 60)
    enc = tok("The cat\nsat")
    tokens = tok.convert_ids_to_tokens(enc["input_ids"])
    assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]" and mlm.NEWLINE in tokens
    nl = tokens.index(mlm.NEWLINE)
    enc = tok("The cat\nsat", return_offsets_mapping=True)
    assert enc["offset_mapping"][nl] == (7, 8)   # the newline character itself
    assert tok.mask_token == "[MASK]" and tok.pad_token == "[PAD]" and tok.unk_token == "[UNK]"


def test_masking_80_10_10():
    tok = mlm.train_tokenizer(["the cat sat on the mat"] * 10, 60)
    seqs = [tok("the cat sat on the mat the cat sat on the mat")["input_ids"]] * 400
    gen = torch.Generator().manual_seed(0)
    inputs, att, labels = mlm.mask_batch(seqs, tok, 0.15, gen)
    sel = labels != -100
    assert not sel[:, 0].any() and not sel[:, -1].any()        # never [CLS] / [SEP]
    share = sel.sum().item() / (len(seqs) * (len(seqs[0]) - 2))
    assert 0.13 < share < 0.17
    masked = (inputs[sel] == tok.mask_token_id).float().mean().item()
    kept = (inputs[sel] == labels[sel]).float().mean().item()
    assert 0.75 < masked < 0.85 and 0.07 < kept < 0.14


def test_training_log_and_loss_decreases(trained):
    log = read_json(trained / "training_log.json")
    evals = log["evals"]
    assert [e["step"] for e in evals] == [20, 40, 60]
    assert evals[-1]["dev_loss"] < evals[0]["dev_loss"] and evals[-1]["train_loss"] < evals[0]["train_loss"]
    assert all(e["tokens_per_s"] > 0 for e in evals)
    assert log["summary"]["best_step"] == 60 and log["config"]["n_layer"] == 1
    assert not any(p.name.startswith(".") for p in trained.parent.iterdir())   # no temp dir left behind


def test_checkpoint_stamps_its_provenance(corpus, trained):
    assert_stamped(read_json(trained / "training_log.json"), {"train": corpus[0], "dev": corpus[1]}, {"mlm": TINY})


def test_resume_after_interruption_is_bit_identical(corpus, tmp_path, interrupt):
    from safetensors.torch import load_file

    # dropout and masking draw from two RNGs; 80 quatrains in batches of 16: 5 steps an epoch
    cfg = {**TINY, "dropout": 0.1, "max_steps": 12, "eval_every": 4}
    mlm.train_mlm(str(corpus[0]), str(corpus[1]), str(tmp_path / "full"), cfg, progress=False)
    interrupt(10)
    with pytest.raises(Interrupted):
        mlm.train_mlm(str(corpus[0]), str(corpus[1]), str(tmp_path / "cut"), cfg, progress=False)
    interrupt(None)
    summary = mlm.train_mlm(str(corpus[0]), str(corpus[1]), str(tmp_path / "cut"), cfg, progress=False)
    assert summary["resumed_from_step"] == 8
    wa, wb = (load_file(tmp_path / x / "model.safetensors") for x in ("full", "cut"))
    assert wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cut", "full"]


def test_loads_with_from_pretrained_and_scores(trained):
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    model = AutoModelForMaskedLM.from_pretrained(trained)
    tok = AutoTokenizer.from_pretrained(trained)
    assert type(model).__name__ == "BertForMaskedLM" and tok.is_fast
    good = "the silver river sings by the meadow\nthe quiet candle falls by the harbor"
    bad = "river the sings silver meadow by the\nharbor candle the by quiet falls the"
    m, t = scoring.load_masked(str(trained))
    for variant in scoring.VARIANTS:
        s_good, s_bad = scoring.masked_scores(m, t, [good, bad], variant=variant)
        assert s_good > s_bad


def test_training_is_deterministic(corpus, trained, tmp_path):
    out = tmp_path / "again"
    mlm.train_mlm(str(corpus[0]), str(corpus[1]), str(out), TINY, progress=False)
    from safetensors.torch import load_file

    wa, wb = load_file(trained / "model.safetensors"), load_file(out / "model.safetensors")
    assert wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)
    assert read_json(trained / "training_log.json")["evals"][-1]["dev_loss"] == \
        read_json(out / "training_log.json")["evals"][-1]["dev_loss"]


def test_early_stopping_and_bad_config(corpus, tmp_path):
    summary = mlm.train_mlm(str(corpus[0]), str(corpus[1]), str(tmp_path / "es"),
                            {**TINY, "lr": 0.5, "patience": 1, "max_steps": 200, "eval_every": 10}, progress=False)
    assert summary["stopped_early"] and summary["steps"] < 200
    with pytest.raises(PoevalError, match="bpomp.mlm.x.n_layer"):
        mlm.resolve_config({"n_layer": 0}, "x")
    with pytest.raises(PoevalError, match="unknown key"):
        mlm.resolve_config({"layers": 2})
    with pytest.raises(PoevalError, match="input not found"):
        mlm.train_mlm(str(tmp_path / "none.jsonl"), str(corpus[1]), str(tmp_path / "x"), TINY, progress=False)
