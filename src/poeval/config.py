"""The schema layer of params: the JSON schema, its defaults and the rules it cannot express per node.

The schema is the one holder of defaults: :func:`fill` applies them (the params step,
:mod:`poeval.params`, fills a whole run's params once), :func:`defaults` reads them for a section or
``$defs`` entry, and :func:`check` / :func:`resolve_section` validate one section against its schema node,
for library calls made without params.yaml (``lm.training.train``, the poetry-specific ports, ``mlm.train_mlm``).
This module imports no other part of poeval but :mod:`poeval.errors`: every stage may use it."""

from __future__ import annotations

import copy
import functools
import json
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from poeval.errors import PoevalError, quote


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


def properties(pointer: str) -> list[str]:
    """The property names of the schema node at ``pointer``, in the schema's order."""
    return list(_follow(_node(pointer)).get("properties", {}))


def fill(value: Any, pointer: str = "#") -> Any:
    """A copy of ``value`` (valid against the schema node at ``pointer``) with every default of the schema
    filled in, at every depth: object properties, map entries (``models.<name>``), list items, and the
    branch of an ``if``/``oneOf`` that the value takes. A node marked ``"overrides": true`` (a system's own
    ``training``/``sampling`` keys over the shared blocks) is left as given. The one place defaults are
    applied."""
    return _fill(copy.deepcopy(value), _node(pointer) if pointer != "#" else _schema())


def _fill(value: Any, node: dict) -> Any:
    node = _follow(node)
    if "if" in node:   # models: a port or a transformer entry, by its arch; a contrastive decoding, by its mode
        branch = node["then"] if _validator().evolve(schema=node["if"]).is_valid(value) else node.get("else")
        if branch:   # then the node's own properties, if it has any
            value = _fill(value, branch)
    for key in ("oneOf", "anyOf"):
        branch = next((b for b in node.get(key, []) if _validator().evolve(schema=b).is_valid(value)), None)
        if branch is not None:
            return _fill(value, branch)
    if isinstance(value, dict):
        props = node.get("properties", {})
        for key, spec in props.items():
            if spec.get("overrides"):   # a system's own training/sampling keys: the rest come from the shared block
                continue
            if key in value:
                value[key] = _fill(value[key], spec)
            elif "default" in _follow(spec):   # a default section ({}) gets its own defaults in turn
                value[key] = _fill(copy.deepcopy(_follow(spec)["default"]), spec)
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            for key in value.keys() - props.keys():
                value[key] = _fill(value[key], extra)
    elif isinstance(value, list) and isinstance(node.get("items"), dict):
        return [_fill(item, node["items"]) for item in value]
    return value


def resolve_section(value: Any, pointer: str, where: str, rules: str | None = None) -> Any:
    """A section given to a library function, with its defaults filled (:func:`fill`) and checked
    (:func:`check`): what the params step does for a whole run, for one section."""
    try:
        filled = fill(value, pointer)
        check(filled, pointer, where, rules)
    except RecursionError:   # a library caller's dict, never parsed from JSON with its depth limit
        raise PoevalError(f"{where or 'config'}: nested too deeply; give a section of plain keys and values") from None
    return filled


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
    return [_describe(_closest(e), prefix) for e in errors]


def _closest(err: jsonschema.ValidationError) -> jsonschema.ValidationError:
    """For a value that fits none of the branches of a ``oneOf`` (a decoding config, a nullable number),
    the error of the branch it comes closest to (``temperature: -1 is less than ...``), not "is not valid
    under any of the given schemas"."""
    while err.validator in ("oneOf", "anyOf") and err.context:
        branches: dict = {}
        for sub in err.context:
            branches.setdefault(sub.schema_path[0], []).append(sub)
        # the branch the value is shaped for: no unknown or missing key, then the fewest errors
        shape = ("additionalProperties", "required", "type")
        best = min(branches.values(), key=lambda subs: (sum(e.validator in shape for e in subs), len(subs)))
        err = best[0]
    return err


def merge(base: dict, overlay: dict) -> dict:
    """Deep-merge ``overlay`` into a copy of ``base`` (the same rule Snakemake applies to --configfile)."""
    out = copy.deepcopy(base)
    for key, value in overlay.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def read(path: str | Path = "params.yaml", overlays: tuple[str | Path, ...] = ()) -> dict:
    """params.yaml plus overlays (later wins, as Snakemake's ``--configfile``), as written: checked against
    the schema, no default filled (:func:`poeval.params.load` resolves them)."""
    merged: dict = {}
    for p in (path, *overlays):
        p = Path(p)
        if not p.is_file():
            raise PoevalError(f"config file not found: {p}")
        loaded = load_yaml(p)
        if not isinstance(loaded, dict):
            raise PoevalError(f"{p}: the top level must be a mapping")
        merged = merge(merged, loaded)
    problems = schema_problems(merged)
    if problems:
        raise PoevalError("invalid params:\n  - " + "\n  - ".join(problems))
    return merged


# The most values a params file may hold once its aliases are expanded: paper.yaml's shared blocks expand to
# hundreds, a 300-byte alias bomb to millions (and an error quoting it to megabytes).
MAX_YAML_VALUES = 100_000


def load_yaml(path: Path) -> Any:
    """The YAML file at ``path`` (``{}`` when empty), refused in one line when it is not YAML or its aliases
    expand past :data:`MAX_YAML_VALUES` values."""
    try:
        loaded = yaml.safe_load(path.read_text("utf-8")) or {}   # an alias is one shared object: cheap
    except yaml.YAMLError as err:
        raise PoevalError(f"{path}: not valid YAML ({err})") from None
    except RecursionError:
        raise PoevalError(f"{path}: YAML nested too deeply") from None
    check_expanded(loaded, str(path))
    return loaded


def check_expanded(value: Any, where: str) -> None:
    """Refuse ``value`` (loaded YAML, whoever loaded it) when its aliases expand to more than
    :data:`MAX_YAML_VALUES` values, or into a value that contains itself: any walk of it (the schema, a
    deep copy, an error message) would visit a shared value once per reference to it."""
    try:
        size = _expanded_size(value, MAX_YAML_VALUES, {})
    except RecursionError:
        raise PoevalError(f"{where}: nested too deeply") from None
    if size > MAX_YAML_VALUES:
        endless = " (one contains itself)" if size == float("inf") else ""
        raise PoevalError(f"{where}: its YAML aliases (*name) expand to more than {MAX_YAML_VALUES} values"
                          f"{endless}; write the values out")


def _expanded_size(value: Any, limit: int, memo: dict) -> float:
    """How many values ``value`` stands for with every alias expanded, or some number above ``limit`` once
    that is certain. An alias is the same object as its anchor, so ``memo`` sizes each container once,
    however often it is repeated; a container met again inside itself is endless (inf)."""
    if not isinstance(value, (dict, list, tuple, set)):
        return 1
    if id(value) in memo:
        return memo[id(value)]
    memo[id(value)] = float("inf")   # until sized: reached again below itself, it contains itself
    items = [v for pair in value.items() for v in pair] if isinstance(value, dict) else value
    total = 1
    for item in items:
        total += _expanded_size(item, limit, memo)
        if total > limit:
            break
    memo[id(value)] = total
    return total


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
    return f"key {_key(path)}: {err.message.replace(repr(err.instance), quote(err.instance))}"


def schema_problems(config: Any) -> list[str]:
    """Every violation of the whole params schema, each naming its key."""
    return _problems(_validator(), config, [])


# --- what the JSON schema cannot express: checks of a whole (defaults-filled) entry, per schema node.
# `check` runs them after the schema, for library calls; `validate` runs them on every params entry.

# params ``models.<system>.training: none``: a pretrained checkpoint sampled as it is, not trained at all
UNTRAINED = "none"


def _transformer_rules(cfg: dict):
    if cfg.get("training") == UNTRAINED:
        yield from _untrained_rules(cfg)
    elif cfg.get("api") == "chat":
        yield "api", "chat samples an instruction-tuned checkpoint as it is: it needs training: none"
    if cfg.get("prompt") is not None and cfg.get("api") != "chat":
        yield "prompt", "an in-process checkpoint is prompted only with api: chat (api completions starts at its BOS)"
    if cfg["init"] == "scratch":
        if cfg["arch"] == "gemma3":   # no scratch build of its own: it names a pretrained Gemma 3 checkpoint
            yield "init", "arch gemma3 is fine-tuned from a pretrained checkpoint (e.g. gemma3-270m): set init: pretrained"
        for key in ("tokenizer", "lora"):
            if cfg.get(key) is not None:
                yield key, "only used with init: pretrained"
        if cfg["n_embd"] % cfg["n_head"]:
            yield "n_head", f"n_embd ({cfg['n_embd']}) must be divisible by n_head ({cfg['n_head']})"


def _untrained_rules(cfg: dict):
    """``training: none`` keeps the weights as loaded: anything that needs training is refused."""
    if cfg["init"] != "pretrained":
        yield "training", "none samples a checkpoint as it is: it needs init: pretrained (a scratch model is random)"
    if cfg["conditioned"] and cfg.get("api") != "chat":
        yield "training", ("none would leave the style tokens of conditioned: true untrained (api: chat conditions "
                           "by prompt instead)")
    if cfg.get("lora") is not None:
        yield "training", "none trains no LoRA adapters: set lora to null"


def _endpoint_rules(cfg: dict):
    from urllib.parse import urlsplit

    url = urlsplit(cfg["base_url"])
    if url.username or url.password or url.query or url.fragment:
        yield "base_url", ("no credentials or query string in the URL: params are copied into stamps and logs "
                           "(the key goes in the environment variable api_key_env names)")
    if cfg["conditioned"] and cfg["api"] == "completions" and not (cfg.get("prompt") or {}).get("text_style"):
        yield "prompt.text_style", "conditioned: true with api completions needs the text that asks for a scheme"


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


# Keys of the training block that only the transformer LMs take (a poetry port batches whole poems).
LLM_ONLY_TRAINING = frozenset({"length_grouping"})


def _port_train_rules(cfg: dict):
    """A poetry port's own ``training`` block: the LM-only keys would be silently ignored."""
    for key in sorted(LLM_ONLY_TRAINING & set(cfg)):
        yield key, "only the transformer LMs take it (a poetry port batches whole poems)"


def _deepspeare_train_rules(cfg: dict):
    """DeepSpeare's own training block: its three models have their own optimisers and learning rates."""
    if "lr" in cfg:
        yield "lr", "DeepSpeare gives each model its own optimiser: set models.<system>.lm_lr, pm_lr or rm_lr"


def _mlm_rules(cfg: dict):
    if cfg["n_embd"] % cfg["n_head"]:
        yield "n_head", f"n_embd ({cfg['n_embd']}) must be divisible by n_head ({cfg['n_head']})"


RULES = {"transformer_model": _transformer_rules, "deepspeare_model": _deepspeare_rules, "sa_model": _sa_rules,
         "endpoint_model": _endpoint_rules,
         "sa_train": _sa_train_rules, "deepspeare_train": _deepspeare_train_rules,
         "port_train": _port_train_rules, "mlm": _mlm_rules}


def rule_problems(rules: str, cfg: dict, where: str) -> list[str]:
    """The violations of :data:`RULES` ``[rules]`` (none for a node without rules), each naming its key."""
    check_entry = RULES.get(rules)
    return [f"key {where}.{key}: {message}" for key, message in check_entry(cfg)] if check_entry else []


# Params that may be one value for every language or a mapping {lang: value} (a per-language setting).
PER_LANG_MODEL_KEYS = ("name_or_path", "tokenizer", "model")


def for_lang(value: Any, lang: str) -> Any:
    """``value[lang]`` of a per-language mapping, else ``value`` (the same for every language)."""
    return value.get(lang) if isinstance(value, dict) else value


def model_for_lang(model: dict, lang: str) -> dict:
    """A ``models`` entry with its per-language keys (checkpoint, tokenizer) resolved for ``lang``."""
    return {key: for_lang(value, lang) if key in PER_LANG_MODEL_KEYS else value for key, value in model.items()}


def languages() -> list[str]:
    """The languages poeval supports: the schema's ``languages`` items."""
    return list(_schema()["properties"]["languages"]["items"]["enum"])


def int_range(pointer: str) -> tuple[int, int]:
    """The bounds of the integers the schema node at ``pointer`` takes (``#/$defs/seed``), ``$ref`` followed."""
    node = _node(pointer)
    return node["minimum"], node["maximum"]


def check_int(value, name: str, bounds: tuple[int, int], where: str = "") -> None:
    """Refuse ``value`` unless it is an integer within ``bounds`` (:func:`int_range`); a float, a string or a
    bool is refused, not rounded."""
    low, high = bounds
    if type(value) is not int or not low <= value <= high:
        raise PoevalError(f"{where}{name}: expected an integer from {low} to {high}, got {quote(value)}")


def seed_range() -> tuple[int, int]:
    """The seeds a seeded step takes (numpy's: 0 <= seed < 2**32), as the schema's ``$defs/seed`` bounds them."""
    return int_range("#/$defs/seed")


def bootstrap_reps_range(section: str = "metrics") -> tuple[int, int]:
    """The resamples a bootstrap takes, as the schema bounds ``<section>.bootstrap.reps`` (``$defs/bootstrap_reps``;
    metric intervals may take 0, none; BPoMP's accuracy at least 1)."""
    return int_range(f"#/properties/{section}/properties/bootstrap/properties/reps")


def section_defaults(section: str) -> dict:
    """The schema's default values of one top-level section, for CLI commands run outside the workflow."""
    return defaults(f"#/properties/{section}")
