"""BPoMP as an lm-evaluation-harness task (``poeval bpomp export --format lm-eval DIR``).

Written in the style of lm-eval's own BLiMP tasks (``lm_eval/tasks/blimp``): one task YAML per BPoMP task
(``<group>_<task>``), a group YAML over them, and the pairs as JSON lines next to them, read by the
``json`` dataset builder from absolute ``data_files``. Each pair is a ``multiple_choice`` document with an
empty context (``doc_to_text: ""``), the original text as choice 0 and the corrupted one as choice 1
(``doc_to_target: 0``) and ``target_delimiter: ""``, so no space is put before a choice; metric ``acc``.

What lm-eval computes, and how it matches poeval's causal scorer (:mod:`poeval.bpomp.scoring`):

* An empty context becomes the model's prefix token, the tokenizer's BOS, else its EOS (lm-eval's
  ``HFLM.prefix_token_id``), and the choice is tokenized without special tokens; its log-probability is
  the sum over all its tokens given that prefix. poeval frames a text with the same BOS (else EOS)
  (:func:`poeval.generators.checkpoint.text_bounds`) and sums every token after it.
* poeval also scores the EOS after the text (the chance that the limerick ends there). lm-eval has no
  such token unless the choice holds it: each pair carries ``end``, appended to both choices; with
  ``model`` it is that tokenizer's EOS, and the two scores are the same sums (the tokenizers split special
  tokens out of the text, so ``BOS + text + EOS`` gives the same ids in one string as in two). Without
  ``model``, ``end`` is empty: one export for any model, scored without the final EOS, so accuracies
  may differ from poeval's.
* Ties: lm-eval takes ``argmax`` over the two log-likelihoods, the first (original) on a tie, so a tie
  counts 1; poeval's :func:`poeval.bpomp.accuracy` counts it 0.5 and reports ``ties``.
* A model trained with reversed verses (``verse_order: reversed``) is scored by poeval on reversed
  lines; lm-eval would feed it the forward text. An export for such a checkpoint is refused.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Sequence

from poeval import files, hub, io, paths
from poeval.bpomp.pairs import TASKS
from poeval.bpomp.scoring import pair_text
from poeval.errors import PoevalError, first_line, quote

FORMATS = ("lm-eval",)
DEFAULT_GROUP = "bpomp"
MARKER = "_*.yaml"   # the group YAML: what every export holds, so a second export may replace the folder
# a task names files of the export: a plain name, so that no name reaches outside the folder, and a short one,
# so that `.<group>_<task>.jsonl.<8 letters>.tmp`, the temp file of the write, stays within a file name's 255 bytes
NAME_CHARS = 100
TASK_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,%d}" % (NAME_CHARS - 1))
GROUP_NAME = re.compile(r"[A-Za-z0-9_]{1,%d}" % NAME_CHARS)


def default_pairs() -> list[str]:
    """The workflow's pairs files (``results/bpomp/pairs/<task>.jsonl``) that exist, in task order."""
    return [p for p in (paths.bpomp_pairs(t) for t in TASKS) if Path(p).is_file()]


def model_framing(model: str, key: str = "--model") -> tuple[str, str]:
    """``(where lm-eval should load it from, the EOS string to end each choice)`` for a causal poeval
    checkpoint; a reversed-verse checkpoint is refused. Reads only the config and the tokenizer."""
    from poeval.generators import pretrained
    from poeval.generators.checkpoint import VERSE_ORDER, text_bounds

    ref = hub.resolve(pretrained.checkpoint(model), key)
    where = str(Path(ref).resolve()) if Path(ref).is_dir() else ref
    _check_model_arg(where, key)
    from transformers import AutoConfig, AutoTokenizer   # after the checks: it takes seconds

    try:
        cfg = AutoConfig.from_pretrained(ref, local_files_only=hub.local_files_only(), trust_remote_code=False)
        tok = AutoTokenizer.from_pretrained(ref, local_files_only=hub.local_files_only(), trust_remote_code=False)
    except (OSError, ValueError, KeyError, ImportError, RuntimeError) as err:
        raise PoevalError(f"cannot load model {model!r} given by {key}: {first_line(err)}") from None
    if (getattr(cfg, VERSE_ORDER, None) or "forward") != "forward":
        raise PoevalError(f"{model!r} was trained with its verses turned (verse_order: reversed or words): poeval scores it on "
                          "turned lines, lm-eval would feed it the forward text; score it with `poeval bpomp score`")
    _, eos = text_bounds(tok)
    return where, eos


# lm-eval splits --model_args at `,` into key=value items (a folder `m,trust_remote_code=True` would add
# an argument), and its newer parser keeps the text after an open quote or bracket, `,dtype=float32` with
# it, in one value; `=` is refused too, so no part of the path reads as a key under any parser. lm-eval
# has no escape that every version reads, so such a path is refused, never quoted
MODEL_ARG_UNSAFE = ",='\"()[]{}"


def _check_model_arg(where: str, key: str) -> None:
    bad = sorted({c for c in where if c in MODEL_ARG_UNSAFE})
    if bad:
        raise PoevalError(f"{key} {where!r}: lm-eval's --model_args cannot carry a path with {' '.join(bad)} "
                          f"in it (it splits and quotes on {' '.join(MODEL_ARG_UNSAFE)}); rename the folder")


def _documents(pairs_file: str, end: str) -> tuple[str, list[dict]]:
    """The task of a pairs file and its pairs as lm-eval documents."""
    numbered = list(io.read_jsonl_lines(pairs_file))
    if not numbered:
        raise io.nothing_usable(pairs_file, 0, {}, "pairs")
    for lineno, p in numbered:
        if not isinstance(p.get("task"), str) or not TASK_NAME.fullmatch(p["task"]):
            raise PoevalError(f"{pairs_file}: line {lineno}: 'task' must be a plain name of at most {NAME_CHARS} "
                              f"characters ({TASK_NAME.pattern}), got {quote(p.get('task'))}")
    pairs = [p for _, p in numbered]
    tasks = {p["task"] for p in pairs}
    if len(tasks) != 1:
        raise PoevalError(f"{pairs_file}: a pairs file holds one task; found {sorted(map(str, tasks))}")
    docs = []
    for n, p in enumerate(pairs, 1):
        if not all(isinstance(p.get(f), list) for f in ("original", "corrupted")):
            raise PoevalError(f"{pairs_file}: record {n}: a pair needs 'original' and 'corrupted' line lists")
        docs.append({"id": p.get("id", str(n - 1)), "task": p["task"], "good": pair_text(p["original"]),
                     "bad": pair_text(p["corrupted"]), "end": end})
    return next(iter(tasks)), docs


def task_config(name: str, data_file: Path) -> dict:
    """One task's YAML, BLiMP-style."""
    return {
        "task": name,
        "dataset_path": "json",
        "dataset_kwargs": {"data_files": {"train": str(data_file)}},
        "test_split": "train",
        "output_type": "multiple_choice",
        "doc_to_text": "",
        "doc_to_choice": "{{[good + end, bad + end]}}",
        "doc_to_target": 0,
        "target_delimiter": "",
        "num_fewshot": 0,
        "metric_list": [{"metric": "acc", "aggregation": "mean", "higher_is_better": True}],
        "metadata": {"version": 1.0},
    }


def group_config(group: str, tasks: Sequence[str]) -> dict:
    return {"group": group, "task": list(tasks),
            "aggregate_metric_list": [{"metric": "acc", "aggregation": "mean", "weight_by_size": False}],
            "metadata": {"version": 1.0}}


def lm_eval_command(model_ref: str, out_dir: str, group: str) -> str:
    """The ``lm_eval`` command line that runs the exported group on ``model_ref`` (float32, as poeval scores)."""
    return shlex.join(["lm_eval", "--model", "hf", "--model_args", f"pretrained={model_ref},dtype=float32",
                       "--include_path", out_dir, "--tasks", group, "--batch_size", "8"])


def _inside(folder: Path, name: str) -> Path:
    """``folder / name``, refused unless it lies directly in ``folder`` (nothing is written elsewhere)."""
    path = folder / name
    if path.resolve().parent != folder.resolve():
        raise PoevalError(f"refusing to write {name}: it is not a file inside the export folder")
    return path


def write_lm_eval(out_dir: str, pairs_files: Sequence[str] | None = None, group: str = DEFAULT_GROUP,
                  model: str | None = None, model_key: str = "--model", force: bool = False) -> dict:
    """Write the group YAML, one task YAML and one JSONL per pairs file into ``out_dir`` (replaced as a
    whole, if it holds an earlier export or ``force``: :func:`poeval.files.check_out_dir`); return a summary,
    with the ``lm_eval`` command line when ``model`` is given."""
    import yaml

    if not isinstance(group, str) or not GROUP_NAME.fullmatch(group):
        raise PoevalError(f"--group must be ASCII letters, digits and underscores, at most {NAME_CHARS} of them, "
                          f"got {quote(group)}")
    pair_files = list(pairs_files or default_pairs())
    if not pair_files:
        raise PoevalError("no pairs files given and none under " + str(Path(paths.bpomp_pairs("TASK")).parent)
                          + " (run `poeval bpomp pairs` or the workflow's BPoMP rules first)")
    model_ref, end = model_framing(model, model_key) if model else (None, "")
    out = Path(out_dir).resolve()   # lm-eval reads data_files relative to its own working directory
    tasks: dict[str, int] = {}
    with files.atomic_dir(out_dir, "poeval bpomp export", MARKER, pair_files, force) as tmp:
        for pairs_file in pair_files:
            task, docs = _documents(pairs_file, end)
            name = f"{group}_{task}"
            if name in tasks:
                raise PoevalError(f"{pairs_file}: task {task!r} is given twice")
            io.write_jsonl(_inside(tmp, f"{name}.jsonl"), docs)
            task_yaml = yaml.safe_dump(task_config(name, out / f"{name}.jsonl"), sort_keys=False)
            _inside(tmp, f"{name}.yaml").write_text(task_yaml, encoding="utf-8")
            tasks[name] = len(docs)
        group_yaml = yaml.safe_dump(group_config(group, list(tasks)), sort_keys=False)
        _inside(tmp, f"_{group}.yaml").write_text(group_yaml, encoding="utf-8")
    summary = {"out": str(out), "group": group, "tasks": tasks, "end": end,
               "framing": "BOS + text + EOS, as poeval scores" if model else
               "BOS + text, no final EOS (give --model to match poeval's scores)"}
    if model_ref:
        summary["model"] = model_ref
        summary["command"] = lm_eval_command(model_ref, str(out), group)
    return summary
