"""The one list of generator architectures (params ``models.<system>.arch``): which module trains and
samples each, its kind, its level and what a cluster job of it asks for. The params schema's ``arch``
enums, ``figures`` (which systems are LLMs) and the workflow (which systems train on pseudo-sonnets, each
train and sample job's resources) all read it; tests/unit/test_config.py checks the schema against it."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path

from poeval import config
from poeval.generators.checkpoint import port_arch
from poeval.generators.decoding import Ancestral, parse_decoding


@dataclass(frozen=True)
class Job:
    """What a cluster job that trains or samples a generator asks for (the rules' ``resources``,
    workflow/rules/common.smk ``generator_resources``): GPUs, and memory (MB), time (minutes) and disk (MB)
    on the first try; a retry asks for memory and time that many times over."""
    gpus: int
    mem_mb: int
    runtime: int
    disk_mb: int


@dataclass(frozen=True)
class Arch:
    name: str      # the params value
    module: str    # module (under poeval) with fit(...) and sample(...): poeval.generators.interface
    kind: str      # "llm": transformer LM on quatrains; "poetic": poetry-specific port on pseudo-sonnets;
                   # "served": a model behind an endpoint (nothing trains; requests sample);
                   # "supplied": samples the user supplies (no checkpoint: nothing trains or samples)
    level: str     # "word" (word or BPE tokens), "byte", or "-" (supplied samples)
    train: Job     # a job of rule train
    sample: Job    # a job of rule sample (and adherence_sample)


# Job sizes are for config/scale/paper.yaml. A transformer trains and samples on one GPU; LLaMA 7B/8B with
# LoRA is the largest job (generators/lm holds the weights in fp32, 27-32 GB, and a copy of the best ones).
# The LSTM ports are latency-bound (a GPU does not speed them up), an endpoint's jobs send requests, and a
# samples system has no train or sample job: all on CPU.
GPU_TRAIN, GPU_SAMPLE = Job(1, 32000, 240, 40000), Job(1, 16000, 60, 20000)
LLAMA_TRAIN, LLAMA_SAMPLE = Job(1, 96000, 720, 120000), Job(1, 64000, 180, 80000)
CPU_TRAIN, CPU_SAMPLE = Job(0, 32000, 240, 40000), Job(0, 16000, 60, 20000)

# trains and samples every transformers checkpoint: the llm archs' own and an imported release's
TRANSFORMERS = "generators.lm"

# in display order: names() lists the architectures (and the schema its enums) in this order
ARCHS: tuple[Arch, ...] = (
    Arch("gpt2", TRANSFORMERS, "llm", "word", GPU_TRAIN, GPU_SAMPLE),
    Arch("gptneo", TRANSFORMERS, "llm", "word", GPU_TRAIN, GPU_SAMPLE),
    Arch("llama", TRANSFORMERS, "llm", "word", LLAMA_TRAIN, LLAMA_SAMPLE),
    # fine-tuned only: a pretrained Gemma 3 checkpoint
    Arch("gemma3", TRANSFORMERS, "llm", "word", GPU_TRAIN, GPU_SAMPLE),
    Arch("bygpt5", TRANSFORMERS, "llm", "byte", GPU_TRAIN, GPU_SAMPLE),
    Arch("deepspeare", "generators.poetic.deepspeare", "poetic", "word", CPU_TRAIN, CPU_SAMPLE),
    Arch("sa", "generators.poetic.adversary", "poetic", "word", CPU_TRAIN, CPU_SAMPLE),
    # a model behind an OpenAI-compatible endpoint: rule train checks the server, rule sample sends requests
    Arch("endpoint", "generators.endpoint", "served", "-", CPU_TRAIN, CPU_SAMPLE),
    # a user's generator, known only by its samples: rule import_samples (poeval.generators.supplied)
    Arch("samples", "generators.supplied", "supplied", "-", CPU_TRAIN, CPU_SAMPLE),
)
BY_NAME = {a.name: a for a in ARCHS}


def names(kind: str | None = None) -> tuple[str, ...]:
    """Arch names in display order, of one ``kind`` (:attr:`Arch.kind`) or all."""
    return tuple(a.name for a in ARCHS if kind in (None, a.kind))


def get(name: str) -> Arch:
    from poeval.errors import PoevalError

    if name not in BY_NAME:
        raise PoevalError(f"model arch {name!r} is not supported; known: {', '.join(BY_NAME)}")
    return BY_NAME[name]


def module(name: str):
    """The module that trains and samples ``name``."""
    return importlib.import_module(f"poeval.{get(name).module}")


def is_poetic(model_cfg: dict) -> bool:
    arch = BY_NAME.get(model_cfg.get("arch"))
    return arch is not None and arch.kind == "poetic"


def is_served(model_cfg: dict) -> bool:
    """Whether a ``models`` entry is a model behind an endpoint (``arch: endpoint``)."""
    arch = BY_NAME.get(model_cfg.get("arch"))
    return arch is not None and arch.kind == "served"


def is_prompted(model_cfg: dict) -> bool:
    """Whether a ``models`` entry is asked for its quatrains by a prompt: an endpoint, or an in-process
    checkpoint with ``api: chat``; a conditioned one is then conditioned by prompt (style adherence)."""
    return is_served(model_cfg) or model_cfg.get("api") == "chat"


def is_supplied(model_cfg: dict) -> bool:
    """Whether a ``models`` entry is a system made of samples the user supplies (``arch: samples``)."""
    arch = BY_NAME.get(model_cfg.get("arch"))
    return arch is not None and arch.kind == "supplied"


def trainer(model_cfg: dict):
    """The generator module (:class:`poeval.generators.interface.Generator`) whose ``fit`` trains a params
    ``models`` entry: its arch's; an entry without a known arch goes to the transformers', which fills the
    schema's default arch and refuses an unknown one."""
    arch = model_cfg.get("arch")
    return module(arch) if arch in BY_NAME else importlib.import_module(f"poeval.{TRANSFORMERS}")


def sampler(model_dir: str | Path):
    """The generator module whose ``sample`` samples the checkpoint in ``model_dir``: the poetry port its
    manifest names, else the transformers' (a checkpoint poeval trained, or an imported release)."""
    port = port_arch(model_dir)
    return module(port) if port else importlib.import_module(f"poeval.{TRANSFORMERS}")


def schema_node(arch: str) -> str:
    """The params schema's ``$defs`` entry of a ``models`` entry of ``arch``."""
    return {"llm": "transformer_model", "supplied": "samples_model"}.get(get(arch).kind, f"{arch}_model")


def port_training_defaults(arch: str) -> dict:
    """A poetry port's own training block: the schema's default of ``models.<system>.training`` for
    ``arch`` (``$defs/deepspeare_model``, ``$defs/sa_model``)."""
    return config.defaults(f"#/$defs/{schema_node(arch)}")["training"]


def untrained(model_cfg: dict) -> bool:
    """Whether params ``models.<system>`` samples its checkpoint as it is (``training: none``)."""
    return model_cfg.get("training") == config.UNTRAINED


def shared_training(model_cfg: dict, shared: dict) -> dict:
    """The shared params ``training`` block as a train job (:mod:`poeval.jobs.train`) takes it for
    ``model_cfg``: ``{}`` for a poetry port or an untrained system, which never take it, so that editing it
    reruns neither."""
    return {} if is_poetic(model_cfg) or untrained(model_cfg) or is_served(model_cfg) else shared


def training_params(model_cfg: dict, shared: dict) -> tuple[dict, dict | str]:
    """``(model params, training params)`` as the generator of ``model_cfg`` (params ``models.<system>``)
    receives them: a transformer LM gets the shared params ``training`` with the system's own ``training``
    block over it; a poetry port gets its arch's own training defaults (:func:`port_training_defaults`)
    with the system's own block over it, never the shared block, whose settings (a fine-tuning lr, an
    LLM's step budget) are an LLM's and would silently retrain the port. An untrained system
    (``training: none``) and an endpoint get ``"none"``, nothing of the shared block. The system's
    ``sampling`` block is not the generator's (:func:`sampling_params` reads it), nor is its ``prompt``
    (the sample job carries it, :mod:`poeval.jobs.sample`)."""
    model = {key: value for key, value in model_cfg.items() if key not in ("training", "sampling", "prompt")}
    if untrained(model_cfg) or is_served(model_cfg):
        return model, config.UNTRAINED
    own = model_cfg.get("training") or {}
    base = port_training_defaults(model["arch"]) if is_poetic(model) else shared
    return model, {**base, **own}


def sampling_params(model_cfg: dict, shared: dict) -> dict:
    """The params ``sampling`` a system samples with: the shared block, the system's own ``sampling`` block
    (e.g. a smaller ``n`` for a model that samples slowly) over it."""
    return {**shared, **(model_cfg.get("sampling") or {})}


def has_lang(params: dict, system: str, lang: str) -> bool:
    """Whether ``system`` has rows in ``lang``: a system runs in every language but a samples system, in those
    it supplies files for (the tables' rows and the similarity cells read this one rule)."""
    from poeval.generators.supplied import sample_files

    model = params["models"][system]
    return not is_supplied(model) or bool(sample_files(model, lang))


def system_decodings(params: dict, system: str, decodings: list[str], lang: str, every: bool = False) -> list[str]:
    """The decoding configs ``system`` runs in ``lang`` (``params``: resolved): the poetry-specific ports
    sample ancestrally only (contrastive search is defined for the transformer generators); a samples
    system has its files': with ``every`` all of them, else those named like one of ``decodings``, or
    else its first file, so that a system sampled elsewhere has its row beside the others."""
    from poeval.generators.supplied import sample_files

    model_cfg = params["models"][system]
    if is_supplied(model_cfg):
        own = list(sample_files(model_cfg, lang))
        return own if every else [d for d in own if d in decodings] or own[:1]
    if not is_poetic(model_cfg):
        return list(decodings)
    return [d for d in decodings if isinstance(parse_decoding(params["decoding"][d], f"decoding.{d}"), Ancestral)]

