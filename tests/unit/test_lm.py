"""Tests for poeval.generators.lm: tiny GPT-2 models trained from scratch on a made-up corpus (CPU, seconds)."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # no model hub: nothing here may touch the network

import collections
import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from poeval.generators import lm  # noqa: E402
from poeval.generators.checkpoint import load, orient  # noqa: E402
from poeval.generators.engine import resume_dir  # noqa: E402
from poeval.generators.lm.build import byte_tokenizer, has_style_tokens, train_tokenizer  # noqa: E402
from poeval.generators.lm.data import quatrain_text, read_quatrains, read_split, training_texts  # noqa: E402
from poeval.generators.lm.generation import generate_batch, generate_kwargs, newline_counts, parse_quatrain  # noqa: E402
from poeval.generators.lm.training import encode_quatrains, train  # noqa: E402
from poeval.poetry.style import METERS, SCHEMES, STYLE_TOKENS, strip_style, style_tokens  # noqa: E402
from poeval.generators import engine  # noqa: E402
from helpers import assert_stamped, sampling  # noqa: E402
from helpers import (ADJ, DEV_ONLY, NOUN, PREP, TINY, TRAIN_CFG, TRAIN_ONLY, VANILLA, VERB, _quatrains, _state,  # noqa: E402
                     _styled, reference_dev_loss, sample_stats)
from poeval.errors import PoevalError  # noqa: E402
from poeval.generators.decoding import parse_decoding  # noqa: E402
from poeval.io import read_json, read_jsonl, write_jsonl  # noqa: E402


def kwargs_of(decoding: dict) -> dict:
    """transformers generate's keyword arguments of a decoding config."""
    return generate_kwargs(parse_decoding(decoding))


@pytest.fixture(scope="module")
def corpus(tiny_corpus) -> tuple[Path, Path]:
    return tiny_corpus


def _train(corpus, out: Path, *, model_cfg=None, **overrides) -> dict:
    train_file, dev_file = corpus
    return train(str(train_file), str(dev_file), str(out), model_cfg or TINY, {**TRAIN_CFG, **overrides}, progress=False)


@pytest.fixture(scope="module")
def trained(tiny_gpt2) -> Path:
    return tiny_gpt2   # _train(corpus, ...) with the defaults, once a session



# ---------------------------------------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    "text, finished, lines, reason",
    [
        ("a\nb\nc\nd", True, ["a", "b", "c", "d"], None),
        ("  a b \n\tc\nd  \n e", True, ["a b", "c", "d", "e"], None),
        ("a\nb\nc\nd", False, None, "truncated"),
        ("a\nb\nc", True, None, "wrong_line_count:3"),
        ("a\nb\nc\nd\n", True, None, "extra_verse"),  # a trailing newline begins a fifth verse
        ("", True, None, "wrong_line_count:1"),
        ("a\n\nc\nd", True, None, "empty_line"),
        ("a\n   \nc\nd", True, None, "empty_line"),
    ],
)
def test_parse_quatrain(text, finished, lines, reason):
    assert parse_quatrain(text, finished) == (lines, reason)


def test_generate_kwargs():
    assert kwargs_of(VANILLA) == {"do_sample": True, "temperature": 1.0, "top_p": 1.0, "top_k": 0}
    assert kwargs_of({"temperature": 0.7})["top_k"] == 0  # top-k off unless asked for
    from poeval.generators.contrastive import contrastive_generate

    cs = {"custom_generate": contrastive_generate, "do_sample": False, "top_k": 6, "penalty_alpha": 0.7}
    # the stochastic mode's tau defaults to 0.1 (docs/results/generators.md: distinct share vs tau)
    assert kwargs_of({"top_k": 6, "penalty_alpha": 0.7}) == {**cs, "score_temperature": 0.1}
    assert kwargs_of({"top_k": 6, "penalty_alpha": 0.7, "score_temperature": 0.3})["score_temperature"] == 0.3
    assert kwargs_of({"top_k": 6, "penalty_alpha": 0.7, "mode": "argmax"}) == {**cs, "score_temperature": 0.0}
    # what transformers 4 ran for the paper's do_sample=True contrastive configs: top-k sampling at t 1
    assert kwargs_of({"top_k": 6, "penalty_alpha": 0.7, "mode": "paper"}) == \
        kwargs_of({"top_k": 6, "temperature": 1.0, "top_p": 1.0})
    for bad in ({"temperature": 0}, {"temperature": 1, "top_p": 0}, {"temperature": 1, "top_p": 1.5},
                {"temperature": 1, "top_k": -1}, {"temperature": 1, "typical_p": 0.9}, {"top_k": 5},
                {"top_k": 0, "penalty_alpha": 0.6}, {"top_k": 4, "penalty_alpha": 1.5},
                {"top_k": 4, "penalty_alpha": 0.6, "temperature": 0.7},
                {"top_k": 4, "penalty_alpha": 0.6, "mode": "beam"},
                {"top_k": 4, "penalty_alpha": 0.6, "score_temperature": 0},
                {"top_k": 4, "penalty_alpha": 0.6, "mode": "paper", "score_temperature": 0.1}):
        with pytest.raises(PoevalError):
            kwargs_of(bad)


# ---------------------------------------------------------------------------------------------- training


def test_tokenizer_is_trained_on_train_split_only(trained, corpus):
    _, tok = load(str(trained))
    assert tok.bos_token == tok.eos_token == tok.pad_token == "<|endoftext|>"
    assert len(tok) == TINY["vocab_size"]
    # a word that is frequent in train became a single token ...
    assert tok.tokenize(" " + TRAIN_ONLY) == ["Ġ" + TRAIN_ONLY]
    # ... while an equally frequent dev-only word whose letter pairs never occur in train got no merge at all
    assert tok.tokenize(" " + DEV_ONLY) == ["Ġ"] + list(DEV_ONLY)
    # control: had dev text leaked into tokenizer training, the dev-only word would have been merged
    texts = ["\n".join(r["lines"]) for path in corpus for r in read_jsonl(path)]
    leaked = train_tokenizer(texts, TINY["vocab_size"])
    assert len(leaked.tokenize(" " + DEV_ONLY)) < 1 + len(DEV_ONLY)
    # the quatrain text round-trips with BOS/EOS as single special tokens
    text = quatrain_text(["the river", "sings", "a b", "c"], tok.bos_token, tok.eos_token)
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
    """A high lr overfits the tiny model, and with patience off training goes on past the best evaluation:
    the saved weights are the best-dev ones, not the last ones (dev loss recomputed with transformers)."""
    out = tmp_path / "m"
    _train(corpus, out, max_steps=60, eval_every=10, lr=1e-2)
    evals = read_json(out / "training_log.json")["evals"]
    best = min(e["dev_loss"] for e in evals)
    assert evals[-1]["dev_loss"] > best + 0.1   # the run did end worse than its best
    saved = reference_dev_loss(out, corpus[1])
    assert saved == pytest.approx(best, rel=1e-5)
    assert saved < evals[-1]["dev_loss"]


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
        _train(corpus, tmp_path / "m", model_cfg={**TINY, "arch": "rnn"})
    with pytest.raises(PoevalError, match="max_steps"):
        _train(corpus, tmp_path / "m", max_steps=0)
    with pytest.raises(PoevalError, match="learning_rate"):
        _train(corpus, tmp_path / "m", learning_rate=0.1)
    assert not (tmp_path / "m").exists()


def test_an_arch_without_a_scratch_build_is_refused_not_built_as_llama():
    """gemma3 is an arch of the registry with no model of its own from scratch: one line naming it and the
    archs that have one, never a LLaMA config."""
    from poeval.generators.lm.build import byte_tokenizer, resolve_model_cfg, scratch_config

    with pytest.raises(PoevalError, match=r"^model arch 'gemma3': .*known: gpt2, bygpt5, gptneo, llama$"):
        scratch_config(resolve_model_cfg({"arch": "llama"}) | {"arch": "gemma3"}, byte_tokenizer())
    assert type(scratch_config(resolve_model_cfg({"arch": "llama"}), byte_tokenizer())).__name__ == "LlamaConfig"


# ---------------------------------------------------------------------------------------------- loading


def test_load_saved_dir(trained):
    model, tok = load(str(trained))
    assert type(model).__name__ == "GPT2LMHeadModel"
    assert model.config.n_layer == 1 and model.config.n_embd == 32
    assert model.config.eos_token_id == tok.eos_token_id == model.generation_config.eos_token_id


def test_load_missing_model_offline(monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(PoevalError, match=r"no/such-model.*models\.gpt2-ft\.name_or_path"):
        load("no/such-model", name="gpt2-ft")
    with pytest.raises(PoevalError, match=r"models\.local\.name_or_path.*no such directory"):
        load("./no/such/dir", name="local")


def test_pretrained_missing_fails_before_training(corpus, tmp_path, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    cfg = {"arch": "gpt2", "init": "pretrained", "name_or_path": "no/such-model"}
    with pytest.raises(PoevalError, match=r"models\.big\.name_or_path"):
        train(str(corpus[0]), str(corpus[1]), str(tmp_path / "m"), cfg, TRAIN_CFG, progress=False, name="big")
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


def _sample(model_dir, tmp_path, name="s", id_prefix="", **kw):
    out, stats = tmp_path / f"{name}.jsonl", tmp_path / f"{name}.json"
    block = sampling(**{"n": 8, "batch_size": 16, "max_attempts": 160, "seed": 1, **kw})
    result = lm.sample(str(model_dir), VANILLA, block, str(out), str(stats), id_prefix=id_prefix, progress=False)
    return list(read_jsonl(out)), read_json(stats), result


def _recount(tok, rows: list[list[int]], n: int) -> tuple[list[list[str]], int, dict]:
    """The sampling rule applied by hand to generated rows (after BOS), in order until ``n`` valid: text up
    to EOS (the scratch tokenizer's only special token), split on newlines; a fifth verse (the row stops
    there) is extra_verse, no EOS is truncated, else four verses each with a letter (a word). Returns
    the valid quatrains, the number of rows counted and the failure reasons."""
    valid, reasons, counted = [], collections.Counter(), 0
    for row in rows:
        if len(valid) == n:
            break
        counted += 1
        end = row.index(tok.eos_token_id) if tok.eos_token_id in row else len(row)
        verses = [v.strip() for v in tok.decode(row[:end]).split("\n")]
        if len(verses) > 4:
            reasons["extra_verse"] += 1
        elif end == len(row):
            reasons["truncated"] += 1
        elif len(verses) != 4:
            reasons[f"wrong_line_count:{len(verses)}"] += 1
        elif not all(any(ch.isalpha() for ch in v) for v in verses):
            reasons["empty_line"] += 1
        else:
            valid.append(verses)
    return valid, counted, dict(reasons)


@pytest.mark.parametrize("n", [2, 160])   # 2: counting stops inside a batch (of 40); 160: the budget runs out
def test_sample_writes_valid_quatrains_and_stats(n, trained, tmp_path, monkeypatch):
    """The stats agree with the samples file and with the generations themselves, recounted by hand."""
    rows, generate = [], generate_batch

    def spy(model, prompt, *args):
        seqs = generate(model, prompt, *args)
        rows.extend(seqs[:, prompt.shape[1]:].tolist())
        return seqs

    monkeypatch.setattr(lm.generation, "generate_batch", spy)
    records, stats, result = _sample(trained, tmp_path, n=n, id_prefix="tiny-", batch_size=40)
    assert stats == json.loads(json.dumps(result))
    _, tok = load(str(trained))
    valid, counted, reasons = _recount(tok, rows, n)
    assert 0 < len(valid) and reasons   # both outcomes occur, so the counts below are tested
    if n == 2:
        assert len(valid) == 2 and counted < len(rows)   # the rest of the batch is not counted
    else:
        assert len(valid) < 160 and counted == 160
    lines = (tmp_path / "s.jsonl").read_text().splitlines()
    assert stats["valid"] == len(lines) == len(valid)
    assert [r["lines"] for r in records] == valid
    assert [r["id"] for r in records] == [f"tiny-{i:05d}" for i in range(len(valid))]
    assert stats["attempts"] == counted <= len(rows) and stats["reasons"] == reasons
    assert stats["validity_rate"] == pytest.approx(len(valid) / counted)
    assert stats["distinct_share"] == len({tuple(q) for q in valid}) / len(valid)
    assert stats["provenance"]["params"]["decoding"] == parse_decoding(VANILLA).to_dict()
    assert stats["decoding"] == parse_decoding(VANILLA).to_dict() and stats["seed"] == 1
    assert stats["elapsed_s"] >= 0


@pytest.mark.parametrize("decoding", [VANILLA, {"temperature": 0.7, "top_p": 0.9, "top_k": 0},
                                      {"temperature": 1.3, "top_p": 1.0, "top_k": 10}])
def test_ancestral_sampling_draws_what_transformers_generate_draws(trained, decoding):
    """One row at a time (nothing leaves the batch), the sampler is transformers' own sampling: the same
    tokens from the same seed, up to and including the EOS, under every warper."""
    model, tok = load(str(trained))
    model.eval()
    prompt = torch.full((1, 1), tok.bos_token_id)
    typed = parse_decoding(decoding)
    kw = generate_kwargs(typed)
    ended = 0
    for seed in range(6):
        torch.manual_seed(seed)
        ours = generate_batch(model, prompt, typed, 60, [tok.eos_token_id], tok.pad_token_id)[0].tolist()
        torch.manual_seed(seed)
        theirs = model.generate(input_ids=prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=60,
                                eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id, **kw)[0].tolist()
        assert ours[:len(theirs)] == theirs and set(ours[len(theirs):]) <= {tok.pad_token_id}
        ended += tok.eos_token_id in theirs
    assert ended   # rows that end before the budget are compared too


def test_rows_leave_the_batch_when_they_end(trained, monkeypatch):
    """Ended rows leave the batch (and the cache) together: later forward passes see fewer rows, and the
    rows that ended are padded after their end."""
    model, tok = load(str(trained))
    model.eval()
    sizes, forward = [], type(model).forward

    def spy(self, *args, **kwargs):
        sizes.append(kwargs["input_ids"].shape[0])
        return forward(self, *args, **kwargs)

    monkeypatch.setattr(type(model), "forward", spy)
    torch.manual_seed(1)
    rows = generate_batch(model, torch.full((20, 1), tok.bos_token_id), parse_decoding(VANILLA), 60,
                        [tok.eos_token_id], tok.pad_token_id, newline_counts(tok, len(tok)))
    assert sizes[0] == 20 and sizes[-1] < 20 and sizes == sorted(sizes, reverse=True)
    cut = 0
    for row in rows[:, 1:].tolist():   # pad and EOS are one token here: a row ends at it, or at its 4th newline
        end = row.index(tok.eos_token_id) if tok.eos_token_id in row else len(row)
        newlines = tok.decode(row[:end]).count("\n")
        assert newlines <= 4 and set(row[end:]) <= {tok.eos_token_id}
        if newlines == 4:   # cut at the start of a fifth verse: the 4th newline came with its last token
            cut += 1
            assert tok.decode(row[:end - 1]).count("\n") < 4
    assert cut


def test_sample_missing_model_dir(tmp_path):
    with pytest.raises(PoevalError, match="model directory not found"):
        lm.sample(str(tmp_path / "nope"), VANILLA, sampling(5), str(tmp_path / "s.jsonl"), str(tmp_path / "s.json"))


def test_sample_zero_valid(trained, tmp_path):
    with pytest.raises(PoevalError, match=r"0 of 20 attempts gave a valid quatrain \(truncated 20\)"):
        _sample(trained, tmp_path, max_new_tokens=1, max_attempts=20)
    assert not (tmp_path / "s.jsonl").exists() and not (tmp_path / "s.json").exists()


def test_every_decoding_config_of_params_runs(trained, tmp_path, root):
    """The eleven configs of the paper's Appendix B and temperature-0.7 (its Table 10), as named in
    params.yaml, on a tiny model."""
    import yaml

    configs = yaml.safe_load((root / "params.yaml").read_text())["decoding"]
    assert len(configs) == 12 and configs["temperature-0.7"] == {"temperature": 0.7}
    for name, decoding in configs.items():
        out, stats = tmp_path / f"{name}.jsonl", tmp_path / f"{name}.json"
        result = sample_stats(lm.sample, str(trained), decoding,
                              sampling(4, batch_size=8, max_attempts=16, max_new_tokens=60), str(out), str(stats),
                              progress=False)
        assert result["attempts"] >= 1 and result["decoding"] == parse_decoding(decoding).to_dict(), name


def test_argmax_contrastive_samples_differ_and_follow_the_search(trained, tmp_path):
    """mode argmax (Su et al.'s search after a sampled first token): the quatrains differ from one
    another, and continuing a sample's first token with the search reproduces it."""
    import torch

    from poeval.generators.contrastive import contrastive_search

    cs = {"top_k": 4, "penalty_alpha": 0.6, "mode": "argmax"}
    out, stats = tmp_path / "cs.jsonl", tmp_path / "cs.json"
    lm.sample(str(trained), cs, sampling(6, batch_size=8, max_attempts=40), str(out), str(stats), progress=False)
    records = list(read_jsonl(out))
    assert len({tuple(r["lines"]) for r in records}) > 1
    model, tok = load(str(trained))
    model.eval()
    torch.manual_seed(3)
    bos = torch.full((5, 1), tok.bos_token_id)
    rows = generate_batch(model, bos, parse_decoding(cs), 60, [tok.eos_token_id], tok.pad_token_id)
    for row in rows:
        again = contrastive_search(model, row[None, :2], top_k=4, penalty_alpha=0.6, max_new_tokens=59,
                                   eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)[0]
        assert again.tolist() == row[: again.shape[0]].tolist()
        assert (row[again.shape[0]:] == tok.pad_token_id).all()


def test_stochastic_contrastive_sample_follows_the_search(trained):
    """The default mode: from BOS, each generation is contrastive_search with score_temperature under
    the same RNG state (nothing is drawn outside the search)."""
    import torch

    from poeval.generators.contrastive import contrastive_search

    model, tok = load(str(trained))
    model.eval()
    bos = torch.full((5, 1), tok.bos_token_id)
    torch.manual_seed(3)
    rows = generate_batch(model, bos, parse_decoding({"top_k": 4, "penalty_alpha": 0.6}), 60,
                        [tok.eos_token_id], tok.pad_token_id)
    torch.manual_seed(3)
    again = contrastive_search(model, bos, top_k=4, penalty_alpha=0.6, max_new_tokens=60,
                               eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
                               score_temperature=0.1)
    assert torch.equal(rows, again)
    assert len({tuple(r) for r in rows.tolist()}) > 1


def test_paper_mode_is_top_k_sampling(trained, tmp_path):
    """mode paper writes byte for byte the sample of top-k sampling (k, t 1.0, p 1.0)."""
    paper = {"top_k": 6, "penalty_alpha": 0.7, "mode": "paper"}
    block = sampling(4, batch_size=8, max_attempts=16, max_new_tokens=60)
    lm.sample(str(trained), paper, block, str(tmp_path / "p.jsonl"), str(tmp_path / "p.json"), progress=False)
    lm.sample(str(trained), {"top_k": 6, "temperature": 1.0, "top_p": 1.0}, block, str(tmp_path / "k.jsonl"),
              str(tmp_path / "k.json"), progress=False)
    assert (tmp_path / "p.jsonl").read_bytes() == (tmp_path / "k.jsonl").read_bytes()
    assert read_json(tmp_path / "p.json")["decoding"] == parse_decoding(paper).to_dict()


def test_sampling_is_deterministic(trained, tmp_path):
    a, sa, _ = _sample(trained, tmp_path, "a", n=5, max_attempts=48)
    b, sb, _ = _sample(trained, tmp_path, "b", n=5, max_attempts=48)
    c, sc, _ = _sample(trained, tmp_path, "c", n=5, max_attempts=48, seed=2)
    assert a == b and sa["reasons"] == sb["reasons"] and sa["attempts"] == sb["attempts"]
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    assert (a, sa["reasons"]) != (c, sc["reasons"])


# ---------------------------------------------------------------------------------------------- model families

ARCH_CFG = {  # tiny versions of each family; bygpt5 needs room for ~200 bytes per quatrain
    "gpt2": TINY,
    "gptneo": {**TINY, "arch": "gptneo", "n_layer": 3},  # odd: global, local, global
    "llama": {**TINY, "arch": "llama"},
    "bygpt5": {**TINY, "arch": "bygpt5", "n_positions": 256},
}
MODEL_CLASS = {
    "gpt2": "GPT2LMHeadModel",
    "gptneo": "GPTNeoForCausalLM",
    "llama": "LlamaForCausalLM",
    "bygpt5": "GPT2LMHeadModel",
}


@pytest.mark.parametrize("arch", ["gptneo", "llama", "bygpt5"])
def test_each_arch_trains_saves_loads_and_samples(arch, corpus, tmp_path):
    steps = 200 if arch == "bygpt5" else 150
    summary = _train(corpus, tmp_path / arch, model_cfg=ARCH_CFG[arch], max_steps=steps, eval_every=steps // 4)
    model, tok = load(str(tmp_path / arch))
    assert type(model).__name__ == MODEL_CLASS[arch]
    assert summary["truncated_train"] == 0
    evals = read_json(tmp_path / arch / "training_log.json")["evals"]
    assert evals[-1]["train_loss"] < evals[0]["train_loss"]
    if arch == "bygpt5":
        assert type(tok).__name__ == "ByT5Tokenizer" and len(tok) == summary["vocab_size"] == 259
        assert model.config.n_positions == 256
    else:
        assert len(tok) == TINY["vocab_size"]
    if arch == "gptneo":
        assert model.config.attention_layers == ["global", "local", "global"]
    # bygpt5 needs ~200 new tokens (bytes) per quatrain: max_new_bytes replaces max_new_tokens for it
    records, stats, _ = _sample(tmp_path / arch, tmp_path, n=4, max_attempts=32, max_new_tokens=100,
                                max_new_bytes=240)
    assert stats["max_new_tokens"] == (240 if arch == "bygpt5" else 95)
    assert stats["byte_level"] == (arch == "bygpt5")
    assert len(records) > 0, stats["reasons"]
    for rec in records:
        assert len(rec["lines"]) == 4 and all(rec["lines"])
    # the model learnt the corpus: word-level models mostly sample corpus words; the (tiny, briefly
    # trained) byte-level one at least its alphabet, where an untrained one would emit any of 256 bytes
    text = " ".join(line for rec in records for line in rec["lines"])
    if arch == "bygpt5":
        assert sum(c in "abcdefghijklmnopqrstuvwxyz " for c in text) > 0.95 * len(text) and "the " in text
    else:
        words = set(ADJ + NOUN + VERB + PREP + ["the", TRAIN_ONLY])
        assert sum(w in words for w in text.split()) > 0.5 * len(text.split())


def test_byte_tokenizer_round_trips_utf8_without_trained_vocabulary(tmp_path):
    tok = byte_tokenizer()
    assert len(tok) == 259 and tok.bos_token == tok.eos_token == "</s>" and tok.pad_token_id == 0
    text = "Grüße, Mädchen — ſchöne Öde!\n  leading and trailing  \n«ça» 🌙 ẞ\tß"
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert ids == [b + 3 for b in text.encode("utf-8")]  # one token per byte, nothing merged
    assert tok.decode(ids) == text
    # BOS/EOS do not eat the whitespace next to them (ByT5's default </s> would)
    framed = quatrain_text([" a ", "b", "c", "d "], tok.bos_token, tok.eos_token)
    fids = tok(framed, add_special_tokens=False)["input_ids"]
    # ByT5's ids: pad 0, </s> 1, unk 2, then byte b at b + 3
    assert tok.eos_token_id == fids[0] == fids[-1] == 1
    assert fids[1:-1] == [b + 3 for b in " a \nb\nc\nd ".encode()]
    # saved without any vocabulary file, restored by load()-style AutoTokenizer
    tok.save_pretrained(tmp_path)
    assert not {"vocab.json", "merges.txt", "tokenizer.json", "spiece.model"} & {p.name for p in tmp_path.iterdir()}
    from transformers import AutoTokenizer

    again = AutoTokenizer.from_pretrained(str(tmp_path))
    assert again(text, add_special_tokens=False)["input_ids"] == ids and again.decode(ids) == text
    assert again.bos_token_id == again.eos_token_id == 1


def test_bygpt5_tokenizer_does_not_depend_on_the_corpus(corpus, tmp_path):
    cfg = {**ARCH_CFG["bygpt5"], "vocab_size": 300}  # vocab_size is ignored: nothing is trained
    _train(corpus, tmp_path / "a", model_cfg=cfg, max_steps=2, eval_every=2)
    _train((corpus[1], corpus[0]), tmp_path / "b", model_cfg=cfg, max_steps=2, eval_every=2)
    for name in ("tokenizer_config.json",):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    assert read_json(tmp_path / "a" / "training_log.json")["summary"]["vocab_size"] == 259


# ---------------------------------------------------------------------------------------------- conditioning


@pytest.fixture(scope="module")
def styled_corpus(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("lm_styled")
    write_jsonl(root / "train.jsonl", _styled(_quatrains(60, 1, TRAIN_ONLY)))
    write_jsonl(root / "dev.jsonl", _styled(_quatrains(20, 2, DEV_ONLY)))
    return root / "train.jsonl", root / "dev.jsonl"


# the 15 set partitions of four verses (Bell number B4 = 15), labelled by first appearance, in lexicographic
# order, written out by hand; and the metre families the detector labels
SCHEMES_BY_HAND = ["aaaa", "aaab", "aaba", "aabb", "aabc", "abaa", "abab", "abac", "abba", "abbb", "abbc", "abca",
                   "abcb", "abcc", "abcd"]
METERS_BY_HAND = ["iambic", "trochaic", "anapaestic", "dactylic", "amphibrachic", "alexandrine", "other"]


def test_style_vocabulary():
    assert list(SCHEMES) == SCHEMES_BY_HAND and list(METERS) == METERS_BY_HAND
    assert list(STYLE_TOKENS) == ([f"<scheme={s}>" for s in SCHEMES_BY_HAND]
                                     + [f"<meter={m}>" for m in METERS_BY_HAND])
    assert style_tokens("abab", "iambic") == ["<scheme=abab>", "<meter=iambic>"]
    assert strip_style("<scheme=abab><meter=iambic>a\nb <meter=other>c") == "a\nb c"
    # one vocabulary: the detector's schemes and metres are the tokens'
    from poeval.poetry import metre, schemes

    assert schemes.SCHEMES_4 == SCHEMES_BY_HAND and metre.METRES == METERS_BY_HAND


def test_the_scheme_detector_finds_each_of_the_15_schemes_and_no_other():
    """The detector's own set-partition enumeration (behind schemes.best_partition) is the style vocabulary:
    with pair weights +1 where a scheme links two verses and -1 where it does not, that scheme alone has the
    best score, so each of the 15 comes back; random weights give nothing outside them."""
    import numpy as np

    from poeval.poetry import schemes

    for scheme in SCHEMES_BY_HAND:
        w = np.array([[1.0 if scheme[i] == scheme[j] else -1.0 for j in range(4)] for i in range(4)])
        assert schemes.best_partition(w) == scheme
    rng = np.random.default_rng(0)
    found = {schemes.best_partition(rng.normal(size=(4, 4))) for _ in range(2000)}
    assert found <= set(SCHEMES_BY_HAND) and len(found) > 10
    # three verses: the 5 partitions (B3 = 5), by the same construction
    for scheme in ("aaa", "aab", "aba", "abb", "abc"):
        w = np.array([[1.0 if scheme[i] == scheme[j] else -1.0 for j in range(3)] for i in range(3)])
        assert schemes.best_partition(w) == scheme


@pytest.mark.parametrize("arch", ["gpt2", "bygpt5"])
def test_conditioned_training_text_has_style_tokens(arch, styled_corpus, tmp_path):
    cfg = {**ARCH_CFG[arch], "conditioned": True}
    summary = _train(styled_corpus, tmp_path / "c", model_cfg=cfg, max_steps=2, eval_every=2)
    _, tok = load(str(tmp_path / "c"))
    base = 259 if arch == "bygpt5" else TINY["vocab_size"]
    assert len(tok) == summary["vocab_size"] == base + 22 and has_style_tokens(tok)
    records = list(read_jsonl(styled_corpus[0]))
    quatrains, styles = read_split(styled_corpus[0], "train", conditioned=True)
    assert styles[0] == ["<scheme=abab>", "<meter=iambic>"]
    texts = training_texts(tok, quatrains, styles)
    assert texts[1] == tok.bos_token + "<scheme=aabb><meter=trochaic>" + "\n".join(records[1]["lines"]) + tok.eos_token
    ids, _ = encode_quatrains(tok, quatrains, None, styles)
    for seq, rec in zip(ids, records):
        # BOS, then each style tag as ONE special token, then the plain quatrain
        assert seq[1] == tok.convert_tokens_to_ids(f"<scheme={rec['scheme']}>") >= base
        assert seq[2] == tok.convert_tokens_to_ids(f"<meter={rec['meter']}>") >= base
        assert tok.decode(seq[3:-1]) == "\n".join(rec["lines"])
        assert not any(i >= base for i in seq[3:])
    # an unconditioned model on the same records sees plain quatrains, and no style tokens exist
    _train(styled_corpus, tmp_path / "u", model_cfg=ARCH_CFG[arch], max_steps=2, eval_every=2)
    _, plain = load(str(tmp_path / "u"))
    assert len(plain) == base and not has_style_tokens(plain)
    plain_ids, _ = encode_quatrains(plain, read_quatrains(styled_corpus[0], "train"), None)
    assert plain.decode(plain_ids[0]) == plain.bos_token + "\n".join(records[0]["lines"]) + plain.eos_token


def test_conditioned_samples_have_no_style_tokens(styled_corpus, tmp_path):
    out = tmp_path / "c"
    _train(styled_corpus, out, model_cfg={**TINY, "conditioned": True})
    model, tok = load(str(out))
    style_ids = set(tok.convert_tokens_to_ids(list(STYLE_TOKENS)))
    # unprompted generation from BOS does produce style tokens (the model learnt to start with them) ...
    torch.manual_seed(1)
    prompt = torch.full((16, 1), tok.bos_token_id)
    raw = model.generate(input_ids=prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=40,
                         pad_token_id=tok.pad_token_id, **kwargs_of(VANILLA))
    assert any(i in style_ids for i in raw[:, 1:3].flatten().tolist())
    # ... but they never reach the sampled records
    records, stats, _ = _sample(out, tmp_path, n=8)
    assert len(records) > 0, stats["reasons"]
    text = (tmp_path / "s.jsonl").read_text()
    assert "<scheme" not in text and "<meter" not in text and "=abab" not in text


def test_conditioned_needs_style_fields(corpus, styled_corpus, tmp_path):
    cfg = {**TINY, "conditioned": True}
    with pytest.raises(PoevalError, match=r"train\.jsonl: record 1 has no 'scheme' field.*models\.c\.conditioned"):
        train(str(corpus[0]), str(styled_corpus[1]), str(tmp_path / "m"), cfg, TRAIN_CFG, progress=False, name="c")
    dev = tmp_path / "dev.jsonl"
    write_jsonl(dev, [{k: v for k, v in r.items() if k != "meter"} for r in read_jsonl(styled_corpus[1])])
    with pytest.raises(PoevalError, match=r"dev\.jsonl: record 1 has no 'meter' field"):
        train(str(styled_corpus[0]), str(dev), str(tmp_path / "m"), cfg, TRAIN_CFG, progress=False, name="c")
    write_jsonl(dev, [{**r, "scheme": "abcde"} for r in read_jsonl(styled_corpus[1])])
    with pytest.raises(PoevalError, match=r"dev\.jsonl: record 1: 'scheme' is 'abcde'"):
        train(str(styled_corpus[0]), str(dev), str(tmp_path / "m"), cfg, TRAIN_CFG, progress=False, name="c")
    with pytest.raises(PoevalError, match=r"models\.c\.conditioned: .yes. is not of type .boolean."):
        train(str(styled_corpus[0]), str(dev), str(tmp_path / "m"), {**TINY, "conditioned": "yes"}, TRAIN_CFG,
                 progress=False, name="c")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dev.jsonl"]


# ---------------------------------------------------------------------------------------------- resuming


class _Interrupt(Exception):
    pass


def _interrupt_at(monkeypatch, at: int):
    def hook(step):
        if step == at:
            raise _Interrupt(step)

    monkeypatch.setattr(engine, "_after_step", hook)


@pytest.mark.parametrize("arch, lr, patience", [("gpt2", 1e-2, 2), ("llama", 3e-2, 3), ("bygpt5", 1e-2, 3)])
def test_resume_after_interruption_is_bit_identical(arch, lr, patience, corpus, tmp_path, monkeypatch):
    cfg = {**ARCH_CFG[arch], "dropout": 0.1}  # dropout: the torch RNG state must be restored too
    # > 1 epoch (data order must be restored); the high lr overfits, so the best weights are saved before
    # the interruption and early stopping (at step 40) depends on the restored patience counter
    kw = {"max_steps": 50, "eval_every": 10, "length_grouping": 3, "batch_size": 8, "lr": lr, "patience": patience}
    full = _train(corpus, tmp_path / "full", model_cfg=cfg, **kw)
    assert full["best_step"] <= 30 and full["stopped_early"] and full["steps"] == 40
    _interrupt_at(monkeypatch, 35)
    with pytest.raises(_Interrupt):
        _train(corpus, tmp_path / "cut", model_cfg=cfg, **kw)
    assert not (tmp_path / "cut").exists() and (resume_dir(tmp_path / "cut") / "state.pt").is_file()
    monkeypatch.setattr(engine, "_after_step", None)
    summary = _train(corpus, tmp_path / "cut", model_cfg=cfg, **kw)
    assert summary["resumed_from_step"] == 30
    a, b = _state(tmp_path / "full"), _state(tmp_path / "cut")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    la, lb = (read_json(tmp_path / x / "training_log.json") for x in ("full", "cut"))
    assert [(e["step"], e["train_loss"], e["dev_loss"]) for e in la["evals"]] == [
        (e["step"], e["train_loss"], e["dev_loss"]) for e in lb["evals"]
    ]
    assert la["summary"]["train_tokens"] == lb["summary"]["train_tokens"]
    assert la["summary"]["best_step"] == lb["summary"]["best_step"]
    # the resume state is gone once the run has finished
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cut", "full"]


def test_checkpoint_stamps_its_provenance(corpus, trained):
    assert_stamped(read_json(trained / "training_log.json"), {"train": corpus[0], "dev": corpus[1]},
                   {"model": TINY, "training": TRAIN_CFG})


@pytest.mark.parametrize("max_epochs, steps", [(1, 3), (1.5, 5), (None, 12)])
def test_max_epochs_budget(corpus, tmp_path, max_epochs, steps):
    # 60 training quatrains in batches of 20: 3 steps an epoch; whichever of max_epochs / max_steps ends first
    kw = {"batch_size": 20, "max_steps": 12, "eval_every": 100, "max_epochs": max_epochs}
    summary = _train(corpus, tmp_path / "m", **kw)
    assert summary["steps"] == steps and summary["epochs"] == round(steps / 3, 4)


def test_resume_state_is_discarded_when_config_changes(corpus, tmp_path, monkeypatch):
    kw = {"max_steps": 30, "eval_every": 10}
    _interrupt_at(monkeypatch, 25)
    with pytest.raises(_Interrupt):
        _train(corpus, tmp_path / "m", **kw)
    monkeypatch.setattr(engine, "_after_step", None)
    summary = _train(corpus, tmp_path / "m", **kw, seed=2)  # different config: starts afresh
    assert summary["resumed_from_step"] is None
    _train(corpus, tmp_path / "fresh", **kw, seed=2)
    a, b = _state(tmp_path / "m"), _state(tmp_path / "fresh")
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not resume_dir(tmp_path / "m").exists()


# ---------------------------------------------------------------------------------------------- pretrained


def test_pretrained_with_separate_tokenizer(corpus, trained, tmp_path, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    cfg = {"arch": "gpt2", "size": "S", "init": "pretrained", "name_or_path": str(trained), "tokenizer": str(trained)}
    summary = _train(corpus, tmp_path / "ft", model_cfg=cfg, max_steps=5, eval_every=5)
    assert summary["vocab_size"] == TINY["vocab_size"]
    bad = {**cfg, "tokenizer": "no/such-tokenizer"}
    with pytest.raises(PoevalError, match=r"tokenizer 'no/such-tokenizer' given by models\.ft\.tokenizer"):
        train(str(corpus[0]), str(corpus[1]), str(tmp_path / "bad"), bad, TRAIN_CFG, progress=False, name="ft")
    with pytest.raises(PoevalError, match=r"models\.ft\.tokenizer: only used with init: pretrained"):
        train(str(corpus[0]), str(corpus[1]), str(tmp_path / "bad"), {**TINY, "tokenizer": str(trained)},
                 TRAIN_CFG, progress=False, name="ft")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ft"]


def test_pretrained_conditioned_adds_style_tokens(styled_corpus, trained, tmp_path):
    cfg = {"arch": "gpt2", "size": "S", "init": "pretrained", "name_or_path": str(trained), "conditioned": True}
    summary = _train(styled_corpus, tmp_path / "ft", model_cfg=cfg, max_steps=5, eval_every=5)
    model, tok = load(str(tmp_path / "ft"))
    assert summary["vocab_size"] == len(tok) == TINY["vocab_size"] + 22 == model.get_input_embeddings().num_embeddings


def test_lora_without_peft_is_a_clear_error(corpus, trained, tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "peft", None)  # as if peft were not installed
    cfg = {"arch": "llama", "size": "L", "init": "pretrained", "name_or_path": str(trained), "lora": {"r": 8}}
    with pytest.raises(PoevalError, match=r"models\.big\.lora .*install peft"):
        train(str(corpus[0]), str(corpus[1]), str(tmp_path / "m"), cfg, TRAIN_CFG, progress=False, name="big")
    with pytest.raises(PoevalError, match=r"models\.big\.lora: only used with init: pretrained"):
        train(str(corpus[0]), str(corpus[1]), str(tmp_path / "m"), {**TINY, "lora": {"r": 8}}, TRAIN_CFG,
                 progress=False, name="big")
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------------------------- verse order

ONE = ["the silver river sings tonight", "beneath the quiet candle light", "the golden sparrow waits",
       "across the broken harbor gates"]


def test_rime_pieces_keep_a_reversed_verse_rime_whole():
    texts = ["\n".join(orient(ONE, "reversed"))] * 30
    plain = train_tokenizer(texts, 600)
    rimed = train_tokenizer(texts, 600, rime_pieces=True)
    verse = orient(["upon the night", "and the light,"], "reversed")
    assert verse == ["thgin eht nopu", ",thgil eht dna"]
    text = "\n".join(verse)
    assert "thgil" in plain.tokenize(text)   # without rime pieces BPE merges the frequent word whole
    pieces = rimed.tokenize(text)
    nl = pieces.index("Ċ")
    assert pieces[:2] == ["thgi", "n"]                   # the rime ("igh" + t, reversed), then the onset
    assert pieces[nl + 1:nl + 4] == [",", "thgi", "l"]   # punctuation before it; same rime piece: a copy
    assert "Ġeht" in pieces                              # words after the first are cut as before
    assert rimed.decode(rimed(text)["input_ids"]) == text


@pytest.fixture(scope="module")
def reversed_model(tmp_path_factory) -> Path:
    """A tiny model trained reversed on one quatrain until it knows it by heart."""
    root = tmp_path_factory.mktemp("reversed")
    write_jsonl(root / "train.jsonl", [{"id": f"t{i}", "lines": ONE} for i in range(32)])
    write_jsonl(root / "dev.jsonl", [{"id": "d", "lines": ONE}])
    train(str(root / "train.jsonl"), str(root / "dev.jsonl"), str(root / "m"),
             {**TINY, "n_positions": 256, "verse_order": "reversed"},
             {**TRAIN_CFG, "max_steps": 80, "lr": 1e-2, "eval_every": 40}, progress=False)
    return root


def test_reversed_model_learns_reversed_verses_and_samples_them_forward(reversed_model, tmp_path):
    model_dir = reversed_model / "m"
    assert read_json(model_dir / "config.json")["poeval_verse_order"] == "reversed"
    lm.sample(str(model_dir), {"temperature": 1.0, "top_k": 1}, sampling(4, batch_size=4, max_attempts=8),
              str(tmp_path / "s.jsonl"), str(tmp_path / "s.json"), progress=False)   # greedy: the quatrain it knows
    assert [r["lines"] for r in read_jsonl(tmp_path / "s.jsonl")] == [ONE] * 4   # written backwards, read forwards
    # what it learnt is the reversed text: scored by hand with transformers alone, reversed beats forward
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(str(model_dir)).eval()
    tok = AutoTokenizer.from_pretrained(str(model_dir))

    def logp(text: str) -> float:
        ids = tok(tok.bos_token + text + tok.eos_token, add_special_tokens=False, return_tensors="pt")["input_ids"]
        with torch.no_grad():
            return -model(input_ids=ids, labels=ids).loss.item() * (ids.shape[1] - 1)

    backwards, forwards = logp("\n".join(orient(ONE, "reversed"))), logp("\n".join(ONE))
    assert backwards > forwards + 20
    # BPoMP's causal scorer gives a forward text the reversed text's score
    from poeval.bpomp.scoring import causal_scores

    assert causal_scores(model, tok, ["\n".join(ONE)])[0] == pytest.approx(backwards, abs=1e-3)


def test_verse_order_of_a_finetuned_model_must_match(reversed_model, tmp_path):
    base = {"arch": "gpt2", "init": "pretrained", "name_or_path": str(reversed_model / "m")}
    data = (reversed_model / "train.jsonl", reversed_model / "dev.jsonl")
    with pytest.raises(PoevalError, match="verse_order.*trained 'reversed'"):
        _train(data, tmp_path / "fwd", model_cfg=base, max_steps=2, eval_every=1)
    _train(data, tmp_path / "rev", model_cfg={**base, "verse_order": "reversed"}, max_steps=2, eval_every=1)
    assert read_json(tmp_path / "rev" / "config.json")["poeval_verse_order"] == "reversed"


def test_a_checkpoint_without_a_recorded_order_can_be_finetuned_reversed(corpus, trained, tmp_path):
    cfg = {"arch": "gpt2", "init": "pretrained", "name_or_path": str(trained), "verse_order": "reversed"}
    _train(corpus, tmp_path / "rev", model_cfg=cfg, max_steps=2, eval_every=1)   # as a hub model, which records none
    assert read_json(tmp_path / "rev" / "config.json")["poeval_verse_order"] == "reversed"


def test_words_order_turns_each_verses_words_and_back(corpus, trained, tmp_path):
    verses = ["Where a brooklet  led them onward,", "Till they found"]
    turned = orient(verses, "words")
    assert turned == ["onward, them led brooklet a Where", "found they Till"]   # the end word (its comma kept) first
    assert orient(turned, "words") == ["Where a brooklet led them onward,", "Till they found"]   # spaces made single
    cfg = {"arch": "gpt2", "init": "pretrained", "name_or_path": str(trained), "verse_order": "words"}
    _train(corpus, tmp_path / "w", model_cfg=cfg, max_steps=2, eval_every=1)
    assert read_json(tmp_path / "w" / "config.json")["poeval_verse_order"] == "words"


def test_forward_models_are_unchanged(trained):
    assert "poeval_verse_order" not in read_json(trained / "config.json")
    assert orient(["ab", "c"], "forward") == ["ab", "c"] and orient(["ab", "c"], "reversed") == ["ba", "c"]


# ------------------------------------------------------------------ the paper's procedure (sampling.procedure: paper)


def test_min_new_tokens_draws_what_transformers_generate_draws(trained):
    """The EOS barred for the first k tokens is transformers' own min-new-tokens rule: the same tokens from
    the same seed as ``generate(min_new_tokens=k)``, and rows that would have ended sooner run on."""
    model, tok = load(str(trained))
    model.eval()
    prompt = torch.full((1, 1), tok.bos_token_id)
    typed, k, eos = parse_decoding(VANILLA), 30, tok.eos_token_id
    kw = generate_kwargs(typed)
    early = 0
    for seed in range(6):
        torch.manual_seed(seed)
        free = generate_batch(model, prompt, typed, 60, [eos], tok.pad_token_id)[0, 1:].tolist()
        early += eos in free[:k]
        torch.manual_seed(seed)
        ours = generate_batch(model, prompt, typed, 60, [eos], tok.pad_token_id, min_new_tokens=k)[0].tolist()
        torch.manual_seed(seed)
        theirs = model.generate(input_ids=prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=60,
                                min_new_tokens=k, eos_token_id=eos, pad_token_id=tok.pad_token_id, **kw)[0].tolist()
        assert ours[:len(theirs)] == theirs and set(ours[len(theirs):]) <= {tok.pad_token_id}
        assert eos not in ours[1:k + 1]
    assert early   # without the bar some rows end within k tokens: the bar is tested


def _paper_reference(rows: list[list[int]], tok, batch_size: int) -> list[list[str]]:
    """The paper's code on generated rows: decoded without special tokens and with the clean-up of
    transformers 4's pipeline, cut on blank lines, and its loop per batch (removal while iterating)."""
    kept = []
    for b in range(0, len(rows), batch_size):
        quatrains = []
        for row in rows[b:b + batch_size]:
            text = tok.clean_up_tokenization(tok.decode(row, skip_special_tokens=True))
            quatrains += [chunk.split("\n") for chunk in text.split("\n\n")]
        quatrains = [q for q in quatrains if len(q) == 4]
        for quatrain in quatrains:
            for line in quatrain:
                if len(line) == 0:
                    quatrains.remove(quatrain)
                    break
        kept += quatrains
    return kept


def test_paper_procedure_keeps_what_the_papers_code_keeps(trained, tmp_path, monkeypatch):
    """procedure paper: max_attempts generations in batches, EOS barred for 20 tokens and nothing else
    stopping a row (no fifth-verse cut), every four-line chunk kept as the paper's code keeps it."""
    rows, calls, generate = [], [], generate_batch

    def spy(model, prompt, kw, budget, stops, pad, counts=None, min_new_tokens=0):
        calls.append((budget, stops, counts, min_new_tokens))
        seqs = generate(model, prompt, kw, budget, stops, pad, counts, min_new_tokens)
        rows.extend(seqs[:, prompt.shape[1]:].tolist())
        return seqs

    monkeypatch.setattr(lm.generation, "generate_batch", spy)
    records, stats, _ = _sample(trained, tmp_path, procedure="paper", n=1, batch_size=10, max_attempts=30,
                                max_new_tokens=70)
    _, tok = load(str(trained))
    assert len(rows) == stats["attempts"] == 30 and len(calls) == 3
    assert all(c == (70, [tok.eos_token_id], None, 20) for c in calls)
    assert [r["lines"] for r in records] == _paper_reference(rows, tok, 10)
    assert stats["valid"] == len(records) > 1 and stats["procedure"] == "paper"
    assert stats["ended_with_eos"] == sum(tok.eos_token_id in row for row in rows) < 30   # some ran to the budget
    assert all(tok.eos_token_id not in row[:20] for row in rows)


def test_the_resolved_params_hold_an_archs_own_default_context():
    """ByGPT5's context defaults to 512 positions (byte sequences are ~4x BPE ones), the other archs' to 128:
    the schema fills it by arch, so that the train job built from the resolved params trains what the
    generator's own resolution trains."""
    from poeval import config
    from poeval.generators.lm.build import resolve_model_cfg

    for arch, n in (("bygpt5", 512), ("gpt2", 128), ("llama", 128)):
        entry = {"arch": arch, "size": "S", "init": "scratch", "name_or_path": None}
        assert config.fill({"models": {"m": entry}})["models"]["m"]["n_positions"] == n
        assert resolve_model_cfg(entry)["n_positions"] == n
    assert config.fill({"models": {"m": {"arch": "bygpt5", "n_positions": 96}}})["models"]["m"]["n_positions"] == 96
