"""LoRA fine-tuning (``models.<name>.lora``, peft) of a tiny GPT-2 that poeval trained from scratch: the
saved model differs from its base by a low-rank update of the adapted modules only (plus, for a
style-conditioned model, the embeddings, which lm.py trains in full), fine-tuning lowered the dev loss,
and the result is a plain checkpoint that loads and samples."""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from helpers import sampling  # noqa: E402
from poeval.generators import lm  # noqa: E402
from poeval.generators.checkpoint import load  # noqa: E402
from poeval.generators.lm.build import has_style_tokens  # noqa: E402
from poeval.generators.lm.training import train  # noqa: E402
from poeval.poetry.style import STYLE_TOKENS  # noqa: E402
from poeval.io import read_jsonl, write_jsonl  # noqa: E402
from helpers import TINY, TRAIN_CFG, TRAIN_ONLY, VANILLA, _quatrains, _state, _styled, reference_dev_loss  # noqa: E402

# The base model ends verses 1, 3 and 4 with TRAIN_ONLY; the fine-tuning quatrains end them with NEW_END.
NEW_END = "morning"
RANK = 4
ADAPTED = "transformer.h.0.attn.c_attn.weight"   # peft's default LoRA target for GPT-2: attention q, k, v
FINETUNE = {**TRAIN_CFG, "max_steps": 40, "eval_every": 10, "lr": 1e-2}


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    # not conftest's tiny_gpt2: its dev split ends in DEV_ONLY, and the base checkpoint (the best on dev)
    # is the one the fine-tuning's dev-loss margin below is measured against
    root = tmp_path_factory.mktemp("lora_base")
    write_jsonl(root / "train.jsonl", _quatrains(60, 1, TRAIN_ONLY))
    write_jsonl(root / "dev.jsonl", _quatrains(20, 2, TRAIN_ONLY))
    train(str(root / "train.jsonl"), str(root / "dev.jsonl"), str(root / "model"), TINY, TRAIN_CFG, progress=False)
    return root / "model"


@pytest.fixture(scope="module")
def finetune_corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("lora_data")
    write_jsonl(root / "train.jsonl", _styled(_quatrains(60, 3, NEW_END)))
    write_jsonl(root / "dev.jsonl", _styled(_quatrains(20, 4, NEW_END)))
    return root / "train.jsonl", root / "dev.jsonl"


def _finetune(base, corpus, out, conditioned=False) -> dict:
    cfg = {"arch": "gpt2", "init": "pretrained", "name_or_path": str(base), "conditioned": conditioned,
           "lora": {"r": RANK, "alpha": 8, "dropout": 0.0}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # peft: Conv1D needs fan_in_fan_out, which it then sets itself
        return train(str(corpus[0]), str(corpus[1]), str(out), cfg, FINETUNE, progress=False, name="lora")


def _rank(delta) -> int:
    s = torch.linalg.svdvals(delta.double())
    return int((s > 1e-5 * s[0]).sum())


def test_lora_changes_the_attention_by_a_low_rank_update_and_lowers_the_dev_loss(base, finetune_corpus, tmp_path):
    out = tmp_path / "ft"
    summary = _finetune(base, finetune_corpus, out)
    before, after = _state(base), _state(out)
    assert before.keys() == after.keys()
    changed = {k for k in before if not torch.equal(before[k], after[k])}
    assert changed == {ADAPTED}   # biases, MLP, layer norms and embeddings are the base's
    assert _rank(after[ADAPTED] - before[ADAPTED]) == RANK
    # the merged checkpoint is the best evaluation, and fine-tuning helped on the new corpus's dev split
    dev = finetune_corpus[1]
    saved = reference_dev_loss(out, dev)
    assert saved == pytest.approx(summary["best_dev_loss"], rel=1e-5)
    assert saved < reference_dev_loss(base, dev) - 0.2
    # a plain transformers checkpoint (adapters merged): loads without peft's wrappers and samples
    model, _ = load(str(out))
    assert type(model).__name__ == "GPT2LMHeadModel"
    assert not any("lora" in name for name, _ in model.named_parameters())
    stats = lm.sample(str(out), VANILLA, sampling(8, batch_size=16, max_attempts=160), str(tmp_path / "s.jsonl"),
                      str(tmp_path / "s.json"), progress=False)
    records = list(read_jsonl(tmp_path / "s.jsonl"))
    assert stats["valid"] == len(records) > 0


def test_conditioned_lora_also_trains_the_grown_embeddings(base, finetune_corpus, tmp_path):
    out = tmp_path / "ft"
    summary = _finetune(base, finetune_corpus, out, conditioned=True)
    before, after = _state(base), _state(out)
    n_vocab = TINY["vocab_size"]
    wte = "transformer.wte.weight"
    assert after[wte].shape[0] == n_vocab + len(STYLE_TOKENS) == summary["vocab_size"]
    # the adapters and the (now untied) input and output embeddings are trained; nothing else moved
    assert set(after) - set(before) == {"lm_head.weight"}
    changed = {k for k in before if k != wte and not torch.equal(before[k], after[k])}
    assert changed == {ADAPTED} and _rank(after[ADAPTED] - before[ADAPTED]) == RANK
    assert not torch.equal(after[wte][:n_vocab], before[wte])
    assert not torch.equal(after["lm_head.weight"], after[wte])
    dev = finetune_corpus[1]
    assert reference_dev_loss(out, dev, styled=True) == pytest.approx(summary["best_dev_loss"], rel=1e-5)
    # loads with its style tokens and samples a requested scheme
    _, tok = load(str(out))
    assert has_style_tokens(tok)
    stats = lm.sample(str(out), VANILLA, sampling(4, batch_size=16, max_attempts=64), str(tmp_path / "s.jsonl"),
                      str(tmp_path / "s.json"), progress=False, style="abab")
    assert stats["valid"] > 0 and stats["style"] == "abab"
