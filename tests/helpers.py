"""Helpers that several test files share (imported as ``from helpers import ...``; tests/ is on the path
through conftest.py): the repository root, the Snakemake runner of the workflow tests, made-up quatrains and
limericks, the tiny LM corpus and configs, and an independent reference loss."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

from poeval.bpomp import pairs
from poeval.bpomp.wordnet import default
from poeval.poetry.rhyme import rhyme_relation
from poeval.text import end_word

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


# ---------------------------------------------------------------------------------------------- the workflow

def _workdir(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    shutil.copytree(ROOT / "config", work / "config")   # every overlay at its path (config/<kind>/<name>.yaml)
    shutil.copy(ROOT / "params.yaml", work / "params.yaml")
    return work


def snakemake(work: Path, *args: str, configs: tuple[str, ...] = ("config/scale/tiny.yaml",),
              commands: bool = True, bin_first: Path | None = None, stdin=None,
              timeout: float = 1800) -> subprocess.CompletedProcess:
    """Snakemake on the repository's Snakefile in ``work``, with this Python's ``poeval`` on PATH.
    ``commands``: print each job's command (``-p``, which the workflow profile leaves out); ``bin_first``: a
    folder whose commands come before it (a stand-in ``poeval``); ``stdin``: Snakemake's standard input."""
    path = os.pathsep.join([*([str(bin_first)] if bin_first else []), str(BIN), os.environ["PATH"]])
    env = dict(os.environ, PATH=path, HF_HUB_OFFLINE="1")
    cmd = [str(BIN / "snakemake"), "--snakefile", str(ROOT / "Snakefile"), "--directory", str(work),
           *args, *(["-p"] if commands else []), "--configfile", *configs]
    return subprocess.run(cmd, cwd=work, env=env, stdin=stdin, capture_output=True, text=True, timeout=timeout)


def _rows(path: Path) -> list[list[str]]:
    return [line.split("\t") for line in path.read_text().splitlines()]


def _dry_run_inputs(out: str) -> dict[str, list[str]]:
    """rule name -> its input files, from a dry run's job listing."""
    jobs = {}
    for block in out.split("\nrule ")[1:]:
        name = block.split(":", 1)[0]
        inputs = re.search(r"^    input: (.*)$", block, re.M)
        jobs[name] = inputs.group(1).split(", ") if inputs else []
    return jobs



# ---------------------------------------------------------------------------------------------- inputs

QUATRAIN = ["the sun is warm today", "the sea is calm and blue", "I walk along the shore", "and think of you"]

# three stanzas of one made-up poem, for the poem vote (poeval.poetry.schemes.poem_schemes): NIGHT and SKY rhyme
# abab; MADE's made / side (v0c3 aɪ/eɪ, about -2.2) leaves it abcb alone; COUPLETS rhymes aabb
NIGHT = ["I walk alone by night", "beneath the silent tree", "and see the pale moonlight",
         "that sets my spirit free"]
SKY = ["The swallows climb the sky", "the winds are growing cold", "and still the swallows fly",
       "as every tale has told"]
MADE = ["Of all the songs he made", "he carved them into stone", "and left them by the side",
        "when all the rest were gone"]
COUPLETS = ["I walk alone by night", "beneath the pale moonlight", "beside the ancient tree",
            "that sets my spirit free"]


def _jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return str(path)



# ---------------------------------------------------------------------------------------------- limericks

GOOD = [
    ["There once was a cat on a mat", "Who grew quite remarkably fat.", "She ate all the cream,",
     "Then dozed in a dream,", "And woke in a very round hat."],
    ["A baker who lived by the sea", "Made muffins and biscuits for tea.", "He baked them with care,",
     "Then left them out there,", "And seagulls would eat them for free."],
    ["A sailor went out in a boat", "With nothing to wear but a coat.", "The wind blew so cold",
     "That he quickly grew old,", "And wrote his last will on a note."],
    ["An old man who lived in a tree", "Was bothered all day by a bee.", "When they said, 'Does it buzz?'",
     "He replied, 'Yes, it does!'", "'It's a regular brute of a bee!'"],
    ["A student who studied all night", "Would read by a flickering light.", "His eyes became sore,",
     "He could not read more,", "So he slept till the morning was bright."],
]


SIXTH = ["A poet who lived on the moon", "Would sing a peculiar tune.", "He sang it so loud",
         "It startled a cloud,", "And rained on the valley at noon."]


def _records(lines_list, prefix="h"):
    return [{"id": f"{prefix}-{k}", "lines": lines} for k, lines in enumerate(lines_list)]



# ---------------------------------------------------------------------------------------------- BPoMP pairs

WORD = re.compile(r"[^\W_]+(?:['’\-‐][^\W_]+)*")  # inner apostrophes and hyphens, as end_word


def _skeleton(line):
    """Non-word characters and words of a line, for an independent 'only the end word changed' check."""
    return WORD.split(line), WORD.findall(line)


def _same_except_end_word(old, new, expected_word):
    (sep_o, w_o), (sep_n, w_n) = _skeleton(old), _skeleton(new)
    new_words = WORD.findall(expected_word)
    k = len(w_o) - 1
    return (sep_o[:k] == sep_n[:k] and sep_o[-1] == sep_n[-1] and w_o[:k] == w_n[:k]
            and w_n[k:] == new_words)


def check_pair(p, wn=None):
    """Every pair differs from its original exactly where ``changed`` says."""
    orig, corr, ch = p["original"], p["corrupted"], p["changed"]
    assert corr != orig and len(corr) == 5
    lines = ch["lines"]
    for k in set(range(5)) - set(lines):
        assert corr[k] == orig[k]
    if p["task"] == "word_swap":
        i, j = lines
        wi, wj = ch["words"]
        assert (i, j) in pairs.RHYME_PAIRS and wi.lower() != wj.lower()
        assert _same_except_end_word(orig[i], corr[i], wj) and _same_except_end_word(orig[j], corr[j], wi)
    elif p["task"] == "line_swap":
        i, j = lines
        assert (i, j) in pairs.RHYME_PAIRS
        bi, ti = pairs.split_tail(orig[i])
        bj, tj = pairs.split_tail(orig[j])
        assert bi != bj and ch["texts"] == [bi, bj]
        assert corr[i] == bj + ti and corr[j] == bi + tj
    else:
        (i,) = lines
        old, new = ch["words"]
        assert old == end_word(orig[i]) and _same_except_end_word(orig[i], corr[i], new)
        check_synonym(p, wn or default())


def check_synonym(p, wn):
    ch = p["changed"]
    (i,) = ch["lines"]
    new = ch["words"][1].lower()
    pos = ch["pos"]
    synset = wn.synset(pos, ch["synset"])
    assert ch["synonym_lemma"] in synset.lemmas and ch["lemma"] in [x.lower() for x in synset.lemmas]
    assert ch["synonym_lemma"] != ch["lemma"]
    assert ch["synonym_lemma"] in wn.morphy(new, pos)           # the new word is a form of the synonym ...
    assert ch["lemma"] in wn.morphy(ch["words"][0], pos)        # ... whose synset holds the old word's lemma
    assert pos in wn.pos_of(ch["synonym_lemma"])                # same POS in the index
    for k in pairs.PARTNERS[i]:
        assert rhyme_relation(new, end_word(p["original"][k]), "en") == "none"



# ---------------------------------------------------------------------------------------------- a tiny LM corpus

ADJ = "silver quiet golden broken gentle hollow bitter tender ancient restless".split()


NOUN = "river candle meadow harbor shadow lantern orchard sparrow window morning".split()


VERB = "sings sleeps burns waits drifts falls turns breaks".split()


PREP = "beneath beyond across within upon".split()


TRAIN_ONLY = "nightingale"  # frequent in train: must become one token


DEV_ONLY = "zqxjvkw"  # frequent in dev only, letters never adjacent in train: must stay single bytes


TINY = {
    "arch": "gpt2",
    "size": "S",
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


def _state(model_dir: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(model_dir / "model.safetensors"))


def reference_dev_loss(model_dir: Path, dev: Path, styled: bool = False) -> float:
    """A saved model's per-token loss on the quatrains of ``dev``, with transformers alone: each quatrain's
    text (BOS, with ``styled`` its scheme and metre tokens, the verses joined by newlines, EOS) on its own,
    no padding, loss from the model's ``labels`` argument, weighted by its number of predicted tokens."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from poeval.io import read_jsonl

    model = AutoModelForCausalLM.from_pretrained(str(model_dir)).eval()
    tok = AutoTokenizer.from_pretrained(str(model_dir))
    total = count = 0.0
    for rec in read_jsonl(dev):
        style = f"<scheme={rec['scheme']}><meter={rec['meter']}>" if styled else ""
        text = tok.bos_token + style + "\n".join(rec["lines"]) + tok.eos_token
        ids = tok(text, add_special_tokens=False, return_tensors="pt")["input_ids"]
        with torch.no_grad():
            loss = model(input_ids=ids, attention_mask=torch.ones_like(ids), labels=ids).loss.item()
        total += loss * (ids.shape[1] - 1)
        count += ids.shape[1] - 1
    return total / count


SCHEMES_USED = ["abab", "aabb", "abba", "aaaa"]


METERS_USED = ["iambic", "trochaic", "dactylic"]


def _styled(records: list[dict]) -> list[dict]:
    return [
        {**r, "scheme": SCHEMES_USED[i % len(SCHEMES_USED)], "meter": METERS_USED[i % len(METERS_USED)]}
        for i, r in enumerate(records)
    ]



# ---------------------------------------------------------------------------------------------- the params schema

def _params_keys() -> set[str]:
    from poeval import config

    keys: set[str] = set()

    def walk(node):
        if isinstance(node, dict):
            keys.update(node.get("properties", {}))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(config.schema())
    return keys



# ------------------------------------------------------------------------- installed distributions, faked

def fake_distributions(monkeypatch, root: Path, wheels: dict[str, dict], missing=()) -> None:
    """Installed distributions as ``importlib.metadata`` shows them, for code that finds data files through
    it (poeval.packages): ``wheels`` maps a name to ``{"version", "files": {path: (bytes on disk, bytes whose
    sha256 the RECORD lists)}, "requires"}``; each file is written under ``root``. The names in ``missing``
    are not installed; any other name is what is really installed."""
    import base64
    import hashlib
    from importlib import metadata
    from types import SimpleNamespace

    dists = {}
    for name, wheel in wheels.items():
        entries = []
        for file, (content, recorded) in wheel["files"].items():
            (root / file).parent.mkdir(parents=True, exist_ok=True)
            (root / file).write_bytes(content)
            entry = metadata.PackagePath(file)
            digest = base64.urlsafe_b64encode(hashlib.sha256(recorded).digest()).rstrip(b"=").decode()
            entry.hash = metadata.FileHash(f"sha256={digest}")
            entries.append(entry)
        dists[name] = SimpleNamespace(files=entries, version=wheel["version"], requires=wheel.get("requires"),
                                      locate_file=lambda f: root / f)
    real_distribution, real_version = metadata.distribution, metadata.version

    def distribution(name):
        if name in missing:
            raise metadata.PackageNotFoundError(name)
        return dists[name] if name in dists else real_distribution(name)

    def version(name):
        return distribution(name).version if name in dists or name in missing else real_version(name)

    monkeypatch.setattr(metadata, "distribution", distribution)
    monkeypatch.setattr(metadata, "version", version)


def split_folder(root: Path, records: list[dict], n_dev: int = 4) -> Path:
    """``root`` holding ``train.jsonl`` (``records``) and ``dev.jsonl`` (the first ``n_dev`` of them)."""
    from poeval.io import write_jsonl

    write_jsonl(root / "train.jsonl", records)
    write_jsonl(root / "dev.jsonl", records[:n_dev])
    return root


def sample_stats(sample, *args, **kwargs) -> dict:
    """What ``sample(*args, **kwargs)`` (a generator's sampler) reports, also for a tiny model that wrote no valid
    quatrain: that is an error, whose ``stats`` hold what the stats file would have held."""
    from poeval.generators.sampling import NoQuatrain

    try:
        return sample(*args, **kwargs)
    except NoQuatrain as err:
        assert err.stats is not None, str(err)
        return err.stats


class Interrupted(Exception):
    """Raised by the :func:`interrupt` hook: a training run killed after some optimizer step."""


def assert_stamped(log: dict, inputs: dict, params: dict) -> None:
    """``log`` carries the provenance stamp of these input files (their sha256) and params as given."""
    from poeval.files import file_sha256

    stamp = log["provenance"]
    assert stamp["params"] == params
    assert {k: v["sha256"] for k, v in stamp["inputs"].items()} == {k: file_sha256(p) for k, p in inputs.items()}
    assert stamp["code"] and stamp["created"]


def sampling(n: int, **over) -> dict:
    """A complete params ``sampling`` block (what every generator's ``sample`` takes) of ``n`` quatrains:
    params.yaml's, without the byte-level budget unless ``over`` gives it, ``over`` on top."""
    import yaml

    block = yaml.safe_load((ROOT / "params.yaml").read_text("utf-8"))["sampling"]
    block.pop("max_new_bytes")
    return {**block, "n": n, **over}
