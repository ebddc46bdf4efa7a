"""`poeval bpomp export --format lm-eval`: the task files, and lm-evaluation-harness itself (a subprocess,
offline, on CPU) scoring them with a tiny scratch GPT-2 exactly as `poeval bpomp score` / `accuracy` do."""

import json
import math
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from poeval import bpomp, cli, io
from poeval.bpomp import export
from poeval.errors import PoevalError

FIXTURE = Path(__file__).parents[1] / "fixtures" / "bpomp_mined_limericks.jsonl"
N = 20   # lm_eval --limit: the first N pairs of each task


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """20 word_swap pairs (the first one a tie: its corrupted text is the original) and 20 line_swap pairs
    from the mined limericks, and a random tiny GPT-2 with a byte-level BPE trained on them."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    from poeval.generators.lm.build import train_tokenizer

    root = tmp_path_factory.mktemp("bpomp_export")
    limericks = list(io.read_jsonl(FIXTURE))
    pairs = {task: bpomp.make_pairs(limericks, task, n=N, check_scheme=False)[0] for task in ("word_swap", "line_swap")}
    tie = dict(pairs["word_swap"][0], id="tie/word_swap")
    tie["corrupted"] = list(tie["original"])
    pairs["word_swap"] = [tie] + pairs["word_swap"][: N - 1]
    for task, recs in pairs.items():
        io.write_jsonl(root / f"{task}.jsonl", recs)
    torch.manual_seed(0)
    tok = train_tokenizer(["\n".join(r["lines"]) for r in limericks], vocab_size=400)
    cfg = GPT2Config(vocab_size=len(tok), n_embd=32, n_layer=2, n_head=2, n_positions=512,
                     bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    GPT2LMHeadModel(cfg).save_pretrained(root / "gpt2")
    tok.save_pretrained(root / "gpt2")
    return root


def pair_files(work):
    return [str(work / "word_swap.jsonl"), str(work / "line_swap.jsonl")]


def test_task_files_are_blimp_style(work, tmp_path):
    out = tmp_path / "tasks"
    summary = export.write_lm_eval(str(out), pair_files(work), model=str(work / "gpt2"))
    assert summary["tasks"] == {"bpomp_word_swap": N, "bpomp_line_swap": N}
    assert summary["end"] == "<|endoftext|>"
    # a shell command line, quoted word by word (shlex.join)
    assert shlex.split(summary["command"]) == ["lm_eval", "--model", "hf", "--model_args",
                                               f"pretrained={work / 'gpt2'},dtype=float32", "--include_path",
                                               str(out), "--tasks", "bpomp", "--batch_size", "8"]
    group = yaml.safe_load((out / "_bpomp.yaml").read_text())
    assert group["group"] == "bpomp" and group["task"] == ["bpomp_word_swap", "bpomp_line_swap"]
    task = yaml.safe_load((out / "bpomp_word_swap.yaml").read_text())
    assert task["output_type"] == "multiple_choice" and task["doc_to_text"] == "" and task["doc_to_target"] == 0
    assert task["target_delimiter"] == "" and task["dataset_path"] == "json"
    assert [m["metric"] for m in task["metric_list"]] == ["acc"]
    data = Path(task["dataset_kwargs"]["data_files"]["train"])
    assert data.is_absolute() and data == out / "bpomp_word_swap.jsonl"
    docs = list(io.read_jsonl(data))
    first = list(io.read_jsonl(work / "word_swap.jsonl"))[1]
    assert docs[1] == {"id": first["id"], "task": "word_swap", "good": "\n".join(first["original"]),
                       "bad": "\n".join(first["corrupted"]), "end": "<|endoftext|>"}
    plain = export.write_lm_eval(str(tmp_path / "plain"), pair_files(work), group="poems")
    assert "command" not in plain and plain["end"] == ""
    assert {d["end"] for d in io.read_jsonl(tmp_path / "plain" / "poems_line_swap.jsonl")} == {""}
    assert yaml.safe_load((tmp_path / "plain" / "_poems.yaml").read_text())["task"][0] == "poems_word_swap"


def test_export_refuses_a_reversed_verse_checkpoint(work, tmp_path, capsys):
    rev = tmp_path / "reversed"
    shutil.copytree(work / "gpt2", rev)
    cfg = json.loads((rev / "config.json").read_text())
    (rev / "config.json").write_text(json.dumps(cfg | {"poeval_verse_order": "reversed"}))
    assert cli.main(["bpomp", "export", str(tmp_path / "out"), "--pairs", *pair_files(work), "--model", str(rev)]) == 2
    assert "verses turned" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_export_bad_input(work, tmp_path, monkeypatch):
    with pytest.raises(PoevalError, match="given twice"):
        export.write_lm_eval(str(tmp_path / "a"), [pair_files(work)[0]] * 2)
    mixed = tmp_path / "mixed.jsonl"
    io.write_jsonl(mixed, [dict(r, task=t) for r, t in zip(io.read_jsonl(pair_files(work)[0]), ("a", "b"))])
    with pytest.raises(PoevalError, match="one task"):
        export.write_lm_eval(str(tmp_path / "b"), [str(mixed)])
    with pytest.raises(PoevalError, match="--group"):
        export.write_lm_eval(str(tmp_path / "c"), pair_files(work), group="bpomp-x")
    monkeypatch.chdir(tmp_path)   # no results/bpomp/pairs here
    with pytest.raises(PoevalError, match="no pairs files"):
        export.write_lm_eval(str(tmp_path / "d"))
    with pytest.raises(PoevalError, match="cannot load model"):
        export.write_lm_eval(str(tmp_path / "e"), pair_files(work), model=str(tmp_path))


def ref_logp_eos(model, tok, text):
    """log P(EOS | BOS text): the term poeval's score has and an export without --model does not."""
    import torch

    ids = [tok.bos_token_id] + tok(text, add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        return torch.log_softmax(model(torch.tensor([ids])).logits[0, -1], -1)[tok.eos_token_id].item()


def test_lm_eval_accuracy_equals_poeval(work, tmp_path):
    """lm_eval on the export for the checkpoint gives poeval's scores to float32 rounding and its accuracy,
    but for ties: the tie pair counts 1 in lm-eval (argmax takes the first choice), 0.5 in poeval. The
    export without --model scores each text without its final EOS."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tasks = tmp_path / "tasks"
    export.write_lm_eval(str(tasks / "bpomp"), pair_files(work), model=str(work / "gpt2"))
    export.write_lm_eval(str(tasks / "noeos"), pair_files(work), group="bpomp_noeos")
    cache = tmp_path / "cache"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "HF_HOME": str(cache / "hf"), "HF_DATASETS_CACHE": str(cache / "datasets"), "XDG_CACHE_HOME": str(cache)}
    lm_eval = Path(sys.executable).with_name("lm_eval")
    cmd = [str(lm_eval), "--model", "hf", "--model_args", f"pretrained={work / 'gpt2'},dtype=float32",
           "--include_path", str(tasks), "--tasks", "bpomp,bpomp_noeos", "--limit", str(N), "--device", "cpu",
           "--batch_size", "8", "--output_path", str(tmp_path / "res"), "--log_samples"]
    run = subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    (results,) = tmp_path.glob("res/*/results_*.json")
    lm_acc = {t: r["acc,none"] for t, r in json.loads(results.read_text())["results"].items()}

    model = AutoModelForCausalLM.from_pretrained(work / "gpt2").eval()
    tok = AutoTokenizer.from_pretrained(work / "gpt2")
    for task, pairs_file in zip(("word_swap", "line_swap"), pair_files(work)):
        scored = tmp_path / f"{task}.scores.jsonl"
        bpomp.write_scores(pairs_file, str(work / "gpt2"), "causal", str(scored), progress=False)
        ours = bpomp.accuracy(str(scored), bootstrap_reps=10)[task]
        assert ours["n"] == N and ours["ties"] == (1 if task == "word_swap" else 0)
        assert lm_acc[f"bpomp_{task}"] == pytest.approx(ours["accuracy"] + 0.5 * ours["ties"] / N, abs=1e-12)
        pairs = list(io.read_jsonl(scored))
        for group, drop_eos in (("bpomp", False), ("bpomp_noeos", True)):
            (samples,) = tmp_path.glob(f"res/*/samples_{group}_{task}_*.jsonl")
            docs = sorted((json.loads(line) for line in samples.read_text().splitlines()), key=lambda d: d["doc_id"])
            assert [d["doc"]["id"] for d in docs] == [p["id"] for p in pairs]
            for d, p in zip(docs, pairs):
                got = [float(r[0]) for r in d["filtered_resps"]]
                want = [p["score_original"], p["score_corrupted"]]
                if drop_eos:
                    want = [w - ref_logp_eos(model, tok, "\n".join(p[f])) for w, f in zip(want, ("original", "corrupted"))]
                assert got == pytest.approx(want, abs=5e-4, rel=1e-6)   # float32 sums of ~700 nats: a few ulps
                assert d["acc"] == float(got[0] >= got[1])   # argmax: the first choice on a tie
    assert lm_acc["bpomp"] == pytest.approx((lm_acc["bpomp_word_swap"] + lm_acc["bpomp_line_swap"]) / 2)
    assert math.isfinite(lm_acc["bpomp_noeos"])


@pytest.mark.parametrize("name", ["m,trust_remote_code=True", "m=1", "it's", "run (2"])
def test_export_refuses_a_model_path_that_would_steer_lm_eval(work, tmp_path, capsys, name):
    """lm-eval splits --model_args on `,` (and the newer one reads quotes and brackets): a folder named
    `m,trust_remote_code=True` would add a model argument of its own to the printed command, `it's` would
    swallow `dtype=float32`; such a path is refused in one line, before anything is written."""
    steer = tmp_path / name
    shutil.copytree(work / "gpt2", steer)
    assert cli.main(["bpomp", "export", str(tmp_path / "out"), "--pairs", *pair_files(work), "--model", str(steer)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("poeval: error: --model ") and name in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()
