"""A model folder's own code never runs: every command that loads a checkpoint (`poeval sample`, `poeval bpomp
score --kind causal` and `--kind masked`, and rule train's `poeval train`) refuses a folder whose `auto_map`
names code of its own, in one error line, without asking on stdin (transformers asks there whether to run it
unless told not to), and the workflow's rules get no stdin at all. docs/inputs-errors.md "Inputs and errors"
describes the same rules.

Each command runs with stdin holding the answer `y` (rule train's through Snakemake, with a pipe): a loader
that asked would read it and run the folder's code, which writes a marker file; each test checks that the
marker never appears and that no byte of stdin was read."""

import io
import json
import os
import shutil
import sys
from pathlib import Path

import pytest
# at collection: transformers' log handler, made on its first import, then writes to pytest's own stderr, not
# to one test's captured stream that is closed after it (a warning would then print a logging traceback)
from transformers import dynamic_module_utils

from helpers import _workdir, snakemake
from poeval.cli import main

ANSWER = "y\n" * 8   # what a yes/no question on stdin would read
DECODING = json.dumps({"temperature": 1.0})
SAMPLING = json.dumps({"n": 1, "batch_size": 1, "max_new_tokens": 4, "max_attempts": 1, "seed": 1})
GPT2_TOKENIZER = {"vocab.json": json.dumps({"a": 0, "<|endoftext|>": 1}), "merges.txt": "#version: 0.2\n",
                  "tokenizer_config.json": json.dumps({"tokenizer_class": "GPT2Tokenizer"})}

# Where a folder names its own code, as files: the config's class (read by every loader, the tokenizer's
# first), the tokenizer's class, the causal or the masked model's class. A model class is only asked for
# when transformers has none of its own for the config: t5 has no causal LM class, gpt2 no masked LM class.
OWN_CODE = {
    "config": {"config.json": {"model_type": "x", "auto_map": {"AutoConfig": "evil.C"}}},
    "tokenizer": {"config.json": {"model_type": "x"},
                  "tokenizer_config.json": {"auto_map": {"AutoTokenizer": ["evil.T", None]}}},
    "causal-model": {"config.json": {"model_type": "t5", "auto_map": {"AutoModelForCausalLM": "evil.M"}}},
    "masked-model": {"config.json": {"model_type": "gpt2", "auto_map": {"AutoModelForMaskedLM": "evil.M"}}},
}


def own_code_folder(root: Path, where: str) -> tuple[Path, Path]:
    """``(folder, marker)``: a model folder naming its own code (``evil.py``) in the place ``where`` names
    (:data:`OWN_CODE`), with a tokenizer of its own when the code is the model's; importing the code writes
    the file ``marker``."""
    folder, marker = root / f"own-{where}", root / "MARKER"
    folder.mkdir()
    files = {**(GPT2_TOKENIZER if where.endswith("-model") else {}), **OWN_CODE[where]}
    for name, content in files.items():
        (folder / name).write_text(content if isinstance(content, str) else json.dumps(content))
    (folder / "evil.py").write_text(f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n")
    return folder, marker


def answer_pipe() -> int:
    """The read end of a pipe that holds :data:`ANSWER` and has no writer left (a reader gets the answer,
    then end of file, never a hang)."""
    read, write = os.pipe()
    os.write(write, ANSWER.encode())
    os.close(write)
    return read


@pytest.fixture
def unasked(tmp_path, monkeypatch, capsys):
    """``unasked(argv, marker)``: run ``poeval ARGV`` with :data:`ANSWER` on stdin; check that it fails with
    an error line (no traceback; transformers may warn before it), that ``marker`` was never written and that
    nothing read stdin; return the error line."""
    # where a loader that ran the code would copy it and import it from: this test's folder, undone after it
    monkeypatch.setattr(dynamic_module_utils, "HF_MODULES_CACHE", str(tmp_path / "hf_modules"))
    monkeypatch.setattr(sys, "path", [*sys.path])

    def run(argv: list[str], marker: Path) -> str:
        stdin = io.StringIO(ANSWER)
        monkeypatch.setattr(sys, "stdin", stdin)
        code = main(argv)
        err = capsys.readouterr().err
        assert not marker.exists(), "the folder's own code ran"
        assert stdin.tell() == 0, f"stdin was read: {stdin.getvalue()[:stdin.tell()]!r}"
        assert code == 2 and "Traceback" not in err, err[-3000:]
        last = err.strip().splitlines()[-1]
        assert last.startswith("poeval: error: "), err[-3000:]
        return last

    return run


@pytest.fixture
def pairs(tmp_path) -> Path:
    path = tmp_path / "pairs.jsonl"
    path.write_text(json.dumps({"id": "p0", "task": "word_swap", "original": ["a cat sat"],
                                "corrupted": ["a sat cat"], "changed": {}}) + "\n")
    return path


def test_sample_never_runs_a_folders_own_code(tmp_path, unasked):
    folder, marker = own_code_folder(tmp_path, "config")
    line = unasked(["sample", str(folder), "--decoding", DECODING, "--sampling", SAMPLING,
                                  "--out", str(tmp_path / "s.jsonl"), "--stats", str(tmp_path / "s.json")], marker)
    assert f"{folder / 'config.json'}: auto_map names the folder's own code (evil.C)" in line
    assert "never runs" in line and not (tmp_path / "s.jsonl").exists()


@pytest.mark.parametrize("where, kind", [("config", "causal"), ("tokenizer", "causal"), ("causal-model", "causal"),
                                         ("config", "masked"), ("masked-model", "masked")])
def test_bpomp_score_never_runs_a_folders_own_code(tmp_path, pairs, unasked, where, kind):
    folder, marker = own_code_folder(tmp_path, where)
    line = unasked(["bpomp", "score", str(pairs), "--model", str(folder), "--kind", kind,
                                  "--out", str(tmp_path / "o.jsonl")], marker)
    file = "tokenizer_config.json" if where == "tokenizer" else "config.json"
    assert f"{folder / file}: auto_map names the folder's own code" in line and "given by --model" in line
    assert not (tmp_path / "o.jsonl").exists()


# --- the workflow: rule train -------------------------------------------------------------------------

STAND_IN = """#!{python}
# `poeval` as rule train calls it: records its arguments and what it can read from stdin, writes its output
import json, os, sys
args = sys.argv[1:]
with open({record!r}, "w") as f:
    json.dump({{"argv": args, "stdin": os.read(0, 64).decode("latin-1")}}, f)
os.makedirs(args[args.index("--out") + 1], exist_ok=True)
"""


def test_rule_train_gets_no_stdin_and_its_command_never_runs_a_folders_own_code(tmp_path, unasked, monkeypatch):
    """Snakemake, run with the answer on its stdin, starts rule train's command with no stdin (a stand-in
    `poeval` records what it gets); that command, run as the rule wrote it, refuses the folder."""
    folder, marker = own_code_folder(tmp_path, "config")
    work = _workdir(tmp_path)
    (work / "own.yaml").write_text(json.dumps({
        "models": {"own": {"arch": "gpt2", "size": "S", "init": "pretrained", "name_or_path": str(folder),
                           "conditioned": False, "training": "none"}},
        "systems": ["own"]}))
    (work / "data" / "en").mkdir(parents=True)
    for split in ("train", "dev"):   # rule train's inputs; --allowed-rules keeps Snakemake from remaking them
        (work / "data" / "en" / f"{split}.jsonl").write_text(json.dumps({"id": split, "lines": ["a b"] * 4}) + "\n")
    stand_in, record = tmp_path / "bin" / "poeval", tmp_path / "record.json"
    stand_in.parent.mkdir()
    stand_in.write_text(STAND_IN.format(python=sys.executable, record=str(record)))
    stand_in.chmod(0o755)
    read = answer_pipe()
    try:
        run = snakemake(work, "models/en/own", "-c1", "--allowed-rules", "train",
                        configs=("config/scale/tiny.yaml", "own.yaml"), bin_first=stand_in.parent, stdin=read)
    finally:
        os.close(read)
    assert run.returncode == 0, run.stderr[-3000:]
    rule = json.loads(record.read_text())
    assert rule["stdin"] == "", "rule train read Snakemake's stdin"
    assert rule["argv"][0] == "train" and str(folder) in rule["argv"][rule["argv"].index("--job") + 1]
    shutil.rmtree(work / "models")
    monkeypatch.chdir(work)
    line = unasked(rule["argv"], marker)
    assert "given by models.own.name_or_path" in line and "auto_map names the folder's own code" in line
    assert not (work / "models" / "en" / "own").exists()
