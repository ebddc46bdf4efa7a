"""Hostile or out-of-range input gives one clear error naming the file, key or argument, never a traceback,
never code run from a pickle and never an unbounded allocation (issue 39, points 10 and 11).
docs/inputs-errors.md "Inputs and errors" describes the same behaviour; tests/unit/test_inputs.py has the rest."""

import gzip
import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from poeval.cli import main

from helpers import QUATRAIN, _jsonl


@pytest.fixture
def samples(tmp_path):
    return _jsonl(tmp_path / "samples.jsonl", [{"id": f"s{i}", "lines": QUATRAIN} for i in range(2)])


def _one_line_error(capsys, *names) -> str:
    """The command's stderr: one line, an error naming each of ``names``, no traceback."""
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err[:2000]
    assert all(name in err for name in names), err[:2000]
    return err


def _usage_error(capsys, argv, *names) -> str:
    """An argparse refusal: exit status 2, its error line naming each of ``names``, no traceback."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert all(name in err.strip().splitlines()[-1] for name in names), err
    return err


def _evaluate(tmp_path, samples, ref, *extra):
    return ["evaluate", samples, "--reference", ref, "--lang", "en", "--metrics", "length",
            "--out", str(tmp_path / "cell.json"), "--quiet", *extra]


# --- 10: one-line errors instead of tracebacks ---------------------------------------------------

SAMPLING = json.dumps({"n": 1, "batch_size": 1, "max_new_tokens": 4, "max_attempts": 1, "seed": 1})


class _Payload:
    """A pickle that runs code when loaded: it would create the file ``marker``."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_a_malicious_pickle_in_a_checkpoint_is_refused_naming_the_file(tmp_path, capsys):
    import pickle

    from transformers import GPT2Config

    model_dir = tmp_path / "ckpt"
    GPT2Config(n_layer=1, n_head=2, n_embd=8, vocab_size=10, bos_token_id=1, eos_token_id=1).save_pretrained(model_dir)
    (model_dir / "pytorch_model.bin").write_bytes(pickle.dumps(_Payload(str(tmp_path / "pwned"))))
    for name in ("vocab.json", "merges.txt"):   # a tokenizer, so that the model is what gets loaded
        (model_dir / name).write_text('{"a": 0, "<|endoftext|>": 1}' if name == "vocab.json" else "#version: 0.2\n")
    code = main(["sample", str(model_dir), "--decoding", '{"temperature": 1.0}', "--sampling", SAMPLING,
                 "--out", str(tmp_path / "s.jsonl"), "--stats", str(tmp_path / "s.json")])
    assert code == 2
    _one_line_error(capsys, "pytorch_model.bin")
    assert not (tmp_path / "pwned").exists()


def _truncated_checkpoint(folder: Path, kind: str) -> Path:
    """A tiny GPT-2 (``causal``) or BERT (``masked``) with its tokenizer, whose model.safetensors is cut in half."""
    from transformers import BertConfig, BertForMaskedLM, GPT2Config, GPT2LMHeadModel

    if kind == "causal":
        GPT2LMHeadModel(GPT2Config(n_layer=1, n_head=2, n_embd=8, vocab_size=10, n_positions=16,
                                   bos_token_id=1, eos_token_id=1)).save_pretrained(folder)
        (folder / "vocab.json").write_text('{"a": 0, "<|endoftext|>": 1}')
        (folder / "merges.txt").write_text("#version: 0.2\n")
    else:
        BertForMaskedLM(BertConfig(vocab_size=8, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                                   intermediate_size=8, max_position_embeddings=16)).save_pretrained(folder)
        (folder / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\na\ncat\nsat\n")
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:weights.stat().st_size // 2])
    return weights


@pytest.mark.parametrize("command", ["sample", "causal", "masked"])
def test_a_truncated_safetensors_file_is_named(tmp_path, capsys, command):
    weights = _truncated_checkpoint(tmp_path / "cut", "masked" if command == "masked" else "causal")
    if command == "sample":
        argv = ["sample", str(tmp_path / "cut"), "--decoding", '{"temperature": 1.0}', "--sampling", SAMPLING,
                "--out", str(tmp_path / "s.jsonl"), "--stats", str(tmp_path / "s.json")]
    else:
        pairs = _jsonl(tmp_path / "pairs.jsonl", [{"id": "p0", "task": "word_swap", "original": ["a cat sat"],
                                                   "corrupted": ["a sat cat"], "changed": {}}])
        argv = ["bpomp", "score", str(pairs), "--model", str(tmp_path / "cut"), "--kind", command,
                "--out", str(tmp_path / "s.jsonl")]
    capsys.readouterr()
    assert main(argv) == 2
    _one_line_error(capsys, f"{weights}: not a readable safetensors file", "copy or save it again")
    assert not (tmp_path / "s.jsonl").exists()


def test_a_malicious_pickle_as_a_ports_weights_is_refused_naming_the_file(tmp_path, capsys):
    import pickle

    model_dir = tmp_path / "port"
    model_dir.mkdir()
    (model_dir / "poeval_model.json").write_text(json.dumps({"arch": "deepspeare", "config": {}, "vocab": ["a"]}))
    (model_dir / "weights.pt").write_bytes(pickle.dumps(_Payload(str(tmp_path / "pwned"))))
    code = main(["sample", str(model_dir), "--decoding", '{"temperature": 1.0}', "--sampling", SAMPLING,
                 "--out", str(tmp_path / "s.jsonl"), "--stats", str(tmp_path / "s.json")])
    assert code == 2
    _one_line_error(capsys, "weights.pt", "weights_only")
    assert not (tmp_path / "pwned").exists()


def _gguf_header(tensors: int, kvs: int, tail: bytes = b"") -> bytes:
    return b"GGUF" + struct.pack("<IQQ", 3, tensors, kvs) + tail


@pytest.mark.parametrize("header, what", [
    (_gguf_header(2 ** 60, 2 ** 60), "tensor count"),
    (_gguf_header(0, 1, struct.pack("<Q", 2 ** 62)), "key length"),
    (_gguf_header(0, 1, struct.pack("<Q", 1) + b"k" + struct.pack("<IIQ", 9, 4, 2 ** 61)), "array length"),
    # an array of arrays ... 1000 deep: a reader that recurses per level (gguf-py) runs out of stack
    (_gguf_header(0, 1, struct.pack("<Q", 1) + b"k" + struct.pack("<I", 9) + struct.pack("<IQ", 9, 1) * 999
                  + struct.pack("<IQ", 0, 0)), "arrays nested more than 8 deep"),
], ids=["tensor-count", "key-length", "array-length", "nested-arrays"])
def test_a_gguf_with_huge_counts_or_deep_arrays_is_refused_before_allocating(tmp_path, capsys, header, what):
    path = tmp_path / "huge.gguf"
    path.write_bytes(header + b"\0" * 64)
    assert main(["import", str(path), "--out", str(tmp_path / "ckpt")]) == 2
    _one_line_error(capsys, "huge.gguf", what)
    assert not (tmp_path / "ckpt").exists()


def test_a_truncated_embeddings_cache_or_a_bad_sidecar_is_named(tmp_path, capsys, samples, ref):
    npy = tmp_path / "ref.npy"
    np.save(npy, np.ones((3, 4), dtype=np.float32))
    npy.write_bytes(npy.read_bytes()[:100])
    Path(f"{npy}.json").write_text(json.dumps({"n": 3, "dim": 4, "encoder": "x"}))
    argv = _evaluate(tmp_path, samples, ref, "--reference-embeddings", str(npy))
    argv[argv.index("length")] = "semantic"
    assert main(argv) == 2
    _one_line_error(capsys, "ref.npy")
    Path(f"{npy}.json").write_text("{not json")
    assert main(argv) == 2
    _one_line_error(capsys, "ref.npy.json")


def test_a_truncated_or_missing_memorization_array_is_named(tmp_path, capsys, samples, ref):
    index = tmp_path / "index"
    assert main(["index", ref, "--out", str(index)]) == 0
    capsys.readouterr()
    npz = next(index.glob("*.npz"))
    npz.write_bytes(npz.read_bytes()[:50])
    argv = _evaluate(tmp_path, samples, ref, "--memorization-index", str(index))
    argv[argv.index("length")] = "memorization"
    assert main(argv) == 2
    _one_line_error(capsys, npz.name)
    npz.unlink()
    assert main(argv) == 2
    _one_line_error(capsys, npz.name)


def test_a_topic_model_with_a_truncated_array_is_named(tmp_path, capsys, samples, ref):
    model = tmp_path / "topics"
    options = json.dumps({"num_topics": 2, "passes": 1, "iterations": 5, "no_below": 1, "no_above": 1})
    assert main(["topics", ref, "--lang", "en", "--out", str(model), "--options", options]) == 0
    capsys.readouterr()
    (model / "train.npz").write_bytes(b"PK\x03\x04 truncated")
    argv = _evaluate(tmp_path, samples, ref, "--topic-model", str(model), "--options", json.dumps({"topics": json.loads(options)}))
    argv[argv.index("length")] = "topics"
    assert main(argv) == 2
    _one_line_error(capsys, "train.npz")


def test_a_port_manifest_without_arch_is_named(tmp_path, capsys):
    model_dir = tmp_path / "port"
    model_dir.mkdir()
    (model_dir / "poeval_model.json").write_text('{"config": {}}')
    code = main(["sample", str(model_dir), "--decoding", '{"temperature": 1.0}', "--sampling", SAMPLING,
                 "--out", str(tmp_path / "s.jsonl"), "--stats", str(tmp_path / "s.json")])
    assert code == 2
    _one_line_error(capsys, "poeval_model.json", "arch")


def test_options_nested_too_deeply_are_refused(tmp_path, capsys, samples, ref):
    deep = '{"a":' * 20000 + "1" + "}" * 20000
    _usage_error(capsys, _evaluate(tmp_path, samples, ref, "--options", deep), "--options", "nested too deeply")


FSIZE_CHILD = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)   # writes past the limit then fail with EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, (64, 64))
from poeval.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_file_size_limit_while_writing_is_one_line_and_leaves_no_temp_file(tmp_path, samples, ref):
    out = tmp_path / "out" / "cell.json"
    out.parent.mkdir()
    env = os.environ | {"PYTHONPATH": os.pathsep.join(sys.path)}
    argv = _evaluate(tmp_path, samples, ref)
    argv[argv.index("--out") + 1] = str(out)
    proc = subprocess.run([sys.executable, "-c", FSIZE_CHILD, *argv], capture_output=True, text=True, env=env,
                          timeout=60)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [f"poeval: error: cannot write {out}: File too large"]
    assert list(out.parent.iterdir()) == []   # no temp file left behind


def test_a_gzip_bomb_stops_at_the_line_cap(tmp_path, capsys, ref, monkeypatch):
    bomb = tmp_path / "bomb.jsonl.gz"
    with gzip.open(bomb, "wb", compresslevel=1) as handle:
        block = b"0" * (1 << 20)
        for _ in range(64):   # one 64 MiB line of zeros: 64 KB gzipped
            handle.write(block)
    monkeypatch.setenv("POEVAL_MAX_LINE_BYTES", str(1 << 20))
    assert main(_evaluate(tmp_path, str(bomb), ref)) == 2
    _one_line_error(capsys, "bomb.jsonl.gz", "line 1: longer than 1048576 bytes", "POEVAL_MAX_LINE_BYTES")


def test_a_total_input_cap_stops_a_bomb_of_short_lines(tmp_path, capsys, ref, monkeypatch):
    bomb = tmp_path / "many.jsonl.gz"
    with gzip.open(bomb, "wb", compresslevel=1) as handle:
        handle.write(b"{}\n" * (1 << 20))   # a million empty records
    monkeypatch.setenv("POEVAL_MAX_INPUT_BYTES", str(1 << 16))
    assert main(_evaluate(tmp_path, str(bomb), ref)) == 2
    _one_line_error(capsys, "many.jsonl.gz", "more than 65536 bytes", "POEVAL_MAX_INPUT_BYTES")


def test_dvc_commit_refuses_a_dangling_output_link_and_leaves_it(tmp_path, capsys, monkeypatch):
    """An output that is a symbolic link to nothing (a DVC cache link whose cache entry is gone), or that lies
    under one, is named; the link is not replaced by an empty folder."""
    (tmp_path / "dvc.yaml").write_text("stages:\n  one: {cmd: 'true', outs: [results/embeddings, gone/under]}\n")
    (tmp_path / "results").mkdir()
    link = tmp_path / "results" / "embeddings"
    link.symlink_to(tmp_path / ".dvc" / "cache" / "missing")
    monkeypatch.chdir(tmp_path)
    assert main(["dvc-commit"]) == 2
    _one_line_error(capsys, "results/embeddings is a symbolic link to", "which does not exist", "dvc checkout")
    assert link.is_symlink() and not link.exists()
    link.unlink()
    (tmp_path / "results" / "embeddings").mkdir()
    (tmp_path / "gone").symlink_to(tmp_path / "nowhere")
    assert main(["dvc-commit"]) == 2
    _one_line_error(capsys, "gone is a symbolic link to")
    assert (tmp_path / "gone").is_symlink() and not (tmp_path / "nowhere").exists()


# --- 11: bounds ----------------------------------------------------------------------------------

def _validate(tmp_path, text: str) -> int:
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text(text)
    return main(["validate", str(overlay)])


def test_length_bins_has_a_maximum(tmp_path, capsys, samples, ref):
    assert _validate(tmp_path, "metrics:\n  length:\n    bins: 1000000000\n") == 2
    assert "metrics.length.bins" in capsys.readouterr().err
    assert main(_evaluate(tmp_path, samples, ref, "--options", '{"length": {"bins": 1000000000000}}')) == 2
    assert "options.length.bins" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [
    ["evaluate", "s.jsonl", "--reference", "r.jsonl", "--lang", "en", "--out", "c.json", "--bootstrap-reps", "-1"],
    ["bpomp", "accuracy", "p.jsonl", "--out", "a.json", "--bootstrap-reps", "-5"],
])
def test_negative_bootstrap_reps_are_refused(capsys, argv):
    _usage_error(capsys, argv, "--bootstrap-reps", "-")


@pytest.mark.parametrize("argv", [
    ["evaluate", "s.jsonl", "--reference", "r.jsonl", "--lang", "en", "--out", "c.json", "--bootstrap-reps", "100001"],
    ["evaluate", "s.jsonl", "--reference", "r.jsonl", "--out", "c.json", "--job", json.dumps({
        "kind": "metric-cell", "lang": "en", "families": ["length"], "options": {}, "bootstrap_reps": 100_000_000_000,
        "seed": 1, "exclude_sample_from_reference": False, "allow_empty": False, "cell": None})],
    ["bpomp", "accuracy", "p.jsonl", "--out", "a.json", "--bootstrap-reps", "100000000000"],
])
def test_bootstrap_reps_above_the_schemas_maximum_are_refused_before_any_work(capsys, argv):
    """100000 resamples at most (params $defs/bootstrap_reps): 1e11 would run for thousands of hours."""
    _usage_error(capsys, argv, "bootstrap", "100000")


def test_bootstrap_reps_in_params_has_the_same_maximum(tmp_path, capsys):
    assert _validate(tmp_path, "metrics:\n  bootstrap:\n    reps: 100001\n") == 2
    assert "metrics.bootstrap.reps" in capsys.readouterr().err
    assert _validate(tmp_path, "bpomp:\n  bootstrap:\n    reps: 100001\n") == 2
    assert "bpomp.bootstrap.reps" in capsys.readouterr().err


def test_bpomp_accuracy_takes_the_resamples_its_params_take(tmp_path, capsys):
    """bpomp.bootstrap.reps is 1 to 100000 in the schema; `bpomp accuracy --bootstrap-reps` has those bounds."""
    _usage_error(capsys, ["bpomp", "accuracy", "p.jsonl", "--bootstrap-reps", "0"], "--bootstrap-reps",
                 "between 1 and 100000")
    assert _validate(tmp_path, "bpomp:\n  bootstrap:\n    reps: 0\n") == 2
    assert "bpomp.bootstrap.reps" in capsys.readouterr().err


def test_bootstrap_reps_in_params_is_not_negative(tmp_path, capsys):
    assert _validate(tmp_path, "metrics:\n  bootstrap:\n    reps: -1\n") == 2
    assert "metrics.bootstrap.reps" in capsys.readouterr().err


@pytest.mark.parametrize("seed", ["-1", str(2 ** 32)])
def test_a_seed_numpy_refuses_is_refused(tmp_path, capsys, samples, ref, seed):
    _usage_error(capsys, _evaluate(tmp_path, samples, ref, "--bootstrap-reps", "2", "--seed", seed), "--seed")


def test_a_seed_in_params_fits_numpy(tmp_path, capsys):
    assert _validate(tmp_path, f"metrics:\n  bootstrap:\n    seed: {2 ** 32}\n") == 2
    assert "metrics.bootstrap.seed" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [
    ["evaluate", "s.jsonl", "--reference", "r.jsonl", "--lang", "xx", "--out", "c.json"],
    ["quatrains", "--lang", "xx", "--corpus", "{}", "--quatrains", "{}", "--out", "q", "--report", "r"],
    ["import-samples", "s.jsonl", "--lang", "xx", "--out", "o", "--stats", "s"],
    ["adherence", "cell", "none=s.jsonl", "--lang", "xx", "--system", "x", "--out", "c"],
    ["topics", "q.jsonl", "--lang", "xx", "--out", "t"],
])
def test_an_unknown_language_is_refused(capsys, argv):
    _usage_error(capsys, argv, "--lang", "xx")


ALIAS_BOMB = """metrics:
  length:
    bins: [&a [lol, lol, lol, lol, lol, lol, lol, lol, lol], &b [*a, *a, *a, *a, *a, *a, *a, *a, *a],
           &c [*b, *b, *b, *b, *b, *b, *b, *b, *b], &d [*c, *c, *c, *c, *c, *c, *c, *c, *c],
           &e [*d, *d, *d, *d, *d, *d, *d, *d, *d], [*e, *e, *e, *e, *e, *e, *e, *e, *e]]
"""


def test_a_yaml_alias_bomb_gives_a_short_error(tmp_path, capsys):
    assert _validate(tmp_path, ALIAS_BOMB) == 2
    err = capsys.readouterr().err
    assert len(err) < 500 and "overlay.yaml" in err and "alias" in err, err[:1000]


def test_an_error_quotes_at_most_a_bounded_value(tmp_path, capsys):
    """A long wrong value is quoted shortened, saying how much was left out."""
    assert _validate(tmp_path, "languages: " + "x" * 100000 + "\n") == 2
    err = capsys.readouterr().err
    assert len(err) < 1000 and "more characters)" in err and "languages" in err, err[:1000]


def test_a_negative_syllable_gap_is_refused(tmp_path, capsys):
    """A short line "at least -3 syllables shorter" than a long one is no limerick rule."""
    assert _validate(tmp_path, "bpomp:\n  corpus:\n    min_syllable_gap: -3\n") == 2
    assert "bpomp.corpus.min_syllable_gap" in capsys.readouterr().err
    _usage_error(capsys, ["bpomp", "corpus", "l.txt", "--format", "fortune", "--out", "o.jsonl",
                          "--min-syllable-gap", "-3"], "--min-syllable-gap")


@pytest.mark.parametrize("value", ["1.5", "-0.1", "nan"])
def test_a_confidence_quantile_outside_0_1_is_refused(capsys, value):
    _usage_error(capsys, ["bpomp", "errors", "s.jsonl", "--bigrams", "b.json", "--quantiles", "0.5", value],
                 "--quantiles", value)
