"""Structured Adversary's params: the schema's defaults (``$defs/sa_model``, the original's settings),
their checks, and the budgets in steps."""

from __future__ import annotations

import contextlib
import math
from typing import Any

from poeval import config
from poeval.errors import PoevalError
from poeval.generators import engine
from poeval.generators.poetic import common

ARCH = "sa"
N_LINES = 4

# Defaults come from the params schema ($defs/sa_model): the original's sizes and optimisers
# (harsh19/Structured-Adversary); its training default is the line LM's own training block (main.py
# ``train_lm(epochs=30)``; solvers_merged.py ``train_lm``: Adam 0.0025, batch 32, no clipping, the best dev
# epoch kept) plus one intra-op thread (PyTorch's CPU LSTM slows down many-fold with 2 threads when another
# process holds a core).
MODEL_DEFAULTS: dict[str, Any] = config.defaults("#/$defs/sa_model")
TRAIN_DEFAULTS: dict[str, Any] = MODEL_DEFAULTS.pop("training")


def param(name: str | None, key: str) -> str:
    return f"models.{name}.{key}" if name else key


def resolve_model_cfg(model_cfg: dict, name: str | None = None) -> dict:
    """MODEL_DEFAULTS (the schema's) updated with ``model_cfg``, checked against the schema (unknown keys
    rejected) and its rules (:data:`poeval.config.RULES`); PoevalError names the key."""
    where = f"models.{name}" if name else "model"
    if not isinstance(model_cfg, dict):
        raise PoevalError(f"{where} must be a mapping")
    cfg = {**MODEL_DEFAULTS, **model_cfg}
    config.check(cfg, "#/$defs/sa_model", where)
    return cfg


def resolve_train_cfg(train_cfg: dict) -> dict:
    """``train_cfg`` over the port's training defaults (the schema's), checked against the schema; the
    line LM's epochs count whole passes (an integer)."""
    return common.train_cfg(TRAIN_DEFAULTS, train_cfg, rules="sa_train")


def steps_for_epochs(n_units: int, batch_size: int, epochs: int) -> int:
    """Optimizer steps of ``epochs`` passes over ``n_units`` training units in batches of ``batch_size``
    (the last batch of a pass may be smaller, as in the original's ``get_num_batches``)."""
    for key, value in (("n_units", n_units), ("batch_size", batch_size), ("epochs", epochs)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise PoevalError(f"steps_for_epochs: {key} must be a positive integer, got {value!r}")
    return epochs * math.ceil(n_units / batch_size)


def mle_steps(tcfg: dict, n_units: int) -> int:
    """The line LM's MLE budget: ``max_steps`` or ``max_epochs`` passes over the training quatrains,
    whichever ends first (the engine's rule; the original: 30 epochs)."""
    return engine.budget(tcfg, steps_for_epochs(n_units, tcfg["batch_size"], 1))


def adv_batches(cfg: dict, n_units: int) -> int:
    """Batches of the adversarial phase: ``adv_epochs`` passes over the training quatrains in batches of
    ``adv_batch_size``, cut to ``adv_steps`` when that is set."""
    total = steps_for_epochs(n_units, cfg["adv_batch_size"], cfg["adv_epochs"]) if cfg["adv_epochs"] else 0
    return total if cfg["adv_steps"] is None else min(total, cfg["adv_steps"])


# Token-by-token generation, the character encoder's tiny batches and the adversarial phase's per-sample
# steps are latency-bound: a second intra-op thread only adds synchronisation (on the shared 2-core
# machine sampling 1000 quatrains took 54 s with 2 threads and 8 s with 1), so they run single-threaded
# whatever ``threads`` (or the training's ``max_threads``) says.
SERIAL_THREADS = 1


@contextlib.contextmanager
def torch_threads(n: int):
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(max(1, min(int(n), before)))
    try:
        yield
    finally:
        torch.set_num_threads(before)
