"""Your own checkpoint (docs/own-generator.md): a local folder is an input of rule train, every file of it; a
model that writes no valid quatrain stops early with the reasons counted; a tokenizer that does not fit the
model's embedding is refused where the checkpoint is loaded."""

from __future__ import annotations

import math
import os

import pytest

torch = pytest.importorskip("torch")

from helpers import sampling  # noqa: E402
from helpers import VANILLA, _workdir, snakemake  # noqa: E402
import gguf_tiny  # noqa: E402
from poeval.errors import PoevalError  # noqa: E402
from poeval.generators import lm  # noqa: E402
from poeval.generators.checkpoint import load  # noqa: E402
from poeval.generators.lm.training import train  # noqa: E402


def _checkpoint(folder, rows: int):
    """An untrained GPT-2 of ``rows`` embedding rows saved with a tokenizer of about 300 tokens, as any Hugging
    Face folder is (save_pretrained of both); the tokenizer's length."""
    from transformers import GPT2Config, GPT2LMHeadModel

    tok = gguf_tiny.tokenizer()
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=rows, n_embd=16, n_layer=1, n_head=2, n_positions=128,
                                       bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id))
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return len(tok)


# --- the folder as an input of rule train --------------------------------------------------------------

def test_resaving_a_local_checkpoint_folder_makes_rule_train_run(tmp_path):
    """A dry run after a file of the folder was re-saved (a newer mtime than the checkpoint trained from it)
    names rule train, for that file; every file of the folder, a nested one too, is an input."""
    work = _workdir(tmp_path)
    folder = work / "mine"
    (folder / "extra").mkdir(parents=True)
    files = {"config.json": "{}", "model.safetensors": "w", "extra/tokenizer.json": "{}"}
    for name, text in files.items():
        (folder / name).write_text(text)
    (work / "config" / "mine.yaml").write_text(
        "models:\n  mine: {arch: gpt2, size: S, init: pretrained, name_or_path: mine, training: none}\n"
        "systems: [mine]\ndecodings: [vanilla]\nstyle_adherence: {pairs: null}\n")
    for split in ("train", "dev"):
        (work / "data" / "en").mkdir(parents=True, exist_ok=True)
        (work / "data" / "en" / f"{split}.jsonl").write_text("")
    (work / "models" / "en" / "mine").mkdir(parents=True)
    for i, path in enumerate([*(folder / name for name in files), work / "data" / "en" / "train.jsonl",
                              work / "data" / "en" / "dev.jsonl", work / "models" / "en" / "mine"]):
        os.utime(path, (1_000_000 + i, 1_000_000 + i))   # in order: the folder, the splits, the checkpoint
    os.utime(folder / "model.safetensors", (2_000_000, 2_000_000))   # re-saved after the checkpoint was made
    proc = snakemake(work, "-n", "models/en/mine", configs=("config/scale/tiny.yaml", "config/mine.yaml"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    job = proc.stdout.split("rule train:")[1].split("\n\n")[0]
    assert "reason: Updated input files: mine/model.safetensors" in job
    assert all(f"mine/{name}" in job.split("input: ")[1].split("\n")[0] for name in files)


# --- the early stop -----------------------------------------------------------------------------------

def test_an_untrained_model_is_given_up_after_its_first_batch(tiny_corpus, tmp_path):
    """An untrained GPT-2 kept as it is (training: none) under the default budget (n 1000, max_attempts 4000,
    batches of 100) writes no quatrain: after the first batch even the 95 % bound of its valid share, 2.95 %,
    gives 115 of the 3900 attempts left, so the sample stops at 100 attempts with the reasons counted."""
    _checkpoint(tmp_path / "base", len(gguf_tiny.tokenizer()))
    cfg = {"arch": "gpt2", "init": "pretrained", "name_or_path": str(tmp_path / "base")}
    train(str(tiny_corpus[0]), str(tiny_corpus[1]), str(tmp_path / "model"), cfg, "none", progress=False)
    block = sampling(1000, max_new_tokens=20)   # params.yaml's n, batch_size and max_attempts; a short budget
    assert (block["batch_size"], block["max_attempts"]) == (100, 4000)
    assert round((1 - 0.05 ** (1 / 100)) * 3900) == 115
    out = tmp_path / "s.jsonl"
    with pytest.raises(PoevalError, match=r"model: 0 of 100 attempts gave a valid quatrain \(truncated \d+.*\): "
                                          r"n = 1000 is out of reach within sampling.max_attempts 4000"):
        lm.sample(str(tmp_path / "model"), VANILLA, block, str(out), str(tmp_path / "s.json"), progress=False)
    assert not out.exists()


# --- the vocabulary check -----------------------------------------------------------------------------

def test_a_tokenizer_that_does_not_fit_the_embedding_is_refused_but_padding_is_not(tiny_corpus, tmp_path):
    """50,257 rows against a tokenizer of about 300: another model's tokenizer; fewer rows than tokens: ids
    past the embedding. Either is one line naming the model, before anything is written. Rows rounded up to a
    multiple of 64 (padding for fast matrix shapes) and an exact fit load."""
    tokens = _checkpoint(tmp_path / "big", 50257)
    _checkpoint(tmp_path / "small", tokens - 10)
    for folder, problem in (("big", f"its embedding has 50257 rows but its tokenizer .* only {tokens} tokens, "
                                    "more than padding explains"),
                            ("small", f"its tokenizer .* has {tokens} tokens but its embedding only {tokens - 10} rows")):
        cfg = {"arch": "gpt2", "init": "pretrained", "name_or_path": str(tmp_path / folder)}
        with pytest.raises(PoevalError, match=rf"^model '.*{folder}' \(models\.mine\.name_or_path\): {problem}; "
                                              r"name the tokenizer the model was trained with in models\.mine\.tokenizer$"):
            train(str(tiny_corpus[0]), str(tiny_corpus[1]), str(tmp_path / "out"), cfg, "none", progress=False,
                     name="mine")
        assert not (tmp_path / "out").exists()
    for rows in (tokens, 64 * math.ceil(tokens / 64) + 64):
        _checkpoint(tmp_path / str(rows), rows)
        model, tok = load(str(tmp_path / str(rows)))
        assert model.get_input_embeddings().num_embeddings == rows and len(tok) == tokens
